"""Training's dropout on a CPU (annotated.training.dropout): nn.Dropout's arithmetic with random
numbers drawn four elements at a time. Held to what nn.Dropout promises: P_drop of the
elements dropped, each independently of its neighbours; the kept ones scaled by 1 / (1 - P_drop);
the gradient masked and scaled the same way; nothing dropped in eval mode; torch's seed decides
the draws. Every tensor here is drawn from a fixed seed, so each count is the same on every run:
the bands are about 5 standard deviations of a fair draw wide."""
import pytest
import torch
from torch import nn

from annotated import configs
from annotated.model import EncoderDecoder
from annotated.training.dropout import DrawnDropout, kept, use_drawn_dropout
from annotated.training.step import make_engine


@pytest.mark.parametrize("P_drop", [0.1, 0.3, 0.5])
def test_drawn_dropout_drops_p_drop_of_the_elements_each_independently(P_drop):
    torch.manual_seed(0)
    n = 3_000_001                                 # not a multiple of 4: the last draw part used
    dropped = kept(torch.Size([n]), P_drop) == 0
    sd = (P_drop * (1 - P_drop) / n) ** 0.5
    assert abs(dropped.double().mean().item() - P_drop) < 5 * sd
    # neighbours share a 64-bit draw (positions 4i to 4i+3) or not: either way independent
    for lag in (1, 2, 3, 4):
        both = (dropped[:-lag] & dropped[lag:]).double().mean().item()
        assert abs(both - P_drop ** 2) < 5 * (P_drop ** 2 * (1 - P_drop ** 2) / n) ** 0.5, lag
    # each of the four positions of a draw drops P_drop of the time, the sign bit's included
    for lane in range(4):
        share = dropped[lane:n - 1:4].double().mean().item()
        assert abs(share - P_drop) < 5 * (P_drop * (1 - P_drop) / (n // 4)) ** 0.5, lane


def test_drawn_dropout_scales_what_it_keeps_and_masks_the_gradient_alike():
    torch.manual_seed(1)
    x = torch.randn(6, 7, 5, dtype=torch.float64, requires_grad=True)
    layer = DrawnDropout(0.25).train()
    y = layer(x)
    mask = y != 0
    assert torch.equal(y[mask], x[mask] * (1 / 0.75))
    assert 0 < (~mask).sum() < mask.sum()
    upstream = torch.randn_like(y)
    y.backward(upstream)
    assert torch.equal(x.grad, torch.where(mask, upstream * (1 / 0.75), 0.0))


def test_drawn_dropout_is_the_identity_in_eval_mode_and_follows_the_seed():
    x = torch.randn(4, 9)
    layer = DrawnDropout(0.1)
    assert layer.eval()(x) is x
    layer.train()
    torch.manual_seed(3)
    first = layer(x)
    torch.manual_seed(3)
    assert torch.equal(layer(x), first)
    assert not torch.equal(layer(x), first)
    assert torch.equal(DrawnDropout(0.0).train()(x), x)
    assert torch.equal(DrawnDropout(1.0).train()(x), torch.zeros_like(x))


def test_drawn_dropout_keeps_the_dtype_under_bf16():
    x = torch.randn(5, 8, dtype=torch.bfloat16)
    assert DrawnDropout(0.1).train()(x).dtype == torch.bfloat16
    torch.manual_seed(4)
    y = DrawnDropout(0.1).train()(x)
    torch.manual_seed(4)
    scaled = kept(x.shape, 0.1)                         # 1 / 0.9 in float32, rounded to bf16 once
    assert torch.equal(y, (x.float() * scaled).to(torch.bfloat16))


def test_training_on_a_cpu_draws_its_dropout_four_elements_at_a_time():
    config = configs.get("copy")
    model = EncoderDecoder(config, 11)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    make_engine(model, config, torch.device("cpu"))
    kinds = {type(m) for m in model.modules()}
    assert DrawnDropout in kinds and nn.Dropout not in kinds
    assert model.state_dict().keys() == weights.keys()          # checkpoints do not change
    compiled = EncoderDecoder(config, 11)
    make_engine(compiled, config.override(compile=True), torch.device("cpu"))
    assert DrawnDropout not in {type(m) for m in compiled.modules()}


def test_use_drawn_dropout_keeps_each_layers_p_drop():
    model = EncoderDecoder(configs.get("copy").override(P_drop=0.2, attn_dropout=0.05), 11)
    before = sorted(m.p for m in model.modules() if type(m) is nn.Dropout)
    use_drawn_dropout(model)
    assert sorted(m.p for m in model.modules() if isinstance(m, DrawnDropout)) == before
