"""Label smoothing (§5.4), the same definition as annotated.loss, forward and backward.

With eps = eps_ls and V vocabulary entries, the target distribution for a token y puts
q_y = 1 - eps on y, q_c = eps / (V - 2) on every class c that is neither y nor padding, and
q_pad = 0. The loss is the cross-entropy against q averaged over the n non-padding target
positions:

    loss = (1/n) sum_positions -sum_c q_c log p_c

It is linear in log p, so its gradient with respect to log p is just -q / n at a non-padding
position and 0 at a padding one; layers.log_softmax_backward carries it on to the logits.
"""
import numpy as np


def label_smoothed_forward(log_p, target, pad, eps_ls):
    """log_p: (batch, tgt_len, V) log-probabilities, target: (batch, tgt_len) ids -> the loss."""
    shape, V = log_p.shape, log_p.shape[-1]
    log_p = log_p.reshape(-1, V)                                    # (n_all, V)
    target = target.reshape(-1)
    keep = target != pad
    log_p_y = np.take_along_axis(log_p, target[:, None], axis=1)[:, 0]       # log p(y)
    others = log_p.sum(axis=1) - log_p_y - log_p[:, pad]            # sum over c != y, pad
    smoothed = -((1.0 - eps_ls) * log_p_y + eps_ls / (V - 2) * others)
    tokens = keep.sum()
    return smoothed[keep].sum() / tokens, (target, keep, tokens, pad, eps_ls, shape)


def label_smoothed_backward(cache):
    """d loss / d log_p = -q / n, shaped like log_p."""
    target, keep, tokens, pad, eps_ls, shape = cache
    V = shape[-1]
    q = np.full((target.size, V), eps_ls / (V - 2))
    q[:, pad] = 0.0
    q[np.arange(target.size), target] = 1.0 - eps_ls
    q[~keep] = 0.0                                                  # padding targets: no loss
    return (-q / tokens).reshape(shape)
