"""What the results files' text shares: Markdown tables, the names of language pairs and of
results files, how a smoke test's sentences are named, and the published scores that ours are
set beside (results/published.json)."""
import json

from experiments.folders import ROOT

LANGUAGES = {"en": "English", "de": "German", "fr": "French"}
# Published from-scratch text-only results on test2016, by language pair, as results/published.json
# gives them (system, BLEU, metric, reference length in tokens in the published evaluation log).
PUBLISHED = {tuple(pair.split("-")): [(r["system"], r["bleu"], r["metric"], r["reference_tokens"])
                                      for r in rows]
             for pair, rows in json.loads((ROOT / "results" / "published.json").read_text())
             ["multi30k_test2016"].items()}


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
