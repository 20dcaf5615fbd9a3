"""The encoder (§3.1): N identical layers, each self-attention then the feed-forward network,
each wrapped in residual + LayerNorm. Forward and backward of one layer, then of the stack.

In self-attention x is query, key and value at once, so x's gradient from the attention is
the sum of the three; the residual path adds a fourth term (reference_numpy.sublayer).
"""
from reference_numpy.feedforward import feedforward_backward, feedforward_forward
from reference_numpy.multihead import multihead_backward, multihead_forward
from reference_numpy.sublayer import sublayer_backward, sublayer_forward


def encoder_layer_forward(params, name, x, src_mask, h, dropout_masks=None):
    """x: (batch, src_len, d_model); `name` e.g. "encoder.layers.0"."""
    attn, attn_cache = multihead_forward(params, f"{name}.self_attn", x, x, x, src_mask, h,
                                         dropout_masks)
    x, sub0 = sublayer_forward(params, f"{name}.sublayers.0", x, attn, dropout_masks)
    ffn, ffn_cache = feedforward_forward(params, f"{name}.ffn", x, dropout_masks)
    x, sub1 = sublayer_forward(params, f"{name}.sublayers.1", x, ffn, dropout_masks)
    return x, (attn_cache, sub0, ffn_cache, sub1)


def encoder_layer_backward(dout, cache):
    """Returns dx and the gradients of every parameter of the layer."""
    attn_cache, sub0, ffn_cache, sub1 = cache
    dx, dffn, grads = sublayer_backward(dout, sub1)
    dx_ffn, ffn_grads = feedforward_backward(dffn, ffn_cache)
    dx, dattn, norm_grads = sublayer_backward(dx + dx_ffn, sub0)
    dq, dk, dv, attn_grads = multihead_backward(dattn, attn_cache)
    return dx + dq + dk + dv, {**grads, **ffn_grads, **norm_grads, **attn_grads}


def encoder_forward(params, x, src_mask, N, h, dropout_masks=None):
    """The stack: x (batch, src_len, d_model) -> memory (batch, src_len, d_model)."""
    caches = []
    for i in range(N):
        x, cache = encoder_layer_forward(params, f"encoder.layers.{i}", x, src_mask, h,
                                         dropout_masks)
        caches.append(cache)
    return x, caches


def encoder_backward(dmemory, caches):
    """Returns the gradient of the stack's input and of every encoder parameter."""
    grads, dx = {}, dmemory
    for cache in reversed(caches):
        dx, layer_grads = encoder_layer_backward(dx, cache)
        grads.update(layer_grads)
    return dx, grads
