"""Dropout (§5.4) as training runs it on a CPU: the same arithmetic, cheaper random numbers.

The model's nn.Dropout keeps each element with probability 1 - P_drop and scales what it keeps
by 1 / (1 - P_drop). On a CPU torch draws one random number per element for this (bernoulli_),
and those draws cost more than the multiplications around them. `DrawnDropout` draws 64 random
bits per three elements instead and reads them as three 16-bit integers u, uniform on
[0, 65536); an element is dropped when

    u < round(P_drop * 65536)              (P_drop = 0.1: 6554 / 65536 = 0.100006)

so the drop probability is P_drop to within 1 / 131072, and everything else is nn.Dropout's:
the same scaling, the gradient masked and scaled alike, nothing dropped in eval mode. The bits
come from torch's CPU generator, so seeds and --resume (training.rng) govern them as before.

`use_drawn_dropout(model)` puts it in place of every nn.Dropout of a model (they hold no
weights, so checkpoints do not change). training.step does this on a CPU without compile; on a
GPU, or compiled, the fused kernels draw cheaply already and the model's nn.Dropout stays.
"""
import sys

import torch
from torch import nn

# torch's random_() on int64 gives 63 random bits: the low 48 are three whole 16-bit lanes,
# which sit first in memory on a little-endian machine and last on a big-endian one
LANES = slice(0, 3) if sys.byteorder == "little" else slice(1, 4)


def kept(shape: torch.Size, P_drop: float) -> torch.Tensor:
    """A bool tensor of `shape`: True where an element is kept, with probability 1 - P_drop."""
    n = shape.numel()
    draws = torch.empty((n + 2) // 3, 4, dtype=torch.int16)            # (n/3, 4) lanes
    draws.view(torch.int64).random_()                                  # 63 random bits per row
    threshold = round(P_drop * 65536) - 32768                          # u < t  <=>  lane < t - 2^15
    return (draws[:, LANES] >= threshold).reshape(-1)[:n].view(shape)


class _Dropped(torch.autograd.Function):
    """x * mask / (1 - P_drop), and the incoming gradient masked and scaled the same way."""

    @staticmethod
    def forward(ctx, x, P_drop):
        mask, scale = kept(x.shape, P_drop), 1.0 / (1.0 - P_drop)
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return (x * mask).mul_(scale)

    @staticmethod
    def backward(ctx, grad):
        mask, = ctx.saved_tensors
        return (grad * mask).mul_(ctx.scale), None


class DrawnDropout(nn.Module):
    """nn.Dropout(P_drop) with the random draws described above."""

    def __init__(self, P_drop: float):
        super().__init__()
        self.p = P_drop

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return x * 0                             # nn.Dropout's answer: every element dropped
        return _Dropped.apply(x, self.p)

    def extra_repr(self) -> str:
        return f"P_drop={self.p}"


def use_drawn_dropout(model: nn.Module) -> None:
    """Replace every nn.Dropout inside `model` by a DrawnDropout of the same P_drop."""
    for module in list(model.modules()):
        for name, child in module.named_children():
            if type(child) is nn.Dropout:
                setattr(module, name, DrawnDropout(child.p))
