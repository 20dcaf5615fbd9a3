"""Multi-head attention (§3.2.2):

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

The h per-head matrices W_i^Q (d_model x d_k) sit side by side in one (d_model x h*d_k)
linear layer, so all heads are projected in one matrix multiply and then split. d_k and d_v
are free parameters (Table 3 rows A and B vary them); by default d_k = d_v = d_model / h.
All four projections carry a bias: the paper's formula shows none and its parameter counts,
rounded to millions, cannot tell (the base model's attention biases add up to 36,864), so
this is a choice, the one torch.nn.MultiheadAttention makes too.
"""
import torch
from torch import nn

from annotated.attention import attention, fast_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, h: int, d_k: int | None = None, d_v: int | None = None,
                 attn_dropout: float = 0.0):
        super().__init__()
        if d_k is None or d_v is None:
            if d_model % h:
                raise ValueError(f"d_model={d_model} is not divisible by h={h}; give d_k and d_v")
        self.h = h
        self.d_k = d_k or d_model // h
        self.d_v = d_v or d_model // h
        self.W_Q = nn.Linear(d_model, h * self.d_k)
        self.W_K = nn.Linear(d_model, h * self.d_k)
        self.W_V = nn.Linear(d_model, h * self.d_v)
        self.W_O = nn.Linear(h * self.d_v, d_model)
        self.dropout = nn.Dropout(attn_dropout)   # on the weights; 0 in the paper
        self.fast = True              # fused kernel; False computes eq. (1) literally
        self.record_weights = False   # keep the last attention weights in self.weights
        self.weights = None           # (batch, h, q_len, k_len) when recorded

    def split_heads(self, x, d):
        """(batch, seq, h*d) -> (batch, h, seq, d)"""
        return x.view(x.size(0), x.size(1), self.h, d).transpose(1, 2)

    def forward(self, query, key, value, mask=None, cache: dict | None = None, static_kv=False):
        """query: (batch, q_len, d_model); key, value: (batch, k_len, d_model).

        `cache` serves incremental decoding (chapter 7): a dict owned by this layer. For
        self-attention the new keys and values are appended to those of earlier steps; with
        `static_kv=True` (encoder-decoder attention) the memory is projected once and reused.
        """
        q = self.split_heads(self.W_Q(query), self.d_k)                # (batch, h, q_len, d_k)
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k = self.split_heads(self.W_K(key), self.d_k)              # (batch, h, k_len, d_k)
            v = self.split_heads(self.W_V(value), self.d_v)            # (batch, h, k_len, d_v)
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        if self.record_weights or not self.fast:
            out, weights = attention(q, k, v, mask, self.dropout)
            self.weights = weights.detach() if self.record_weights else None
        else:
            out = fast_attention(q, k, v, mask, self.dropout.p, self.training)
        out = out.transpose(1, 2).reshape(out.size(0), out.size(2), self.h * self.d_v)  # Concat
        return self.W_O(out)                                           # (batch, q_len, d_model)
