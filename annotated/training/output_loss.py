"""The output projection and the label-smoothed loss (§5.4) fused, a chunk of tokens at a time.

annotated.loss is the paper's loss as it reads: the model returns logits for every target
position, (tokens x V) numbers, and the loss takes their log-softmax. Training does the same
arithmetic without ever holding those logits for the whole batch. `OutputLoss` takes the
decoder's output (batch, tgt_len, d_model) instead, keeps the positions whose target is not
padding, and for each chunk of `rows` of them

    z = h W^T (+ b)                            the logits of the chunk, (rows, V)
    log p = z - log sum_c exp z_c              its log-softmax
    loss, nll, correct                         summed as annotated.loss sums them
    d loss / d z = softmax(z) - q              q: the §5.4 target distribution
    d h = (d z) W,  d W^T += h^T (d z),  d b += sum (d z)

so the largest tensor is one chunk's logits, and the gradient of the summed loss is complete
when the forward pass ends; backward only scales it by the incoming gradient (the loss is a
sum: linear in what multiplies it). Padding positions cost nothing: they are left out before
the projection, where the plain loss projects them and then masks them.

The numbers are those of `label_smoothed_loss(model.generator(h), target)` up to the order of
floating-point additions (the tests hold them to float64 rounding, and to reference_numpy);
accuracy counts y when log p(y) equals the row's largest log-probability, as there. Under
autocast the products run in its dtype, the softmax in float32, as in the plain path.
`compile=True` compiles the per-chunk arithmetic (the softmax, the sums and d loss / d z) into
a few fused kernels; the matrix products are the library's either way (oneDNN's on a CPU in
float32: training.onednn).
"""
import torch
from torch import nn

from annotated.loss import LossStats
from annotated.training.onednn import linear, matmul

CPU_CHUNK = 2 ** 21        # logits in a chunk on a CPU: 8 MiB of float32, in the caches
GPU_CHUNK = 2 ** 27        # on a GPU: enough rows that the matrix products stay large


def smoothed_terms(z, y, pad: int, eps_ls: float, grad: bool):
    """z: (rows, V) logits of positions whose targets y (rows,) are not padding -> the
    smoothed loss, -log p(y) and the count of argmax == y, each summed over the rows, and
    d loss / d z (rows, V) when `grad` (else None). z is overwritten."""
    z = z.to(torch.promote_types(z.dtype, torch.float32))
    V, spread = z.size(1), eps_ls / (z.size(1) - 2)         # q_c = eps_ls / (V - 2)
    top = z.amax(1, keepdim=True)                            # (rows, 1)
    z_y = z.gather(1, y[:, None]).squeeze(1)
    rest = z.sum(1) - z_y - z[:, pad]                        # sum z_c over c != y, pad
    e = z.sub_(top).exp_()                                   # exp(z - max), in place
    total = e.sum(1, keepdim=True)
    lse = (top + total.log()).squeeze(1)                     # log sum_c exp z_c, (rows,)
    log_p_y = z_y - lse
    others = rest - (V - 2) * lse                            # sum log p_c over c != y, pad
    smoothed = -((1.0 - eps_ls) * log_p_y + spread * others)
    correct = (log_p_y >= top.squeeze(1) - lse).sum()       # log p(y) is the largest
    if not grad:
        return smoothed.sum(), -log_p_y.sum(), correct, None
    dz = e.div_(total).sub_(spread)                          # softmax - q, but for pad and y:
    dz[:, pad] += spread                                     # q_pad = 0
    dz.scatter_add_(1, y[:, None], dz.new_full((len(y), 1), spread - (1.0 - eps_ls)))
    return smoothed.sum(), -log_p_y.sum(), correct, dz       # q_y = 1 - eps_ls


class OutputLoss:
    """The output projection `generator` (an nn.Linear, V x d_model: the embedding matrix
    itself when the vocabulary is shared, §3.4) and the label-smoothed loss, fused; called
    as annotated.loss's is, with the decoder's output in place of the logits:

        OutputLoss(model.generator)(hidden, target, pad=PAD, eps_ls=0.1) -> LossStats

    rows: positions per chunk (default: CPU_CHUNK or GPU_CHUNK logits, over V)."""

    def __init__(self, generator: nn.Linear, rows: int | None = None, compile: bool = False):
        self.generator, self.rows = generator, rows
        self.terms = torch.compile(smoothed_terms, dynamic=True) if compile else smoothed_terms

    def __call__(self, hidden, target, *, pad: int, eps_ls: float) -> LossStats:
        """hidden: (..., d_model), target: (...) token ids."""
        weight, bias = self.generator.weight, self.generator.bias
        logits = CPU_CHUNK if hidden.device.type == "cpu" else GPU_CHUNK
        rows = self.rows or max(1, logits // len(weight))
        grad = torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in (hidden, weight, bias))
        loss, nll, correct, tokens = _ProjectedLoss.apply(
            hidden, weight, bias, target, (pad, eps_ls, rows, self.terms, grad))
        return LossStats(loss=loss, nll=nll, correct=correct, tokens=tokens)


class _ProjectedLoss(torch.autograd.Function):
    """OutputLoss's arithmetic: forward computes the sums and, when asked, their gradients;
    backward scales those by the gradient of the loss."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, how):
        pad, eps_ls, rows, terms, grad = how
        h = hidden.reshape(-1, hidden.size(-1))                       # (n, d_model)
        counted = target.reshape(-1) != pad
        kept = counted.nonzero().squeeze(1)                           # positions that count
        h, y, tokens = h[kept], target.reshape(-1)[kept], counted.sum()
        dtype = torch.promote_types(torch.promote_types(h.dtype, weight.dtype), torch.float32)
        loss, nll = (torch.zeros((), dtype=dtype, device=h.device) for _ in range(2))
        correct = torch.zeros((), dtype=torch.long, device=h.device)
        if grad:
            d_h = torch.zeros(h.shape, dtype=hidden.dtype, device=h.device)
            d_wt = weight.new_zeros(weight.shape[::-1])               # (d_model, V): dW^T
            d_b = None if bias is None else torch.zeros_like(bias)
        for start in range(0, len(y), rows):
            h_c, y_c = h[start:start + rows], y[start:start + rows]
            z = linear(h_c, weight, bias)                             # (rows, V)
            chunk_loss, chunk_nll, chunk_correct, dz = terms(z, y_c, pad, eps_ls, grad)
            loss += chunk_loss
            nll += chunk_nll
            correct += chunk_correct
            if grad:
                dz = dz.to(z.dtype)                  # the logits' dtype, as autograd's would be
                d_h[start:start + rows] = matmul(dz, weight)
                d_wt += matmul(h_c.T, dz)            # faster than dz^T h_c into (V, d_model)
                if d_b is not None:
                    d_b += dz.sum(0)
        ctx.mark_non_differentiable(nll, correct, tokens)
        if grad:
            full = torch.zeros(hidden.shape, dtype=hidden.dtype, device=h.device)
            full.view(-1, hidden.size(-1)).index_copy_(0, kept, d_h)
            # dW laid out as W is: the embeddings' gradients (the same matrix, §3.4) are added
            # to it, and adding to a transposed one reads it across the grain
            ctx.save_for_backward(full, d_wt.T.contiguous(), d_b)
        return loss, nll, correct, tokens

    @staticmethod
    def backward(ctx, d_loss, _d_nll, _d_correct, _d_tokens):
        full, d_w, d_b = ctx.saved_tensors
        scaled = [None if t is None else t * d_loss.to(t.dtype) for t in (full, d_w, d_b)]
        return *scaled, None, None
