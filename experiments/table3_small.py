"""A small-scale Table 3 on Multi30k: every row of the paper's ablation (A to E), each
trained with the same budget (the same number of optimizer steps on the same batches).

    python -m experiments.table3_small [--steps 2000] [--seeds 3] [--rows [ROW ...]] [--reuse]
        [--data-dir D] [--runs-dir runs/table3_small] [key=value ...]

The paper varies one thing at a time around its base model and reports perplexity and BLEU on
its development set; we do the same around a reduced model (`SMALL` below, smaller than the
`multi30k` preset so that one run of 2,000 steps takes about twenty minutes of one CPU core) and
score on Multi30k's val split with the paper's beam search. Each variant is one run with one
seed; the base row is also trained with further seeds, and their spread says how large a
difference has to be before it means something (most of the paper's differences are under a
point of BLEU). Rows may be trained in several sittings: `--rows` picks the rows to train now,
and `--reuse` keeps what an earlier invocation recorded; `--rows` with no row trains nothing
and rewrites table3_small.md from table3_small.json (no corpus needed). key=value overrides
fields of every row's config before the row's own change (the tests train tiny rows on the
shipped sample: dataset=multi30k_sample N=1 ...).

A row trained afresh replaces its run folder (RUNS_DIR/ROW) only if that folder is new, empty,
or holds nothing but a run this script trained there (it marks its folders with ROW_RECORD);
any other folder is refused before anything trains. The table states the budget and the val
sentences its rows were recorded with (per row where they differ), never a flag that trained
nothing; a damaged table3_small.json is one error naming it; a smoke test (--limit) never
writes into the committed results/, and no run folder goes inside results/ or annotated/.
"""
import argparse
import json
import re
import shlex
import shutil
from collections import Counter
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, number, path
from annotated.base.errors import DataError
from annotated.base.files import atomic_open, write_files
from annotated.base.settings import at_least
from annotated.configs import PAPER, apply_overrides, get
from annotated.data.corpus import load_corpus
from annotated.store.checkpoint_file import checkpoint_name, checkpoints, config_from, load
from annotated.training.run_dir import read_metrics
from experiments.commands import invocation, recorded, train, train_command
from experiments.folders import (ROOT, add_training_arguments, check_out_dir, check_run_folder,
                                 committed_folder)
from experiments.report import first_sentences, markdown_table
from experiments.results_files import (BLEU, COUNT, PERPLEXITY, Record, cased_and_lowercased,
                                      signature_of)
from experiments.scoring import rounded, score

SMALL = dict(N=2, d_model=128, d_ff=512, h=8, d_k=16, d_v=16, max_tokens=2048, warmup_steps=400,
             eval_every=10_000, ckpt_every=10_000, ckpt_minutes=10_000, keep_last=1)
# The paper's rows, each scaled to SMALL: widths by d_model 128 / 512 = 1/4, depth N=2 for 6.
# Row C2 (N=4, between C1's 2 and the base's 6) has no whole-number counterpart below N=2.
ROWS = {   # name: (paper row, what changes)
    "base": ("base", {}),
    "A: h=1": ("A1", dict(h=1, d_k=128, d_v=128)),
    "A: h=4": ("A2", dict(h=4, d_k=32, d_v=32)),
    "A: h=16": ("A3", dict(h=16, d_k=8, d_v=8)),
    "A: h=32": ("A4", dict(h=32, d_k=4, d_v=4)),
    "B: d_k=4": ("B1", dict(d_k=4)),
    "B: d_k=8": ("B2", dict(d_k=8)),
    "C: N=1": ("C1", dict(N=1)),
    "C: N=3": ("C3", dict(N=3)),
    "C: d_model=64": ("C4", dict(d_model=64, d_k=8, d_v=8)),
    "C: d_model=256": ("C5", dict(d_model=256, d_k=32, d_v=32)),
    "C: d_ff=256": ("C6", dict(d_ff=256)),
    "C: d_ff=1024": ("C7", dict(d_ff=1024)),
    "D: P_drop=0": ("D1", dict(P_drop=0.0)),
    "D: P_drop=0.2": ("D2", dict(P_drop=0.2)),
    "D: eps_ls=0": ("D3", dict(eps_ls=0.0)),
    "D: eps_ls=0.2": ("D4", dict(eps_ls=0.2)),
    "E: learned positions": ("E", dict(positional="learned", max_len=256)),
}
PAPER_ROWS = list(dict.fromkeys(row for row, _ in ROWS.values()))


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.table3_small",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=number(at_least(1)), default=2000,
                        help="optimizer steps each row trains (default 2000)")
    parser.add_argument("--seeds", type=number(at_least(1)), default=3,
                        help="train the base row with this many seeds, to measure the noise")
    parser.add_argument("--rows", nargs="*", type=paper_row, default=PAPER_ROWS,
                        metavar="ROW", help="train and score only these paper rows (base, A1, "
                        "..., E; not C2, see the table); the others keep what table3_small.json recorded (--rows "
                        "alone trains nothing and rewrites table3_small.md)")
    parser.add_argument("--reuse", action="store_true",
                        help="take rows that table3_small.json recorded with this config, and "
                        "score without retraining runs that already finished it")
    add_training_arguments(parser, "override fields of every row (before the row's change)")
    parser.add_argument("--runs-dir", type=path, default=ROOT / "runs" / "table3_small",
                        help="the folder of the rows' training runs (default runs/table3_small)")
    parser.add_argument("--limit", type=number(at_least(1)), default=None,
                        help="score only N val sentences")
    return parser.parse_intermixed_args(argv)


