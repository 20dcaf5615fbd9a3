"""The residual connection around every sublayer (§3.1, §5.4):

    output = LayerNorm(x + Dropout(Sublayer(x)))

This is the paper's "post-LN" order: the norm comes after the residual sum, so the residual
stream itself is normalised at every step. LayerNorm (not BatchNorm) because its statistics
are taken over the d_model features of one position, so they do not depend on which other
sentences, or how much padding, share the batch.
"""
from torch import nn


class SublayerConnection(nn.Module):
    def __init__(self, d_model: int, P_drop: float, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(P_drop)

    def forward(self, x, sublayer):                          # (batch, seq, d_model)
        return self.norm(x + self.dropout(sublayer(x)))
