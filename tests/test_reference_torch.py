"""The NumPy reference against the annotated PyTorch model, in float64, and the full model's
backward against finite differences.

Norm: per tensor, relative error = max |numpy - torch| / max |torch| (the largest entry of
the PyTorch tensor sets the scale), required <= 1e-9 for log-probabilities, the loss and every
parameter gradient, and <= 1e-8 for the parameters after 5 training steps. Exception: the
gradient of a key-projection bias b_K is zero in exact arithmetic (softmax ignores a constant
added to a row of scores), so both sides must be zero to rounding instead: gradients <= 1e-12
of the model's largest gradient, and b_K itself after training <= 1e-7 of the largest
parameter (see test_five_training_steps_match_torch).

The pieces the reference computes its own way are also compared one by one, each test stating
its tolerance: the §5.3 schedule at every step 1..200,000 (relative <= 1e-15), the smoothed
loss built from an explicit target distribution and its logit gradient (<= 1e-12), the
sinusoid table and the masks.

Dropout: every nn.Dropout of the PyTorch model is replaced, by module name, with
`RecordedDropout`, which draws a mask the first time it runs and keeps it in a dict under its
module name; that dict is the reference's `dropout_masks`. Attention modules are switched to
their explicit path (`fast = False`), since the fused kernel draws its own dropout masks.
"""
import numpy as np
import pytest
import torch
from conftest import says
from torch import nn

import reference_numpy as ref
from annotated import batch_masks, configs, positional
from annotated.loss import label_smoothed_loss
from annotated.masks import subsequent_mask
from annotated.model import EncoderDecoder
from annotated.optim import make_optimizer, noam_rate
from annotated.training.decoder_states import DecoderStates
from annotated.training.output_loss import OutputLoss
from reference_numpy import layers as ref_layers
from reference_numpy import masks as ref_masks
from reference_numpy import positional as ref_positional
from reference_numpy.gradcheck import numerical_grad
from reference_numpy.loss import (label_smoothed_backward, label_smoothed_forward,
                                  label_smoothed_logits_backward, smoothed_distribution)
from reference_numpy.model import read_config

PAD, BOS, EOS = 0, 2, 3
V = 11
SMALL = dict(N=2, d_model=16, d_ff=32, h=2, d_k=8, d_v=8, P_drop=0.0)
CONFIGS = {                                          # small versions of Table 3 rows
    "base": configs.get("base").override(**SMALL),
    "A1 (h=1)": configs.get("A1").override(**{**SMALL, "h": 1, "d_k": 16, "d_v": 16}),
    "B1 (d_k != d_v)": configs.get("B1").override(**{**SMALL, "d_k": 3, "d_v": 8}),
    "E (learned positions)": configs.get("E").override(**SMALL, max_len=12,
                                                       max_sentence_len=12),
}
ZERO_IN_EXACT_ARITHMETIC = ".W_K.bias"


class RecordedDropout(nn.Module):
    """Inverted dropout whose mask is drawn once per name and kept in `masks[name]`, as the
    multiplier (0 or 1 / (1 - p)) that reference_numpy.layers.dropout_forward expects."""

    def __init__(self, name, p, masks, rng):
        super().__init__()
        self.name, self.p, self.masks, self.rng = name, p, masks, rng

    def forward(self, x):
        if self.name not in self.masks:
            self.masks[self.name] = (self.rng.random(tuple(x.shape)) >= self.p) / (1.0 - self.p)
        return x * x.new_tensor(self.masks[self.name])


def record_dropout(model, rng):
    """Swap every nn.Dropout for a RecordedDropout; returns the dict the masks will fill."""
    recorded = {}
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Dropout):
            parent, _, attr = name.rpartition(".")
            setattr(model.get_submodule(parent), attr,
                    RecordedDropout(name, module.p, recorded, rng))
    for attn in model.attention_modules():
        attn.fast = False
    return recorded


def random_batch(rng, batch=3, src_len=6, tgt_len=5, vocab=V):
    """Sentences of random lengths, the first of full length and the others shorter, so that
    source and target both have padding: src = tokens + [EOS], tgt_in = [BOS] + tokens,
    tgt_out = tokens + [EOS]."""
    src = np.full((batch, src_len), PAD)
    tgt_in, tgt_out = np.full((batch, tgt_len), PAD), np.full((batch, tgt_len), PAD)
    for i in range(batch):
        n, m = (src_len - 1, tgt_len - 1) if i == 0 else rng.integers(1, [src_len, tgt_len])
        src[i, :n + 1] = [*rng.integers(4, vocab, n), EOS]
        words = rng.integers(4, vocab, m)
        tgt_in[i, :m + 1] = [BOS, *words]
        tgt_out[i, :m + 1] = [*words, EOS]
    return src, tgt_in, tgt_out


