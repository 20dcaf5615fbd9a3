"""The primitives every component is built from, each with its backward written out by hand.

Convention for the whole package: `xxx_forward(...)` returns `(out, cache)`, where `cache` holds
exactly what the backward needs; `xxx_backward(dout, cache)` takes the gradient of the loss with
respect to `out` and returns the gradient with respect to the inputs, then the parameters.
Weights are stored as PyTorch stores them, `W` of shape (d_out, d_in), so `x W^T + b`.
"""
import numpy as np


def linear_forward(x, W, b=None):
    """y = x W^T + b.  x: (..., d_in), W: (d_out, d_in), b: (d_out,) or None.
    Every position of every sentence is one row of a single (n, d_in) matrix, so the whole
    batch is one matrix product."""
    x2 = x.reshape(-1, x.shape[-1])                                # (n, d_in)
    y = x2 @ W.T                                                   # (n, d_out)
    if b is not None:
        y += b
    return y.reshape(*x.shape[:-1], W.shape[0]), (x2, W, b is not None)


def linear_backward(dy, cache):
    """dx = dy W;  dW = dy^T x summed over all n rows (batch and positions), which is one
    matrix product of the flattened arrays;  db = sum of dy over the rows (None without a
    bias)."""
    x2, W, has_bias = cache
    dy2 = dy.reshape(-1, dy.shape[-1])                             # (n, d_out)
    dx = (dy2 @ W).reshape(*dy.shape[:-1], W.shape[1])             # (..., d_in)
    dW = dy2.T @ x2                                                # (d_out, d_in)
    db = dy2.sum(axis=0) if has_bias else None
    return dx, dW, db


def relu_forward(x):
    """max(0, x)."""
    return np.maximum(x, 0.0), x > 0


def relu_backward(dy, positive):
    """The derivative is 1 where x > 0 and 0 elsewhere (0 at the kink, as PyTorch)."""
    return dy * positive


def softmax_forward(x):
    """softmax over the last axis. Subtracting the row maximum first changes nothing
    mathematically (it cancels between numerator and denominator) but keeps exp() from
    overflowing. Entries equal to -inf (masked scores) come out as exactly 0."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p, p


def softmax_backward(dp, p):
    """The Jacobian of p = softmax(x) is dp_i/dx_j = p_i (delta_ij - p_j), so the
    vector-Jacobian product is  dx_j = sum_i dp_i p_i (delta_ij - p_j) = p_j (dp_j - <dp, p>).
    Where p_j = 0 exactly (a masked entry) the gradient is exactly 0 as well."""
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def log_softmax_forward(x):
    """log softmax over the last axis: x - max - log sum exp(x - max), stable for any x."""
    shifted = x - x.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return log_p, log_p


def log_softmax_backward(dlog_p, log_p):
    """d log p_i / d x_j = delta_ij - p_j, so  dx_j = dlog_p_j - p_j * sum_i dlog_p_i."""
    return dlog_p - np.exp(log_p) * dlog_p.sum(axis=-1, keepdims=True)


def layer_norm_forward(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last axis (the d_model features of one position):

        mu = mean(x),  var = mean((x - mu)^2)  (biased, as PyTorch),  sigma = sqrt(var + eps)
        x_hat = (x - mu) / sigma,  y = gamma * x_hat + beta
    """
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    sigma = np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = xc / sigma
    return gamma * x_hat + beta, (x_hat, sigma, gamma)


def layer_norm_backward(dy, cache):
    """With g = dy * gamma (the gradient reaching x_hat) and D features:

        dx_hat_i / dx_j = (delta_ij - 1/D - x_hat_i x_hat_j / D) / sigma

    (the -1/D from subtracting the mean, the x_hat x_hat term from dividing by sigma, which
    itself depends on x), hence  dx = (g - mean(g) - x_hat * mean(g * x_hat)) / sigma.
    The parameters see every position: dgamma = sum dy * x_hat, dbeta = sum dy."""
    x_hat, sigma, gamma = cache
    g = dy * gamma
    dx = (g - g.mean(axis=-1, keepdims=True)
          - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    features = dy.shape[-1]
    dgamma = (dy * x_hat).reshape(-1, features).sum(axis=0)
    dbeta = dy.reshape(-1, features).sum(axis=0)
    return dx, dgamma, dbeta


def dropout_forward(x, mask):
    """Inverted dropout with an explicit mask. Here a mask is the multiplier itself: 0 where an
    element is dropped and 1 / (1 - p) where it is kept, so the expected output equals x and
    nothing needs rescaling at test time. `mask=None` means dropout is off."""
    if mask is None:
        return x, None
    if mask.shape != x.shape:
        raise ValueError(f"dropout mask has shape {mask.shape}, expected {x.shape}")
    return x * mask, mask


def dropout_backward(dy, mask):
    """The same multiplication: a dropped element passes no gradient."""
    return dy if mask is None else dy * mask


def mask_for(dropout_masks, name):
    """The mask of the dropout site `name` (the PyTorch module name, e.g. "src_dropout" or
    "encoder.layers.0.sublayers.1.dropout"), or None when dropout is off (no masks given)."""
    if dropout_masks is None:
        return None
    if name not in dropout_masks:
        raise KeyError(f"no dropout mask for {name!r}; masks were given for: "
                       f"{', '.join(sorted(dropout_masks)) or 'nothing'}")
    return dropout_masks[name]