def paper_row(text: str) -> str:
    """A row of the paper's Table 3 that this script trains; C2 is left out, and says why."""
    if text == "C2":
        raise argparse.ArgumentTypeError(
            "C2 is left out: it sets N=4, between C1's N=2 and the base's N=6, and at this "
            "scale (the base with N=2, C1 with N=1) no whole number lies between; the rows are "
            + " ".join(PAPER_ROWS))
    if text not in PAPER_ROWS:
        raise argparse.ArgumentTypeError(f"no row {text!r}; the rows are {' '.join(PAPER_ROWS)}")
    return text


@command
def main(argv=None):
    args = parse_args(argv)
    check_out_dir(args.out_dir, args.limit)
    check_run_folder(args.runs_dir, "--runs-dir")
    config = apply_overrides(get("multi30k").override(**SMALL), args.overrides)
    kept = args.out_dir / "table3_small.json"
    records = read_records(kept)
    if not args.rows:                    # --rows alone: the table again, the json as it is
        if not records:
            what = "holds no rows" if kept.exists() else "does not exist"
            raise DataError(f"{kept} {what}, so there is no table to rewrite; name the rows to "
                            f"train with --rows ROW ...")
        write_table(args, {name: as_recorded(r) for name, r in records.items()}, argv)
        return
    chosen = [job for job in jobs(config.seed, args.seeds) if job[1] in args.rows]
    note_clashes(args.overrides, chosen)
    check_one_budget(args, records, config.seed)
    sources, references, total = val_sentences(config, args.data_dir, args.limit)
    plans = {name: plan_row(args, args.runs_dir / folder, changes, records.get(name),
                            len(sources)) for name, _, folder, changes in chosen}
    results = {}
    for name, row, folder, changes in jobs(config.seed, args.seeds):
        if row not in args.rows:
            if name in records:
                results[name] = as_recorded(records[name])
            continue
        results[name] = {"paper_row": row, "paper_ppl": PAPER[row].ppl,
                         "paper_bleu": PAPER[row].bleu,
                         **run_row(args, name, args.runs_dir / folder, changes, sources,
                                   references, records.get(name), plans[name])}
        if len(sources) < total:
            results[name]["limited"] = first_sentences(len(sources), total)
        print(f"{name}: BLEU {results[name]['bleu']}  PPL {results[name]['ppl']}", flush=True)
    write_table(args, results, argv, kept)


def write_table(args, results: dict, argv, kept: Path | None = None):
    """table3_small.md, and with `kept` the json of the rows beside it (all or nothing)."""
    text = render_markdown(results, invocation("experiments.table3_small", argv))
    files = {args.out_dir / "table3_small.md": text}
    if kept is not None:
        files[kept] = json.dumps(results, indent=1)
    write_files(files)
    print(f"wrote {', '.join(map(str, files))}")


# What every recorded row holds, as the table shows it: a kind, or a number's rule.
RECORDED = {"paper_row": str, "paper_ppl": PERPLEXITY, "paper_bleu": BLEU, "command": str,
            "sentences": at_least(1), "minutes": COUNT, "ppl": PERPLEXITY, "bleu": BLEU}


