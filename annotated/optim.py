"""Adam with the learning-rate schedule of §5.3:

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

The rate grows linearly for warmup_steps steps, then decays as 1/sqrt(step); the peak,
reached at step = warmup_steps, is (d_model * warmup_steps)^-0.5 (6.99e-4 for the base
model). Warmup matters for the post-LN Transformer: Adam's second-moment estimates are
poor in the first steps, and large early updates through the un-normalised residual
branches can derail training. `factor` scales the whole curve (1 in the paper).
"""
import torch


def noam_rate(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The learning rate at `step` (counting from 1)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


def make_optimizer(model, d_model: int, warmup_steps: int, factor: float = 1.0):
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) and a scheduler that sets lrate before each step.

    The scheduler's internal counter starts at 0 for the first optimizer step; we evaluate the
    formula at counter + 1 so that the first update uses lrate(step=1).
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: noam_rate(i + 1, d_model, warmup_steps, factor))
    return optimizer, scheduler
