"""The README and the results page say what the results files say: one source for every number.

The README's tables are rendered from results/*.json (experiments.summary); every other
number on the README and on results/README.md must be found in a results file, so a result
that changes without its prose (or prose that changes without its result) fails here."""
import json
import re
from pathlib import Path

import pytest

from experiments import summary

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
PAGES = [ROOT / "README.md", RESULTS / "README.md"]
# Numbers that are not results: Multi30k's training pairs (its own README), the paper's year,
# the oldest Python the project runs on.
NOT_RESULTS = {"29,000", "2017", "3.10"}


def prose(text: str) -> str:
    """`text` without code (commands and settings are not results) and without the tables
    experiments.summary renders (the test above checks those whole)."""
    for begin, end in summary.MARKERS.values():
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def numbers(text: str) -> set[str]:
    """The numbers that can be results: with a decimal point, thousands commas, or 3+ digits."""
    return set(re.findall(r"(?<![\w.\-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])"
                          r"|(?<![\w.\-])\d+\.\d+(?![\w.])|(?<![\w.,\-])\d{3,}(?![\w,.])",
                          prose(text)))


def results_text() -> str:
    return "".join(p.read_text() for p in sorted(RESULTS.glob("*"))
                   if p.suffix in (".json", ".md") and p.name != "README.md")


def in_results(number: str, text: str) -> bool:
    plain = number.replace(",", "")
    forms = {number, plain}
    value = float(plain)
    forms |= {f"{value:g}", repr(value)}
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", text) for form in forms)


@pytest.mark.parametrize("name", summary.TABLES)
def test_the_readme_tables_are_the_ones_the_results_files_give(name):
    readme = (ROOT / "README.md").read_text()
    assert summary.readme_table(readme, name) == summary.TABLES[name](), \
        "results changed: run python -m experiments.summary --write"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_number_on_a_results_page_is_in_a_results_file(page):
    text = results_text()
    missing = sorted(n for n in numbers(page.read_text()) - NOT_RESULTS
                     if not in_results(n, text))
    assert not missing, f"{page.name}: not in any results file: {', '.join(missing)}"


def test_the_number_check_fails_on_a_number_no_results_file_holds():
    text = results_text()
    assert not in_results("123.456", text) and in_results("39.58", text)
    assert numbers("BLEU 39.58, `--alpha 1.4`, 12,103 tokens, 4 heads") == {"39.58", "12,103"}


def test_the_readme_is_short_and_copies_cleanly():
    """At most 150 lines for a newcomer; no inline code broken across lines (it breaks when
    copied from the raw file)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    outside_blocks = re.sub(r"```.*?```", "", text, flags=re.S)
    broken = [line for line in outside_blocks.splitlines() if line.count("`") % 2]
    assert not broken, broken


def test_the_shipped_model_carries_the_decoding_it_was_scored_with():
    from annotated.pretrained import MULTI30K_EN_DE
    from annotated.store.checkpoint_file import load
    config = load(MULTI30K_EN_DE)["config"]
    decode = json.loads(MULTI30K_EN_DE.with_suffix(".json").read_text())["decode"]
    assert (config["beam_size"], config["alpha"]) == (decode["beam_size"], decode["alpha"])


def test_the_chinese_readme_gives_the_same_two_commands():
    def commands(text):
        return text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    english = commands((ROOT / "README.md").read_text())
    assert len(english) == 5 and "apt-get install chromium chromium-driver" in english[4]
    assert commands((ROOT / "README.zh-CN.md").read_text(encoding="utf-8")) == english
