"""The Multi30k sweep: each choice behind the hour-long English->German model made on the
validation set (val, 1,014 sentences), never on test2016.

    python -m experiments.multi30k_sweep --data-dir D [--train] [--max-minutes 60] [--out-dir results]

1. with --train, trains the CANDIDATES for --max-minutes of wall time each into
   runs/sweep/NAME, one CPU thread per process: two one-process candidates at a time, a
   two-process one alone (either way the 2-core machine is full); without it, scores the runs
   already there (--only NAME... trains and scores just those); a candidate whose run
   folder is gone keeps the scores the last sweep recorded in multi30k_sweep.json; then the
   SECOND_HOUR runs, each a copy of a candidate's run continued for up to another
   --max-minutes, and the OTHER_SEED runs, a candidate trained again with another seed:
   scored like the candidates but never chosen (one is over the budget, the other measures
   the noise a seed alone makes);
2. for each run, averages its last 1, 5 and 10 checkpoints (§6.1) and decodes val with each
   beam size and length penalty alpha of DECODINGS (a run scored before keeps its scores and
   decodes only what a wider grid adds);
3. scores every decoding with lowercased BLEU (sacreBLEU -lc, 13a tokenizer: the Multi30k
   literature's metric) and cased sacreBLEU, and names the best by lowercased val BLEU;
4. writes multi30k_sweep.md and .json (runs/results by default; a smoke test, --limit, never
   into the committed results/) and prints the one command that scores the chosen model on
   test2016 (experiments.multi30k --skip-train).

A run's val_sweep.json or an earlier multi30k_sweep.json that is damaged is read as absent
(the run is scored again, with a note), unless it holds the only scores of a run whose folder
is gone: then it is an error naming it. The data location is checked before any training.
"""
import json
import shutil
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, number, path, positive
from annotated.base.errors import DataError
from annotated.base.files import write_files
from annotated.base.settings import at_least
from annotated.configs import apply_overrides, get, merged
from annotated.store.checkpoint_file import checkpoints
from experiments.commands import invocation, resume_command, start, train_command, wait_for
from experiments.folders import (ROOT, add_training_arguments, check_out_dir, check_run_folder,
                                 relative)
from experiments.report import file_stem, first_sentences, markdown_table
from experiments.scoring import (SHOWN, TRAIN_FIRST, entry_problem, split_text, sweep_run,
                                 trained_checkpoints)

