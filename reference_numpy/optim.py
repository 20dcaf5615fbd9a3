"""Adam (Kingma & Ba) with the learning-rate schedule of §5.3, and one whole training step.

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

The schedule is two curves and the lower of them: a straight line through the origin,
step / warmup_steps^1.5, and the decay 1 / sqrt(step). They cross where step^1.5 =
warmup_steps^1.5, i.e. at step = warmup_steps, so the rate climbs linearly for warmup_steps
steps, peaks there at (d_model * warmup_steps)^-0.5, and falls as 1 / sqrt(step) afterwards.
`noam_rate` computes both curves in float64 for a step or a whole array of steps and takes
their minimum, as written; `factor` scales the result (1 in the paper).

Adam keeps, per parameter, running averages of the gradient (m) and of its square (v):

    m <- beta1 m + (1 - beta1) g          v <- beta2 v + (1 - beta2) g^2
    m_hat = m / (1 - beta1^t)             v_hat = v / (1 - beta2^t)     (bias correction)
    theta <- theta - lr * m_hat / (sqrt(v_hat) + eps)

with the paper's beta1 = 0.9, beta2 = 0.98, eps = 1e-9. The corrections undo the pull
towards the zero initial values of m and v in the first steps. The arithmetic follows
torch.optim.Adam's order (eps added to sqrt(v) / sqrt(1 - beta2^t)), so the two agree to
rounding.
"""
import numpy as np

from reference_numpy.model import loss_and_grads


def noam_rate(step, d_model, warmup_steps, factor=1.0):
    """The §5.3 learning rate at `step` (counting from 1: the formula has no value at 0).

    `step` is an int or an array of steps; the result is a float, or an array of the same
    shape. A single step is kept as a NumPy scalar, whose ** calls the C library's pow like
    Python's floats; an array goes through NumPy's vectorized power, which may differ from
    that in the last bit.
    """
    steps = np.asarray(step, dtype=np.float64)                     # (...) or a 0-d array
    if (steps < 1).any():
        raise ValueError(f"steps count from 1 in the §5.3 schedule, got {steps.min():g}")
    if steps.ndim == 0:
        steps = steps[()]                                          # a NumPy scalar
    decay = steps ** -0.5                                          # step^-0.5
    warmup = steps * np.float64(warmup_steps) ** -1.5              # step * warmup_steps^-1.5
    lrate = np.float64(d_model) ** -0.5 * np.minimum(decay, warmup)
    lrate = factor * lrate
    return float(lrate) if np.ndim(lrate) == 0 else lrate


class Adam:
    """Adam over a params dict, updated in place."""

    def __init__(self, params, betas=(0.9, 0.98), eps=1e-9):
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.t = 0
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.v = {name: np.zeros_like(p) for name, p in params.items()}

    def step(self, params, grads, lr):
        self.t += 1
        correction1 = 1.0 - self.beta1 ** self.t
        correction2 = 1.0 - self.beta2 ** self.t
        for name, g in grads.items():
            m, v = self.m[name], self.v[name]
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * g * g
            denom = np.sqrt(v) / np.sqrt(correction2) + self.eps
            params[name] -= (lr / correction1) * m / denom


def train_step(params, adam, src, tgt_in, tgt_out, *, pad, eps_ls, config, warmup_steps,
               factor=1.0, dropout_masks=None):
    """One optimizer step at the §5.3 rate for step adam.t + 1; returns the loss before it."""
    loss, grads = loss_and_grads(params, src, tgt_in, tgt_out, pad=pad, eps_ls=eps_ls,
                                 config=config, dropout_masks=dropout_masks)
    d_model = params["src_embed.lut.weight"].shape[1]
    adam.step(params, grads, noam_rate(adam.t + 1, d_model, warmup_steps, factor))
    return loss
