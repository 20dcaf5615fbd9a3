"""The output projection and label-smoothed loss fused, a chunk of tokens at a time
(annotated.training.output_loss), against the plain loss of annotated.loss applied to the
projection's logits: the same sums and the same gradients, in float64 to rounding.

Norm: loss and nll, relative difference <= 1e-12; correct and tokens, equal; every gradient
(of the hidden states, the projection's weight and bias), max |fused - plain| / max |plain|
<= 1e-12."""
import numpy as np
import pytest
import torch
from torch import nn

from annotated.loss import label_smoothed_loss
from annotated.training.output_loss import OutputLoss
from reference_numpy import layers as ref_layers
from reference_numpy.loss import label_smoothed_forward, label_smoothed_logits_backward

D, V = 12, 17


def setup(pad=0, bias=False, seed=0):
    """A projection, hidden states (4, 7, D) and targets with padding: a short row, a row of
    padding only, and targets that are the argmax at some positions (accuracy counts them)."""
    torch.manual_seed(seed)
    generator = nn.Linear(D, V, bias=bias).double()
    hidden = torch.randn(4, 7, D, dtype=torch.float64)
    target = torch.randint(0, V, (4, 7))
    target[target == pad] = (pad + 1) % V
    target[1, 3:], target[2, :] = pad, pad
    argmax = generator(hidden).argmax(-1)
    target[0, :3] = torch.where(argmax[0, :3] == pad, target[0, :3], argmax[0, :3])
    return generator, hidden.requires_grad_(), target


def sums_and_grads(loss_fn, generator, hidden, target, pad, eps_ls, scale=0.37):
    """The four sums, and the gradients of scale * loss."""
    generator.zero_grad()
    hidden.grad = None
    stats = loss_fn(hidden, target, pad=pad, eps_ls=eps_ls)
    (scale * stats.loss).backward()
    grads = [hidden.grad] + [p.grad for p in generator.parameters()]
    return stats, [g.clone() for g in grads]


def plain(generator):
    return lambda hidden, target, **kw: label_smoothed_loss(generator(hidden), target, **kw)


def assert_same(fused, expected):
    (stats, grads), (stats0, grads0) = fused, expected
    for name in ("loss", "nll"):
        a, b = getattr(stats, name).item(), getattr(stats0, name).item()
        assert abs(a - b) <= 1e-12 * abs(b), name
    assert stats.correct.item() == stats0.correct.item() > 0
    assert stats.tokens.item() == stats0.tokens.item()
    assert len(grads) == len(grads0)
    for g, g0 in zip(grads, grads0):
        assert (g - g0).abs().max() <= 1e-12 * g0.abs().max()


@pytest.mark.parametrize("eps_ls", [0.0, 0.1])
@pytest.mark.parametrize("rows", [1, 5, 28, None], ids=["1 a chunk", "5 (does not divide)",
                                                        "one chunk", "default"])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_loss_and_gradients_equal_the_plain_loss(eps_ls, rows, bias):
    generator, hidden, target = setup(bias=bias)
    expected = sums_and_grads(plain(generator), generator, hidden, target, 0, eps_ls)
    fused = sums_and_grads(OutputLoss(generator, rows=rows), generator, hidden, target, 0,
                           eps_ls)
    assert_same(fused, expected)
    assert (fused[1][0][2] == 0).all() and (fused[1][0][1, 3:] == 0).all()   # padding: none


def test_a_padding_id_other_than_0_and_the_last():
    generator, hidden, target = setup(pad=V - 1)
    expected = sums_and_grads(plain(generator), generator, hidden, target, V - 1, 0.1)
    assert_same(sums_and_grads(OutputLoss(generator, rows=3), generator, hidden, target,
                               V - 1, 0.1), expected)


def test_a_batch_of_padding_only_sums_to_zero_with_zero_gradients():
    generator, hidden, target = setup()
    stats, grads = sums_and_grads(OutputLoss(generator), generator, hidden,
                                  torch.zeros_like(target), 0, 0.1)
    assert [stats.loss.item(), stats.nll.item(), stats.correct.item(), stats.tokens.item()] == \
        [0, 0, 0, 0]
    assert all((g == 0).all() for g in grads)