def read_records(kept: Path) -> dict:
    """The rows an earlier invocation recorded in table3_small.json ({} if there is none),
    each checked to hold what the table shows, every number finite and in its range (and
    lowercase_bleu, where a row has it): a damaged file is one error naming it."""
    if not kept.is_file():
        return {}
    record = Record(kept, "python -m experiments.table3_small --rows ROW ..., or delete it to "
                          "start afresh")
    for name, row in record.data.items():
        record.get(name, kind=dict)
        if (paper := paper_row_of(name)) is None:
            raise DataError(f"{kept}: row {name!r} is none of this script's rows ({', '.join(ROWS)}"
                            f", and 'base, seed N' for the base row's further seeds); "
                            f"{record.fix}")
        for key, check in RECORDED.items():
            record.get(name, key, **({"kind": check} if isinstance(check, type) else
                                     {"rule": check}))
        if row["paper_row"] != paper:
            raise DataError(f"{kept}: row {name!r} says paper_row {row['paper_row']!r}, where "
                            f"that row is the paper's {paper!r}; {record.fix}")
        signature_of(record, name, "signature", case="mixed")
        if "lowercase_bleu" in row:
            cased_and_lowercased(record, name)
            signature_of(record, name, "lowercase_signature", case="lc")
        if steps_of(row) is None:
            raise DataError(f"{kept}: row {name!r} has no --max-steps in its command; "
                            f"{record.fix}")
    return record.data


def paper_row_of(name: str) -> str | None:
    """The paper's row of one of this script's rows, by its name (None for no such row)."""
    if re.fullmatch(r"base, seed \d+", name):
        return "base"
    return ROWS[name][0] if name in ROWS else None


def note_clashes(user: list[str], chosen: list[tuple]) -> None:
    """A note for each key=value of the user's that a chosen row's own change sets (h=3 with
    row A1, whose change is h=1): the row's change wins, so that row never trains with it."""
    given = dict(item.partition("=")[::2] for item in user)
    for name, _, _, changes in chosen:
        clash = [key for key in given if key in changes and name in ROWS]
        if clash:
            print(f"note: row {name!r} changes {', '.join(clash)} itself "
                  f"({' '.join(f'{k}={v}' for k, v in changes.items())}), so its run does not "
                  f"take {' '.join(f'{k}={given[k]}' for k in clash)}", flush=True)


def row_overrides(user: list[str], changes: dict) -> list[str]:
    """key=value items of one row: SMALL, then the user's, then the row's change, each key
    once, in the order they apply (the row's change last)."""
    items = {**SMALL, **dict(item.partition("=")[::2] for item in user)}
    items = {k: v for k, v in items.items() if k not in changes}
    return [f"{k}={v}" for k, v in {**items, **changes}.items()]


def jobs(seed: int, seeds: int) -> list[tuple]:
    """(name, paper row, run folder, change) of every run: the rows in the paper's order, with
    the base row's further seeds right after it."""
    found = [(name, row, row, changes) for name, (row, changes) in ROWS.items()]
    found[1:1] = [(f"base, seed {seed + i}", "base", f"base_seed{seed + i}", dict(seed=seed + i))
                  for i in range(1, seeds)]
    return found


def val_sentences(config, data_dir, limit) -> tuple[list[str], list[str], int]:
    """The first `limit` val sources and references, as text, and how many val has."""
    corpus = load_corpus(config, data_dir=data_dir, log=lambda *_: None)
    tok = corpus.tokenizer
    sources = [tok.decode(s.tolist()) for s, _ in corpus.valid][:limit]
    references = [tok.decode(t.tolist()) for _, t in corpus.valid][:limit]
    return sources, references, len(corpus.valid)


def finished_run(run: Path, config, steps: int) -> Path | None:
    """The run's final checkpoint if it already trained `config` for `steps` steps."""
    ckpt = run / checkpoint_name(steps)
    if ckpt.is_file() and config_from(load(ckpt), ckpt) == config:
        return ckpt
    return None


def as_recorded(record: dict) -> dict:
    """A row kept from table3_small.json: trained and scored by an earlier invocation."""
    return {**record, "source": "recorded"}


