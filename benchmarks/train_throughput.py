"""Training throughput and model FLOP utilisation (MFU) on this machine.

One training step is exactly what `python -m annotated.train` does per step: the global batch
(token-batched by annotated.data.batching) through `annotated.training.step.train_step`
(forward, label-smoothed loss, backward), then the Adam update of annotated.optim. Timed
round-robin against the machine's matmul peak (float32's, or bf16's under --amp bf16),
measured in the same run with the same threads as the best rate of a large square
torch.matmul, so machine noise hits both alike.

    MFU = achieved FLOP/s / peak FLOP/s
    achieved FLOPs of a step = annotated.training.flops.batch_training_flops over the real
    (unpadded) lengths: 3 x the forward pass, which counts every matrix multiply: the attention
    projections and the QK^T and weights.V products of eq. (1) (the n^2 terms), the FFN and the
    output projection; i.e. 6 x (non-embedding parameters + output projection) per token
    plus 6 x the attention products, with the encoder's parameters counted per source token and
    the decoder's and the output projection's per target token. Padding is not counted.

Sentence lengths are synthetic (the benchmark needs no data and no tokenizer): uniform in
8..24 subwords for the source in the multi30k case (Multi30k captions average about 13 words)
and 16..48 for the base model (news sentences), the target within 3 of the source.
Tokens/s counts source + target tokens, padding excluded; the target part is printed too.

    python -m benchmarks.train_throughput [--threads 2] [--repeats 3] [--only CASE ...]
    python -m benchmarks.train_throughput --threads 1 --against DIR [--only CASE ...]
    python -m benchmarks.train_throughput --threads 1 --amp bf16 [--against DIR]

--amp bf16 runs the steps under bf16 autocast, as `amp=bf16` trains (on either side of
--against): on a CPU with bf16 arithmetic (AVX512-BF16 or AMX) its matrix products run several
times faster than float32's.

--against DIR times each case's step in another copy of the project too (e.g. the previous
commit: `git worktree add DIR REV`), each copy in a process of its own that imports only its
own code, the two stepping in turn, one step each, so that machine noise hits both alike; it
prints both times and how many times faster this code is, with the lowest and highest ratio of
the pairs of steps: where 1 lies between them, the difference is within the noise. Both
processes keep freed memory for the next step, as `python -m annotated.train` does on a CPU
(training.machine).
"""
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from annotated import configs
from annotated.base.cli import ArgumentParser, command, folder, say_error
from annotated.base.errors import DataError
from annotated.data.batching import lengths_of, make_batches
from annotated.model import EncoderDecoder
from annotated.optim import make_optimizer
from annotated.training.flops import batch_training_flops
from annotated.training.step import make_engine, train_step
from benchmarks.common import add_timing_arguments, busy, interleaved_times, set_threads

ROOT = Path(__file__).resolve().parent.parent
# One case's step, in the copy of the project on PYTHONPATH: one timed step per line of stdin.
WORKER = """
import signal, sys, time, torch
signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the parent's: it ends the steps
try:                         # the copy's own module (annotated.training.machine) ...
    from annotated.training.machine import keep_freed_memory
except ImportError:          # ... or, in a copy from before its rename, training.cpu_memory
    from annotated.training.cpu_memory import keep_freed_memory
from benchmarks.train_throughput import CASES, training_step
keep_freed_memory()
torch.set_num_threads(int(sys.argv[2]))
config, vocab, max_tokens, length_range = CASES[sys.argv[1]]
config = config.override(amp=sys.argv[3])
step = training_step(config, vocab, max_tokens or config.max_tokens, length_range)[0]
for _ in sys.stdin:
    start, cpu = time.perf_counter(), time.process_time()
    step()
    print(time.perf_counter() - start, time.process_time() - cpu, flush=True)
"""

CASES = {   # name: (config, vocab, batch tokens per side, sentence length range)
    "multi30k": (configs.get("multi30k"), 8000, None, (8, 24)),
    "base": (configs.get("base"), 37_000, 2048, (16, 48)),
    # Transformer-tiny with the literature's 10k vocabulary and with the shipped model's 6k:
    # at width 128 the output projection and softmax are much of a step's work
    "tiny_v10k": (configs.get("multi30k_tiny"), 10_000, None, (8, 24)),
    "tiny_v6k": (configs.get("multi30k_tiny").override(vocab_size=6000), 6000, None, (8, 24)),
}


