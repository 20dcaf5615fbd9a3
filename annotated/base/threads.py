"""How many CPU threads a model runs on. The commands decide, with this rule, before they
train or decode; nothing below them changes torch's thread count as a side effect.

A small model (under SMALL_MODEL parameters) gets one thread: a second gains it little, and
while other work holds the cores two threads wait for each other at every one of its many
small operations, which can make it many times slower (`python -m benchmarks.decode_speed
--threads 2` against `--threads 1` on a busy machine shows it). A larger model gets torch's
default, a thread per core. `--threads N` overrides the rule; more threads than the cores
this process may use is done as asked, with a note that it slows the work down.
"""
import os

import torch

from annotated.base.cli import say_error

SMALL_MODEL = 5_000_000   # parameters


def threads_for(parameters: int, requested: int | None = None) -> int | None:
    """--threads if given, else 1 for a small model, else None (torch's default)."""
    return requested or (1 if parameters < SMALL_MODEL else None)


def use_threads(parameters: int, requested: int | None = None) -> None:
    """Set torch's CPU thread count by threads_for (unchanged where it says None)."""
    threads = threads_for(parameters, requested)
    if threads:
        torch.set_num_threads(threads)
    cores = len(os.sched_getaffinity(0))
    local = os.environ.get("LOCAL_WORLD_SIZE", "")               # torchrun's processes here
    peers = int(local) if local.isdigit() and int(local) > 0 else 1
    if requested and requested > cores and peers == 1:
        say_error(f"note: --threads {requested} is more than the {cores} CPU core(s) this "
                  f"process may use: the threads wait for each other, which makes each step "
                  f"slower, not faster; give --threads {cores} or fewer")
    elif requested and requested * peers > cores and os.environ.get("LOCAL_RANK") == "0":
        fix = (f"give --threads {cores // peers}" + (" or fewer" if cores // peers > 1 else "")
               if peers <= cores else      # one thread each is already too many: fewer processes
               f"start at most {cores} process(es) here (torchrun --nproc_per_node={cores})")
        say_error(f"note: {peers} processes of --threads {requested} on this machine are "
                  f"{requested * peers} threads for its {cores} CPU core(s): they wait for "
                  f"each other, which makes each step slower, not faster; {fix}")