# name: (preset, overrides, processes). Transformer-tiny with the paper's dropout 0.1 and with
# the literature's 0.3, and the multi30k preset with 0.3, each one process; then Transformer-tiny
# as two processes under torchrun, one global batch split between them (chapter 9): the same
# model and batches; with two processes, dropout 0.2, and 0.2 with a higher learning rate; 0.2
# with a 6,000-entry vocabulary and with 4,000; 6,000 with the rate cooled linearly to zero over
# the last quarter of its train_steps (cooldown_steps, not in the paper), the alternative to
# averaging; 6,000 with all text lowercased (lowercase, not in the paper), as the
# published Multi30k baselines train; that lowercased candidate with the published baseline's
# learning rate (Wu et al., 2021: a peak of 5e-3 after 2,000 warmup steps); and with the
# published dropout, 0.3. What each scored is in results/multi30k_sweep.md.
CANDIDATES = {
    "tiny_p03": ("multi30k_tiny", ["P_drop=0.3"], 1),
    "small_p03": ("multi30k", ["P_drop=0.3", "ckpt_minutes=2.0", "keep_last=10"], 1),
    "tiny": ("multi30k_tiny", [], 1),
    "tiny_2proc": ("multi30k_tiny", [], 2),
    "tiny_2proc_p02": ("multi30k_tiny", ["P_drop=0.2"], 2),
    "tiny_2proc_p02_lr1": ("multi30k_tiny", ["P_drop=0.2", "lr_factor=1.0"], 2),
    "tiny_2proc_p02_v6k": ("multi30k_tiny", ["P_drop=0.2", "vocab_size=6000"], 2),
    "tiny_2proc_p02_v4k": ("multi30k_tiny", ["P_drop=0.2", "vocab_size=4000"], 2),
    "tiny_2proc_p02_v6k_cool": ("multi30k_tiny", ["P_drop=0.2", "vocab_size=6000",
                                                  "train_steps=10800", "cooldown_steps=2700"], 2),
    "tiny_2proc_p02_v6k_lc": ("multi30k_tiny", ["P_drop=0.2", "vocab_size=6000", "lowercase=true"],
                              2),
    "tiny_2proc_p02_v6k_lc_peak5e3": ("multi30k_tiny", ["P_drop=0.2", "vocab_size=6000",
                                                        "lowercase=true", "warmup_steps=2000",
                                                        "lr_factor=2.53"], 2),
    "tiny_2proc_p03_v6k_lc": ("multi30k_tiny", ["P_drop=0.3", "vocab_size=6000",
                                                "lowercase=true"], 2),
}
# Over the budget, never chosen: the best cased candidate's own run continued for up to
# another --max-minutes, or to its preset's train_steps if sooner (--resume on a copy of its
# folder; resuming is exact, so this is the run a longer budget makes). It measures what more
# training time alone would buy.
SECOND_HOUR = {"tiny_2proc_p02_v6k_2h": "tiny_2proc_p02_v6k"}
# Never chosen either: the best cased candidate and the best lowercased one trained again,
# everything the same but the seed (weights, batch order, dropout). The gap within each pair
# is the noise that the candidates' own differences are read against.
OTHER_SEED = {"tiny_2proc_p02_v6k_seed2": ("tiny_2proc_p02_v6k", 2),
              "tiny_2proc_p02_v6k_lc_seed2": ("tiny_2proc_p02_v6k_lc", 2)}
AVERAGES = (1, 5, 10)                                   # 1: the last checkpoint alone
# (beam size, alpha): the grid of decodings every candidate is scored with on val.
DECODINGS = tuple((beam, alpha) for beam in (4, 5) for alpha in (0.6, 1.0, 1.2, 1.4))


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.multi30k_sweep",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="store_true", help="train the candidates first")
    parser.add_argument("--max-minutes", type=positive, default=60.0,
                        help="minutes of training per candidate (default 60)")
    parser.add_argument("--runs-dir", type=path, default=ROOT / "runs" / "sweep",
                        help="where the candidates' runs are (default runs/sweep)")
    parser.add_argument("--only", nargs="+", choices=[*CANDIDATES, *SECOND_HOUR, *OTHER_SEED],
                        metavar="NAME",
                        help="train (with --train) and score only these candidates now (their "
                             "scores are kept in their run folders for the full sweep); writes "
                             "no results file")
    parser.add_argument("--limit", type=number(at_least(1)), default=None,
                        help="score only the first N val sentences (a smoke test)")
    add_training_arguments(parser, "override fields of every candidate (a smoke test: "
                                   "dataset=multi30k_sample N=1 ...)")
    return parser.parse_intermixed_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    check_run_folder(args.runs_dir, "--runs-dir")
    if not args.only:                                 # --only writes no results file
        check_out_dir(args.out_dir, args.limit)
    names = [*CANDIDATES, *SECOND_HOUR, *OTHER_SEED]
    runs = {name: args.runs_dir / name for name in names}
    configs = {name: candidate_config(name, args.overrides) for name in names}
    sources, references = split_text(next(iter(configs.values())), args.data_dir, "valid")
    total, sources, references = len(sources), sources[:args.limit], references[:args.limit]
    if args.train:
        chosen = args.only or names
        train_side_by_side({name: runs[name] for name in chosen if name not in SECOND_HOUR},
                           args.max_minutes, args.data_dir, args.overrides)
        for name in [name for name in chosen if name in SECOND_HOUR]:
            train_second_hour(name, runs, args.max_minutes, args.data_dir)
    if args.only:
        for name in args.only:
            sweep_run(name, configs[name], runs[name], sources, references, args.data_dir,
                      spec(name), DECODINGS, AVERAGES)
        return
    recorded = recorded_candidates(args.out_dir / "multi30k_sweep.json", runs)
    scored = {name: recorded.get(name) or sweep_run(
        name, configs[name], runs[name], sources, references, args.data_dir, spec(name),
        DECODINGS, AVERAGES) for name in names}
    result = {"candidates": {name: scored[name] for name in CANDIDATES},
              "second_hour": {name: scored[name] for name in SECOND_HOUR},
              "other_seed": {name: scored[name] for name in OTHER_SEED}}
    result["best"] = best(result["candidates"], runs)
    if len(sources) < total:                          # a smoke test (--limit) says so
        result["limited"] = first_sentences(len(sources), total, "val")
    write_files({args.out_dir / "multi30k_sweep.json": json.dumps(result, indent=1),
                 args.out_dir / "multi30k_sweep.md": render_markdown(
                     result, invocation("experiments.multi30k_sweep", argv))})
    print(f"wrote {args.out_dir / 'multi30k_sweep.md'}\nscore the chosen model on test2016 "
          f"once:\n  {result['best']['test_command']}")


