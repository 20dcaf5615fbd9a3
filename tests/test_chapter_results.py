"""Chapter 8 and the appendix read as results, not logs: chapter 8 prints at most 60 lines
(tables included, its exercises too), every results table of the two is numbered and captioned,
and every number of their prose is one that they print or that a results file holds. And every
dotted name of the package (`annotated.training.flops`) that a chapter or a page of the book
mentions, in its prose, its code or its outputs, names something that exists."""
import importlib
import json
import re
from pathlib import Path

import pytest

from book import stage

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_8 = ROOT / "chapters" / "08_results.ipynb"
APPENDIX = ROOT / "chapters" / "appendix_experiment_log.ipynb"
#: The most lines of printed output (streams, plain text, tables) chapter 8 may show.
MOST_PRINTED = 60
#: Numbers in the prose that are no results: the size of Multi30k's training set (its own
#: README) and the years of the works cited.
NOT_RESULTS = {"29,000"}
YEAR = re.compile(r"^(19|20)\d\d$")


def notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def shown_text(nb: dict) -> str:
    """Everything a chapter shows as text: its cells' sources and their outputs."""
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            parts += ["".join(output.get("text", "")), "".join(data.get("text/markdown", "")),
                      "".join(data.get("text/plain", ""))]
    return "\n".join(parts)


# ---- Printed output ----

def test_chapter_8_prints_at_most_60_lines():
    printed = stage.amounts(notebook(CHAPTER_8))[3]       # as the site counts it for reading
    assert printed <= MOST_PRINTED, (
        f"chapter 8 prints {printed} lines of output (tables included), more than "
        f"{MOST_PRINTED}: show results as figures or short tables, and move detail to the "
        f"appendix")


# ---- Results tables are numbered and captioned ----

def shows_a_table(cell: dict) -> bool:
    """True for a code cell that shows a Markdown table (not a listing of code)."""
    for output in cell.get("outputs", []):
        text = "".join(output.get("data", {}).get("text/markdown", ""))
        if "```" not in text and re.search(r"^\|.*\|$", text, re.M):
            return True
    return False


def table_caption_problems(nb: dict, label: str) -> list[str]:
    """Each cell that shows a table must be followed by a markdown cell that opens with
    `**Table <label>.<k>.**`, k = 1, 2, ... in order."""
    problems, k = [], 0
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code" or not shows_a_table(cell):
            continue
        k += 1
        after = "".join(cells[i + 1]["source"]) if i + 1 < len(cells) else ""
        if not after.startswith(f"**Table {label}.{k}.** "):
            problems.append(f"cell {i}: its table is not followed by the caption "
                            f"'**Table {label}.{k}.** ...' (found {after[:40]!r})")
    return problems


@pytest.mark.parametrize("path,label", [(CHAPTER_8, "8"), (APPENDIX, "A")],
                         ids=["chapter 8", "appendix"])
def test_every_results_table_is_numbered_and_captioned(path, label):
    assert not table_caption_problems(notebook(path), label)


def test_a_table_without_its_caption_is_named():
    table = {"cell_type": "code", "source": "", "outputs": [
        {"output_type": "display_data", "data": {"text/markdown": "| a |\n| --- |\n| 1 |"}}]}
    caption = {"cell_type": "markdown", "source": "**Table 8.1.** The numbers."}
    assert not table_caption_problems({"cells": [table, caption]}, "8")
    problems = table_caption_problems({"cells": [table, caption, table]}, "8")
    assert len(problems) == 1 and "cell 2" in problems[0] and "Table 8.2" in problems[0]


# ---- Numbers in the prose come from the results ----

NUMBER = re.compile(r"(?<![\w.\-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])"
                    r"|(?<![\w.\-])\d+\.\d+(?![\w.])|(?<![\w.,\-])\d{3,}(?![\w,.])")
ANY_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][+-]?\d+)?")


def prose_numbers(text: str) -> set[str]:
    """The numbers of markdown prose that can be results (with a decimal point, thousands
    commas, or 3+ digits), math, code and link targets left out."""
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    for pattern in (r"\$[^$]*\$", r"`[^`]*`", r"\]\([^)]*\)"):
        text = re.sub(pattern, " ", text)
    return set(NUMBER.findall(text))


def results_values() -> list[float]:
    text = "".join(p.read_text() for p in sorted((ROOT / "results").glob("*"))
                   if p.suffix in (".json", ".md") and p.name != "README.md")
    return sorted({float(x.replace(",", "")) for x in ANY_NUMBER.findall(text)})


def unsourced(nb: dict, values: list[float]) -> list[str]:
    """The numbers of the prose before the exercises that the chapter does not show in an
    output, and that no number of a results file gives when rounded as the prose writes it."""
    outputs = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get(k, ""))
                        for c in nb["cells"] for o in c.get("outputs", [])
                        for k in ("text/markdown", "text/plain"))
    missing = []
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] != "markdown":
            continue
        if text.startswith("## Exercises"):
            break
        for number in sorted(prose_numbers(text) - NOT_RESULTS):
            if YEAR.match(number) or re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", outputs):
                continue
            plain = number.replace(",", "")
            decimals = len(plain.partition(".")[2])
            if not any(round(v, decimals) == float(plain) for v in values):
                missing.append(number)
    return missing


@pytest.mark.parametrize("path", [CHAPTER_8, APPENDIX], ids=["chapter 8", "appendix"])
def test_every_number_in_the_prose_is_shown_or_in_a_results_file(path):
    missing = unsourced(notebook(path), results_values())
    assert not missing, (f"{path.name}: numbers in the prose that no output shows and no "
                         f"results file holds: {', '.join(missing)}")


