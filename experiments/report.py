"""What the results files' text shares: Markdown tables, the names of language pairs and of
results files, how a smoke test's sentences are named, and the published scores that ours are
set beside (results/published.json)."""
import functools

from annotated.base.settings import at_least
from experiments.folders import ROOT
from experiments.results_files import BLEU, Cell, Record

LANGUAGES = {"en": "English", "de": "German", "fr": "French"}


# What each published result holds, and how it is checked (Record.get).
PUBLISHED_ROW = {"system": dict(kind=Cell), "bleu": dict(rule=BLEU), "metric": dict(kind=Cell),
                 "reference_tokens": dict(rule=at_least(1))}


@functools.cache
def published(results=ROOT / "results") -> dict:
    """Published from-scratch text-only results on test2016, by language pair ("en", "de"), as
    results/published.json (in the folder `results`) gives them: (system, BLEU, metric,
    reference length in tokens in the published evaluation log), each checked. The scripts
    call it before any work."""
    record, key = Record(results / "published.json", None), "multi30k_test2016"
    found = {}
    for pair in record.get(key, kind=dict):
        found[tuple(pair.split("-"))] = [
            tuple(record.get(key, pair, i, name, **check) for name, check in PUBLISHED_ROW.items())
            for i in range(len(record.get(key, pair, kind=list)))]
    return found


def file_stem(preset: str, config: dict) -> str:
    """The preset's name for English->German, the paper's pair (multi30k, multi30k_tiny);
    multi30k_en_fr and so on for other pairs; _lowercase after it for a lowercased run."""
    pair = (config["source_lang"], config["target_lang"])
    stem = preset if pair == ("en", "de") else f"{preset}_{pair[0]}_{pair[1]}"
    return stem + ("_lowercase" if config.get("lowercase") else "")


def pair_name(config: dict) -> str:
    return "->".join(LANGUAGES.get(config[k], config[k]) for k in ("source_lang", "target_lang"))


def first_sentences(n: int, total: int, of: str = "") -> str:
    """How a results file names the sentences it scored: "the first 10 of the 1,000 sentences"
    when --limit cut the set, "the 1,000 sentences" when not (then " of " and `of`, if given)."""
    text = f"the first {n:,} of the {total:,} sentences" if n < total else f"the {n:,} sentences"
    return text + (f" of {of}" if of else "")


def markdown_table(header: list[str], rows: list[list]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])
