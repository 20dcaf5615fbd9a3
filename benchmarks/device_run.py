"""Everything a session with a GPU measures, in one call of about eight minutes: the training
step before and after a change of the code, the schedule estimate, and the CUDA tests.

    python -m benchmarks.device_run --before DIR              # on the GPU: writes results/
    python -m benchmarks.device_run --before DIR --device cpu --out-dir /tmp/check   # self-check

--before DIR is a copy of the code to compare with, e.g. the commit before the change:

    mkdir -p .before && git archive REV annotated benchmarks experiments | tar -x -C .before

Stages, in this order (--stages picks some), each a process of its own, each given what is left
of --seconds (the next stage runs whatever the last one did; one that does not start in time is
recorded as skipped):

    attention  python -m benchmarks.attention_kernels: the kernel each attention mask gets
    after      python -m benchmarks.gpu_train --only base big --modes compiled graphs --profile
               --out OUT/gpu_train.json: this code, compiled, and compiled with CUDA graphs
    schedule   python -m experiments.gpu_schedule --timings OUT/gpu_train.json --out-dir OUT
    tests      python -m pytest tests/test_cuda.py (four processes)
    before     the same gpu_train in DIR, --modes compiled, --out OUT/gpu_train_before.json

OUT is --out-dir (default results/ on a GPU). OUT/device_run.json records the machine, each
stage's command, exit code, seconds and the end of its output. With --device cpu the stages
run their CPU self-checks on a small preset (the GPU tests skip), and OUT may not be results/:
that folder holds the GPU's measurements, which a CPU run must never replace.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from annotated.base.cli import ArgumentParser, command, folder, number, path
from annotated.base.errors import DataError, DeviceError
from annotated.base.files import atomic_open
from annotated.base.settings import at_least
from experiments.folders import ROOT, check_out_dir, committed_folder, relative
from experiments.machine import machine_record

STAGES = ["attention", "after", "schedule", "tests", "before"]
TAIL = 6000                  # characters of each stage's output kept in device_run.json


def gpu_train_args(device: str, modes: list[str], out: str) -> list[str]:
    """benchmarks.gpu_train's arguments: base and big on a GPU, the copy preset on a CPU."""
    if device == "cuda":
        return ["--only", "base", "big", "--modes", *modes, "--repeats", "5", "--profile",
                "--out", out]
    return ["--device", "cpu", "--only", "copy", "--tokens", "400", "--vocab", "11",
            "--repeats", "3", "--modes", "eager", "--profile", "--out", out]


def stage_commands(args) -> dict:
    """stage: (argv, the folder it runs in, with its code on PYTHONPATH). Paths are shown
    relative to the repository (the commands the results files record); `before` runs in
    its own folder, so its --out is relative to that folder."""
    out, python, gpu = args.out_dir, [sys.executable, "-m"], args.device == "cuda"
    timings = out / "gpu_train.json" if gpu else ROOT / "results" / "gpu_train.json"
    return {            # a CPU self-check makes the schedule of the committed GPU timings
        "attention": ([*python, "benchmarks.attention_kernels", "--device", args.device,
                       "--repeats", "20" if gpu else "3"], ROOT),
        "after": ([*python, "benchmarks.gpu_train", *gpu_train_args(
            args.device, ["compiled", "graphs"], relative(out / "gpu_train.json"))], ROOT),
        "schedule": ([*python, "experiments.gpu_schedule", "--timings", relative(timings),
                      "--out-dir", relative(out)], ROOT),
        "tests": ([*python, "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", "-rA",
                   "-n", "4" if gpu else "0", "tests/test_cuda.py"], ROOT),
        "before": ([*python, "benchmarks.gpu_train", *gpu_train_args(
            args.device, ["compiled"],
            os.path.relpath(out.resolve() / "gpu_train_before.json", args.before))],
            args.before),
    }


def run_stage(argv: list[str], cwd: Path, seconds: float) -> dict:
    """One stage, stopped after `seconds`: its command, exit code, time and output's end."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONUNBUFFERED": "1"}
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=seconds)
        code, output = done.returncode, done.stdout
    except subprocess.TimeoutExpired as stopped:
        code, output = "timed out", (stopped.stdout or b"").decode(errors="replace")
    print(output, end="", flush=True)
    return {"command": " ".join(argv[1:] if argv[0] == sys.executable else argv),
            "folder": relative(cwd),
            "exit": code, "seconds": round(time.perf_counter() - start, 1),
            "output_end": output[-TAIL:]}


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.device_run",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=folder, required=True, metavar="DIR",
                        help="a copy of the code to compare with (see above)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--out-dir", type=path, help="default results/ (on a GPU only)")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES)
    parser.add_argument("--seconds", type=number(at_least(60)), default=500,
                        help="for all the stages together (default 500)")
    args = parser.parse_args(argv)
    results = ROOT / "results"
    args.out_dir = (args.out_dir or (results if args.device == "cuda" else None))
    if args.out_dir is None or (args.device == "cpu"
                                and committed_folder(args.out_dir) is not None):
        parser.error("--device cpu is a self-check: give --out-dir, a folder outside results/ "
                     "(which holds the GPU's measurements) and annotated/")
    if "before" in args.stages and (missing := [
            name for name in ("annotated/__init__.py", "benchmarks/gpu_train.py",
                              "experiments/__init__.py") if not (args.before / name).is_file()]):
        raise DataError(f"--before {args.before}: no {', '.join(missing)} there; give a copy of "
                        f"the code to compare with (git archive REV annotated benchmarks "
                        f"experiments | tar -x -C DIR)")
    check_out_dir(args.out_dir)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise DeviceError("no CUDA GPU here: this measures one; on a CPU, --device cpu "
                          "--out-dir DIR checks the script itself")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    args.before = args.before.resolve()
    end = time.perf_counter() + args.seconds
    words = sys.argv[1:] if argv is None else argv
    record = {"command": " ".join(["python -m benchmarks.device_run", *words]),
              "machine": machine_record(), "stages": {}}
    commands = stage_commands(args)
    for name in (s for s in STAGES if s in args.stages):
        left = end - time.perf_counter()
        print(f"== {name} ({left:.0f} s left)", flush=True)
        record["stages"][name] = (run_stage(*commands[name], left) if left > 20 else
                                  {"skipped": f"{left:.0f} s left"})
        with atomic_open(args.out_dir / "device_run.json", "w") as f:
            f.write(json.dumps(record, indent=1) + "\n")
    print("\n".join(f"{name}: " + (f"exit {r['exit']} in {r['seconds']} s" if "exit" in r
                                   else r["skipped"]) for name, r in record["stages"].items()))
    if any(r.get("exit") != 0 for r in record["stages"].values()):
        raise SystemExit(1)                  # each stage's line above says which, and how


if __name__ == "__main__":
    main()
