"""Multi-head attention (annotated.multihead, §3.2.2)."""
import pytest
import torch

from annotated.attention import attention
from annotated.multihead import MultiHeadAttention


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