def torch_step(model, src, tgt_in, tgt_out, eps_ls):
    """Log-probabilities and mean label-smoothed loss, after loss.backward()."""
    src, tgt_in, tgt_out = (torch.from_numpy(a) for a in (src, tgt_in, tgt_out))
    logits = model(src, tgt_in, *batch_masks(src, tgt_in, PAD))
    stats = label_smoothed_loss(logits, tgt_out, pad=PAD, eps_ls=eps_ls)
    loss = stats.loss / stats.tokens
    loss.backward()
    return logits.log_softmax(-1).detach().numpy(), loss.item()


def torch_grads(model):
    return {name: p.grad.numpy() for name, p in model.named_parameters()}


def assert_close(ours, theirs, tolerance, what, zero=None):
    """Per tensor max |ours - theirs| / max |theirs| <= tolerance; the b_K tensors must
    instead be at most `zero` times the largest entry of `theirs` on both sides."""
    assert set(ours) == set(theirs), what
    largest = max(np.abs(t).max() for t in theirs.values())
    for name, t in theirs.items():
        if zero is not None and name.endswith(ZERO_IN_EXACT_ARITHMETIC):
            assert max(np.abs(ours[name]).max(), np.abs(t).max()) <= zero * largest, name
        else:
            err = np.abs(ours[name] - t).max() / max(np.abs(t).max(), np.finfo(float).tiny)
            assert err <= tolerance, f"{what} {name}: relative error {err:.2e}"


def compare_with_torch(model, config, rng, eps_ls=0.1, dropout_masks=None):
    src, tgt_in, tgt_out = random_batch(rng)
    params = ref.params_from_torch(model)
    torch_log_p, torch_loss = torch_step(model, src, tgt_in, tgt_out, eps_ls)
    log_p = ref.log_probs(params, src, tgt_in, pad=PAD, config=config,
                          dropout_masks=dropout_masks)
    loss, grads = ref.loss_and_grads(params, src, tgt_in, tgt_out, pad=PAD, eps_ls=eps_ls,
                                     config=config, dropout_masks=dropout_masks)
    assert_close({"log_p": log_p}, {"log_p": torch_log_p}, 1e-9, "log-probabilities")
    assert abs(loss - torch_loss) <= 1e-9 * abs(torch_loss)
    assert_close(grads, torch_grads(model), 1e-9, "gradient", zero=1e-12)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("fast", [True, False])
def test_matches_torch_autograd(name, fast):
    """Shared vocabulary, tied weights, padding in source and target, dropout off."""
    torch.manual_seed(0)
    model = EncoderDecoder(CONFIGS[name], V).double()
    assert "generator.weight" not in dict(model.named_parameters())          # tied
    for attn in model.attention_modules():
        attn.fast = fast
    compare_with_torch(model, CONFIGS[name], np.random.default_rng(0))


def test_matches_torch_with_separate_vocabularies():
    torch.manual_seed(1)
    config = CONFIGS["base"]
    model = EncoderDecoder(config, V, V + 2).double()                              # untied
    assert {"tgt_embed.lut.weight", "generator.weight"} <= set(dict(model.named_parameters()))
    compare_with_torch(model, config, np.random.default_rng(1))


@pytest.mark.parametrize("vocabularies", ["shared", "separate"])
def test_the_training_path_matches_the_reference(vocabularies):
    """Training's own forward pass and loss (annotated.training.decoder_states: the decoder's
    self-attention as is_causal, no target padding mask; annotated.training.output_loss: the
    projection and the loss fused, in chunks of 4 positions) against the reference, by the same
    norm as the model's own forward pass and annotated.loss."""
    torch.manual_seed(4)
    config = CONFIGS["base"]
    model = (EncoderDecoder(config, V) if vocabularies == "shared" else
             EncoderDecoder(config, V, V + 2)).double()
    src, tgt_in, tgt_out = random_batch(np.random.default_rng(4))
    params = ref.params_from_torch(model)
    src_t, tgt_in_t, tgt_out_t = (torch.from_numpy(a) for a in (src, tgt_in, tgt_out))
    stats = OutputLoss(model.generator, rows=4)(DecoderStates(model)(src_t, tgt_in_t),
                                                tgt_out_t, pad=PAD, eps_ls=0.1)
    (stats.loss / stats.tokens).backward()
    loss, grads = ref.loss_and_grads(params, src, tgt_in, tgt_out, pad=PAD, eps_ls=0.1,
                                     config=config)
    assert abs(loss - (stats.loss / stats.tokens).item()) <= 1e-9 * abs(loss)
    assert_close(grads, torch_grads(model), 1e-9, "gradient", zero=1e-12)


