"""Is one Multi30k model better than another, or did the choice of test sentences decide? Two
systems compared by paired bootstrap resampling on val and on test2016.

    python -m experiments.multi30k_paired --system NAME CKPT BEAM ALPHA --system NAME CKPT BEAM ALPHA
        [--data-dir D] [--out-dir results] [--limit N]

Each system is a checkpoint with its own decoding (beam size, length penalty alpha). Both
translate val (1,014 sentences) and test2016 (1,000); on each set the first system is compared
with the second (annotated.inference.bleu.paired_bootstrap: 1,000 test sets drawn from the real
one with replacement, the same draws for both) in lowercased BLEU, the metric the sweep ranks
by, and in cased sacreBLEU. For English->German the published test2016 numbers are set beside
each system's 95% interval. Writes multi30k_paired.md and .json (runs/results by default; a
smoke test, --limit, never into the committed results/). Each system's BEAM and ALPHA follow the
rules of --beam-size and --alpha elsewhere: a beam of 1 to 1,000, a finite alpha >= 0.
"""
import argparse
import json
import os
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, number, path, say_error
from annotated.base.errors import DataError
from annotated.base.files import write_files
from annotated.base.settings import at_least
from annotated.configs import option
from annotated.inference.bleu import paired_bootstrap
from experiments.commands import invocation
from experiments.folders import add_out_dir, check_out_dir, relative
from experiments.report import first_sentences, markdown_table, published
from experiments.scoring import multi30k_config, score, split_text

SPLITS = {"valid": "val", "test": "test2016"}
METRICS = {"lowercased BLEU": True, "sacreBLEU (cased)": False}      # name: lowercase


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.multi30k_paired",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", nargs=4, action="append", required=True,
                        metavar=("NAME", "CKPT", "BEAM", "ALPHA"),
                        help="a checkpoint and its decoding; give exactly two, the first is "
                             "compared with the second")
    parser.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                                           "ANNOTATED_DATA_DIR)")
    parser.add_argument("--limit", type=number(at_least(10)), default=None,
                        help="only the first N sentences of each set (a smoke test)")
    add_out_dir(parser)
    args = parser.parse_args(argv)
    if len(args.system) != 2:
        parser.error(f"give --system exactly twice (the system, then its baseline); got "
                     f"{len(args.system)}")
    try:
        args.system = [system(*words) for words in args.system]
    except ValueError as e:
        parser.error(str(e))
    if args.system[0]["name"] == args.system[1]["name"]:
        parser.error(f"the two --system are both named {args.system[0]['name']!r}; give each "
                     f"its own name")
    return args


BEAM = option("beam_size")                # as --beam-size everywhere else
ALPHA = option("alpha")


def system(name: str, checkpoint: str, beam: str, alpha: str) -> dict:
    """One --system; a ValueError naming it if its beam size or alpha is not allowed (the
    rules and words of --beam-size and --alpha: a beam of 1 to 1,000, a finite alpha >= 0)."""
    if not name.strip() or any(c in name for c in "|`\n"):
        raise ValueError(f"argument --system: NAME {name!r} must be a word or words, without "
                         f"| or ` (it heads a table column)")
    values = {}
    for what, parse, text in (("BEAM", BEAM, beam), ("ALPHA", ALPHA, alpha)):
        try:
            values[what] = parse(text)
        except argparse.ArgumentTypeError as e:
            raise ValueError(f"argument --system {name}: {what} {e}") from None
    return dict(name=name, checkpoint=Path(checkpoint).expanduser(), beam_size=values["BEAM"],
                alpha=values["ALPHA"])


@command
def main(argv=None):
    args = parse_args(argv)
    published()                        # the scores ours are set beside, checked before any work
    for s in args.system:
        if not s["checkpoint"].is_file():
            raise DataError(f"--system {s['name']}: its CKPT, {s['checkpoint']}, is "
                            f"{'a folder' if s['checkpoint'].is_dir() else 'no file'}; give "
                            f"the checkpoint file (ckpt_*.pt, or an average)")
    config = same_corpus(args.system)
    refuse_one_system_twice(*args.system)
    check_out_dir(args.out_dir, args.limit)
    result = {"systems": [dict(s, checkpoint=relative(s["checkpoint"])) for s in args.system],
              "pair": [config.source_lang, config.target_lang]}
    for split, shown in SPLITS.items():
        sources, refs = split_text(config, args.data_dir, split)
        total, sources, refs = len(sources), sources[:args.limit], refs[:args.limit]
        hyps = [score(s["checkpoint"], sources, refs, beam_size=s["beam_size"],
                      alpha=s["alpha"], max_extra=50, batch_tokens=2000)["hypotheses"]
                for s in args.system]
        if hyps[0] == hyps[1]:
            say_error(f"note: on {shown} the two systems write the same translations: the "
                      f"comparison can only find no difference")
        result[shown] = {metric: paired_bootstrap(*hyps, refs, lowercase=lowercase)
                         for metric, lowercase in METRICS.items()}
        if len(sources) < total:                      # a smoke test (--limit) says so
            result.setdefault("limited", {})[shown] = first_sentences(len(sources), total,
                                                                      shown)
        print(f"{shown}: " + "; ".join(f"{m} {r['bleu']} against {r['baseline_bleu']}, "
                                       f"p {r['p']}" for m, r in result[shown].items()))
    write_files({args.out_dir / "multi30k_paired.json": json.dumps(result, indent=1),
                 args.out_dir / "multi30k_paired.md": render_markdown(
                     result, invocation("experiments.multi30k_paired", argv))})
    print(f"wrote {args.out_dir / 'multi30k_paired.md'}")