def shared_settings(results: dict) -> dict:
    """The settings of SMALL's keys the rows were trained with, as their commands record them
    (the user's key=value included): for each key, the value most rows share, the rows'
    changes aside; SMALL's own where no command names the key."""
    found = {key: Counter() for key in SMALL}
    for record in results.values():
        for word in shlex.split(record.get("command", "")):
            key, _, value = word.partition("=")
            if key in found and value:
                found[key][value] += 1
    return {key: counts.most_common(1)[0][0] if counts else SMALL[key]
            for key, counts in found.items()}


def steps_of(record: dict) -> int | None:
    """The steps a recorded row trained: its command's --max-steps (None if it has none)."""
    try:
        words = shlex.split(record["command"])
        return int(words[words.index("--max-steps") + 1])
    except (ValueError, IndexError):
        return None


def corpus_of(record: dict) -> str:
    """The corpus a recorded row trained and was scored on: Multi30k, unless its command
    overrides the dataset (the tests' rows train on the shipped sample)."""
    dataset = overrides_of(record).get("dataset", "multi30k")
    return "Multi30k" if dataset == "multi30k" else f"dataset={dataset}"


def overrides_of(record: dict) -> dict:
    """The key=value items of a recorded row's training command."""
    words = shlex.split(record["command"])
    return dict(w.partition("=")[::2] for w in words if "=" in w and not w.startswith("-"))


def same_row(record: dict | None, overrides: list[str], steps: int, sentences: int) -> bool:
    """Whether a row recorded by an earlier invocation trained these overrides for `steps`
    steps and was scored on `sentences` val sentences with both metrics (flags may have been
    renamed since; a row recorded without lowercased BLEU is scored again)."""
    if (record is None or record.get("sentences") != sentences
            or "lowercase_bleu" not in record):
        return False
    return same_training(record, overrides, steps)


def same_training(record: dict, overrides: list[str], steps: int) -> bool:
    """Whether a recorded row trained these overrides (key=value) for `steps` steps."""
    return (overrides_of(record) == dict(o.partition("=")[::2] for o in overrides)
            and steps_of(record) == steps)


def check_one_budget(args, records: dict, seed: int) -> None:
    """Before anything trains: rows kept from an earlier invocation with another budget or
    other settings than the rows trained now are refused for the committed table, which
    compares rows trained alike, and named in a note elsewhere (the table then says so too)."""
    other = [name for name, row, _, changes in jobs(seed, args.seeds)
             if name in records and row not in args.rows
             and not same_training(records[name], row_overrides(args.overrides, changes),
                                   args.steps)]
    if not other:
        return
    now = (f"--steps {args.steps:,}"
           f"{' with ' + ' '.join(args.overrides) if args.overrides else ''}")
    if committed_folder(args.out_dir) is not None:
        raise DataError(f"--out-dir {args.out_dir}: the committed table keeps row {other[0]!r}, "
                        f"trained {steps_of(records[other[0]]):,} steps with the settings its "
                        f"command records; {now} would train --rows {' '.join(args.rows)} "
                        f"otherwise, and the table compares rows trained alike: give the same "
                        f"--steps and settings, or write elsewhere (--out-dir runs/table3)")
    print(f"note: {args.out_dir / 'table3_small.json'} keeps {len(other)} row(s) trained "
          f"otherwise than {now} ({', '.join(other)}); the table will mix them with the rows "
          f"trained now, and say so. To compare rows trained alike, train those too (--rows) "
          f"or write to another --out-dir", flush=True)


def training_of(record: dict, besides) -> tuple:
    """How a recorded row trained, the keys `besides` aside: its steps and its other
    settings."""
    return steps_of(record), tuple(sorted((k, v) for k, v in overrides_of(record).items()
                                          if k not in besides))


def trained_otherwise(results: dict) -> list[str]:
    """The rows whose steps, or settings other than their own change, differ from the base
    row's: each row is set beside the base row with its own change's keys left out of both,
    since a row that sets a key the base row also gives (h, N, d_ff) differs from it there
    alone. Without a base row there is nothing to set them beside, and the table says that row
    is missing."""
    if "base" not in results:
        return []
    def own(name):
        return ROWS[name][1] if name in ROWS else {"seed": None}    # a further seed's change
    return [name for name, record in results.items()
            if training_of(record, own(name)) != training_of(results["base"], own(name))]


# The files a training run writes into its folder, and the record this script adds to the
# folders it makes: a row's folder that holds anything else is not this script's to clear.
ROW_RECORD = "table3_small_row.json"
RUN_FILES = re.compile(r"ckpt_\d+\.pt|metrics\.jsonl|\.lock|\..+\.tmp")


