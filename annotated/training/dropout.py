"""Dropout (§5.4) as training runs it on a CPU: the same arithmetic, cheaper random numbers.

The model's nn.Dropout keeps each element with probability 1 - P_drop and scales what it keeps
by 1 / (1 - P_drop). On a CPU torch draws one random number per element for this (bernoulli_),
and those draws cost more than the multiplications around them. `DrawnDropout` draws 64 random
bits per four elements instead and reads them as four 16-bit integers u, uniform on
[0, 65536); an element is dropped when

    u < round(P_drop * 65536)              (P_drop = 0.1: 6554 / 65536 = 0.100006)

so the drop probability is P_drop to within 1 / 131072, and everything else is nn.Dropout's:
the same scaling, the gradient masked and scaled alike, nothing dropped in eval mode. The
comparison is written straight into a float mask that already holds the scaling, so that the
forward and the backward pass are one multiplication each. The bits come from torch's CPU
generator, so seeds and --resume (training.rng) govern them as before.

`use_drawn_dropout(model)` puts it in place of every nn.Dropout of a model (they hold no
weights, so checkpoints do not change). training.step does this on a CPU without compile; on a
GPU, or compiled, the fused kernels draw cheaply already and the model's nn.Dropout stays.
"""
import torch
from torch import nn

# random_(FROM, TO) on int64 draws each value uniformly from [FROM, TO): all 64 bits random
# (but for a bias of one value in 2^64), where random_() alone leaves the sign bit 0
FROM, TO = -2 ** 63, 2 ** 63 - 1


def kept(shape: torch.Size, P_drop: float, dtype=torch.float32) -> torch.Tensor:
    """A tensor of `shape` and `dtype`: 1 / (1 - P_drop) where an element is kept, with
    probability 1 - P_drop, and 0 where it is dropped: the mask and nn.Dropout's scaling in
    one, so that applying it is one multiplication."""
    n = shape.numel()
    draws = torch.empty((n + 3) // 4, dtype=torch.int64).random_(FROM, TO)   # (n/4,) draws
    lanes = draws.view(torch.int16)[:n]                      # (n,): u - 2^15, 16 bits each
    mask = torch.empty(n, dtype=dtype)                       # the comparison written as 1.0
    torch.ge(lanes, round(P_drop * 65536) - 32768, out=mask)   # or 0.0: u >= round(P_drop 2^16)
    return mask.mul_(1.0 / (1.0 - P_drop)).view(shape)


class _Dropped(torch.autograd.Function):
    """x times the scaled mask, and the incoming gradient times the same mask. The mask is in
    float32 at least, so that under autocast a bf16 x is scaled in float32 and rounded once, as
    nn.Dropout does it."""

    @staticmethod
    def forward(ctx, x, P_drop):
        mask = kept(x.shape, P_drop, torch.promote_types(x.dtype, torch.float32))
        ctx.save_for_backward(mask)
        return (x * mask).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        mask, = ctx.saved_tensors
        return (grad * mask).to(grad.dtype), None


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
