"""Scaled dot-product attention, equation (1) of §3.2.1, forward and backward:

    S = Q K^T / sqrt(d_k),   A = softmax(S) (masked),   out = A V

Backward, reading the forward from the bottom up, with dout the gradient of the output:

    dA = dout V^T                       dV = A^T dout
    dS = A * (dA - rowsum(dA * A))      (softmax backward, see layers.softmax_backward)
    dQ = dS K / sqrt(d_k)               dK = dS^T Q / sqrt(d_k)

A blocked position gets S = -inf, hence A = exp(-inf) = 0 exactly, hence dS = 0 exactly:
masked keys receive no weight and no gradient, not merely a small one. With dropout on the
weights (attn_dropout, not in the paper) A is multiplied by its mask before meeting V.
"""
import numpy as np

from reference_numpy.layers import (dropout_backward, dropout_forward, softmax_backward,
                                    softmax_forward)


def attention_forward(q, k, v, mask=None, dropout_mask=None):
    """q: (..., q_len, d_k), k: (..., k_len, d_k), v: (..., k_len, d_v); mask broadcasts to
    (..., q_len, k_len), True = attend. Returns out (..., q_len, d_v) and the cache, whose
    first entry is the attention weights A."""
    sqrt_d_k = np.sqrt(q.shape[-1])
    scores = (q @ k.swapaxes(-1, -2)) / sqrt_d_k                   # (..., q_len, k_len)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights, _ = softmax_forward(scores)                           # rows sum to 1
    dropped, _ = dropout_forward(weights, dropout_mask)
    out = dropped @ v                                              # (..., q_len, d_v)
    return out, (weights, dropped, dropout_mask, q, k, v, sqrt_d_k)


def attention_backward(dout, cache):
    """Returns dq, dk, dv with the shapes of q, k, v."""
    weights, dropped, dropout_mask, q, k, v, sqrt_d_k = cache
    dv = dropped.swapaxes(-1, -2) @ dout                           # (..., k_len, d_v)
    dweights = dropout_backward(dout @ v.swapaxes(-1, -2), dropout_mask)
    dscores = softmax_backward(dweights, weights) / sqrt_d_k       # exactly 0 where masked
    dq = dscores @ k                                               # (..., q_len, d_k)
    dk = dscores.swapaxes(-1, -2) @ q                              # (..., k_len, d_k)
    return dq, dk, dv
