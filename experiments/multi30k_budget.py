"""The published Multi30k text-only baseline at its own budget: English->German and
English->French, every choice made on val, test2016 scored once per final configuration.

    python -m experiments.multi30k_budget --data-dir D [--train] [--only NAME ...]
        [--max-minutes M] [--device cpu [--nproc 2]] [--out-dir results]

The recipe is that of the best published from-scratch text-only result we know of (Wu et al.,
2021; results/published.json): the Transformer-tiny (the multi30k_tiny preset), 8,000
updates of at most 2 x 4,096 tokens (2 GPUs there; here one global batch of max_tokens=8192,
however many processes share it), a peak learning rate of 5e-3 after 2,000 warmup steps and
then the inverse square root (§5.3's schedule with warmup_steps=2000 and lr_factor=2.53),
dropout 0.3, lowercased text, the last 10 checkpoints averaged (one an epoch there, about 50
updates; here one every 50 updates) and beam search. The candidates vary what the published
recipe may not carry over to our tokenizer and code: dropout and the vocabulary size.

1. with --train, trains every CANDIDATE (or those --only names) for English->German and its
   English->French twin (target_lang=fr). On a GPU all at once, a process each; on the CPU
   (--device cpu) one after another, each as --nproc processes under torchrun sharing one
   global batch. A run begun earlier is resumed (--resume, which continues exactly); one at
   train_steps is left as it is. With --max-minutes, training stops after that many minutes
   of this command, and the same command again goes on from there: a budget longer than a
   session is trained over several. Each run's output is appended to RUNS_DIR/NAME.log, a
   line naming each call; the trainers stop with this script, however it is stopped (Ctrl-C,
   SIGTERM; on Linux kill -9 too), and a run folder a trainer is still at work in is refused;
2. scores each English->German candidate on val: its last 1, 5 and 10 checkpoints averaged
   (§6.1), each decoded with every (beam, alpha) of DECODINGS; the best lowercased val BLEU wins;
3. scores the winner on test2016 once, and its English->French twin with the very same
   averaging and decoding (nothing is chosen on French);
4. times beam search (beam 4) on the device, and on one CPU thread of the same machine;
5. writes multi30k_budget.md and .json (runs/results by default; a smoke test, --limit, never
   into the committed results/) with the machine, torch (and CUDA) versions and every command.

Without a GPU it refuses to start unless --device cpu says to train on the CPU: hours a run.
"""
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from annotated.base.cli import ArgumentParser, command, number, path, positive
from annotated.base.errors import CheckpointError, DeviceError
from annotated.base.files import write_files
from annotated.base.settings import at_least
from annotated.configs import apply_overrides, get, merged
from annotated.data.corpus import load_corpus
from annotated.inference.batched import translate_lines
from annotated.store.checkpoint_file import checkpoints, load_model, step_in_name
from annotated.training.run_dir import read_metrics
from experiments.commands import (check_no_trainer, invocation, recorded, resume_command, start,
                                  train_command, wait_for)
from experiments.folders import ROOT, add_training_arguments, check_out_dir, check_run_folder
from experiments.machine import machine_record
from experiments.report import markdown_table, pair_name, published
from experiments.scoring import DEVICE, evaluate_run, split_text, sweep_run

PRESET = "multi30k_tiny"
BUDGET = ["train_steps=8000", "max_tokens=8192", "warmup_steps=2000", "lr_factor=2.53",
          "lowercase=true", "ckpt_every=50", "ckpt_minutes=60", "keep_last=10",
          "eval_every=500", "log_every=100"]
