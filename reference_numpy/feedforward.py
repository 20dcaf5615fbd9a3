"""Position-wise feed-forward network, equation (2) of §3.3, forward and backward:

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

The same weights act on every position, so the parameter gradients sum over batch and
positions (done inside linear_backward). `dropout_masks[name + ".dropout"]` (batch, seq, d_ff)
drops after the ReLU, as annotated.feedforward's optional ffn_dropout (not in the paper).
"""
from reference_numpy.layers import (dropout_backward, dropout_forward, linear_backward,
                                    linear_forward, mask_for, relu_backward, relu_forward)


def feedforward_forward(params, name, x, dropout_masks=None):
    """x: (batch, seq, d_model) -> (batch, seq, d_model)."""
    hidden, cache_1 = linear_forward(x, params[f"{name}.W_1.weight"], params[f"{name}.W_1.bias"])
    active, positive = relu_forward(hidden)                        # (batch, seq, d_ff)
    dropped, mask = dropout_forward(active, mask_for(dropout_masks, f"{name}.dropout"))
    out, cache_2 = linear_forward(dropped, params[f"{name}.W_2.weight"], params[f"{name}.W_2.bias"])
    return out, (name, cache_1, positive, mask, cache_2)


def feedforward_backward(dout, cache):
    """Returns dx and the gradients of W_1, b_1, W_2, b_2."""
    name, cache_1, positive, mask, cache_2 = cache
    grads = {}
    W_1, W_2 = f"{name}.W_1", f"{name}.W_2"
    ddropped, grads[f"{W_2}.weight"], grads[f"{W_2}.bias"] = linear_backward(dout, cache_2)
    dhidden = relu_backward(dropout_backward(ddropped, mask), positive)
    dx, grads[f"{W_1}.weight"], grads[f"{W_1}.bias"] = linear_backward(dhidden, cache_1)
    return dx, grads
