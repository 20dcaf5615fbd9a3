"""Decoding (§6.1): beam search against brute-force enumeration, beam 1 against greedy,
batched against one-by-one, cached against uncached, and the attention maps."""
import itertools

import numpy as np
import pytest
import torch

from annotated import make_model
from annotated.data.tokenizer import BOS, EOS, PAD
from annotated.inference.search import (attention_maps, beam_search, greedy_decode, length_penalty,
                                        reorder_cache, source_batch)
from annotated.masks import padding_mask, subsequent_mask, target_mask


def tiny_model(seed, vocab=6, eos_bias=0.0, sharpness=1.0, dtype=torch.float64, **kw):
    """A random model; `sharpness` scales every logit, `eos_bias` is added to EOS's logit (both
    through the untied output layer) so that the best outputs are neither all [EOS] nor flat."""
    torch.manual_seed(seed)
    args = dict(N=2, d_model=16, d_ff=32, h=4, P_drop=0.0, tie_embeddings=False)
    args.update(kw)
    model = make_model(vocab, vocab, **args).to(dtype).eval()
    with torch.no_grad():
        model.generator.weight.mul_(sharpness)
        model.generator.bias = torch.nn.Parameter(torch.zeros(vocab, dtype=dtype))
        model.generator.bias[EOS] = eos_bias
    return model


def sentences(seed, count, vocab, max_len=6):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (count,), generator=g).tolist()
    return [torch.randint(4, vocab, (n,), generator=g).tolist() for n in lengths]


def teacher_forced_log_probs(model, src_ids, outputs):
    """log P(Y|X) of each output by one ordinary forward pass: independent of decoding.py."""
    src = source_batch([src_ids] * len(outputs))
    width = max(len(y) for y in outputs)
    tgt_in = torch.tensor([[BOS] + y[:-1] + [PAD] * (width - len(y)) for y in outputs])
    tgt_out = torch.tensor([y + [PAD] * (width - len(y)) for y in outputs])
    with torch.no_grad():
        logits = model(src, tgt_in, padding_mask(src, PAD), target_mask(tgt_in, PAD))
    picked = logits.log_softmax(-1).gather(2, tgt_out[:, :, None])[:, :, 0]
    return picked.masked_fill(tgt_out == PAD, 0.0).sum(1)


def brute_force(model, src_ids, max_extra, alpha):
    """Every output the search may produce: words then EOS with |Y| <= m, or m words cut at the
    maximum length m. Words are every id but PAD, BOS, EOS. Returns (best Y, best score)."""
    m = len(src_ids) + 1 + max_extra
    words = [w for w in range(model.generator.out_features) if w not in (PAD, BOS, EOS)]
    outputs = [list(w) + [EOS] for n in range(m) for w in itertools.product(words, repeat=n)]
    outputs += [list(w) for w in itertools.product(words, repeat=m)]
    scores = teacher_forced_log_probs(model, src_ids, outputs) / torch.tensor(
        [length_penalty(len(y), alpha) for y in outputs], dtype=torch.float64)
    best = int(scores.argmax())
    return outputs[best], scores[best].item()


# alpha = 0 and the paper's 0.6; and a strong penalty where stopping too early would show
# (lp(1) = 1 against lp(5) = 7.7: short EOS endings look good but longer outputs win)
@pytest.mark.parametrize("alpha,eos_bias,sharpness", [(0.0, -1.0, 4.0), (0.6, -1.0, 4.0),
                                                      (4.0, 1.0, 0.5)])
