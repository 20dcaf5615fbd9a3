"""Label smoothing (§5.4) against its closed form, and the §5.3 learning-rate schedule (with
the optional cool-down, not in the paper)."""
import math

import pytest
import torch
import torch.nn.functional as F

from annotated.loss import label_smoothed_loss
from annotated.optim import cooldown, make_optimizer, noam_rate

PAD = 0


def test_label_smoothed_loss_equals_closed_form_by_hand():
    # V = 5, pad = 0; logits = log p for a distribution p, so softmax(logits) = p exactly.
    p = torch.tensor([[0.10, 0.20, 0.30, 0.25, 0.15],     # target 2: correct (argmax)
                      [0.05, 0.40, 0.15, 0.20, 0.20],     # target 3: wrong (argmax is 1)
                      [0.20, 0.20, 0.20, 0.20, 0.20]],    # padding position: ignored
                     dtype=torch.float64)
    target = torch.tensor([2, 3, PAD])
    eps = 0.1
    # 1 - eps on the target, eps / (V - 2) on each of the other non-padding classes
    row0 = -(0.9 * math.log(0.30) + eps / 3 * (math.log(0.20) + math.log(0.25) + math.log(0.15)))
    row1 = -(0.9 * math.log(0.20) + eps / 3 * (math.log(0.40) + math.log(0.15) + math.log(0.20)))
    stats = label_smoothed_loss(p.log(), target, pad=PAD, eps_ls=eps)
    assert stats.loss.item() == pytest.approx(row0 + row1, rel=1e-12)
    assert stats.nll.item() == pytest.approx(-math.log(0.30) - math.log(0.20), rel=1e-12)
    assert stats.correct.item() == 1
    assert stats.tokens.item() == 2


def test_accuracy_counts_the_positions_whose_target_is_the_argmax():
    torch.manual_seed(0)
    logits = torch.randn(64, 9, 6) * 0.5              # many targets right, many wrong
    target = torch.randint(1, 6, (64, 9))
    target[:, -3:] = PAD                              # padding is never counted
    logits[:, -3:, PAD] = 10.0                        # even where pad is the argmax
    stats = label_smoothed_loss(logits, target, pad=PAD, eps_ls=0.1)
    expected = ((logits.argmax(-1) == target) & (target != PAD)).sum()
    assert 0 < expected < (target != PAD).sum()
    assert stats.correct.item() == expected.item()


def test_label_smoothed_loss_is_cross_entropy_against_the_smoothed_distribution():
    torch.manual_seed(0)
    V, eps = 7, 0.2
    logits = torch.randn(2, 4, V, dtype=torch.float64)
    target = torch.tensor([[3, 5, 1, PAD], [6, 2, PAD, PAD]])
    q = torch.full((2, 4, V), eps / (V - 2), dtype=torch.float64)  # built explicitly
    q[..., PAD] = 0.0
    q.scatter_(-1, target[..., None], 1.0 - eps)
    per_position = -(q * logits.log_softmax(-1)).sum(-1)
    expected = per_position[target != PAD].sum()
    stats = label_smoothed_loss(logits, target, pad=PAD, eps_ls=eps)
    assert torch.allclose(stats.loss, expected, rtol=1e-12, atol=0)
    assert torch.allclose(q.sum(-1)[target != PAD], torch.ones(5, dtype=torch.float64))


