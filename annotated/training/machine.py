"""What training asks of the machine it runs on: memory enough for the model, kernels that give
the same bits on every run, and, on a CPU, freed memory kept for the next step.

`check_memory` refuses, before it is built, a model whose training cannot fit in the device's
free memory (its weights and Adam's state, and the activations of one batch): a clear line
instead of a failed allocation, the machine swapping for minutes, or the kernel killing the
process without a word.

`use_deterministic_kernels` (--deterministic): on a GPU some default kernels add up in an order
that varies from run to run (the fused attention kernels' backward passes, for one), so two
runs, or a run and its resumed copy, drift apart by rounding; these are slower but repeatable.
A CPU run is repeatable without them.

`keep_freed_memory`: by default glibc's malloc serves each large allocation (above its mmap
threshold, 128 KB rising to at most 32 MB) with fresh pages from the kernel and hands them back
when the block is freed; it trims the top of its heap the same way. A training step allocates
and frees the same large tensors every time (the (tokens, V) logits, their log-probabilities
and gradients), so every step pays the kernel to map and zero those pages again at first touch.
Serving every allocation from the heap and never trimming it removes that cost (`python -m
benchmarks.cpu_allocator` times a step both ways), and the arithmetic is untouched: the
losses are the same to the last digit. The price is that the process keeps its peak memory
until it ends, which a training process does anyway. Other C libraries are left as they are.
"""
import ctypes
import os
import platform

import torch

from annotated.training import distributed

M_TRIM_THRESHOLD = -1     # mallopt parameters, from glibc's <malloc.h>
M_MMAP_MAX = -4
NEVER_TRIM = 2**31 - 1    # the largest value the int parameter takes


def available_memory(device) -> tuple[int, str] | None:
    """(bytes free, where) on `device`: the GPU's free memory, or what this process may still
    take on a CPU: the machine's available RAM (Linux's MemAvailable), or less where a limit is
    set on the process (its container's memory.max, or `ulimit -v`); None where none can be
    told."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0], f"the GPU {device}"
    rooms = [(_kib("/proc/meminfo", "MemAvailable"), "this machine"),
             (_container_room(), "this process's container (its memory.max)"),
             (_address_space_room(), "this process, under its limit (ulimit -v),")]
    known = [(room, where) for room, where in rooms if room is not None]
    return min(known) if known else None


def _kib(path: str, key: str) -> int | None:
    """Bytes of a `key:  N kB` line of a /proc file."""
    try:
        with open(path) as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
        return int(info[key].split()[0]) * 1024
    except (OSError, KeyError, ValueError, IndexError):
        return None


def _container_room() -> int | None:
    """memory.max - memory.current of this process's cgroup (version 2), if it has a limit."""
    try:
        with open("/sys/fs/cgroup/memory.max") as limit, \
                open("/sys/fs/cgroup/memory.current") as used:
            most = limit.read().strip()
            return None if most == "max" else int(most) - int(used.read())
    except (OSError, ValueError):
        return None


def _address_space_room() -> int | None:
    """RLIMIT_AS (`ulimit -v`) less the address space this process already maps."""
    try:
        import resource                          # POSIX only: Windows has no such limit
    except ImportError:
        return None
    most = resource.getrlimit(resource.RLIMIT_AS)[0]
    mapped = _kib("/proc/self/status", "VmSize")
    return None if most == resource.RLIM_INFINITY or mapped is None else most - mapped


def check_memory(config, vocab: int, device, corpus_tokens: int) -> None:
    """Refuse a model whose weights, gradients and two Adam moments (16 bytes a parameter in
    float32), with the activations one micro-batch keeps for the backward pass, alone exceed
    the device's free memory. A micro-batch holds at most max_tokens / (accum_steps x
    processes) tokens a side, and never more than the `corpus_tokens` of its training data."""
    n = config.parameter_count(vocab)              # from the shapes: nothing is allocated
    rows = min(-(-config.max_tokens // (config.accum_steps * distributed.world_size())),
               corpus_tokens)
    weights, batch = 16 * n, rows * activation_bytes(config)
    need, room = weights + batch, available_memory(device)
    if room is None or need <= room[0]:
        return
    free, where = room
    by_vocab = n - config.parameter_count(1)       # the embeddings' and the output layer's rows
    fix = ("lower max_tokens (or raise accum_steps), or d_model, d_ff or N" if batch > weights
           else f"lower vocab_size (its rows hold {by_vocab / n:.0%} of the parameters) or "
           f"d_model" if 2 * by_vocab > n else "lower d_model, d_ff, N or vocab_size")
    raise MemoryError(f"the model has {n:,} parameters: training it needs at least "
                      f"{need / 2**30:,.1f} GiB ({weights / 2**30:,.1f} GiB for weights, "
                      f"gradients and Adam's moments, {batch / 2**30:,.1f} GiB for the "
                      f"activations of a batch of {rows:,} tokens a side), and {where} has "
                      f"{free / 2**30:,.1f} GiB free; {fix}")


def activation_bytes(config) -> int:
    """A lower bound on the float32 activations one (source, target) token pair keeps for the
    backward pass: per layer, the sub-layers' inputs and outputs, the queries, keys and values,
    and the feed-forward hidden layer (an encoder layer about 8 d_model + 2 d_ff numbers, a
    decoder layer, with its second attention, 12 d_model + 2 d_ff)."""
    d, f = config.d_model, config.d_ff
    return 4 * config.N * ((8 * d + 2 * f) + (12 * d + 2 * f))


def use_deterministic_kernels():
    """Kernels that give the same bits on every run: attention as eq. (1) spelled out in
    matrix products, and cuBLAS with a fixed workspace."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")    # before cuBLAS starts
    torch.use_deterministic_algorithms(True, warn_only=True)
    for fused in ("flash", "mem_efficient", "cudnn"):
        getattr(torch.backends.cuda, f"enable_{fused}_sdp")(False)


def keep_freed_memory() -> bool:
    """Ask glibc to serve all allocations from its heap and to keep what is freed there.
    Returns whether it did (False on a C library other than glibc, where nothing changes)."""
    if platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt          # the C library this process already runs on
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))