def test_exhaustive_beam_equals_brute_force(alpha, eos_bias, sharpness):
    lengths = set()
    for seed in range(6):
        model = tiny_model(seed, eos_bias=eos_bias, sharpness=sharpness)
        src_ids = sentences(seed, 1, vocab=6, max_len=2)[0]
        max_extra = 4 - len(src_ids)                     # |Y| <= 5: 3^5 + 121 outputs
        expected, expected_score = brute_force(model, src_ids, max_extra, alpha)
        # beam wider than the candidates of any step (4 * 3^4): nothing is ever pruned
        (hyp,) = beam_search(model, source_batch([src_ids]), beam_size=4 ** 5, alpha=alpha,
                             max_extra=max_extra)
        assert hyp.tokens == expected
        assert hyp.score == pytest.approx(expected_score, abs=1e-10)
        assert hyp.log_prob == pytest.approx(hyp.score * length_penalty(len(hyp.tokens), alpha),
                                             abs=1e-10)
        lengths.add(len(expected))
    assert len(lengths) > 1, "every seed has the same best length: the test shows too little"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_one_with_alpha_zero_is_greedy(seed):
    model = tiny_model(seed, vocab=12, eos_bias=-1.0, sharpness=3.0)
    src = source_batch(sentences(seed, 8, vocab=12))
    beam = beam_search(model, src, beam_size=1, alpha=0.0, max_extra=6)
    greedy = greedy_decode(model, src, max_extra=6)
    assert [h.tokens for h in beam] == [h.tokens for h in greedy]
    assert [h.log_prob for h in beam] == pytest.approx([h.log_prob for h in greedy], abs=1e-12)


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_batched_equals_one_by_one_and_early_finishers_do_not_matter(search):
    model = tiny_model(3, vocab=12, eos_bias=-2.0, sharpness=2.0)
    batch = sentences(4, 10, vocab=12, max_len=8)

    def run(sents):
        src = source_batch(sents)
        if search == "greedy":
            return greedy_decode(model, src, max_extra=8)
        return beam_search(model, src, beam_size=4, alpha=0.6, max_extra=8)

    together = run(batch)
    alone = [run([s])[0] for s in batch]
    assert [h.tokens for h in together] == [h.tokens for h in alone]
    assert [h.score for h in together] == pytest.approx([h.score for h in alone], abs=1e-9)
    # the batch really mixes sentences that end early (at EOS) with ones that run much longer
    lengths = [len(h.tokens) for h in together]
    assert min(lengths) <= 2 and max(lengths) >= 6
    assert any(h.tokens[-1] == EOS for h in together)


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_cached_equals_uncached_in_float32(search):
    model = tiny_model(5, vocab=40, sharpness=3.0, eos_bias=-1.0, dtype=torch.float32,
                       N=3, d_model=64, d_ff=128)
    src = source_batch(sentences(6, 8, vocab=40, max_len=6))
    if search == "greedy":
        cached, plain = (greedy_decode(model, src, max_extra=6, cached=c) for c in (True, False))
    else:
        cached, plain = (beam_search(model, src, beam_size=4, alpha=0.6, max_extra=6, cached=c)
                         for c in (True, False))
    assert [h.tokens for h in cached] == [h.tokens for h in plain]
    assert [h.score for h in cached] == pytest.approx([h.score for h in plain], abs=1e-5)
    assert max(len(h.tokens) for h in cached) >= 8


def test_cached_decoder_steps_equal_uncached_rows():
    """annotated.decoder's promise: feeding one token at a time through the cache gives the
    rows of the whole-prefix pass, including after rows are reordered."""
    model = tiny_model(7, vocab=12)
    src = source_batch(sentences(8, 3, vocab=12))
    tgt = torch.cat([torch.full((3, 1), BOS), torch.randint(4, 12, (3, 5))], dim=1)
    src_mask = padding_mask(src, PAD)
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        full = model.decode(memory, src_mask, tgt, subsequent_mask(tgt.size(1)))
        cache, order = model.new_cache(), torch.tensor([2, 0, 1])
        steps = []
        for t in range(tgt.size(1)):
            if t == 3:        # reorder mid-way, as beam search does
                reorder_cache(cache, order)
                memory, src_mask, tgt, full = (x[order] for x in (memory, src_mask, tgt, full))
                steps = [s[order] for s in steps]
            steps.append(model.decode(memory, src_mask, tgt[:, t:t + 1], None, cache, start=t))
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-12)


def test_pad_and_bos_are_never_produced():
    model = tiny_model(9, vocab=6, eos_bias=-3.0)
    with torch.no_grad():                  # make PAD and BOS the model's favourite tokens
        model.generator.bias[[PAD, BOS]] = 10.0
    hyps = beam_search(model, source_batch([[4, 5], [5]]), beam_size=4, alpha=0.6, max_extra=3)
    hyps += greedy_decode(model, source_batch([[4, 5], [5]]), max_extra=3)
    assert not {token for h in hyps for token in h.tokens} & {PAD, BOS}


def test_maximum_length_is_input_plus_extra_with_eos_counted():
    model = tiny_model(10, vocab=8, eos_bias=-30.0)          # EOS practically never wins
    src_ids = [4, 5, 6]
    for hyp in (beam_search(model, source_batch([src_ids]), max_extra=7)[0],
                greedy_decode(model, source_batch([src_ids]), max_extra=7)[0]):
        assert len(hyp.tokens) == len(src_ids) + 1 + 7 and EOS not in hyp.tokens


def test_negative_alpha_is_refused():
    with pytest.raises(ValueError, match="alpha"):
        beam_search(tiny_model(0), source_batch([[4]]), alpha=-0.1)


def test_attention_maps_have_every_layer_and_head():
    model = tiny_model(11, vocab=12, N=3, h=2)
    src_ids = [4, 5, 6, 7]
    out = greedy_decode(model, source_batch([src_ids]), max_extra=4)[0].tokens
    maps = attention_maps(model, src_ids, out)
    S, T = len(src_ids) + 1, len(out)
    assert maps["encoder"].shape == (3, 2, S, S)
    assert maps["decoder"].shape == (3, 2, T, T)
    assert maps["cross"].shape == (3, 2, T, S)
    for weights in maps.values():
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-12)
    assert np.all(np.triu(maps["decoder"], k=1) == 0)          # no attention to the future
    assert all(not m.record_weights and m.weights is None for m in model.attention_modules())


@pytest.mark.parametrize("decode", [greedy_decode, beam_search])
def test_decoding_leaves_the_thread_count_to_the_command(decode):
    """Thread policy is decided by the commands (annotated.base.threads), not as a side effect
    of decoding: the search runs on the threads it is given and leaves the count alone."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        decode(tiny_model(0, dtype=torch.float32), source_batch(sentences(0, 3, 6)))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