def check_clearable(run: Path) -> None:
    """Refuse to clear a row's run folder for a fresh run unless it is missing, empty, or
    holds only a run this script trained there (its ROW_RECORD beside the trainer's files):
    a folder of the same name may hold the user's own files or another run."""
    if not run.exists():
        return
    if not run.is_dir():
        raise DataError(f"{run} is a file, where this row's run folder goes; move it away or "
                        f"give another --runs-dir")
    names = sorted(p.name for p in run.iterdir())
    foreign = [n for n in names if n != ROW_RECORD and not RUN_FILES.fullmatch(n)]
    if names and (foreign or ROW_RECORD not in names):
        shown = foreign or names
        raise DataError(f"refusing to clear {run} for a fresh run of its row: it holds "
                        f"{', '.join(shown[:3])}{' ...' if len(shown) > 3 else ''}, which "
                        f"experiments.table3_small did not write there; move them out of it, or "
                        f"give another --runs-dir")


def fresh_row_folder(run: Path, name: str, reuse: bool) -> None:
    """Clear the row's folder (checked by check_clearable) and mark it as this script's; an
    earlier run there is named, with why it is not kept (`reuse`: whether --reuse was given)."""
    check_clearable(run)
    if held := checkpoints(run) if run.exists() else []:
        why = ("with other settings or not finished" if reuse else
               "and --reuse was not given (it keeps a finished run of the same settings)")
        print(f"note: {run} held an earlier run of row {name} ({len(held)} checkpoint"
              f"{'s' if len(held) > 1 else ''}, up to {held[-1].name}), trained by this script "
              f"{why}; it is replaced by a fresh run", flush=True)
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    with atomic_open(run / ROW_RECORD, "w") as f:
        f.write(json.dumps({"written_by": "python -m experiments.table3_small", "row": name}) + "\n")


def plan_row(args, run: Path, changes: dict, record, sentences: int) -> tuple[str, Path | None]:
    """How a row is made, decided before any row trains: "recorded" (with --reuse, as an
    earlier invocation trained and scored it), "reused" (with --reuse, its finished run scored
    again: the checkpoint) or "trained" afresh in `run`, once its folder is known clearable."""
    overrides = row_overrides(args.overrides, changes)
    if args.reuse and same_row(record, overrides, args.steps, sentences):
        return "recorded", None
    intended = apply_overrides(get("multi30k"), overrides)
    ckpt = finished_run(run, intended, args.steps) if args.reuse else None
    if ckpt is not None:
        return "reused", ckpt
    check_clearable(run)
    return "trained", None


def run_row(args, name: str, run: Path, changes: dict, sources, references, record,
            plan: tuple) -> dict:
    """One row, as `plan` (plan_row's) says: as recorded; its finished run in `run` scored
    again; or trained afresh in `run` and scored. Returns its seed, where it came from, its
    training command and minutes, val BLEU (cased and lowercased) and perplexity."""
    source, ckpt = plan
    if source == "recorded":
        return as_recorded(record)
    overrides = row_overrides(args.overrides, changes)
    intended = apply_overrides(get("multi30k"), overrides)
    options = dict(max_steps=args.steps, overrides=overrides, data_dir=args.data_dir)
    if ckpt is None:
        fresh_row_folder(run, name, args.reuse)        # a fresh run, never a mixed one
        train("multi30k", run, **options)
        ckpt = run / checkpoint_name(args.steps)
    log = read_metrics(run)
    seconds = max(e.get("elapsed", 0) for e in log)       # training time (validation lines: none)
    (valid,) = [e for e in log if e["split"] == "valid" and e["step"] == args.steps]
    s = score(ckpt, sources, references, beam_size=4, alpha=0.6, max_extra=50)
    return dict(seed=intended.seed, source=source, sentences=len(sources),
                command=recorded(train_command("multi30k", run, **options)),
                minutes=round(seconds / 60, 1), bleu=s["bleu"], signature=s["signature"],
                lowercase_bleu=s["lowercase_bleu"], lowercase_signature=s["lowercase_signature"],
                **rounded(valid))


