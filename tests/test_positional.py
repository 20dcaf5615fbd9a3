"""Positional encodings of §3.5 and Table 3 row E."""
import math

import pytest
import torch
from conftest import says

from annotated.positional import (LearnedPositionalEncoding, SinusoidalPositionalEncoding,
                                  sinusoid_table)


@pytest.mark.parametrize("pos,i", [(0, 0), (1, 0), (7, 3), (50, 10), (1000, 255), (4999, 100)])
def test_values_of_section_3_5(pos, i):
    d_model = 512
    pe = sinusoid_table(5000, d_model, dtype=torch.float64)
    angle = pos / 10000 ** (2 * i / d_model)
    assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
    assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


@pytest.mark.parametrize("k", [1, 5, 37])
def test_offset_is_a_fixed_block_rotation(k):
    """PE(pos + k) = PE(pos) R_k for every pos, R_k block-diagonal with one 2x2 rotation per
    frequency: [sin, cos](a + b) = [sin a, cos a] [[cos b, -sin b], [sin b, cos b]]."""
    d_model, n = 64, 300
    pe = sinusoid_table(n + k, d_model, dtype=torch.float64)
    freq = 10000 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    c, s = torch.cos(k * freq), torch.sin(k * freq)
    idx = torch.arange(0, d_model, 2)
    R[idx, idx], R[idx, idx + 1], R[idx + 1, idx], R[idx + 1, idx + 1] = c, -s, s, c
    assert (pe[:n] @ R - pe[k:]).abs().max() < 1e-9


def test_sinusoids_have_no_maximum_length():
    pe = SinusoidalPositionalEncoding(8)
    x = torch.zeros(1, 10_000, 8)
    out = pe(x)
    assert out.shape == (1, 10_000, 8)
    assert torch.allclose(pe(torch.zeros(1, 3, 8), start=9_000), out[:, 9_000:9_003])


def test_learned_positions_are_bounded_with_a_clear_error():
    pe = LearnedPositionalEncoding(8, max_len=16)
    assert pe(torch.zeros(2, 16, 8)).shape == (2, 16, 8)
    with pytest.raises(ValueError) as error:
        pe(torch.zeros(2, 17, 8))
    says(error, "cover 16 positions", "needs 17")


def test_odd_d_model_is_rejected():
    with pytest.raises(ValueError, match="even d_model"):
        sinusoid_table(4, 7)


def test_table_is_recomputed_not_converted_when_the_dtype_changes():
    pe = SinusoidalPositionalEncoding(16)
    pe(torch.zeros(1, 50, 16))                      # a float32 table now exists
    out = pe.double()(torch.zeros(1, 50, 16, dtype=torch.float64))
    assert torch.equal(out[0], sinusoid_table(50, 16, dtype=torch.float64))
