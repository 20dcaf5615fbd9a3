"""The published Multi30k text-only baseline at its own budget, on one GPU: English->German and
English->French, every choice made on val, test2016 scored once per final configuration.

    python -m experiments.multi30k_budget --data-dir D [--train] [--out-dir results] [--device cpu]

The recipe is that of the best published from-scratch text-only result we know of (Wu et al.,
2021; results/published.json): the Transformer-tiny (the multi30k_tiny preset), 8,000
updates of at most 2 x 4,096 tokens (2 GPUs there; one process with max_tokens=8192 here, the
same global batch), a peak learning rate of 5e-3 after 2,000 warmup steps and then the inverse
square root (§5.3's schedule with warmup_steps=2000 and lr_factor=2.53), dropout 0.3, lowercased
text, the last 10 checkpoints averaged (one an epoch there, about 50 updates; here one every 50
updates) and beam search. The candidates vary what the published recipe may not carry over to
our tokenizer and code: dropout and the vocabulary size.

1. with --train, trains every CANDIDATE for English->German and, beside it, its English->French
   twin (target_lang=fr), all at once on the one GPU, a process each;
2. scores each English->German candidate on val: its last 1, 5 and 10 checkpoints averaged
   (§6.1), each decoded with every (beam, alpha) of DECODINGS; the best lowercased val BLEU wins;
3. scores the winner on test2016 once, and its English->French twin with the very same
   averaging and decoding (nothing is chosen on French);
4. times beam search (beam 4) on the GPU and on one CPU thread of the same machine;
5. writes multi30k_budget.md and .json (runs/results by default; a smoke test, --limit, never
   into the committed results/) with the GPU, torch and CUDA versions and every command.

Without a GPU it refuses to start, unless --device cpu says to run on the CPU anyway (a smoke
test with tiny overrides: dataset=multi30k_sample train_steps=2 ...).
"""
import argparse
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from annotated.base.cli import at_least, command, path
from annotated.base.errors import DeviceError
from annotated.configs import apply_overrides, get, merged
from annotated.data.corpus import load_corpus
from annotated.inference.batched import translate_lines
from annotated.store.checkpoint_file import load_model
from experiments.common import (DEVICE, ROOT, add_training_arguments, check_out_dir,
                                check_run_folder, invocation, machine_record, markdown_table,
                                read_metrics, recorded, split_text, train_command, write_files)
from experiments.multi30k import evaluate_run, pair_name
from experiments.multi30k_sweep import start, sweep_run, wait_for

PRESET = "multi30k_tiny"
BUDGET = ["train_steps=8000", "max_tokens=8192", "warmup_steps=2000", "lr_factor=2.53",
          "lowercase=true", "ckpt_every=50", "ckpt_minutes=60", "keep_last=10",
          "eval_every=500", "log_every=100"]
CANDIDATES = {                        # name: overrides beyond BUDGET (the preset's vocab: 10k)
    "published": ["P_drop=0.3"],
    "p02": ["P_drop=0.2"],
    "p03_v6k": ["P_drop=0.3", "vocab_size=6000"],
}
TARGETS = ("de", "fr")
AVERAGES = (1, 5, 10)
DECODINGS = tuple((beam, alpha) for beam in (4, 5) for alpha in (0.6, 1.0, 1.4))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.multi30k_budget",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="store_true", help="train the candidates first")
    parser.add_argument("--runs-dir", type=path, default=ROOT / "runs" / "budget",
                        help="where the runs are (default runs/budget)")
    parser.add_argument("--limit", type=at_least(3), default=None,
                        help="score only the first N sentences (a smoke test)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu only to run it on a machine without a GPU, with tiny "
                             "overrides (a smoke test); by default a GPU is required")
    add_training_arguments(parser, "override fields of every run (a smoke test: "
                                   "dataset=multi30k_sample train_steps=20 ...)")
    return parser.parse_intermixed_args(argv)


def check_device(device: str) -> None:
    """Refuse to start without a GPU unless asked (--device cpu): with --train this starts
    every run at once at the published budget, which a CPU would take days over."""
    gpu = torch.cuda.is_available()
    if device == "cuda" and not gpu:
        raise DeviceError(f"no CUDA GPU here: this script trains and scores "
                          f"{len(CANDIDATES) * len(TARGETS)} runs at the published budget on one "
                          f"GPU; to run it on the CPU anyway (a smoke test with tiny overrides), "
                          f"add --device cpu")
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
    check_device(args.device)
    check_run_folder(args.runs_dir, "--runs-dir")
    check_out_dir(args.out_dir, args.limit)
    config = apply_overrides(get(PRESET), overrides(next(iter(CANDIDATES)), "de", args.overrides))
    sources, references = split_text(config, args.data_dir, "valid")     # the data, checked
    result = {"machine": machine_record(), "budget": BUDGET, "preset": PRESET}
    if len(sources) > (args.limit or len(sources)):       # a smoke test (--limit) says so
        result["limited"] = f"the first {args.limit:,} sentences of val and of test2016"
    if args.train:
        result["training"] = train_all(args)
    result["candidates"] = sweep_all(args, sources[:args.limit], references[:args.limit])
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