CANDIDATES = {                        # name: overrides beyond BUDGET (the preset's vocab: 10k)
    "published": ["P_drop=0.3"],
    "p02": ["P_drop=0.2"],
    "p03_v6k": ["P_drop=0.3", "vocab_size=6000"],
    "p02_v6k": ["P_drop=0.2", "vocab_size=6000"],   # the shipped model's settings
}
TARGETS = ("de", "fr")
AVERAGES = (1, 5, 10)
DECODINGS = tuple((beam, alpha) for beam in (4, 5) for alpha in (0.6, 1.0, 1.4))


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.multi30k_budget",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="store_true",
                        help="train the candidates first (resuming runs begun earlier)")
    parser.add_argument("--only", nargs="+", choices=list(CANDIDATES), metavar="NAME",
                        help=f"train and score only these candidates (default: all of "
                             f"{', '.join(CANDIDATES)})")
    parser.add_argument("--max-minutes", type=positive, default=None,
                        help="with --train: stop training after this many minutes; the same "
                             "command again goes on from there")
    parser.add_argument("--nproc", type=number(at_least(1)), default=None,
                        help="with --device cpu: processes a run, one global batch (default 2; "
                             "on a GPU every run is one process)")
    parser.add_argument("--runs-dir", type=path, default=ROOT / "runs" / "budget",
                        help="where the runs are (default runs/budget)")
    parser.add_argument("--limit", type=number(at_least(3)), default=None,
                        help="score only the first N sentences (a smoke test)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu to train and score on a machine without a GPU, one run "
                             "after another (hours each); by default a GPU is required")
    add_training_arguments(parser, "override fields of every run (a smoke test: "
                                   "dataset=multi30k_sample train_steps=20 ...)")
    args = parser.parse_intermixed_args(argv)
    if args.nproc is not None and args.device != "cpu":
        parser.error("--nproc: only with --device cpu (on a GPU every run is one process)")
    if args.max_minutes is not None and not args.train:
        parser.error("--max-minutes: only with --train (it limits the training)")
    args.nproc = args.nproc or (2 if args.device == "cpu" else 1)
    return args


def check_device(device: str) -> None:
    """Refuse to start without a GPU unless asked (--device cpu): a run at the published budget
    takes hours on a CPU."""
    gpu = torch.cuda.is_available()
    if device == "cuda" and not gpu:
        raise DeviceError(f"no CUDA GPU here: this script trains and scores up to "
                          f"{len(CANDIDATES) * len(TARGETS)} runs at the published budget on one "
                          f"GPU; to train on the CPU instead (hours a run; --max-minutes to "
                          f"spread it over several calls), add --device cpu")
    if device == "cpu" and gpu:
        raise DeviceError("--device cpu: this machine has a CUDA GPU, which the training runs "
                          "use whatever --device says; leave out --device")


def overrides(name: str, target: str, extra: list[str]) -> list[str]:
    return merged(BUDGET, CANDIDATES[name], [f"target_lang={target}"], extra)


def run_dir(runs: Path, name: str, target: str) -> Path:
    return runs / f"{name}_en_{target}"


@command
def main(argv=None):
    args = parse_args(argv)
    published()                        # the scores ours are set beside, checked before any work
    check_device(args.device)
    check_run_folder(args.runs_dir, "--runs-dir")
    check_out_dir(args.out_dir, args.limit)
    names = args.only or list(CANDIDATES)
    config = apply_overrides(get(PRESET), overrides(names[0], "de", args.overrides))
    sources, references = split_text(config, args.data_dir, "valid")     # the data, checked
    runs = {f"{name}_en_{target}": (name, target) for name in names for target in TARGETS}
    if args.train:
        train_runs(args, runs, config.train_steps)
    short = {key: steps for key, (name, target) in runs.items()
             if (steps := trained_steps(args, name, target)) < config.train_steps}
    if short:
        progress = ", ".join(f"{key} at step {steps:,}" for key, steps in short.items())
        if args.max_minutes:
            print(f"stopped after --max-minutes {args.max_minutes:g}: {progress} of "
                  f"{config.train_steps:,}; the same command again goes on from there")
            return
        raise CheckpointError(f"{progress} of train_steps={config.train_steps:,} in "
                              f"{args.runs_dir}: train them to the end first (--train)")
    result = {"machine": machine_record(), "budget": merged(BUDGET, args.overrides),
              "overrides": args.overrides, "preset": PRESET,
              "training": training_record(args, runs)}
    if len(sources) > (args.limit or len(sources)):       # a smoke test (--limit) says so
        result["limited"] = f"the first {args.limit:,} sentences of val and of test2016"
    result["candidates"] = sweep_all(args, names, sources[:args.limit], references[:args.limit])
    name, row = max(((n, r) for n, c in result["candidates"].items() for r in c["rows"]),
                    key=lambda item: item[1]["lowercase_bleu"])
    result["best"] = {"candidate": name, **row}
    beam = dict(beam_size=row["beam"], alpha=row["alpha"], max_extra=50, batch_tokens=2000)
    result["test2016"] = {}
    for target in TARGETS:
        scored, _ = evaluate_run(run_dir(args.runs_dir, name, target), row["average"], beam,
                                 args.data_dir, args.limit)
        result["test2016"][target] = {k: scored[k] for k in ("config", "test2016", "valid",
                                                             "average", "examples")}
    result["decode_speed"] = decode_speed(run_dir(args.runs_dir, name, "de") / "average.pt",
                                          args.data_dir, args.limit)
    write_files({args.out_dir / "multi30k_budget.json": json.dumps(result, indent=1) + "\n",
                 args.out_dir / "multi30k_budget.md": render_markdown(
                     result, invocation("experiments.multi30k_budget", argv))})
    print(f"wrote {args.out_dir / 'multi30k_budget.md'}")