def test_without_gradients_the_sums_are_the_same_and_nothing_is_kept():
    """Evaluation's case (torch.no_grad): the sums alone, and a loss that needs no backward."""
    generator, hidden, target = setup()
    with_grad = OutputLoss(generator, rows=5)(hidden, target, pad=0, eps_ls=0.1)
    with torch.no_grad():
        without = OutputLoss(generator, rows=5)(hidden, target, pad=0, eps_ls=0.1)
    assert not without.loss.requires_grad and with_grad.loss.requires_grad
    assert without.loss.item() == with_grad.loss.item()
    assert without.correct.item() == with_grad.correct.item()


def test_only_the_loss_carries_a_gradient():
    generator, hidden, target = setup()
    stats = OutputLoss(generator)(hidden, target, pad=0, eps_ls=0.1)
    assert stats.loss.requires_grad
    assert not any(t.requires_grad for t in (stats.nll, stats.correct, stats.tokens))
    assert stats.correct.dtype == stats.tokens.dtype == torch.int64


@pytest.mark.parametrize("eps_ls, pad", [(0.1, 0), (0.0, 0), (0.3, 5)])
def test_fused_loss_matches_reference_numpy(eps_ls, pad):
    """As annotated.loss is checked (tests/test_reference_torch.py): the reference builds q and
    takes -sum q log p of the logits h W^T, and starts the backward at (softmax - q) / n; the
    gradients of h and W follow from it through the projection. Mean loss <= 1e-12 relative;
    each gradient, max |diff| / max |reference| <= 1e-12."""
    generator, hidden, target = setup(pad=pad, seed=6)
    stats = OutputLoss(generator, rows=4)(hidden, target, pad=pad, eps_ls=eps_ls)
    (stats.loss / stats.tokens).backward()
    W, h = generator.weight.detach().numpy(), hidden.detach().numpy()
    log_p, _ = ref_layers.log_softmax_forward(h @ W.T)
    loss, cache = label_smoothed_forward(log_p, target.numpy(), pad, eps_ls)
    dlogits = label_smoothed_logits_backward(cache)                    # (4, 7, V)
    assert abs(loss - (stats.loss / stats.tokens).item()) <= 1e-12 * loss
    for ours, theirs in [(hidden.grad.numpy(), dlogits @ W),
                         (generator.weight.grad.numpy(), np.einsum("btv,btd->vd", dlogits, h))]:
        assert np.abs(ours - theirs).max() <= 1e-12 * np.abs(theirs).max()


def test_bf16_autocast_stays_within_a_band_of_the_plain_loss():
    """Mixed precision on the CPU, the twin of the CUDA test: the products in bfloat16 and the
    softmax in float32 in both, so the two differ by bfloat16 rounding of the logits only."""
    generator, hidden, target = setup()
    generator.float()
    hidden = hidden.detach().float().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = sums_and_grads(plain(generator), generator, hidden, target, 0, 0.1)
        fused = sums_and_grads(OutputLoss(generator, rows=5), generator, hidden, target, 0,
                               0.1)
    assert abs(fused[0].loss.item() / expected[0].loss.item() - 1) <= BF16_LOSS
    for g, g0 in zip(fused[1], expected[1]):
        assert g.dtype == torch.float32
        assert (g - g0).norm() <= BF16_GRADIENT * g0.norm()


BF16_LOSS = 1e-3           # relative gap of the summed loss, fused against plain, in bfloat16
BF16_GRADIENT = 2e-2       # relative gap of a gradient's norm


@pytest.mark.slow
def test_the_compiled_chunk_arithmetic_equals_eager():
    """compile=True (inductor on the CPU): the same sums and gradients, to float64 rounding."""
    generator, hidden, target = setup()
    expected = sums_and_grads(OutputLoss(generator, rows=5), generator, hidden, target, 0, 0.1)
    compiled = OutputLoss(generator, rows=5, compile=True)
    assert_same(sums_and_grads(compiled, generator, hidden, target, 0, 0.1), expected)
