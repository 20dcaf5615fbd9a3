"""Adam with the learning-rate schedule of §5.3:

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

The rate grows linearly for warmup_steps steps, then decays as 1/sqrt(step); the peak,
reached at step = warmup_steps, is (d_model * warmup_steps)^-0.5 (6.99e-4 for the base
model). Warmup matters for the post-LN Transformer: Adam's second-moment estimates are
poor in the first steps, and large early updates through the un-normalised residual
branches can derail training. `factor` scales the whole curve (1 in the paper).

Not in the paper: `cooldown_steps` > 0 multiplies the rate by a ramp that falls linearly to
zero over the last cooldown_steps steps before train_steps. A run with a fixed budget then
ends on small, low-noise updates instead of stopping at 1/sqrt(step) of its peak; checkpoint
averaging (§6.1) is the paper's way to the same end. The default, 0, is the paper's schedule.
"""
import torch


def noam_rate(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The learning rate at `step` (counting from 1)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


def cooldown(step: int, train_steps: int, cooldown_steps: int) -> float:
    """1 up to step train_steps - cooldown_steps, then a straight line down to 1/cooldown_steps
    at step train_steps (the last update still moves), 0 after it; always 1 if cooldown_steps
    is 0."""
    if cooldown_steps == 0:
        return 1.0
    return min(1.0, max(train_steps + 1 - step, 0) / cooldown_steps)


def make_optimizer(model, d_model: int, warmup_steps: int, factor: float = 1.0,
                   train_steps: int = 0, cooldown_steps: int = 0):
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) and a scheduler that sets lrate before each step.

    The scheduler's internal counter starts at 0 for the first optimizer step; we evaluate the
    formula at counter + 1 so that the first update uses lrate(step=1). The update is PyTorch's
    fused kernel (one pass over all parameters instead of a dozen elementwise operations a
    tensor): the same update up to rounding, and for a small model a visible part of a step
    faster.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9,
                                 fused=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: noam_rate(i + 1, d_model, warmup_steps, factor)
        * cooldown(i + 1, train_steps, cooldown_steps))
    return optimizer, scheduler
