"""Freed CPU memory kept for reuse, so that a training step on a CPU does not page-fault.

By default glibc's malloc serves each large allocation (above its mmap threshold, 128 KB rising
to at most 32 MB) with fresh pages from the kernel and hands them back when the block is freed;
it trims the top of its heap the same way. A training step allocates and frees the same large
tensors every time (the (tokens, V) logits, their log-probabilities and gradients), so every
step pays the kernel to map and zero those pages again at first touch.

Serving every allocation from the heap and never trimming it removes that cost (`python -m
benchmarks.cpu_allocator` times a step both ways), and the arithmetic is untouched: the
losses are the same to the last digit. The price is that the process keeps its peak memory
until it ends, which a training process does anyway. Other C libraries are left as they are.
"""
import ctypes
import platform

M_TRIM_THRESHOLD = -1     # mallopt parameters, from glibc's <malloc.h>
M_MMAP_MAX = -4
NEVER_TRIM = 2**31 - 1    # the largest value the int parameter takes


def keep_freed_memory() -> bool:
    """Ask glibc to serve all allocations from its heap and to keep what is freed there.
    Returns whether it did (False on a C library other than glibc, where nothing changes)."""
    if platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt          # the C library this process already runs on
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))
