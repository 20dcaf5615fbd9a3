"""A small-scale Table 3 on Multi30k: rows A, D and E of the paper's ablation, each
trained with the same budget (the same number of optimizer steps on the same batches).

    python -m results.table3_small [--steps 2000] [--seeds 3] [--reuse] [--data-dir D]
        [--runs-dir runs/table3_small] [key=value ...]

The paper varies one thing at a time around its base model and reports perplexity and BLEU on
its development set; we do the same around a reduced model (`SMALL` below, smaller than the
`multi30k` preset so that the five runs of 2,000 steps take about an hour on a 2-core CPU) and
score on Multi30k's val split with the paper's beam search. Each variant is one run with one
seed; the base row is also trained with further seeds, and their spread says how large a
difference has to be before it means something (the paper's own differences in rows A, D and E
are about a point of BLEU). key=value overrides fields of every row's config before the row's
own change (the tests train tiny rows on the shipped sample: dataset=multi30k_sample N=1 ...).
"""
import argparse
import json
import shlex
import shutil
from pathlib import Path

from annotated.configs import apply_overrides, get
from annotated.data.corpus import load_corpus
from annotated.tools.cli import at_least, command, hidden_alias
from annotated.training.checkpoint import checkpoint_name, config_from, load
from results.common import (ROOT, add_training_arguments, invocation, markdown_table,
                            read_metrics, rounded, score, train, train_command)

SMALL = dict(N=2, d_model=128, d_ff=512, h=8, d_k=16, d_v=16, max_tokens=2048, warmup_steps=400,
             eval_every=10_000, ckpt_every=10_000, ckpt_minutes=10_000, keep_last=1)
ROWS = {   # name: (paper row, what changes, the paper's dev PPL and BLEU for that row)
    "base": ("base", {}, (4.92, 25.8)),
    "A: h=1": ("A1", dict(h=1, d_k=128, d_v=128), (5.29, 24.9)),
    "D: eps_ls=0": ("D3", dict(eps_ls=0.0), (4.67, 25.3)),
    "D: P_drop=0": ("D1", dict(P_drop=0.0), (5.77, 24.6)),
    "E: learned positions": ("E", dict(positional="learned", max_len=256), (4.92, 25.7)),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m results.table3_small",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=at_least(1), default=2000)
    parser.add_argument("--seeds", type=at_least(1), default=3,
                        help="train the base row with this many seeds, to measure the noise")
    parser.add_argument("--reuse", action="store_true",
                        help="score, without retraining, runs that already finished this config")
    add_training_arguments(parser, "override fields of every row (before the row's change)")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs" / "table3_small",
                        help="the folder of the rows' training runs (default runs/table3_small)")
    hidden_alias(parser, "--runs", "runs_dir", Path)
    parser.add_argument("--limit", type=at_least(1), default=None,
                        help="score only N val sentences")
    return parser.parse_intermixed_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    config = apply_overrides(get("multi30k").override(**SMALL), args.overrides)
    sources, references = val_sentences(config, args.data_dir, args.limit)
    results = {}
    for name, row, folder, changes, paper in jobs(config.seed, args.seeds):
        results[name] = dict(paper_row=row, paper_ppl=paper[0], paper_bleu=paper[1],
                             **run_row(args, args.runs_dir / folder, changes, sources, references))
        print(f"{name}: BLEU {results[name]['bleu']}  PPL {results[name]['ppl']}", flush=True)
    (args.out_dir / "table3_small.json").write_text(json.dumps(results, indent=1))
    text = render_markdown(results, invocation("results.table3_small", argv), args.steps,
                           len(sources))
    (args.out_dir / "table3_small.md").write_text(text)
    print(f"wrote {args.out_dir / 'table3_small.md'}")


def row_overrides(user: list[str], changes: dict) -> list[str]:
    """key=value items of one row: SMALL, then the user's, then the row's change, each key
    once, in the order they apply (the row's change last)."""
    items = {**SMALL, **dict(item.partition("=")[::2] for item in user)}
    items = {k: v for k, v in items.items() if k not in changes}
    return [f"{k}={v}" for k, v in {**items, **changes}.items()]


