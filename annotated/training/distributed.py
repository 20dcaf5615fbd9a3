"""One process or many: what the training loop needs to know about torchrun.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK; a plain `python -m annotated.train` sets none
of them and runs as rank 0 of 1. Under torchrun the processes talk over NCCL on GPUs and gloo on
CPUs, even when there is only one of them, so that a one-process torchrun run takes the same
path (process group, DistributedDataParallel) as eight. The tests run two CPU processes, and two
single-process "nodes", under torchrun with gloo; on a GPU, one process with NCCL. Without a
process group every helper here is a no-op, so the loop reads the same either way.
"""
import os
import socket
import sys
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist

from annotated.base.errors import DataError, DeviceError
from annotated.base.signals import stops_while_blocked


#: How long the processes of a job may take to meet (torch's own limit is half an hour).
RENDEZVOUS_S = 180

#: How long a process of the job may stay stopped (SIGSTOP, Ctrl-Z) before another process of
#: its machine says so: the others wait for it inside torch without a word, up to half an hour.
STOPPED_NOTE_S = 20

#: What torchrun sets for each process, all of them: a few alone are left from another job.
TORCHRUN = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def torchrun_environment() -> bool:
    """Whether this process was started by torchrun, after checking that its variables are
    whole: some of them alone (RANK left exported by another job), or a rank that is no
    number, would end in a rendezvous traceback or a wait for peers that never come."""
    if "RANK" not in os.environ and "WORLD_SIZE" not in os.environ:
        return False                  # (a MASTER_ADDR exported for other tools means nothing)
    given = [name for name in TORCHRUN if name in os.environ]
    if missing := [name for name in TORCHRUN if name not in os.environ]:
        raise DataError(f"{', '.join(given)} set in the environment, but not "
                        f"{', '.join(missing)}: torchrun sets all of them; to train as one "
                        f"process unset {' '.join(given)} (left from another job?), or start "
                        f"the run with torchrun")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        if not os.environ[name].strip().isdigit():
            raise DataError(f"{name}={os.environ[name]!r} in the environment is no process "
                            f"number; torchrun sets it: unset it, or start the run with "
                            f"torchrun")
    if int(os.environ["RANK"]) >= int(os.environ["WORLD_SIZE"]):
        raise DataError(f"RANK={os.environ['RANK']} is not below WORLD_SIZE="
                        f"{os.environ['WORLD_SIZE']}; torchrun sets both: start the run with "
                        f"torchrun")
    return True


def init_distributed():
    """(rank, world_size, device): torchrun's environment, or one process."""
    under_torchrun = torchrun_environment()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if torch.cuda.is_available():
        local = int(os.environ.get("LOCAL_RANK", 0))
        if local >= torch.cuda.device_count():
            raise DeviceError(f"process {local} of this machine has no GPU: it has "
                              f"{torch.cuda.device_count()}; start at most that many processes "
                              f"(torchrun --nproc_per_node={torch.cuda.device_count()})")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if under_torchrun:                  # NCCL bound to this process's GPU from the start
        with stops_while_blocked(RENDEZVOUS_S, lambda: peers_missing(rank, world)):
            if device.type == "cuda":
                dist.init_process_group("nccl", device_id=device)
            else:
                dist.init_process_group("gloo")
        watch_peers(rank, world)
    return rank, world, device


def peers_missing(rank: int, world: int) -> str:
    """What to say when the processes have not all met after RENDEZVOUS_S seconds: torchrun
    starts them together, so one is missing (started by hand, or failed as it started)."""
    where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    try:
        socket.create_connection((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])),
                                 timeout=5).close()
        who = f"not all {world} of them have come to {where} (MASTER_ADDR:MASTER_PORT)"
    except (OSError, ValueError):
        who = (f"nothing answers at {where} (MASTER_ADDR:MASTER_PORT), where process 0 holds "
               f"the meeting point: it has not started")
    return (f"process {rank} of {world} waited {RENDEZVOUS_S} s for the others: {who}; start "
            f"all of them with torchrun (torchrun --nproc_per_node={world} -m annotated.train "
            f"...), or unset {' '.join(TORCHRUN)} to train as one process")


#: One event per thread of watch_peers, set by finish() to end it.
_watching: list[threading.Event] = []


def watch_peers(rank: int, world: int) -> None:
    """A thread that says, once, when a process of this machine's part of the job has been
    stopped (SIGSTOP, Ctrl-Z) for STOPPED_NOTE_S seconds, naming it and the way out; the
    lowest-ranked process of the machine that is not stopped says it. (A process that dies ends
    the job through torchrun; one on another machine cannot be seen from here.)"""
    here = {r: pid for r, (host, pid) in enumerate(gather((socket.gethostname(), os.getpid())))
            if host == socket.gethostname()}
    if len(here) < 2 or not Path(f"/proc/{os.getpid()}/stat").is_file():
        return

    finished = threading.Event()
    _watching.append(finished)

    def watch():
        since, said = {}, set()
        while not finished.wait(min(5, STOPPED_NOTE_S / 4)):
            now = time.monotonic()
            since = {r: since.get(r, now) for r, pid in here.items() if stopped(pid)}
            said &= set(since)
            speaker = min((r for r in here if r not in since), default=None)
            for r in sorted(since):
                if now - since[r] >= STOPPED_NOTE_S and r not in said and rank == speaker:
                    print(f"note: process {r} of {world} (pid {here[r]}) has been stopped for "
                          f"{now - since[r]:.0f} s (SIGSTOP, or Ctrl-Z), and the others wait for "
                          f"it: continue it (kill -CONT {here[r]}), or end the job (Ctrl-C)",
                          file=sys.stderr, flush=True)
                    said.add(r)
    threading.Thread(target=watch, daemon=True, name="watch_peers").start()


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (by SIGSTOP, Ctrl-Z or a debugger), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:                                   # gone: torchrun ends the job
        return False
    return stat.rpartition(")")[2].split()[0] in ("T", "t")


def active() -> bool:
    """Whether this process is one of a torchrun group (of one or more processes)."""
    return dist.is_initialized()


def backend() -> str:
    """The process group's backend: nccl or gloo."""
    return dist.get_backend()


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def all_reduce(t: torch.Tensor) -> torch.Tensor:
    """The sum of `t` over all ranks, in place."""
    if dist.is_initialized():
        dist.all_reduce(t)
    return t


def rank0_says(*flags: bool, device) -> list[bool]:
    """Rank 0's yes/no decisions, shared with every rank (clocks differ across ranks)."""
    t = torch.tensor([float(f) for f in flags], device=device)
    if dist.is_initialized():
        dist.broadcast(t, 0)
    return [bool(f) for f in t.tolist()]


def gather(obj) -> list:
    """Every rank's `obj`, in rank order (e.g. the RNG states a checkpoint stores)."""
    if not dist.is_initialized():
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def barrier():
    if dist.is_initialized():
        dist.barrier()


def finish():
    for finished in _watching:
        finished.set()
    _watching.clear()
    if dist.is_initialized():
        dist.destroy_process_group()
