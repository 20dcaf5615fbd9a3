"""On a CPU, training keeps freed memory for the next step (annotated.training.machine)."""
import ctypes
import platform

import pytest
import torch

from annotated.training.machine import keep_freed_memory

GLIBC = platform.libc_ver()[0] == "glibc"


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (glibc 2.33 and later): where malloc's memory lives."""
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def mapped_bytes() -> int:
    """Bytes glibc holds in blocks mapped from the kernel one by one (not in its heap)."""
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = MallInfo2
    return mallinfo2().hblkhd


@pytest.mark.skipif(not GLIBC or not hasattr(ctypes.CDLL(None), "mallinfo2"),
                    reason="glibc 2.33 or later only")
def test_a_large_tensor_comes_from_the_heap_once_freed_memory_is_kept():
    assert keep_freed_memory()
    before = mapped_bytes()
    logits = torch.ones(1200, 6000)              # 29 MB: a step's logits in multi30k_tiny
    assert mapped_bytes() == before              # not a block of its own, mapped afresh
    assert logits.sum().item() == 1200 * 6000


@pytest.mark.skipif(GLIBC, reason="only where the C library is not glibc")
def test_other_c_libraries_are_left_as_they_are():
    assert keep_freed_memory() is False