def test_without_smoothing_the_loss_is_plain_cross_entropy():
    torch.manual_seed(1)
    logits = torch.randn(3, 5, 9, dtype=torch.float64)
    target = torch.randint(0, 9, (3, 5))
    stats = label_smoothed_loss(logits, target, pad=PAD, eps_ls=0.0)
    expected = F.cross_entropy(logits.reshape(-1, 9), target.reshape(-1), ignore_index=PAD,
                               reduction="sum")
    assert torch.allclose(stats.loss, expected, rtol=1e-12, atol=0)
    assert torch.allclose(stats.nll, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("step, expected", [
    (1, 512 ** -0.5 * 1 * 4000 ** -1.5),          # warmup: linear in step
    (4000, 512 ** -0.5 * 4000 ** -0.5),           # the peak; both branches agree
    (100_000, 512 ** -0.5 * 100_000 ** -0.5),     # decay: 1 / sqrt(step)
])
def test_noam_rate_matches_the_formula(step, expected):
    assert noam_rate(step, 512, 4000) == pytest.approx(expected, rel=1e-12)


def test_noam_rate_values_quoted_in_the_paper_notes():
    assert noam_rate(4000, 512, 4000) == pytest.approx(6.99e-4, rel=1e-3)
    assert noam_rate(4000, 1024, 4000) == pytest.approx(4.94e-4, rel=1e-3)
    assert noam_rate(1, 512, 4000) == pytest.approx(1.747e-7, rel=1e-3)
    assert noam_rate(100_000, 512, 4000) == pytest.approx(1.398e-4, rel=1e-3)
    assert noam_rate(10, 512, 4000, factor=2.0) == 2 * noam_rate(10, 512, 4000)


def test_optimizer_is_the_papers_adam_and_step_k_uses_rate_k():
    model = torch.nn.Linear(3, 2)
    optimizer, scheduler = make_optimizer(model, d_model=512, warmup_steps=4000, factor=1.0)
    group = optimizer.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
    for step in range(1, 6):
        assert group["lr"] == pytest.approx(noam_rate(step, 512, 4000), rel=1e-12)
        model(torch.randn(4, 3)).sum().backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()


def test_optimizer_takes_the_fused_step_and_moves_the_weights_as_plain_adam_does():
    torch.manual_seed(0)
    model, plain_model = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    plain_model.load_state_dict(model.state_dict())
    start = model.weight.detach().clone()
    optimizer, scheduler = make_optimizer(model, d_model=64, warmup_steps=3, factor=2.0)
    plain = torch.optim.Adam(plain_model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    assert optimizer.defaults["fused"] and not plain.defaults["fused"]
    for step in range(1, 6):
        x = torch.randn(4, 3)
        for net in (model, plain_model):
            net(x).pow(2).sum().backward()
        plain.param_groups[0]["lr"] = noam_rate(step, 64, 3, 2.0)
        optimizer.step(), plain.step()
        scheduler.step()
        optimizer.zero_grad(), plain.zero_grad()
    for fused, unfused in zip(model.parameters(), plain_model.parameters()):
        assert torch.allclose(fused, unfused, rtol=1e-6, atol=1e-7)   # float32 rounding apart
    assert not torch.allclose(model.weight, start, atol=0.1)             # and they did move


def test_cooldown_is_off_by_default_and_a_straight_line_to_zero_over_the_last_steps():
    assert [cooldown(step, 10, 0) for step in (1, 10, 11, 10**6)] == [1.0] * 4
    ramp = [cooldown(step, 10, 4) for step in range(1, 13)]
    assert ramp == [1.0] * 7 + [0.75, 0.5, 0.25, 0.0, 0.0]     # steps 8..10 cool, 10 still moves
    assert [cooldown(step, 10, 10) for step in (1, 2, 10)] == [1.0, 0.9, 0.1]


def test_optimizer_with_cooldown_follows_the_papers_rate_until_the_cooldown_starts():
    model = torch.nn.Linear(3, 2)
    optimizer, scheduler = make_optimizer(model, d_model=64, warmup_steps=3, factor=2.0,
                                          train_steps=8, cooldown_steps=4)
    rates = []
    for _ in range(8):
        rates.append(optimizer.param_groups[0]["lr"])
        model(torch.randn(4, 3)).sum().backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    paper = [noam_rate(step, 64, 3, 2.0) for step in range(1, 9)]
    assert rates[:4] == pytest.approx(paper[:4], rel=1e-12)
    assert rates[4:] == pytest.approx([p * r for p, r in zip(paper[4:], (1, 0.75, 0.5, 0.25))],
                                      rel=1e-12)
