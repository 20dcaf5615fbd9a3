"""The decoder (§3.1): N identical layers, each masked self-attention over the target prefix,
attention over the encoder output (queries from the decoder, keys and values from the
memory), then the feed-forward network; residual + LayerNorm around each.

The memory feeds the key and value of every layer's encoder-decoder attention, so its
gradient is the sum over layers of d_key + d_value; that sum flows back into the encoder.
"""
from reference_numpy.feedforward import feedforward_backward, feedforward_forward
from reference_numpy.multihead import multihead_backward, multihead_forward
from reference_numpy.sublayer import sublayer_backward, sublayer_forward


def decoder_layer_forward(params, name, x, memory, src_mask, tgt_mask, h, dropout_masks=None):
    """x: (batch, tgt_len, d_model), memory: (batch, src_len, d_model)."""
    self_attn, self_cache = multihead_forward(params, f"{name}.self_attn", x, x, x, tgt_mask, h,
                                              dropout_masks)
    x, sub0 = sublayer_forward(params, f"{name}.sublayers.0", x, self_attn, dropout_masks)
    src_attn, src_cache = multihead_forward(params, f"{name}.src_attn", x, memory, memory,
                                            src_mask, h, dropout_masks)
    x, sub1 = sublayer_forward(params, f"{name}.sublayers.1", x, src_attn, dropout_masks)
    ffn, ffn_cache = feedforward_forward(params, f"{name}.ffn", x, dropout_masks)
    x, sub2 = sublayer_forward(params, f"{name}.sublayers.2", x, ffn, dropout_masks)
    return x, (self_cache, sub0, src_cache, sub1, ffn_cache, sub2)


def decoder_layer_backward(dout, cache):
    """Returns dx, d_memory (this layer's share) and the gradients of the layer's parameters."""
    self_cache, sub0, src_cache, sub1, ffn_cache, sub2 = cache
    dx, dffn, grads = sublayer_backward(dout, sub2)
    dx_ffn, ffn_grads = feedforward_backward(dffn, ffn_cache)
    dx, dsrc_attn, norm1_grads = sublayer_backward(dx + dx_ffn, sub1)
    dq_src, dk_mem, dv_mem, src_grads = multihead_backward(dsrc_attn, src_cache)
    dx, dself_attn, norm0_grads = sublayer_backward(dx + dq_src, sub0)
    dq, dk, dv, self_grads = multihead_backward(dself_attn, self_cache)
    grads = {**grads, **ffn_grads, **norm1_grads, **src_grads, **norm0_grads, **self_grads}
    return dx + dq + dk + dv, dk_mem + dv_mem, grads


def decoder_forward(params, y, memory, src_mask, tgt_mask, N, h, dropout_masks=None):
    """The stack: y (batch, tgt_len, d_model) -> (batch, tgt_len, d_model)."""
    caches = []
    for i in range(N):
        y, cache = decoder_layer_forward(params, f"decoder.layers.{i}", y, memory, src_mask,
                                         tgt_mask, h, dropout_masks)
        caches.append(cache)
    return y, caches


def decoder_backward(dout, caches):
    """Returns the gradient of the stack's input, of the memory, and of every parameter."""
    grads, dy, dmemory = {}, dout, 0.0
    for cache in reversed(caches):
        dy, dmem_layer, layer_grads = decoder_layer_backward(dy, cache)
        dmemory = dmemory + dmem_layer
        grads.update(layer_grads)
    return dy, dmemory, grads