def train_all(args) -> dict:
    """Every candidate and its French twin at once, a process each on the GPU; returns each
    run's command and wall time (the runs share the GPU, so each one's time is longer than
    it would be alone)."""
    procs, runs, begun, record = {}, {}, time.time(), {}
    for name in CANDIDATES:
        for target in TARGETS:
            key = f"{name}_en_{target}"
            runs[key] = run_dir(args.runs_dir, name, target)
            cmd = train_command(PRESET, runs[key], data_dir=args.data_dir,
                                overrides=overrides(name, target, args.overrides))
            procs[key] = start(key, runs[key], cmd)
            record[key] = {"command": recorded(cmd)}
    wait_for(procs, runs)
    for key, run in runs.items():
        trained = [m for m in read_metrics(run) if m["split"] == "train"]
        record[key].update(steps=trained[-1]["step"],
                           training_minutes=round(trained[-1]["elapsed"] / 60, 1))
    record["all_minutes"] = round((time.time() - begun) / 60, 1)
    return record


def sweep_all(args, sources, references) -> dict:
    """The val sweep of every English->German candidate on these val sentences, one process
    each (they share the GPU)."""
    jobs = {name: (name, apply_overrides(get(PRESET), overrides(name, "de", args.overrides)),
                   run_dir(args.runs_dir, name, "de"), sources, references, args.data_dir,
                   (PRESET, overrides(name, "de", args.overrides), 1), DECODINGS, AVERAGES)
            for name in CANDIDATES}
    spawn = multiprocessing.get_context("spawn")         # CUDA cannot be forked
    with ProcessPoolExecutor(len(jobs), mp_context=spawn) as pool:
        futures = {name: pool.submit(sweep_run, *job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def decode_speed(checkpoint: Path, data_dir, limit) -> dict:
    """Sentences a second of beam 4 on test2016 (English->German): on this device with two
    batch sizes, and on one CPU thread of the same machine."""
    model, config, tokenizer = load_model(checkpoint, map_location="cpu")
    sources = load_corpus(config, data_dir=data_dir, log=lambda *_: None).test_src[:limit]
    speeds = {}
    for device, batch_tokens in [(DEVICE, 2000), (DEVICE, 16000), ("cpu", 2000)]:
        model = model.to(device)
        translate_lines(model, tokenizer, sources[:50], beam_size=4, batch_tokens=batch_tokens)
        start = time.perf_counter()
        translate_lines(model, tokenizer, sources, beam_size=4, batch_tokens=batch_tokens)
        speeds[f"{device}, {batch_tokens} source tokens a batch"] = round(
            len(sources) / (time.perf_counter() - start), 1)
    return speeds


def render_markdown(result: dict, command_line: str) -> str:
    m, b = result["machine"], result["best"]
    lines = ["# Multi30k at the published budget, on one GPU", "",
             f"Written by `{command_line}` (do not edit by hand).", "",
             *([f"A smoke test (--limit): every score below is on {result['limited']} only.",
                ""] if result.get("limited") else []),
             f"Machine: {m.get('gpu', 'no GPU')}, torch {m['torch']}, CUDA {m.get('cuda')}.", "",
             f"Every run: `{PRESET}` with `{' '.join(BUDGET)}`, and the candidate's own "
             f"settings. BLEU: lowercased is sacreBLEU `-lc` with its 13a tokenizer (the Multi30k "
             f"literature's metric); cased is sacreBLEU's default.", ""]
    if "training" in result:
        t = result["training"]
        lines += [f"All {len(t) - 1} runs trained at once on the GPU in {t['all_minutes']} "
                  f"minutes of wall time.", ""]
        lines += markdown_table(["run", "steps", "minutes", "command"],
                                [[k, v["steps"], v["training_minutes"], f"`{v['command']}`"]
                                 for k, v in t.items() if k != "all_minutes"])
        lines += [""]
    lines += ["## English->German candidates on val", ""]
    lines += markdown_table(
        ["candidate", "overrides", "checkpoints averaged", "val PPL", "beam", "alpha",
         "val lowercased BLEU", "val cased sacreBLEU"],
        [[name, " ".join(CANDIDATES[name]), r["average"], r["val_ppl"], r["beam"], r["alpha"],
          r["lowercase_bleu"], r["bleu"]] for name, c in result["candidates"].items()
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
