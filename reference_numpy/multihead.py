"""Multi-head attention (§3.2.2), forward and backward:

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

As in annotated.multihead, the h matrices W_i^Q (d_model x d_k) sit side by side in one
(h*d_k x d_model) weight, so one product projects every head; a reshape then moves the heads
into their own axis and scaled dot-product attention runs on all of them at once. d_k and d_v
are read off the weight shapes. The backward undoes each step in reverse: W_O, the
concatenation (a reshape, whose backward is the inverse reshape), attention, the three
projections. When query, key and value are the same tensor (self-attention) the caller adds
up the three input gradients.

One gradient is zero in exact arithmetic: the key bias b_K adds q . b_K to every score of a
row, which the softmax cancels, so d loss / d b_K = 0 up to rounding on any input.

Parameters are looked up by their PyTorch names under `name`, e.g.
"encoder.layers.0.self_attn.W_Q.weight".
"""
from reference_numpy.attention import attention_backward, attention_forward
from reference_numpy.layers import linear_backward, linear_forward, mask_for


def split_heads(x, h):
    """(batch, seq, h*d) -> (batch, h, seq, d)"""
    batch, seq, hd = x.shape
    return x.reshape(batch, seq, h, hd // h).transpose(0, 2, 1, 3)


def merge_heads(x):
    """(batch, h, seq, d) -> (batch, seq, h*d): Concat(head_1, ..., head_h)"""
    batch, h, seq, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, seq, h * d)


def multihead_forward(params, name, query, key, value, mask, h, dropout_masks=None):
    """query: (batch, q_len, d_model); key, value: (batch, k_len, d_model) -> (batch, q_len,
    d_model). `dropout_masks[name + ".dropout"]` (batch, h, q_len, k_len) drops weights."""
    def project(x, W):
        return linear_forward(x, params[f"{name}.{W}.weight"], params[f"{name}.{W}.bias"])

    q, q_cache = project(query, "W_Q")                             # (batch, q_len, h*d_k)
    k, k_cache = project(key, "W_K")                               # (batch, k_len, h*d_k)
    v, v_cache = project(value, "W_V")                             # (batch, k_len, h*d_v)
    heads, attn_cache = attention_forward(split_heads(q, h), split_heads(k, h),
                                          split_heads(v, h), mask,
                                          mask_for(dropout_masks, f"{name}.dropout"))
    out, o_cache = project(merge_heads(heads), "W_O")              # (batch, q_len, d_model)
    return out, (name, h, q_cache, k_cache, v_cache, attn_cache, o_cache)


def multihead_backward(dout, cache):
    """Returns d_query, d_key, d_value and the gradients of the four projections."""
    name, h, q_cache, k_cache, v_cache, attn_cache, o_cache = cache
    grads = {}

    def unproject(dy, W, proj_cache):
        dx, grads[f"{name}.{W}.weight"], grads[f"{name}.{W}.bias"] = linear_backward(dy, proj_cache)
        return dx

    dheads = split_heads(unproject(dout, "W_O", o_cache), h)       # (batch, h, q_len, d_v)
    dq, dk, dv = attention_backward(dheads, attn_cache)
    d_query = unproject(merge_heads(dq), "W_Q", q_cache)
    d_key = unproject(merge_heads(dk), "W_K", k_cache)
    d_value = unproject(merge_heads(dv), "W_V", v_cache)
    return d_query, d_key, d_value, grads
