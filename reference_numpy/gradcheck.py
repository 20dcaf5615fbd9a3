"""Central finite differences: the check that every hand-written backward here must pass.

For a scalar f and a small step eps,

    df/dx_i ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)

with error O(eps^2) from the Taylor series plus O(u |f| / eps) from rounding (u = 2.2e-16 in
float64); eps = 1e-6 balances the two for functions of unit size. To check a backward whose
output is a tensor y, take f = sum(y * R) for a fixed random R: then df/dy = R, which is the
`dout` to hand to the backward.
"""
import numpy as np


def numerical_grad(f, x, eps=1e-6, entries=None):
    """d f / d x by central differences at the flat indices `entries` (all by default),
    perturbing x in place and restoring it. Returns the derivatives in the order of entries."""
    entries = range(x.size) if entries is None else entries
    grad = np.empty(len(entries))
    for n, i in enumerate(entries):
        at = np.unravel_index(i, x.shape)
        saved = x[at]
        x[at] = saved + eps
        f_plus = f()
        x[at] = saved - eps
        f_minus = f()
        x[at] = saved
        grad[n] = (f_plus - f_minus) / (2 * eps)
    return grad


def relative_error(numeric, analytic):
    """max |numeric - analytic| / max |analytic| over the compared entries (the norm every
    gradient test here uses), with analytic and numeric given as arrays of the same size."""
    numeric, analytic = np.asarray(numeric), np.asarray(analytic)
    scale = max(np.abs(analytic).max(), np.finfo(np.float64).tiny)
    return np.abs(numeric - analytic).max() / scale
