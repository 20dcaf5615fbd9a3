"""Masks (§3.1 padding, §3.2.3 the decoder's "no leftward flow"), with annotated.masks's
convention: boolean arrays where True means attend, shaped to broadcast against attention
scores (batch, h, q_len, k_len). The causal mask compares key and query positions directly.
"""
import numpy as np


def padding_mask(tokens, pad):
    """Keys that are real tokens, not padding: (batch, seq) -> (batch, 1, 1, seq)."""
    return (tokens != pad)[:, None, None, :]


def subsequent_mask(size):
    """Position i may attend to positions j <= i only: (1, 1, size, size), lower triangle."""
    i = np.arange(size)[:, None]                                   # (size, 1) query positions
    j = np.arange(size)[None, :]                                   # (1, size) key positions
    return (j <= i)[None, None]


def target_mask(tgt, pad):
    """Decoder self-attention: not padding AND not in the future, (batch, 1, tgt, tgt)."""
    return padding_mask(tgt, pad) & subsequent_mask(tgt.shape[1])
