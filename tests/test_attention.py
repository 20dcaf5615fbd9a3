"""Equation (1) and its fused fast path; multi-head attention; the FFN of equation (2)."""
import math

import pytest
import torch

from annotated import batch_masks, make_model
from annotated.attention import attention, fast_attention
from annotated.masks import padding_mask, subsequent_mask


def test_attention_is_equation_1():
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3))
    out, weights = attention(q, k, v)
    expected = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(4), dim=-1)
    assert torch.allclose(weights, expected, rtol=0, atol=1e-15)
    assert torch.allclose(out, expected @ v, rtol=0, atol=1e-15)


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal"])
def test_fast_path_equals_equation(mask_kind):
    q = torch.randn(2, 3, 6, 8, dtype=torch.float64)
    k = torch.randn(2, 3, 6, 8, dtype=torch.float64)
    v = torch.randn(2, 3, 6, 5, dtype=torch.float64)
    mask = {"none": None,
            "padding": padding_mask(torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0]]), 0),
            "causal": subsequent_mask(6)}[mask_kind]
    explicit, _ = attention(q, k, v, mask)
    assert (explicit - fast_attention(q, k, v, mask)).abs().max() <= 1e-12


def test_fast_path_equals_equation_in_the_full_model():
    model = make_model(13, 13, N=2, d_model=32, d_ff=64, h=4, P_drop=0.0).double()
    src = torch.randint(4, 13, (3, 7))
    tgt = torch.randint(4, 13, (3, 5))
    src[0, 4:] = 0
    tgt[1, 3:] = 0
    fast = model(src, tgt, *batch_masks(src, tgt, 0))
    for m in model.attention_modules():
        m.fast = False
    assert (fast - model(src, tgt, *batch_masks(src, tgt, 0))).abs().max() <= 1e-12


def test_scaling_keeps_score_variance_near_one():
    """§3.2.1: unit-variance q and k give dot products of variance d_k; dividing by sqrt(d_k)
    brings it back to about 1, which keeps the softmax out of its flat, saturated regions."""
    d_k = 512
    q, k = torch.randn(4000, d_k, dtype=torch.float64), torch.randn(4000, d_k, dtype=torch.float64)
    raw = (q * k).sum(-1)
    assert 0.9 * d_k < raw.var() < 1.1 * d_k
    assert 0.9 < (raw / math.sqrt(d_k)).var() < 1.1
