"""Equation (1) and its fused fast path; multi-head attention; the FFN of equation (2)."""
import math

import pytest
import torch

from annotated import make_model, masks
from annotated.attention import attention, fast_attention
from annotated.feedforward import PositionwiseFeedForward
from annotated.masks import padding_mask, subsequent_mask
from annotated.multihead import MultiHeadAttention


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
    model = make_model(13, 13, N=2, d_model=32, d_ff=64, h=4, dropout=0.0).double()
    src = torch.randint(4, 13, (3, 7))
    tgt = torch.randint(4, 13, (3, 5))
    src[0, 4:] = 0
    tgt[1, 3:] = 0
    fast = model(src, tgt, *masks(src, tgt, 0))
    for m in model.attention_modules():
        m.fast = False
    assert (fast - model(src, tgt, *masks(src, tgt, 0))).abs().max() <= 1e-12


def test_scaling_keeps_score_variance_near_one():
    """§3.2.1: unit-variance q and k give dot products of variance d_k; dividing by sqrt(d_k)
    brings it back to about 1, which keeps the softmax out of its flat, saturated regions."""
    d_k = 512
    q, k = torch.randn(4000, d_k, dtype=torch.float64), torch.randn(4000, d_k, dtype=torch.float64)
    raw = (q * k).sum(-1)
    assert 0.9 * d_k < raw.var() < 1.1 * d_k
    assert 0.9 < (raw / math.sqrt(d_k)).var() < 1.1


def test_multihead_is_concatenated_heads_times_W_O():
    torch.manual_seed(3)
    d_model, h, d_k, d_v = 12, 3, 2, 5
    mha = MultiHeadAttention(d_model, h, d_k, d_v).double()
    x = torch.randn(2, 4, d_model, dtype=torch.float64)
    heads = []
    for i in range(h):      # head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V), one head at a time
        rows_k, rows_v = slice(i * d_k, (i + 1) * d_k), slice(i * d_v, (i + 1) * d_v)
        Q = x @ mha.W_Q.weight[rows_k].T + mha.W_Q.bias[rows_k]
        K = x @ mha.W_K.weight[rows_k].T + mha.W_K.bias[rows_k]
        V = x @ mha.W_V.weight[rows_v].T + mha.W_V.bias[rows_v]
        heads.append(attention(Q, K, V)[0])
    expected = mha.W_O(torch.cat(heads, dim=-1))
    assert torch.allclose(mha(x, x, x), expected, rtol=0, atol=1e-13)


def test_multihead_rejects_indivisible_d_model():
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(10, 3)


def test_ffn_is_equation_2_applied_per_position():
    ffn = PositionwiseFeedForward(6, 10).double()
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    W1, b1, W2, b2 = ffn.W_1.weight.T, ffn.W_1.bias, ffn.W_2.weight.T, ffn.W_2.bias
    expected = torch.clamp(x @ W1 + b1, min=0) @ W2 + b2                    # eq. (2)
    assert torch.allclose(ffn(x), expected, rtol=0, atol=1e-14)
    # the same map at every position: equal to a kernel-size-1 convolution
    conv1 = torch.nn.functional.conv1d(x.transpose(1, 2), ffn.W_1.weight[:, :, None], b1)
    conv2 = torch.nn.functional.conv1d(conv1.relu(), ffn.W_2.weight[:, :, None], b2)
    assert torch.allclose(ffn(x), conv2.transpose(1, 2), rtol=0, atol=1e-13)
