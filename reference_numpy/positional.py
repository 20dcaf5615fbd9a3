"""Positional encoding (§3.5), added to the embeddings at the bottom of both stacks.

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

The table is computed as written, pos divided by a power of 10000, in float64. It is fixed,
so the backward passes the gradient through unchanged and has nothing to learn. Learned
positions (Table 3 row E) are a trained table P of shape (max_len, d_model): position t of
every sentence adds row t, so row t's gradient is the sum of the output gradient over the
batch at position t.
"""
import numpy as np


def sinusoid_table(length, d_model, start=0):
    """PE rows for positions start .. start+length-1: (length, d_model), any length."""
    if d_model % 2:
        raise ValueError(f"sinusoidal positions need an even d_model, got {d_model}")
    pos = np.arange(start, start + length, dtype=np.float64)[:, None]   # (length, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)             # (d_model/2,) 2i
    angle = pos / 10000.0 ** (two_i / d_model)                     # (length, d_model/2)
    pe = np.empty((length, d_model))
    pe[:, 0::2] = np.sin(angle)                                    # dimensions 2i
    pe[:, 1::2] = np.cos(angle)                                    # dimensions 2i+1
    return pe


def sinusoidal_forward(x):
    """x: (batch, seq, d_model) embeddings -> x + PE[:seq]. No cache: the backward is dx = dy."""
    return x + sinusoid_table(x.shape[1], x.shape[2])


def learned_forward(x, table):
    """x + P[:seq] with P the (max_len, d_model) table."""
    seq = x.shape[1]
    if seq > table.shape[0]:
        raise ValueError(f"learned positions cover {table.shape[0]} positions; this input "
                         f"needs {seq} (sinusoids have no such limit)")
    return x + table[:seq], (seq, table.shape)


def learned_backward(dy, cache):
    """Returns dx = dy and dP: rows beyond the sequence length get zero gradient."""
    seq, table_shape = cache
    dtable = np.zeros(table_shape, dtype=dy.dtype)
    dtable[:seq] = dy.sum(axis=0)                                  # sum over the batch
    return dy, dtable