def source_of(name: str) -> str:
    """The candidate a run is, or comes from (a SECOND_HOUR or OTHER_SEED run)."""
    return OTHER_SEED[name][0] if name in OTHER_SEED else SECOND_HOUR.get(name, name)


def spec(name: str) -> tuple[str, list[str], int]:
    """(preset, overrides, processes) of a run: its candidate's, with an OTHER_SEED run's seed."""
    preset, overrides, nproc = CANDIDATES[source_of(name)]
    seed = [f"seed={OTHER_SEED[name][1]}"] if name in OTHER_SEED else []
    return preset, overrides + seed, nproc


def candidate_config(name: str, extra: list[str]):
    preset, overrides, _ = spec(name)
    return apply_overrides(get(preset), merged(overrides, extra))


def train_side_by_side(runs: dict, max_minutes: float, data_dir, extra: list[str]):
    """Train the candidates so that each group fills the 2 cores: one-process candidates two
    at a time, a two-process candidate alone; one thread per process."""
    groups, pair = [], []
    for name in runs:
        if spec(name)[2] > 1:
            groups.append([name])
        else:
            pair.append(name)
            if len(pair) == 2:
                groups, pair = groups + [pair], []
    for group in groups + ([pair] if pair else []):
        train_together({name: runs[name] for name in group}, max_minutes, data_dir, extra)


def train_together(runs: dict, max_minutes: float, data_dir, extra: list[str]):
    """Train these candidates at once, one thread per process, and wait for all of them."""
    procs = {}
    for name, run in runs.items():
        preset, overrides, nproc = spec(name)
        cmd = train_command(preset, run, max_minutes=max_minutes, overrides=overrides + extra,
                            data_dir=data_dir, nproc=nproc) + ["--threads", "1"]
        procs[name] = start(name, run, cmd)
    wait_for(procs, runs)


def train_second_hour(name: str, runs: dict, max_minutes: float, data_dir):
    """Continue a copy of the candidate's run (its checkpoints and metrics) in runs[name] for
    up to max_minutes more (train_steps ends it sooner), alone on the machine; a copy made
    earlier is continued as it is."""
    source, run = runs[source_of(name)], runs[name]
    if not checkpoints(run):
        found = trained_checkpoints(source, TRAIN_FIRST)
        run.mkdir(parents=True, exist_ok=True)
        for file in [*found, source / "metrics.jsonl"]:
            shutil.copy2(file, run / file.name)
    cmd = resume_command(run, max_minutes=max_minutes, data_dir=data_dir,
                         nproc=spec(name)[2]) + ["--threads", "1"]
    wait_for({name: start(name, run, cmd)}, runs)


