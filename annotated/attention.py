"""Scaled dot-product attention, equation (1) of §3.2.1:

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Two implementations that give the same numbers (the tests compare them in float64, without a
mask, with a padding mask and with the causal mask, and in a whole model: they agree to 1e-12):
`attention` spells out the equation and returns the weights, so chapters can draw them;
`fast_attention` calls PyTorch's fused kernel, which is what training uses.
Masks follow annotated.masks: True = attend.
"""
import math

import torch.nn.functional as F


def attention(q, k, v, mask=None, dropout=None):
    """q: (..., q_len, d_k), k: (..., k_len, d_k), v: (..., k_len, d_v); `dropout` an optional
    module applied to the weights. Returns the output (..., q_len, d_v) and the weights
    (..., q_len, k_len)."""
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., q_len, k_len)
    if mask is not None:
        # exp(-inf) = 0 exactly: a blocked key gets no weight at all, not merely a small one.
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return weights @ v, weights


def fast_attention(q, k, v, mask=None, dropout_p: float = 0.0, training: bool = False):
    """Same result as `attention`, through the fused kernel; the weights are not returned."""
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p if training else 0.0
    )
