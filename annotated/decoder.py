"""The decoder (§3.1): N identical layers, each masked self-attention over the target prefix,
attention over the encoder output (queries from the decoder, keys and values from the
memory), then the feed-forward network; residual + LayerNorm around each.

`cache` (one dict per layer) lets beam search feed one new token at a time: self-attention
keeps the keys and values of earlier positions, encoder-decoder attention projects the memory
once. With a cache the new token may attend to every cached position, so no causal mask is
needed; the result equals the last row of the uncached decoder, which the tests check step
by step, also after the cached rows are reordered as beam search reorders them.
"""
from torch import nn

from annotated.feedforward import PositionwiseFeedForward
from annotated.multihead import MultiHeadAttention
from annotated.sublayer import SublayerConnection


class DecoderLayer(nn.Module):
    def __init__(self, d_model, h, d_k, d_v, d_ff, P_drop, attn_dropout=0.0, ffn_dropout=0.0):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, h, d_k, d_v, attn_dropout)
        self.src_attn = MultiHeadAttention(d_model, h, d_k, d_v, attn_dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, ffn_dropout)
        self.sublayers = nn.ModuleList(SublayerConnection(d_model, P_drop) for _ in range(3))

    def forward(self, x, memory, src_mask, tgt_mask, cache=None):
        """x: (batch, tgt_len, d_model), memory: (batch, src_len, d_model)."""
        self_cache = src_cache = None
        if cache is not None:
            self_cache, src_cache = cache.setdefault("self", {}), cache.setdefault("src", {})
        x = self.sublayers[0](x, lambda x: self.self_attn(x, x, x, tgt_mask, self_cache))
        x = self.sublayers[1](x, lambda x: self.src_attn(x, memory, memory, src_mask,
                                                          src_cache, static_kv=True))
        return self.sublayers[2](x, self.ffn)


class Decoder(nn.Module):
    def __init__(self, N, **layer_kwargs):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(**layer_kwargs) for _ in range(N))

    def forward(self, x, memory, src_mask, tgt_mask, cache=None):
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, src_mask, tgt_mask, None if cache is None else cache[i])
        return x                                             # (batch, tgt_len, d_model)