def jobs(seed: int, seeds: int) -> list[tuple]:
    """(name, paper row, run folder, change, the paper's PPL and BLEU) of every run: the rows,
    with the base row's further seeds right after it."""
    found = [(name, row, row, changes, paper) for name, (row, changes, paper) in ROWS.items()]
    found[1:1] = [(f"base, seed {seed + i}", "base", f"base_seed{seed + i}", dict(seed=seed + i),
                   ROWS["base"][2]) for i in range(1, seeds)]
    return found


def val_sentences(config, data_dir, limit) -> tuple[list[str], list[str]]:
    """The first `limit` val sources and references, as text."""
    corpus = load_corpus(config, data_dir=data_dir, log=lambda *_: None)
    tok = corpus.tokenizer
    sources = [tok.decode(s.tolist()) for s, _ in corpus.valid][:limit]
    references = [tok.decode(t.tolist()) for _, t in corpus.valid][:limit]
    return sources, references


def finished_run(run: Path, config, steps: int) -> Path | None:
    """The run's final checkpoint if it already trained `config` for `steps` steps."""
    ckpt = run / checkpoint_name(steps)
    if ckpt.is_file() and config_from(load(ckpt), ckpt) == config:
        return ckpt
    return None


def run_row(args, run: Path, changes: dict, sources, references) -> dict:
    """Train one row in `run` (or, with --reuse, take its finished run) and score it: its
    seed, whether it was reused, its training command and minutes, val BLEU and perplexity."""
    overrides = row_overrides(args.overrides, changes)
    intended = apply_overrides(get("multi30k"), overrides)
    options = dict(max_steps=args.steps, overrides=overrides, data_dir=args.data_dir)
    ckpt = finished_run(run, intended, args.steps) if args.reuse else None
    reused = ckpt is not None
    if not reused:
        shutil.rmtree(run, ignore_errors=True)             # a fresh run, never a mixed one
        train("multi30k", run, **options)
        ckpt = run / checkpoint_name(args.steps)
    log = read_metrics(run)
    seconds = max(e.get("elapsed", 0) for e in log)       # training time (validation lines: none)
    (valid,) = [e for e in log if e["split"] == "valid" and e["step"] == args.steps]
    s = score(ckpt, sources, references, beam_size=4, alpha=0.6, max_extra=50)
    return dict(seed=intended.seed, reused=reused,
                command=shlex.join(train_command("multi30k", run, **options)),
                minutes=round(seconds / 60, 1), bleu=s["bleu"], signature=s["signature"],
                **rounded(valid))


def render_markdown(results: dict, command_line: str, steps: int, sentences: int) -> str:
    """table3_small.md from table3_small.json's contents; `command_line` is the invocation that
    wrote it, every run trained `steps` steps and was scored on `sentences` val sentences."""
    lines = ["# Table 3, small scale, on Multi30k", "",
             f"Written by `{command_line}` (do not edit by hand). Every run: the `multi30k` "
             "preset with " + ", ".join(f"{k}={v}" for k, v in SMALL.items())
             + f", {steps} steps, then the row's change. Scored on Multi30k val "
             f"({sentences:,} sentences; sacreBLEU of the detokenized BPE text, beam 4, "
             "alpha 0.6); perplexity per BPE token; minutes of training as logged by the run.", ""]
    lines += markdown_table(
        ["row", "change", "val PPL", "val BLEU", "paper row: PPL / BLEU", "minutes"],
        [[r["paper_row"], name, r["ppl"], r["bleu"],
          f"{r['paper_ppl']} / {r['paper_bleu']}", r["minutes"]]
         for name, r in results.items()])
    seeds = [r for r in results.values() if r["paper_row"] == "base"]
    if len(seeds) > 1:
        lines += ["", f"The base row with {len(seeds)} seeds (initialisation, batch order and "
                  f"dropout all change): val PPL {min(r['ppl'] for r in seeds)} to "
                  f"{max(r['ppl'] for r in seeds)}, val BLEU {min(r['bleu'] for r in seeds)} to "
                  f"{max(r['bleu'] for r in seeds)}. A row's difference from the base row that "
                  "falls inside this spread may be noise."]
    lines += ["", "Commands (each row's training run; rows marked *reused* were trained by an "
              "earlier invocation with the same config and only scored by this one):", ""]
    lines += [f"- `{r['command']}`" + (" *reused*" if r["reused"] else "")
              for r in results.values()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