def trained_steps(args, name: str, target: str) -> int:
    """The step of a run's newest checkpoint; 0 for a run not begun."""
    found = checkpoints(run_dir(args.runs_dir, name, target))
    return step_in_name(found[-1]) if found else 0


def run_command(args, name: str, target: str, max_minutes: float | None) -> list[str]:
    """The command that trains a run: fresh, or --resume where it has a checkpoint; on the
    CPU as args.nproc processes of one thread each (one global batch)."""
    run = run_dir(args.runs_dir, name, target)
    if checkpoints(run):
        cmd = resume_command(run, max_minutes=max_minutes, data_dir=args.data_dir,
                             nproc=args.nproc)
    else:
        cmd = train_command(PRESET, run, max_minutes=max_minutes, data_dir=args.data_dir,
                            overrides=overrides(name, target, args.overrides), nproc=args.nproc)
    return cmd + (["--threads", "1"] if args.device == "cpu" else [])


def train_runs(args, runs: dict, train_steps: int) -> None:
    """Train every run short of train_steps (--max-minutes limits this call): on a GPU all at
    once, a process each; on the CPU one after another, each filling the cores."""
    todo = {key: spec for key, spec in runs.items() if trained_steps(args, *spec) < train_steps}
    folders = {key: run_dir(args.runs_dir, *spec) for key, spec in todo.items()}
    for folder in folders.values():              # before any starts: none left at work
        check_no_trainer(folder)
    if args.device == "cuda":
        wait_for({key: start(key, folders[key], run_command(args, *spec, args.max_minutes))
                  for key, spec in todo.items()}, folders)
        return
    begun, left = time.monotonic(), args.max_minutes
    for key, spec in todo.items():
        wait_for({key: start(key, folders[key], run_command(args, *spec, left))}, folders)
        if left is not None:
            left = args.max_minutes - (time.monotonic() - begun) / 60
            if left <= 0:                        # the time is spent: the next call goes on
                return


def training_record(args, runs: dict) -> dict:
    """How the runs trained, from their folders: each one's command (as begun), steps and
    minutes of training (summed over the calls that resumed it)."""
    how = ("all at once on the GPU, a process each" if args.device == "cuda" else
           f"one after another on the CPU, each as {args.nproc} processes (torchrun) of one "
           f"thread, resumed across calls where --max-minutes stopped them")
    record = {"how": how, "runs": {}}
    for key, (name, target) in runs.items():
        trained = read_metrics(run_dir(args.runs_dir, name, target), "train")
        fresh = train_command(PRESET, run_dir(args.runs_dir, name, target),
                              data_dir=args.data_dir,
                              overrides=overrides(name, target, args.overrides), nproc=args.nproc)
        record["runs"][key] = {"command": recorded(fresh), "steps": trained[-1]["step"],
                               "training_minutes": round(trained[-1]["elapsed"] / 60, 1)}
    return record