def matmul_peak(dtype=torch.float32, n: int = 2048):
    """A zero-argument callable doing one (n x n) @ (n x n) product in `dtype` (that of the
    steps' matrix products: bfloat16 under amp=bf16), and its FLOPs."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    return (lambda: torch.matmul(a, b)), 2 * n ** 3


def training_step(config, vocab, max_tokens, length_range, seed=0, device="cpu"):
    """A callable running one training step on one typical global batch, and that batch's
    useful FLOPs and (source, target) token counts."""
    rng = np.random.default_rng(seed)
    lo, hi = length_range
    src_lens = rng.integers(lo, hi + 1, 4000)
    tgt_lens = np.clip(src_lens + rng.integers(-3, 4, 4000), lo, hi)     # translations: similar
    pairs = [(rng.integers(4, vocab, s), rng.integers(4, vocab, t))
             for s, t in zip(src_lens, tgt_lens)]
    lengths = lengths_of(pairs)
    batches = make_batches(lengths, max_tokens, seed, 0)
    batch = sorted(batches, key=len)[len(batches) // 2]          # a median-sized batch
    torch.manual_seed(seed)
    model = EncoderDecoder(config, vocab).to(device).train()
    optimizer, scheduler = make_optimizer(model, config.d_model, config.warmup_steps)
    engine = make_engine(model, config, torch.device(device))

    def step():
        train_step(engine, pairs, batch, config)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)

    src_lens = [lengths[i][0] for i in batch]
    tgt_lens = [lengths[i][1] for i in batch]
    return step, batch_training_flops(config, src_lens, tgt_lens, vocab), \
        (sum(src_lens), sum(tgt_lens)), len(batch)


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.train_throughput",
                            description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser, repeats=3)
    parser.add_argument("--only", nargs="+", choices=list(CASES), metavar="CASE",
                        help=f"some of {', '.join(CASES)}")
    parser.add_argument("--amp", choices=["none", "bf16"], default="none",
                        help="the steps' precision (amp=bf16: bf16 autocast, for a CPU with bf16 "
                             "arithmetic); default none, float32")
    parser.add_argument("--against", type=folder, metavar="DIR",
                        help="another copy of the project, timed in turn with this one")
    args = parser.parse_args(argv)
    theirs = args.against and args.against / "benchmarks" / "train_throughput.py"
    if theirs and not (theirs.is_file() and all(
            name in theirs.read_text(errors="replace") for name in ("CASES", "def training_step"))):
        raise DataError(f"--against {args.against}: " + ("its benchmarks/train_throughput.py is "
                        "not this project's (no CASES and training_step)" if theirs.is_file()
                        else "no benchmarks/train_throughput.py there") + "; give a copy of this "
                        "project, e.g. made by git worktree add DIR REV")
    if args.against and args.against.resolve() == ROOT:
        say_error(f"note: --against {args.against} is this copy of the project itself: both "
                  f"sides run the same code, so the ratio shows only the machine's noise")
    return args


class Worker:
    """A process running one case's training step with the code of the project copy `root`."""

    def __init__(self, root: Path, case: str, threads: int, amp: str):
        self.root = root
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, case, str(threads), amp], cwd=root, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": str(threads)})

    def step(self) -> tuple[float, float]:
        """Seconds of one step: on the clock, and of the process's CPU time."""
        try:
            self.process.stdin.write("step\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except BrokenPipeError:                  # it ended before this step
            line = ""
        if not line:
            raise DataError(f"the step's process for {self.root} ended (exit code "
                            f"{self.process.wait()}); its error is above")
        try:
            wall, cpu = line.split()
            return float(wall), float(cpu)
        except ValueError:                       # its code printed something of its own
            raise DataError(f"the step's process for {self.root} wrote {line.strip()[:200]!r} "
                            f"where the seconds of a step were expected: its code prints to "
                            f"standard output while it steps; give a copy of this project "
                            f"that does not (git worktree add DIR REV)") from None

    def close(self):
        try:
            self.process.stdin.close()
        except BrokenPipeError:                  # it has ended already
            pass
        self.process.wait()


def compare(name: str, args, threads: int) -> float:
    """Median seconds a step of case `name` with this code and with `args.against`'s (both
    under args.amp), stepped in turn after one warm-up step each, args.repeats times; prints
    both, on the clock and in CPU time (which other work on the machine disturbs less), and
    returns how many times faster this code is."""
    against, repeats = args.against, args.repeats
    workers = {"this code": Worker(ROOT, name, threads, args.amp),
               str(against): Worker(against, name, threads, args.amp)}
    try:
        times = {label: [] for label in workers}
        for worker in workers.values():
            worker.step()
        for _ in range(repeats):
            for label, worker in workers.items():
                times[label].append(worker.step())
    finally:
        for worker in workers.values():
            worker.close()
    (ours, ours_cpu), (theirs, theirs_cpu) = (
        [statistics.median(column) for column in zip(*t)] for t in times.values())
    print(f"{name:<9} this code {ours * 1000:.0f} ms/step ({ours_cpu * 1000:.0f} ms CPU), "
          f"{against} {theirs * 1000:.0f} ms/step ({theirs_cpu * 1000:.0f} ms CPU): "
          f"{theirs / ours:.2f}x as fast ({theirs_cpu / ours_cpu:.2f}x in CPU time; {repeats} "
          f"steps each, in turn){spread(*times.values())}", flush=True)
    return theirs / ours


def spread(ours: list, theirs: list) -> str:
    """The lowest and highest ratio (theirs / ours, on the clock) of the steps taken in turn,
    and whether 1 lies between them: a difference the machine's noise could make is said to
    be one; one step each cannot tell, and that is said."""
    if len(ours) < 2:
        return ("; one step each cannot tell a difference from the machine's noise: give "
                "--repeats 5 or more")
    ratios = [t[0] / o[0] for o, t in zip(ours, theirs)]
    noise = ": within the noise" if min(ratios) <= 1 <= max(ratios) else ""
    return f"; step by step {min(ratios):.2f}x to {max(ratios):.2f}x{noise}"


@command
def main(argv=None):
    args = parse_args(argv)
    threads = set_threads(args.threads)
    if args.against:
        print(f"threads: {threads}, amp={args.amp}; this code ({ROOT}) against "
              f"{args.against}{busy()}")
        for name in args.only or CASES:
            compare(name, args, threads)
        return
    print(f"threads: {threads}; target: MFU >= 0.5 at the base dimensions{busy()}")
    relative = {}                            # seconds per step / seconds per peak matmul
    for name, (config, vocab, max_tokens, length_range) in CASES.items():
        if args.only and name not in args.only:
            continue
        step, flops, (src_tokens, tgt_tokens), n = training_step(
            config.override(amp=args.amp), vocab, max_tokens or config.max_tokens, length_range)
        peak, peak_flops = matmul_peak(torch.bfloat16 if args.amp == "bf16" else torch.float32)
        t = interleaved_times({"step": step, "peak": peak}, args.repeats)
        achieved, peak_rate = flops / t["step"], peak_flops / t["peak"]
        relative[name] = t["step"] / t["peak"]
        print(f"{name:<9} N={config.N} d_model={config.d_model} d_ff={config.d_ff} h={config.h} "
              f"V={vocab}: batch of {n} pairs ({src_tokens}+{tgt_tokens} tokens), "
              f"{t['step'] * 1000:.0f} ms/step")
        print(f"{'':<9} {(src_tokens + tgt_tokens) / t['step']:,.0f} tokens/s "
              f"({tgt_tokens / t['step']:,.0f} target tokens/s); {achieved / 1e9:.1f} GFLOP/s of "
              f"a measured {'bf16' if args.amp == 'bf16' else 'float32'} matmul peak of "
              f"{peak_rate / 1e9:.1f} GFLOP/s: MFU {achieved / peak_rate:.2f}")
    if "tiny_v10k" in relative and "tiny_v6k" in relative:
        print(f"tiny: a step with V=6,000 takes {relative['tiny_v6k'] / relative['tiny_v10k']:.2f} "
              f"of the time of one with V=10,000 (same batch; each timed against the peak)")


if __name__ == "__main__":
    main()
