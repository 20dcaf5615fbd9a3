"""Masks: padding, which batching by length needs (§5.1), and the decoder's "no leftward flow"
(§3.1, §3.2.3).

One convention for the whole project: a boolean mask where **True means attend** and
False means blocked. It matches `torch.nn.functional.scaled_dot_product_attention`;
`torch.nn.MultiheadAttention` uses the opposite (True = blocked), so code that hands our
masks to it passes `~mask`.

Masks are shaped to broadcast against attention scores `(batch, h, q_len, k_len)`.
"""
import torch


def padding_mask(tokens: torch.Tensor, pad: int) -> torch.Tensor:
    """Keys that are real tokens, not padding: `(batch, seq) -> (batch, 1, 1, seq)`."""
    return (tokens != pad)[:, None, None, :]


def subsequent_mask(size: int, device=None) -> torch.Tensor:
    """Position i may attend to positions j <= i only: `(1, 1, size, size)`, lower triangle True."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]


def target_mask(tgt: torch.Tensor, pad: int) -> torch.Tensor:
    """Decoder self-attention mask: not padding AND not in the future, `(batch, 1, tgt, tgt)`."""
    return padding_mask(tgt, pad) & subsequent_mask(tgt.size(1), tgt.device)


def batch_masks(src: torch.Tensor, tgt: torch.Tensor, pad: int):
    """The two masks a batch needs: `(batch, 1, 1, src_len)` for the encoder and for the
    decoder's attention over the source, and `(batch, 1, tgt_len, tgt_len)` for the decoder."""
    return padding_mask(src, pad), target_mask(tgt, pad)