def test_matches_torch_with_identical_dropout_masks():
    """P_drop, attention dropout and FFN dropout all on; both sides use the same masks."""
    torch.manual_seed(2)
    rng = np.random.default_rng(2)
    config = CONFIGS["B1 (d_k != d_v)"].override(P_drop=0.3, attn_dropout=0.2, ffn_dropout=0.25)
    model = EncoderDecoder(config, V).double().train()
    recorded = record_dropout(model, rng)
    compare_with_torch(model, config, rng, dropout_masks=recorded)
    N = config.N   # embeddings 2, encoder layer 2 + 1 + 1, decoder layer 3 + 2 + 1
    assert len(recorded) == 2 + 4 * N + 6 * N
    assert all((m == 0).any() and (m > 0).any() for m in recorded.values())


@pytest.mark.parametrize("name, dropout", [("base", False), ("E (learned positions)", True)])
def test_full_model_backward_matches_finite_differences(name, dropout):
    """Tiny model (N=1, d_model=8, vocabulary 11), label-smoothed loss; every entry of every
    tensor of fewer than 40 entries, 6 random entries of the larger ones. Norm: per tensor
    max |numeric - analytic| over the checked entries / max |analytic| over the tensor."""
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    config = CONFIGS[name].override(N=1, d_model=8, d_ff=12, h=2, d_k=3, d_v=5,
                                    P_drop=0.2 * dropout, attn_dropout=0.2 * dropout,
                                    ffn_dropout=0.2 * dropout)
    model = EncoderDecoder(config, V).double()
    recorded = record_dropout(model, rng) if dropout else None
    src, tgt_in, tgt_out = random_batch(rng)
    if dropout:
        torch_step(model, src, tgt_in, tgt_out, 0.1)                          # draws the masks
    params = ref.params_from_torch(model)

    def loss():
        log_p = ref.log_probs(params, src, tgt_in, pad=PAD, config=config, dropout_masks=recorded)
        return label_smoothed_forward(log_p, tgt_out, PAD, 0.1)[0]

    _, grads = ref.loss_and_grads(params, src, tgt_in, tgt_out, pad=PAD, eps_ls=0.1,
                                  config=config, dropout_masks=recorded)
    largest = max(np.abs(g).max() for g in grads.values())
    for key, p in params.items():
        entries = range(p.size) if p.size < 40 else rng.choice(p.size, 6, replace=False)
        analytic = grads[key].reshape(-1)
        err = np.abs(numerical_grad(loss, p, entries=entries) - analytic[entries]).max()
        if key.endswith(ZERO_IN_EXACT_ARITHMETIC):
            assert np.abs(analytic).max() <= 1e-12 * largest and err <= 1e-6 * largest, key
        else:
            assert err <= 1e-6 * np.abs(analytic).max(), f"{key}: {err:.2e}"


def test_five_training_steps_match_torch():
    """Adam + the §5.3 schedule + label smoothing + dropout, 5 steps on 5 different batches."""
    torch.manual_seed(4)
    rng = np.random.default_rng(4)
    config = CONFIGS["base"].override(P_drop=0.1, attn_dropout=0.1, ffn_dropout=0.1,
                                      eps_ls=0.1, warmup_steps=3, lr_factor=2.0)
    model = EncoderDecoder(config, V).double().train()
    recorded = record_dropout(model, rng)
    optimizer, scheduler = make_optimizer(model, config.d_model, config.warmup_steps,
                                          config.lr_factor)
    params = ref.params_from_torch(model)
    adam = ref.Adam(params)
    start = {k: v.copy() for k, v in params.items()}
    for _ in range(5):
        src, tgt_in, tgt_out = random_batch(rng)
        recorded.clear()                                 # fresh masks for every step
        optimizer.zero_grad()
        _, torch_loss = torch_step(model, src, tgt_in, tgt_out, config.eps_ls)
        optimizer.step()
        scheduler.step()
        loss = ref.train_step(params, adam, src, tgt_in, tgt_out, pad=PAD, eps_ls=config.eps_ls,
                              config=config, warmup_steps=config.warmup_steps,
                              factor=config.lr_factor, dropout_masks=recorded)
        assert abs(loss - torch_loss) <= 1e-9 * torch_loss
    # b_K starts at 0 and its gradient is rounding noise |g| <~ 1e-16, which Adam divides by
    # sqrt(v_hat) + eps ~ eps = 1e-9: a step moves it by up to lr * 1e-7 in a direction set by
    # rounding, and the five rates here add up to about 1. So both sides stay below 1e-7.
    assert_close(params, ref.params_from_torch(model), 1e-8, "parameter", zero=1e-7)
    moved = [np.abs(params[k] - start[k]).max() for k in params if "W_K.bias" not in k]
    assert min(moved) > 1e-3                             # every tensor really was trained