def recorded_candidates(sweep_json: Path, runs: dict) -> dict:
    """The entries an earlier sweep recorded for candidates whose run folder is gone (the runs
    are large and not kept): their scores stand as recorded. A damaged file is no loss while
    every run is still there (all are scored again, with a note); else it is an error naming
    it, since it holds the only scores of the runs that are gone."""
    if not sweep_json.is_file():
        return {}
    gone = [name for name in runs if not checkpoints(runs[name])]
    try:
        recorded = json.loads(sweep_json.read_text())
        kept = {**recorded["candidates"], **recorded.get("second_hour", {}),
                **recorded.get("other_seed", {})}
        problem = next((f"{name}: {p}" for name in gone if name in kept
                        if (p := entry_problem(kept[name]))), None)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        kept, problem = {}, f"{type(e).__name__}: {e}"
    if problem and gone:
        raise DataError(f"{sweep_json} is damaged ({problem}) and holds the only scores of runs "
                        f"whose folders are gone ({', '.join(gone)}): restore it (git checkout "
                        f"for the committed one) or train those runs again (--train --only NAME)")
    if problem:
        print(f"{relative(sweep_json)} is damaged ({problem}); every run is here, so all are "
              f"scored again", flush=True)
        return {}
    found = {name: kept[name] for name in gone if name in kept}
    for name in found:
        print(f"{name}: {relative(runs[name])} is gone; keeping the scores recorded in "
              f"{relative(sweep_json)}")
    return found


def best(candidates: dict, runs: dict) -> dict:
    """The candidate, averaging and decoding with the highest lowercased val BLEU, the
    command that scores it on test2016, and the results file that command writes."""
    name, row = max(((name, row) for name, c in candidates.items() for row in c["rows"]),
                    key=lambda item: item[1]["lowercase_bleu"])
    preset = CANDIDATES[name][0]
    cmd = (f"python -m experiments.multi30k --skip-train --config {preset} --run-dir "
           f"{relative(runs[name])} --average {row['average']} --beam-size {row['beam']} "
           f"--alpha {row['alpha']} --out-dir results")
    results_file = f"{file_stem(preset, vars(candidate_config(name, [])))}.md"
    return dict(candidate=name, preset=preset, **row, test_command=cmd, results_file=results_file)


def render_markdown(result: dict, command_line: str) -> str:
    lines = ["# Multi30k English->German: the validation sweep", "",
             f"Written by `{command_line}` (do not edit by hand).", ""]
    if result.get("limited"):
        lines += [f"A smoke test (--limit): every score below is on {result['limited']} only.",
                  ""]
    lines += ["Every choice is made on val (1,014 sentences); test2016 is scored once, for the "
              "best row only. BLEU: lowercased is sacreBLEU `-lc` with its 13a tokenizer (the "
              "Multi30k literature's metric); cased is sacreBLEU's default. Each process "
              "trained with one CPU thread of this 2-core machine: a one-process candidate "
              "while other work (another candidate, or scoring) used the second core, a "
              "two-process candidate (torchrun, one global batch) with both cores to itself. "
              "Val PPL is per subword of the candidate's own vocabulary, so it compares "
              "candidates with the same vocab_size and casing only (a smaller vocabulary cuts "
              "sentences into more, easier pieces; a lowercased one has no case to predict); "
              "BLEU compares them all. A candidate trained on lowercased text (lowercase=true) "
              "writes lowercase, so its cased sacreBLEU is low by construction: lowercased BLEU "
              "is the score that ranks.",
              "",
              "## Candidates", ""]
    lines += markdown_table(
        ["candidate", "preset and overrides", *SHOWN, "processes", "minutes", "steps"],
        [[name, " ".join([c["preset"], *c["overrides"]]),
          *(c["config"][k] for k in SHOWN), c.get("processes", 1), c["minutes"], c["steps"]]
         for name, c in result["candidates"].items()])
    lines += ["", "## Each candidate at its best on val", ""]
    lines += markdown_table(["candidate", *AT_BEST], [at_best(name, c) for name, c in
                                                      result["candidates"].items()])
    lines += second_hour_section(result)
    lines += other_seed_section(result)
    lines += ["", "## Validation scores", ""] + older_grid(result) + markdown_table(
        ["run", "checkpoints averaged", "val PPL", "beam", "alpha",
         "val lowercased BLEU", "val cased sacreBLEU"],
        [[name, r["average"], r["val_ppl"], r["beam"], r["alpha"], r["lowercase_bleu"],
          r["bleu"]] for group in GROUPS for name, c in result[group].items() for r in c["rows"]])
    b = result["best"]
    lines += ["", f"Best on val: **{b['candidate']}**, the average of the last {b['average']} "
              f"checkpoint(s), beam {b['beam']}, alpha {b['alpha']}: {b['lowercase_bleu']} "
              f"lowercased BLEU. Scored on test2016 once with", "", f"    {b['test_command']}",
              ""]
    return "\n".join(lines)


