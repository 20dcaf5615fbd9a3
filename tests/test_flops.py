"""annotated.flops counts what PyTorch's own FLOP counter sees in a forward pass."""
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from annotated import batch_masks, configs
from annotated.model import EncoderDecoder
from annotated.training.flops import forward_flops, training_flops


@pytest.mark.parametrize("changes", [{}, {"d_k": 3, "d_v": 5}, {"h": 1, "d_k": 16, "d_v": 16}])
def test_forward_flops_match_torch_flop_counter(changes):
    config = configs.get("base").override(**{**dict(N=2, d_model=16, d_ff=24, h=4, d_k=4, d_v=4), **changes})
    model = EncoderDecoder(config, 50)
    for m in model.attention_modules():
        m.fast = False                       # explicit matmuls, which the counter sees
    src, tgt = torch.randint(4, 50, (1, 7)), torch.randint(4, 50, (1, 5))
    with FlopCounterMode(display=False) as counter:
        model(src, tgt, *batch_masks(src, tgt, 0))
    assert counter.get_total_flops() == forward_flops(config, 7, 5, 50)


def test_training_is_three_forward_passes_and_near_six_times_parameters():
    base = configs.get("base")
    per_token = training_flops(base, 1, 1, 37_000) / 2
    params_per_token = (44_138_496 + 37_000 * 512) / 2   # each token meets half the model
    assert training_flops(base, 9, 7, 100) == 3 * forward_flops(base, 9, 7, 100)
    assert per_token == pytest.approx(6 * params_per_token, rel=0.02)
