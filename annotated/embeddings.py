"""Embeddings (§3.4): a learned lookup table whose output is multiplied by sqrt(d_model).

The scale matters because the same matrix doubles as the pre-softmax projection when weights
are tied (see annotated.model): it is initialised with entries of size ~ d_model^-1/2, the
right size for producing logits, and sqrt(d_model) brings the looked-up vectors back to unit
size per component, comparable to the positional encodings added to them.
"""
import math

from torch import nn


class Embeddings(nn.Module):
    def __init__(self, vocab: int, d_model: int):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, tokens):                               # (batch, seq) token ids
        return self.lut(tokens) * math.sqrt(self.d_model)    # (batch, seq, d_model)