GROUPS = ("candidates", "second_hour", "other_seed")     # the result's groups of runs
AT_BEST = ["minutes", "steps", "checkpoints averaged", "val PPL", "beam", "alpha",
           "val lowercased BLEU", "val cased sacreBLEU"]


def at_best(name: str, entry: dict) -> list:
    """A run's row at its best lowercased val BLEU, under the AT_BEST headers."""
    r = max(entry["rows"], key=lambda row: row["lowercase_bleu"])
    return [name, entry["minutes"], entry["steps"], r["average"], r["val_ppl"], r["beam"],
            r["alpha"], r["lowercase_bleu"], r["bleu"]]


def second_hour_section(result: dict) -> list[str]:
    """Each SECOND_HOUR run at its best on val under its candidate's hour: never eligible."""
    return beside_candidates(
        result, "second_hour", "## Over the budget: a second hour",
        "Not candidates, never chosen: a candidate's own run continued for up to another hour, or "
        "until its preset's train_steps (`python -m annotated.train --run-dir RUN --resume "
        "--max-minutes 60` on a copy of its folder; resuming is exact, so this is the run a "
        "longer budget makes), to measure what training time alone buys.")


def other_seed_section(result: dict) -> list[str]:
    """Each OTHER_SEED run at its best on val beside its candidate's: the noise band that
    differences between candidates are read against. Never eligible."""
    return beside_candidates(
        result, "other_seed", "## Noise: a candidate with another seed",
        "Not candidates, never chosen: a candidate trained again on the same budget with only its "
        "seed changed (initial weights, batch order, dropout); "
        + "; ".join(f"{name} is {source} with seed={seed}"
                    for name, (source, seed) in OTHER_SEED.items())
        + ". The gap between such a pair, row by row of the validation scores below, is one "
          "sample of what chance alone moves a score; differences between candidates are read "
          "against it.")


def beside_candidates(result: dict, group: str, heading: str, text: str) -> list[str]:
    """A section: each run of `group` at its best on val, under its candidate's best row."""
    rows = [at_best(shown, entry) for name, c in result[group].items()
            for shown, entry in ((source_of(name), result["candidates"][source_of(name)]),
                                 (name, c))]
    return ["", heading, "", text, ""] + markdown_table(["run", *AT_BEST], rows)


def older_grid(result: dict) -> list[str]:
    """A line naming the runs scored on a narrower grid than DECODINGS: their folders were gone
    when the grid grew, so they keep what the sweep recorded."""
    grid = set(DECODINGS)
    short = [name for group in GROUPS for name, c in result[group].items()
             if not grid <= {(r["beam"], r["alpha"]) for r in c["rows"]}]
    if not short:
        return []
    return [f"Scored on an earlier, narrower grid of beam sizes and alphas (their run folders "
            f"were gone when the grid grew): {', '.join(short)}.", ""]


if __name__ == "__main__":
    main()
