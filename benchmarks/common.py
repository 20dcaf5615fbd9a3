"""Shared helpers for the benchmark scripts: thread setup and interleaved timing."""
import os
import statistics
import time

import torch

from annotated.base.cli import number
from annotated.base.settings import at_least


def add_timing_arguments(parser, repeats: int):
    """--threads and --repeats, as the timing benchmarks take them."""
    parser.add_argument("--threads", type=number(at_least(1)),
                        help="default: env BENCH_THREADS or all cores")
    parser.add_argument("--repeats", type=number(at_least(1)), default=repeats,
                        help=f"timed runs of each contender (median; default {repeats})")


def set_threads(n: int | None):
    """Use the same number of intra-op threads for every contender; returns it."""
    n = n or int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1))
    torch.set_num_threads(n)
    return n


def interleaved_times(contenders: dict, repeats: int, warmup: int = 1) -> dict:
    """Median seconds per call of each zero-argument callable, run round-robin so that
    machine noise hits every contender alike."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}
