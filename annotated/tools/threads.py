"""How many CPU threads a model runs on. A small model (under SMALL_MODEL parameters) gets one:
a second thread gains it little, and while other work holds the cores two threads wait for
each other at every one of its many small operations (measured on a 2-core machine with two
other jobs running: beam search with the shipped 2.6M-parameter model took 20 times longer on
two threads than on one)."""
from contextlib import contextmanager

import torch

from annotated.model import count_parameters

SMALL_MODEL = 5_000_000   # parameters


def is_small_on_cpu(model) -> bool:
    return (next(model.parameters()).device.type == "cpu"
            and count_parameters(model) < SMALL_MODEL)


@contextmanager
def one_thread_if_small(model):
    """For the duration, one CPU thread if `model` is small and on the CPU; restored after."""
    before = torch.get_num_threads()
    if is_small_on_cpu(model):
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