def test_a_number_no_output_and_no_results_file_holds_is_named():
    cell = {"cell_type": "markdown", "source": "It scores 39.22, then 123.457 and 12.0."}
    shown = {"cell_type": "code", "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "12.0\n"}]}
    assert unsourced({"cells": [cell, shown]}, [39.2249]) == ["123.457"]


# ---- Every dotted name resolves ----

DOTTED = re.compile(r"(?<![\w./-])((?:annotated|reference_numpy)(?:\.\w+)+)")
PAGES = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.md")) + \
    sorted((ROOT / "book" / "zh").glob("*.md"))


def resolves(name: str) -> bool:
    """True if `name` (a.b.c) is a module of the project, or an attribute of one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_dotted_name_of_the_package_resolves(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        text = shown_text(json.loads(text))
    wrong = sorted({name for name in DOTTED.findall(text) if not resolves(name)})
    assert not wrong, f"{path.name} names what does not exist: {', '.join(wrong)}"


def test_a_dotted_name_that_does_not_exist_is_found():
    assert resolves("annotated.training.flops.training_flops")
    assert resolves("reference_numpy.attention")
    assert not resolves("annotated.tools.flops.training_flops")
    assert not resolves("annotated.training.flops.no_such_function")
    assert DOTTED.findall("see `annotated.training.flops`, annotated/training/flops.py") == \
        ["annotated.training.flops"]


# ---- The helpers that lay out the results files as tables ----

def rows(markdown) -> list[list[str]]:
    """The body rows of a Markdown table, as lists of cells."""
    lines = markdown.data.splitlines()[2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_decoding_table_gives_each_row_its_change_from_the_first():
    from annotated.notebooks.results import decoding_table
    score = lambda bleu: dict(bleu=bleu, paper_bleu=bleu + 0.1, mean_output_words=10.0,
                              sentences_per_s=50.0)
    run = {"test2016": {"beam 4, alpha 0.6, average of 5": score(30.0),
                        "beam 4, alpha 0.6, last checkpoint (ckpt_0000100.pt)": score(29.5)},
           "valid": {"averaged": {"ppl": 5.0}, "last": {"ppl": 5.5}}, "reference_mean_words": 11.0}
    assert rows(decoding_table(run)) == [
        ["beam 4, alpha 0.6, average of 5", "30.00", "", "30.10", "10.00"],
        ["beam 4, alpha 0.6, last checkpoint", "29.50", "-0.50", "29.60", "10.00"],
        ["the references", "", "", "", "11.00"]]


def test_the_cost_table_takes_the_measured_step_not_an_assumed_utilisation():
    from annotated.notebooks.results import cost_table
    paper = {"table2": {"base": dict(paper_flops=4e18, per_step=1e13, total=1e18)}}
    schedule = {"models": {"base": dict(paper_steps=100_000, paper_hours=12.0, full_step_s=0.036,
                                        full_compiled=True, hours={"per_gpu_share": 0.5})}}
    measured = {"machine": {"gpu": "NVIDIA H200"},
                "cases": [dict(case="base", compile=False, step_s=0.05, MFU=0.1),
                          dict(case="base", compile=True, step_s=0.036, MFU=0.2),
                          dict(case="base", compile=True, cuda_graphs=True, step_s=0.04, MFU=0.18),
                          dict(case="base 1/8", compile=True, step_s=0.036, MFU=0.05)]}
    shown = cost_table(paper, schedule, measured)
    assert "MFU, one NVIDIA H200" in shown.data.splitlines()[0]
    assert rows(shown) == [["base", "12 h", "25%", "0.20", "1.0 h", "0.5 h"]]


def test_the_step_table_names_each_mode_and_puts_the_estimate_beside_the_eighth_it_took():
    from annotated.notebooks.results import step_table
    case = lambda name, step_s, **mode: dict(case=name, step_s=step_s, source_tokens=3000,
                                             tokens_per_s=1000, MFU=0.1, **mode)
    measured = {"cases": [case("base", 0.05, compile=False),
                          case("base 1/8", 0.03, compile=True),
                          case("base 1/8", 0.01, compile=True, cuda_graphs=True)]}
    schedule = {"models": {"base": dict(share_step_s=0.01, paper_hours=12.0,
                                        hours={"per_gpu_share": 0.28})}}
    assert [row[:2] + row[-1:] for row in rows(step_table(measured, schedule))] == [
        ["base", "eager", ""], ["base 1/8", "compiled", ""],
        ["base 1/8", "compiled, CUDA graphs", "0.28 h (paper: 12 h)"]]


def test_the_comparisons_number_the_candidates_as_the_sweep_table_does():
    from annotated.notebooks.results import comparisons_table
    row = lambda average, bleu: dict(average=average, beam=4, alpha=1.0, lowercase_bleu=bleu,
                                     val_ppl=6.0 + average)
    run = lambda vocab, steps, bleu: dict(config={"vocab_size": vocab}, overrides=[],
                                          steps=steps, rows=[row(1, bleu - 1), row(5, bleu)])
    sweep = {"candidates": {"first": run(6000, 100, 30.0), "second": run(4000, 120, 31.5)}}
    assert rows(comparisons_table(sweep, [("fewer subwords", 2, 1)])) == [
        ["fewer subwords", "2 / 1", "120 / 100", "", "+1.50", "+1.50"]]   # no perplexity:
                                                                       # vocabularies differ
