"""Label smoothing (§5.4, eps_ls = 0.1 in the paper), forward and backward, computed from the
smoothed target distribution itself.

The model is trained towards a distribution q over the V classes instead of the one-hot
vector of the gold token y. The convention (the one annotated.loss uses):

    q_y   = 1 - eps_ls                       the gold token
    q_pad = 0                                padding is never a right answer
    q_c   = eps_ls / (V - 2)                 every other class c: neither y nor padding

so the eps_ls taken from the gold token is shared evenly by the V - 2 classes that are left,
and q sums to 1. `smoothed_distribution` builds q for every position of a batch, as an array
(batch, tgt_len, V); a position whose target is padding gets an all-zero row, so it adds
nothing to the loss or the gradient. The loss is the cross-entropy against q, averaged over
the n non-padding positions:

    loss = (1/n) sum_positions -sum_c q_c log p_c

Backward. The loss is linear in log p, so d loss / d log p = -q / n (`label_smoothed_backward`).
Through the log-softmax, d log p_c / d z_j = delta_cj - p_j for the logits z, which gives

    d loss / d z_j = (1/n) (p_j sum_c q_c - q_j) = (p_j - q_j) / n

at a non-padding position (there q sums to 1) and 0 at a padding one
(`label_smoothed_logits_backward`): the softmax minus the smoothed target, the gradient the
model's backward starts from.
"""
import numpy as np


def smoothed_distribution(target, V, pad, eps_ls):
    """target: (...) token ids -> q: (..., V), the §5.4 target distribution of every position
    (all zeros where the target is padding)."""
    classes = np.arange(V)                                         # (V,)
    gold = classes == target[..., None]                            # (..., V) the token y
    shares = ~gold & (classes != pad)                              # (..., V) neither y nor pad
    spread = eps_ls / shares.sum(axis=-1, keepdims=True)           # (..., 1) eps_ls / (V - 2)
    q = np.where(gold, 1.0 - eps_ls, np.where(shares, spread, 0.0))
    q[target == pad] = 0.0                                         # padding positions: no loss
    return q


def label_smoothed_forward(log_p, target, pad, eps_ls):
    """log_p: (batch, tgt_len, V) log-probabilities, target: (batch, tgt_len) ids -> the loss
    (mean over non-padding positions) and the cache for the two backward functions."""
    q = smoothed_distribution(target, log_p.shape[-1], pad, eps_ls)    # (batch, tgt_len, V)
    counted = target != pad                                        # (batch, tgt_len)
    n = np.count_nonzero(counted)                                  # non-padding positions
    loss = -(q[counted] * log_p[counted]).sum() / n               # (n, V) rows summed
    return loss, (q, counted, n, log_p)


def label_smoothed_backward(cache):
    """d loss / d log_p = -q / n, shaped like log_p."""
    q, _, n, _ = cache
    return -q / n


def label_smoothed_logits_backward(cache):
    """d loss / d logits when log_p = log_softmax(logits): (softmax - q) / n at non-padding
    positions, 0 at padding ones; shaped like log_p."""
    q, counted, n, log_p = cache
    return np.where(counted[..., None], np.exp(log_p) - q, 0.0) / n
