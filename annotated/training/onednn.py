"""Matrix products on the CPU through oneDNN instead of the BLAS.

torch runs a float32 matrix product on a CPU through its BLAS, Intel's MKL in the pip wheels.
MKL chooses its widest kernels (AVX-512) on Intel processors only; on others, AMD's EPYC
among them, it runs narrower ones. oneDNN, which torch carries too (for its CPU convolutions
and for Inductor's linear layers), chooses its kernels by the instructions the processor has,
whoever made it. Training's products are those of every linear layer, forward and backward,
and those of the output projection in training.output_loss; on a CPU in float32 they run here:

    linear(x, W, b) = x W^T + b          torch.ops.mkldnn._linear_pointwise, the op Inductor
    matmul(a, b)    = a b                calls for a linear layer on a CPU: a plain tensor in,
                                         a plain tensor out, any strides

The numbers are the BLAS's up to the order of floating-point additions. Anything else (another
device or dtype, autocast, a torch built without oneDNN) goes to F.linear as before.
`use_onednn_linear(model)` makes every nn.Linear of a model a `OneDNNLinear`, whose forward
and backward passes are these products: training.step does this on a CPU without compile
(under amp=bf16 the layers find autocast on and take torch's path). The weights stay where
they were, so checkpoints do not change.
`python -m benchmarks.cpu_matmul` times both libraries on training's products.
"""
import torch
import torch.nn.functional as F
from torch import nn

AVAILABLE = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn,
                                                             "_linear_pointwise")


def on_onednn(*tensors) -> bool:
    """Whether a product of `tensors` runs through oneDNN: float32 on the CPU, no autocast,
    none of them empty."""
    return AVAILABLE and not torch.is_autocast_enabled("cpu") and all(
        t.device.type == "cpu" and t.dtype == torch.float32 and t.numel() for t in tensors)


def linear(x, weight, bias=None):
    """x (..., in) W^T (in, out) + b (out,) -> (..., out), as F.linear; no autograd."""
    if not on_onednn(x, weight):
        return F.linear(x, weight, bias)
    rows = x.reshape(-1, x.size(-1))
    out = torch.ops.mkldnn._linear_pointwise(rows, weight, bias, "none", [], "")
    return out.view(*x.shape[:-1], weight.size(0))


def matmul(a, b):
    """a (m, k) @ b (k, n) -> (m, n), as `a @ b`; no autograd."""
    return linear(a, b.T)


class _Linear(torch.autograd.Function):
    """y = x W^T + b;  dx = dy W,  dW = dy^T x,  db = sum over rows of dy."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.with_bias = bias is not None
        return linear(x, weight, bias)

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy_rows = dy.reshape(-1, dy.size(-1))                          # (n, out)
        dx = matmul(dy_rows, weight).view(x.shape) if ctx.needs_input_grad[0] else None
        dw = matmul(dy_rows.T, x.reshape(-1, x.size(-1))) if ctx.needs_input_grad[1] else None
        db = dy_rows.sum(0) if ctx.with_bias and ctx.needs_input_grad[2] else None
        return dx, dw, db


class OneDNNLinear(nn.Linear):
    """nn.Linear whose products run through oneDNN where on_onednn holds."""

    def forward(self, x):
        if not on_onednn(x, self.weight):
            return super().forward(x)
        return _Linear.apply(x, self.weight, self.bias)


def use_onednn_linear(model: nn.Module) -> None:
    """Make every nn.Linear inside `model` a OneDNNLinear, in place: the same module object
    with the same weights (tied ones stay tied), only its class changed, as
    torch.nn.utils.parametrize changes a module's class."""
    if not AVAILABLE:
        return
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = OneDNNLinear