SCHEDULES = [(512, 4000, 1.0), (1024, 4000, 1.0), (128, 200, 0.5), (256, 16_000, 1.0),
             (512, 4000, 2.0), (64, 1, 1.0)]          # (d_model, warmup_steps, factor)


@pytest.mark.parametrize("d_model, warmup, factor", SCHEDULES)
def test_noam_rate_matches_the_reference_at_every_step(d_model, warmup, factor):
    """annotated.optim.noam_rate against the reference's two-branch float64 formula at every
    step 1..200,000: relative difference <= 1e-15 (a few units in the last place; the
    reference evaluates an array of steps with NumPy's vectorized power). Both peak exactly
    at step = warmup_steps, at factor * (d_model * warmup_steps)^-0.5."""
    steps = np.arange(1, 200_001)
    ours = ref.noam_rate(steps, d_model, warmup, factor)
    theirs = np.array([noam_rate(int(step), d_model, warmup, factor) for step in steps])
    assert np.abs(ours - theirs).max() <= 1e-15 * theirs.max()
    assert (np.abs(ours - theirs) <= 1e-15 * theirs).all()
    peak = factor * (d_model * warmup) ** -0.5
    for rates in (ours, theirs):
        assert steps[rates.argmax()] == warmup
        assert rates[warmup - 1] == pytest.approx(peak, rel=1e-15)
    for step in (1, warmup, warmup + 1, 200_000):                   # one step at a time
        assert ref.noam_rate(step, d_model, warmup, factor) == pytest.approx(
            noam_rate(step, d_model, warmup, factor), rel=1e-15)
    with pytest.raises(ValueError, match="count from 1"):
        ref.noam_rate(0, d_model, warmup, factor)


def test_the_optimizers_step_k_uses_the_reference_rate_k():
    """make_optimizer's scheduler through the peak (warmup 100) and into the decay."""
    model = torch.nn.Linear(2, 1)
    optimizer, scheduler = make_optimizer(model, d_model=64, warmup_steps=100, factor=2.0)
    expected = ref.noam_rate(np.arange(1, 301), 64, 100, 2.0)
    for k in range(1, 301):
        assert optimizer.param_groups[0]["lr"] == pytest.approx(expected[k - 1], rel=1e-15), k
        optimizer.step()
        scheduler.step()


LOSS_CASES = {                                       # eps_ls, pad, V
    "paper": (0.1, PAD, V), "no smoothing": (0.0, PAD, V), "eps 0.3, pad 1": (0.3, 1, 7),
    "pad is the last id": (0.1, 12, 13)}


@pytest.mark.parametrize("case", LOSS_CASES)
def test_smoothed_loss_and_logit_gradient_match_annotated(case):
    """The reference builds q explicitly and takes -sum q log p; annotated.loss uses the
    shortcut through log p(y) and sum log p. Float64, with padding positions: loss relative
    difference <= 1e-12, and d loss / d logits
    (softmax - q, over n) against autograd, max |diff| / max |autograd| <= 1e-12."""
    eps_ls, pad, vocab = LOSS_CASES[case]
    torch.manual_seed(6)
    logits = 3 * torch.randn(4, 6, vocab, dtype=torch.float64)
    logits.requires_grad_()
    rng = np.random.default_rng(6)
    target = rng.integers(0, vocab, (4, 6))
    target[target == pad] = (pad + 1) % vocab       # padding only where placed next
    target[1, 4:], target[2, 1:], target[3, :] = pad, pad, pad   # the last row: padding only
    stats = label_smoothed_loss(logits, torch.from_numpy(target), pad=pad, eps_ls=eps_ls)
    (stats.loss / stats.tokens).backward()
    torch_loss = (stats.loss / stats.tokens).item()

    log_p, _ = ref_layers.log_softmax_forward(logits.detach().numpy())
    loss, cache = label_smoothed_forward(log_p, target, pad, eps_ls)
    assert abs(loss - torch_loss) <= 1e-12 * abs(torch_loss)
    assert abs(loss * stats.tokens.item() - stats.loss.item()) <= 1e-12 * stats.loss.item()
    dlogits = label_smoothed_logits_backward(cache)
    assert_close({"logits": dlogits}, {"logits": logits.grad.numpy()}, 1e-12, "d loss / d logits")
    assert (dlogits[target == pad] == 0).all()
    # the same gradient by the general route: -q / n through the log-softmax backward
    through_log_p = ref_layers.log_softmax_backward(label_smoothed_backward(cache), log_p)
    assert_close({"logits": through_log_p}, {"logits": logits.grad.numpy()}, 1e-12,
                 "d loss / d log p, then the log-softmax")


