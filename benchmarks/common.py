"""Shared helpers for the benchmark scripts: thread setup and interleaved timing."""
import os
import statistics
import sys
import time

import torch

from annotated.base.cli import number, require_stdout
from annotated.base.errors import ConfigError
from annotated.base.settings import at_least, between

THREADS = between(1, 1024, "threads")    # far more makes torch crash (100,000: a segfault)


def add_timing_arguments(parser, repeats: int, threads: int | None = None):
    """--threads and --repeats, as the timing benchmarks take them; `threads`: the number of
    threads without --threads or BENCH_THREADS (None: one a core), as set_threads takes it."""
    parser.add_argument("--threads", type=number(THREADS),
                        help=f"default: env BENCH_THREADS or "
                             f"{'all cores' if threads is None else threads}")
    parser.add_argument("--repeats", type=number(at_least(1)), default=repeats,
                        help=f"timed runs of each contender (median; default {repeats})")


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def busy() -> str:
    """A clause for a timing's first line when other work keeps the cores busy (a load
    average above the cores): the times measured then are shared, slower than the machine's."""
    try:
        load = os.getloadavg()[0]
    except OSError:                          # no load average on this system
        return ""
    if load <= cores():
        return ""
    return (f"; note: the machine is busy (load average {load:.1f} on {cores()} cores), so "
            f"these times are slower than an idle machine's")


def set_threads(n: int | None, default: int | None = None):
    """Use the same number of intra-op threads for every contender (--threads, else env
    BENCH_THREADS, else `default`, else one a core); returns it. More threads than cores is
    said on stderr: they take turns on the cores, and the times measure that. Every timing
    benchmark begins here, and prints its timings: with stdout closed it stops before timing
    anything."""
    require_stdout("the timings")
    if n is None:
        text = os.environ.get("BENCH_THREADS", str(default or cores()))
        test, allowed = THREADS
        if not text.strip().isdigit() or not test(int(text)):
            raise ConfigError(f"env BENCH_THREADS={text!r}: expected a whole number, "
                              f"{allowed}; set it so or unset it (then: "
                              f"{'one thread a core' if default is None else default})")
        n = int(text)
    if n > cores():
        print(f"note: {n} threads on the {cores()} cores this process may use: the threads "
              f"take turns on the cores, and the times measure that wait; --threads "
              f"{cores()} or fewer measures the code", file=sys.stderr, flush=True)
    torch.set_num_threads(n)
    return n


def interleaved_times(contenders: dict, repeats: int, warmup: int = 1) -> dict:
    """Median seconds per call of each zero-argument callable, run round-robin so that
    machine noise hits every contender alike."""
    return {name: statistics.median(t)
            for name, t in times_in_turn(contenders, repeats, warmup).items()}


def times_in_turn(contenders: dict, repeats: int, warmup: int = 1) -> dict:
    """Every call's seconds, by contender: each zero-argument callable called `warmup` times
    untimed, then `repeats` times in turn with the others."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def noise_note(times: dict, worst: float = 1.5) -> str | None:
    """A note when a contender's repeats differ by more than `worst` times (slowest over
    fastest): the machine was busy, or each call does too little work, and a ratio of medians
    is not to be trusted."""
    spread = {name: max(t) / min(t) for name, t in times.items() if len(t) > 1 and min(t) > 0}
    if not spread or max(spread.values()) <= worst:
        return None
    name = max(spread, key=spread.get)
    return (f"note: the {name} timings differ by {spread[name]:.1f}x between repeats (a busy "
            f"machine, or too little work a call): the ratio may be noise; time more work "
            f"(more sentences, more --repeats) on a quieter machine")