"""The encoder (§3.1): N identical layers, each self-attention then the feed-forward network,
each wrapped in a residual + LayerNorm sublayer connection. No extra norm after the stack:
with post-LN the last sublayer's output is already normalised.
"""
from torch import nn

from annotated.feedforward import PositionwiseFeedForward
from annotated.multihead import MultiHeadAttention
from annotated.sublayer import SublayerConnection


class EncoderLayer(nn.Module):
    def __init__(self, d_model, h, d_k, d_v, d_ff, P_drop, attn_dropout=0.0, ffn_dropout=0.0):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h, d_k, d_v, attn_dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, ffn_dropout)
        self.sublayers = nn.ModuleList(SublayerConnection(d_model, P_drop) for _ in range(2))

    def forward(self, x, src_mask):                          # (batch, src_len, d_model)
        x = self.sublayers[0](x, lambda x: self.self_attn(x, x, x, src_mask))
        return self.sublayers[1](x, self.ffn)


class Encoder(nn.Module):
    def __init__(self, N, **layer_kwargs):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(**layer_kwargs) for _ in range(N))

    def forward(self, x, src_mask):
        for layer in self.layers:
            x = layer(x, src_mask)
        return x                                             # memory: (batch, src_len, d_model)