def test_smoothed_distribution_is_the_convention_of_annotated():
    """q: 1 - eps_ls on the gold token, eps_ls / (V - 2) on each class that is neither the gold
    token nor padding, 0 on padding, and an all-zero row where the target is padding. The
    package's q, read off its autograd gradient (summed loss: d / d logits = softmax - q at a
    counted position), is the same to 1e-12."""
    eps_ls, pad, vocab = 0.1, 2, 6
    target = np.array([[0, 5, 2], [3, 2, 2]])
    q = smoothed_distribution(target, vocab, pad, eps_ls)             # (2, 3, 6)
    expected = np.zeros((2, 3, vocab))
    for (i, j), y in np.ndenumerate(target):
        if y != pad:
            expected[i, j] = [0.0 if c == pad else 1 - eps_ls if c == y else eps_ls / (vocab - 2)
                              for c in range(vocab)]
    assert np.array_equal(q, expected)
    assert np.allclose(q.sum(-1), target != pad, rtol=0, atol=1e-15)

    logits = torch.from_numpy(np.random.default_rng(7).standard_normal((2, 3, vocab)))
    logits.requires_grad_()
    label_smoothed_loss(logits, torch.from_numpy(target), pad=pad, eps_ls=eps_ls).loss.backward()
    counted = target != pad
    their_q = logits.softmax(-1).detach().numpy() - logits.grad.numpy()
    assert np.abs(their_q[counted] - q[counted]).max() <= 1e-12
    assert (logits.grad.numpy()[~counted] == 0).all()


@pytest.mark.parametrize("length, d_model, start", [(2048, 512, 0), (64, 6, 0), (50, 16, 1000)])
def test_sinusoid_table_matches_annotated(length, d_model, start):
    """pos / 10000^(2i/d_model) here, pos * exp(-2i log(10000) / d_model) in the package:
    the angles differ by rounding, a few units in the last place of pos, so the tables agree
    to max |diff| <= 1e-15 * (the largest position)."""
    ours = ref_positional.sinusoid_table(length, d_model, start)
    theirs = positional.sinusoid_table(length, d_model, start, dtype=torch.float64).numpy()
    assert np.abs(ours - theirs).max() <= 1e-15 * (start + length)


def test_masks_match_annotated():
    tokens = np.array([[5, 6, 7, 8, 9], [5, 6, 0, 0, 0]])
    src, tgt = batch_masks(torch.from_numpy(tokens), torch.from_numpy(tokens), PAD)
    assert np.array_equal(ref_masks.padding_mask(tokens, PAD), src.numpy())
    assert np.array_equal(ref_masks.target_mask(tokens, PAD), tgt.numpy())
    for size in (1, 2, 7):
        assert np.array_equal(ref_masks.subsequent_mask(size), subsequent_mask(size).numpy())


def test_params_round_trip_and_errors():
    torch.manual_seed(5)
    model = EncoderDecoder(CONFIGS["base"], V).double()
    params = ref.params_from_torch(model)
    assert "src_embed.lut.weight" in params and "generator.weight" not in params
    doubled = {k: 2 * v for k, v in params.items()}
    ref.params_to_torch(doubled, model)
    assert_close(ref.params_from_torch(model), doubled, 0.0, "parameter")
    assert model.generator.weight is model.src_embed.lut.weight                # still tied
    with pytest.raises(KeyError, match="missing"):
        ref.params_to_torch({k: v for k, v in params.items() if "W_Q" not in k}, model)
    with pytest.raises(ValueError) as error:
        read_config(CONFIGS["base"].override(d_k=4), params)
    says(error, "d_k=4", "d_k=8")
    with pytest.raises(ValueError, match="config needs h"):
        read_config({"N": 2}, params)