def signature_lines(results: dict) -> list[str]:
    """The sacreBLEU signatures of the table, and which rows predate the lowercased metric."""
    cased = sorted({r["signature"] for r in results.values()})
    lower = sorted({r["lowercase_signature"] for r in results.values()
                    if "lowercase_signature" in r})
    lines = ["Signatures: cased " + ", ".join(f"`{x}`" for x in cased)
             + ("; lowercased " + ", ".join(f"`{x}`" for x in lower) if lower else "") + "."]
    cased_only = [name for name, r in results.items() if "lowercase_bleu" not in r]
    if cased_only:
        lines += ["", f"Lowercased BLEU was not recorded for {len(cased_only)} of the "
                  f"{len(results)} runs (marked -): they were scored before this table had the "
                  "column. `--reuse --rows ROW ...` scores a row's finished run again, or trains "
                  "it afresh, and fills it in."]
    return lines + [""]


def shared(results: dict, value) -> tuple:
    """(the value every row shares, None), or (None, each row's value) when rows differ."""
    values = [value(r) for r in results.values()]
    return (values[0], None) if len(set(values)) == 1 else (None, values)


def render_markdown(results: dict, command_line: str) -> str:
    """table3_small.md from table3_small.json's contents; `command_line` is the invocation that
    wrote it. The budget and the val sentences are the rows' own, as recorded: stated once if
    every row shares them, else in a column of their own."""
    steps, row_steps = shared(results, steps_of)
    scored, row_scored = shared(results, lambda r: r.get("limited", f"{r['sentences']:,} "
                                                                   "sentences"))
    corpus = " and ".join(dict.fromkeys(corpus_of(r) for r in results.values()))
    lines = [f"# Table 3, small scale, on {corpus}", "",
             f"Written by `{command_line}` (do not edit by hand). Every run: the `multi30k` "
             "preset with " + ", ".join(f"{k}={v}" for k, v in shared_settings(results).items())
             + (f", {steps} steps" if row_steps is None else ", the steps of its row (column "
                "steps)") + f", then the row's change. Scored on {corpus} val "
             f"({scored if row_scored is None else 'the sentences of its row'}, beam 4, alpha "
             "0.6) with sacreBLEU on the detokenized output, cased and lowercased (-lc, the "
             "Multi30k literature's metric); perplexity per BPE token; minutes of training as "
             "logged by the run.", ""]
    extra = ([("steps", row_steps)] if row_steps else []) + \
        ([("val sentences", row_scored)] if row_scored else [])
    lines += signature_lines(results)
    lines += markdown_table(
        ["row", "change", "val PPL", "val sacreBLEU", "val lowercased BLEU",
         "paper row: PPL / BLEU", "minutes", *(header for header, _ in extra)],
        [[r["paper_row"], name, r["ppl"], r["bleu"], r.get("lowercase_bleu", "-"),
          f"{r['paper_ppl']} / {r['paper_bleu']}", r["minutes"], *(v[i] for _, v in extra)]
         for i, (name, r) in enumerate(results.items())])
    seeds = [r for r in results.values() if r["paper_row"] == "base"]
    if len(seeds) > 1:
        lines += ["", f"The base row with {len(seeds)} seeds (initialisation, batch order and "
                  f"dropout all change): val PPL {min(r['ppl'] for r in seeds)} to "
                  f"{max(r['ppl'] for r in seeds)}, val sacreBLEU "
                  f"{min(r['bleu'] for r in seeds)} to {max(r['bleu'] for r in seeds)}. A row's "
                  "difference from the base row that falls inside this spread may be noise."]
    unlike = trained_otherwise(results)
    if unlike:
        lines += ["", f"Trained otherwise than the base row: {', '.join(unlike)}. Their steps "
                  "or settings differ (see their commands below), so their differences from the "
                  "base row are not their change alone."]
    missing = [row for row in PAPER_ROWS if row not in {ROWS[name][0] for name in results
                                                         if name in ROWS}]  # a seed is no base
    if missing:
        lines += ["", f"Not yet trained: {', '.join(missing)} (`--rows {' '.join(missing)}` "
                  "trains them; the rows above are kept)."]
    lines += ["", "The paper's C2 (N=4, between its N=2 and base N=6) has no whole-number "
              "counterpart around N=2 and is left out."]
    lines += ["", "Commands (each row's training run; *reused*: trained by an earlier invocation "
              "with the same config and scored by this one; *recorded*: trained and scored by "
              "an earlier invocation, taken from its table3_small.json):", ""]
    lines += [f"- `{r['command']}`" + {"trained": "", "reused": " *reused*",
                                       "recorded": " *recorded*"}[r["source"]]
              for r in results.values()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
