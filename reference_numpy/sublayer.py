"""The residual connection around every sublayer (§3.1, §5.4), post-LN as in the paper:

    out = LayerNorm(x + Dropout(Sublayer(x)))

The caller computes fx = Sublayer(x) itself (attention or FFN), so this module only joins the
two branches. Backward: LayerNorm's backward gives the gradient of the sum s = x + Dropout(fx);
a sum passes its gradient unchanged to both terms, so dx gets ds directly (the residual path)
and fx gets ds through the dropout mask. The caller then sends d_fx back through the sublayer
and adds the result to dx.

LayerNorm eps = 1e-5, as annotated.sublayer.
"""
from reference_numpy.layers import (dropout_backward, dropout_forward, layer_norm_backward,
                                    layer_norm_forward, mask_for)


def sublayer_forward(params, name, x, fx, dropout_masks=None):
    """x, fx: (batch, seq, d_model); `name` e.g. "encoder.layers.0.sublayers.1"."""
    dropped, mask = dropout_forward(fx, mask_for(dropout_masks, f"{name}.dropout"))
    out, norm_cache = layer_norm_forward(x + dropped, params[f"{name}.norm.weight"],
                                         params[f"{name}.norm.bias"])
    return out, (name, mask, norm_cache)


def sublayer_backward(dout, cache):
    """Returns dx (residual path only), d_fx, and the LayerNorm gradients."""
    name, mask, norm_cache = cache
    dsum, dgamma, dbeta = layer_norm_backward(dout, norm_cache)
    grads = {f"{name}.norm.weight": dgamma, f"{name}.norm.bias": dbeta}
    return dsum, dropout_backward(dsum, mask), grads