def refuse_one_system_twice(a: dict, b: dict) -> None:
    """Refuse two systems that are one checkpoint decoded the same way: they write the same
    translations, and decoding them twice takes minutes to find no difference."""
    if os.path.samefile(a["checkpoint"], b["checkpoint"]) and \
            (a["beam_size"], a["alpha"]) == (b["beam_size"], b["alpha"]):
        raise DataError(f"--system {a['name']} and --system {b['name']} are the same checkpoint "
                        f"({b['checkpoint']}) with the same beam and alpha: they would write the "
                        f"same translations; give the other system's checkpoint or settings")


def same_corpus(systems: list[dict]):
    """The first system's config, after checking that both translate the same language pair
    of the same dataset (else their test sets differ and nothing is paired)."""
    configs = [multi30k_config(s["checkpoint"]) for s in systems]
    keys = [(c.dataset, c.source_lang, c.target_lang) for c in configs]
    if keys[0] != keys[1]:
        raise DataError(f"{systems[0]['checkpoint']} translates {keys[0]} but "
                        f"{systems[1]['checkpoint']} translates {keys[1]} (dataset, source, "
                        f"target): a paired comparison needs the same sentences")
    return configs[0]


def render_markdown(result: dict, command_line: str) -> str:
    a, b = (s["name"] for s in result["systems"])
    lines = ["# Multi30k: is the difference real? A paired bootstrap", "",
             f"Written by `{command_line}` (do not edit by hand).", "",
             "Both systems translate the same sentences. Each row draws 1,000 test sets of the "
             "same size from the real one, with replacement, scores both systems on every draw "
             "and reports the 95% interval of each score and of their difference, and the share "
             f"of draws on which {b} scores as well as {a} or better (a one-sided p-value: under "
             "5% means the lead would survive another sample of sentences like these).", ""]
    if result.get("limited"):
        lines += [f"A smoke test (--limit): scored on {' and on '.join(result['limited'].values())}"
                  f" only.", ""]
    lines += markdown_table(["system", "checkpoint", "beam", "alpha"],
                            [[s["name"], f"`{s['checkpoint']}`", s["beam_size"], s["alpha"]]
                             for s in result["systems"]])
    for shown in SPLITS.values():
        rows = [[metric, f"{r['bleu']} {list(r['interval'])}",
                 f"{r['baseline_bleu']} {list(r['baseline_interval'])}",
                 "{:+.2f} [{:+.2f}, {:+.2f}]".format(r["difference"], *r["difference_interval"]),
                 f"{r['p']:.1%}"]
                for metric, r in result[shown].items()]
        n = next(iter(result[shown].values()))["sentences"]
        lines += ["", f"## {shown} ({n:,} sentences)", ""] + markdown_table(
            ["metric", f"{a} [95%]", f"{b} [95%]", "difference [95%]",
             f"{b} as good or better"], rows)
    lines += published_lines(result)
    return "\n".join(lines) + "\n"


def published_lines(result: dict) -> list[str]:
    """Where each published test2016 number for this pair falls against each system's 95%
    interval: outside it, the gap is more than the sampling of test sentences explains."""
    theirs = published().get(tuple(result["pair"]), [])
    if not theirs:
        return []
    lower = result["test2016"]["lowercased BLEU"]
    ours = [(result["systems"][0]["name"], lower["bleu"], lower["interval"]),
            (result["systems"][1]["name"], lower["baseline_bleu"], lower["baseline_interval"])]
    lines = ["", "## Beside the published test2016 numbers", "",
             "The published systems' translations are not available, so this is no paired test: "
             "it says whether a published number lies within what the sample of test sentences "
             "alone moves each of our scores.", ""]
    for system_text, bleu, _, _ in theirs:
        who = system_text.split(":")[0]
        for name, score_, (lo, hi) in ours:
            where = "above" if bleu > hi else "below" if bleu < lo else "inside"
            lines.append(f"- {who}, {bleu}: {where} the 95% interval of {name} on test2016 "
                         f"({score_} [{lo}, {hi}], lowercased).")
    return lines


if __name__ == "__main__":
    main()
