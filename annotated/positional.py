"""Positional encoding (§3.5), added to the embeddings at the bottom of both stacks.

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Each pair of dimensions (2i, 2i+1) is a point turning on a circle at its own frequency, so
PE(pos + k) is PE(pos) rotated pair by pair by angle k * freq_i: a fixed linear map for each
offset k. The table is computed on demand for any length, never from a fixed maximum.

`LearnedPositionalEncoding` is the alternative of Table 3 row E: one trained vector per
position, which cannot go past the longest position it was built for.
"""
import math

import torch
from torch import nn


def sinusoid_table(length: int, d_model: int, start: int = 0, dtype=torch.float32, device=None):
    """PE rows for positions start .. start+length-1: (length, d_model)."""
    if d_model % 2:
        raise ValueError(f"sinusoidal positions need an even d_model, got {d_model}")
    pos = torch.arange(start, start + length, dtype=torch.float64, device=device)[:, None]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64, device=device)
                     * (-math.log(10000.0) / d_model))               # 1 / 10000^(2i/d_model)
    pe = torch.empty(length, d_model, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe.to(dtype)


class SinusoidalPositionalEncoding(nn.Module):
    def __init__(self, d_model: int, length: int = 1024):
        super().__init__()
        self.d_model = d_model
        # A cache, not a buffer: Module.double() would convert a buffer computed in float32
        # and keep its float32 rounding; here a change of dtype or device recomputes it (_apply).
        # It starts with `length` rows and grows when a longer input comes: a table that
        # changes on every call would make torch.compile trace the model again each time.
        self.table = sinusoid_table(length, d_model)

    def _apply(self, fn, recurse=True):
        """Module.to(), .double(), .cuda() ...: the table follows, recomputed in float64."""
        moved = fn(self.table[:0])                   # an empty tensor shows where fn puts one
        self.table = sinusoid_table(self.table.size(0), self.d_model, dtype=moved.dtype,
                                    device=moved.device)
        return super()._apply(fn, recurse)

    def forward(self, x, start: int = 0):
        """x: (batch, seq, d_model) embeddings; positions start .. start+seq-1 are added."""
        end = start + x.size(1)
        if end > self.table.size(0) or self.table.dtype != x.dtype or self.table.device != x.device:
            self.table = sinusoid_table(max(end, 2 * self.table.size(0)), self.d_model,
                                        dtype=x.dtype, device=x.device)
        return x + self.table[start:end]


class LearnedPositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x, start: int = 0):
        end = start + x.size(1)
        if end > self.embedding.num_embeddings:
            raise ValueError(f"learned positions cover {self.embedding.num_embeddings} positions; "
                             f"this input needs {end} (sinusoids have no such limit)")
        return x + self.embedding.weight[start:end]