def sweep_all(args, names, sources, references) -> dict:
    """The val sweep of these English->German candidates on these val sentences, one process
    each (they share the device)."""
    jobs = {name: (name, apply_overrides(get(PRESET), overrides(name, "de", args.overrides)),
                   run_dir(args.runs_dir, name, "de"), sources, references, args.data_dir,
                   (PRESET, overrides(name, "de", args.overrides), args.nproc), DECODINGS,
                   AVERAGES)
            for name in names}
    spawn = multiprocessing.get_context("spawn")         # CUDA cannot be forked
    with ProcessPoolExecutor(len(jobs), mp_context=spawn) as pool:
        futures = {name: pool.submit(sweep_run, *job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def decode_speed(checkpoint: Path, data_dir, limit) -> dict:
    """Sentences a second of beam 4 on test2016 (English->German): on this device with two
    batch sizes, and on one CPU thread of the same machine (the CPU's own rows on a CPU)."""
    model, config, tokenizer = load_model(checkpoint, map_location="cpu")
    sources = load_corpus(config, data_dir=data_dir, log=lambda *_: None).test_src[:limit]
    speeds, threads = {}, torch.get_num_threads()
    torch.set_num_threads(1)                           # one thread: this model is small
    for device, batch_tokens in dict.fromkeys([(DEVICE, 2000), (DEVICE, 16000), ("cpu", 2000)]):
        model = model.to(device)
        translate_lines(model, tokenizer, sources[:50], beam_size=4, batch_tokens=batch_tokens)
        start = time.perf_counter()
        translate_lines(model, tokenizer, sources, beam_size=4, batch_tokens=batch_tokens)
        speeds[f"{device}, {batch_tokens} source tokens a batch"] = round(
            len(sources) / (time.perf_counter() - start), 1)
    torch.set_num_threads(threads)
    return speeds


def own_settings(name: str, user: list[str]) -> str:
    """The candidate's settings that its runs kept: those the user's key=value did not set
    for every run (the report states the user's among every run's)."""
    keys = {item.partition("=")[0] for item in user}
    kept = [item for item in CANDIDATES[name] if item.partition("=")[0] not in keys]
    return " ".join(kept) or "(none: key=value set them)"


def render_markdown(result: dict, command_line: str) -> str:
    m, b, t = result["machine"], result["best"], result["training"]
    machine = (f"{m['gpu']}, torch {m['torch']}, CUDA {m['cuda']}" if "gpu" in m else
               f"no GPU: {m['cpu']}, {m['cores']} cores, torch {m['torch']}")
    theirs = ", ".join(f"{system.split(':')[0]}: {bleu} ({metric})"
                       for system, bleu, metric, _ in published()[("en", "de")])
    lines = [f"# Multi30k at the published budget, on {'one GPU' if 'gpu' in m else 'a CPU'}",
             "", f"Written by `{command_line}` (do not edit by hand).", "",
             *([f"A smoke test (--limit): every score below is on {result['limited']} only.",
                ""] if result.get("limited") else []),
             f"Machine: {machine}.", "",
             f"Every run: `{PRESET}` with `{' '.join(result['budget'])}`, and the "
             f"candidate's own settings. BLEU: lowercased is sacreBLEU `-lc` with its 13a "
             f"tokenizer (the Multi30k literature's metric); cased is sacreBLEU's default. "
             f"Published English->German test2016 at this budget: {theirs}.", "",
             f"The runs trained {t['how']}; minutes are each run's own training time.", ""]
    lines += markdown_table(["run", "steps", "minutes", "command"],
                            [[k, v["steps"], v["training_minutes"], f"`{v['command']}`"]
                             for k, v in t["runs"].items()])
    lines += [""]
    lines += ["## English->German candidates on val", ""]
    left_out = [name for name in CANDIDATES if name not in result["candidates"]]
    if left_out:
        lines += [f"Trained and scored: {', '.join(result['candidates'])} (--only); not trained "
                  f"here: {', '.join(left_out)}.", ""]
    lines += markdown_table(
        ["candidate", "overrides", "checkpoints averaged", "val PPL", "beam", "alpha",
         "val lowercased BLEU", "val cased sacreBLEU"],
        [[name, own_settings(name, result["overrides"]), r["average"], r["val_ppl"], r["beam"],
          r["alpha"], r["lowercase_bleu"], r["bleu"]] for name, c in result["candidates"].items()
         for r in c["rows"]])
    lines += ["", f"Best on val: **{b['candidate']}**, the average of the last {b['average']} "
              f"checkpoint(s), beam {b['beam']}, alpha {b['alpha']}: {b['lowercase_bleu']} "
              f"lowercased BLEU.", ""]
    for target, scored in result["test2016"].items():
        lines += [f"## test2016, {pair_name(scored['config'])}", ""]
        lines += markdown_table(
            ["decoding", "lowercased BLEU", "sacreBLEU (cased)", "mean output words",
             "sentences/s"],
            [[k, v["lowercase_bleu"], v["bleu"], v["mean_output_words"], v["sentences_per_s"]]
             for k, v in scored["test2016"].items()])
        lines += [""]
    lines += ["## Decoding speed (beam 4, test2016 English->German)", ""]
    lines += markdown_table(["where", "sentences/s"],
                            [[k, v] for k, v in result["decode_speed"].items()])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
