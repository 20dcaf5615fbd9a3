"""A CPU training step with freed memory kept for reuse, against glibc's default.

annotated.training.machine asks glibc to keep freed memory in its heap instead of returning
large blocks to the kernel and mapping them afresh at the next step. The setting holds for the
whole process and glibc's default cannot be restored once changed, so each contender runs in a
process of its own: one child process per timed run, the two settings alternating, each timing
the same multi30k_tiny training step (V = 6,000, the sweep's winner; one median-sized global
batch, as in benchmarks.train_throughput) after warm-up steps. The arithmetic is the same in
both; only the time differs.

    python -m benchmarks.cpu_allocator [--threads 1] [--repeats 5] [--steps 20]

Target: the step at least 10% faster with freed memory kept (time ratio <= 0.90).
"""
import argparse
import statistics
import subprocess
import sys

from annotated.base.cli import ArgumentParser, command, number
from annotated.base.settings import at_least
from annotated.training.machine import keep_freed_memory
from benchmarks.common import add_timing_arguments, interleaved_times, set_threads
from benchmarks.train_throughput import CASES, training_step

CASE = "tiny_v6k"
TARGET = 0.90


def time_steps(steps: int) -> float:
    """Median seconds of one training step of CASE in this process, after 3 warm-up steps."""
    config, vocab, max_tokens, length_range = CASES[CASE]
    step, *_ = training_step(config, vocab, max_tokens or config.max_tokens, length_range)
    return interleaved_times({"step": step}, steps, warmup=3)["step"]


def child(setting: str, threads: int, steps: int) -> float:
    """Seconds per step measured by a fresh process with `setting` ("kept" or "default")."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.cpu_allocator", "--child", setting,
                          "--threads", str(threads), "--steps", str(steps)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.cpu_allocator",
                            description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser, repeats=5)
    parser.add_argument("--steps", type=number(at_least(1)), default=20,
                        help="timed steps in each process (median; default 20)")
    parser.add_argument("--child", choices=["kept", "default"], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    threads = set_threads(args.threads)
    if args.child:
        if args.child == "kept" and not keep_freed_memory():
            raise SystemExit("error: this C library is not glibc: nothing to compare")
        print(time_steps(args.steps))
        return
    print(f"threads: {threads}; {CASE}, one median-sized batch; {args.repeats} processes each, "
          f"alternating; target: time ratio <= {TARGET}")
    times = {"default": [], "kept": []}
    for _ in range(args.repeats):
        for setting in times:
            times[setting].append(child(setting, threads, args.steps))
    default, kept = (statistics.median(times[s]) for s in ("default", "kept"))
    print(f"glibc's default     {default * 1000:6.1f} ms/step")
    print(f"freed memory kept   {kept * 1000:6.1f} ms/step")
    print(f"ratio {kept / default:.2f}: target {'met' if kept / default <= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
