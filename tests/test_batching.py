"""Token batching (§5.1): budgets, coverage, determinism, sharding and collation."""
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import says

from annotated.data.batching import collate, lengths_of, make_batches, padding_fraction, shard
from annotated.data.tokenizer import BOS, EOS, PAD


def random_lengths(n, seed=0):
    """Sentence-like lengths: targets correlated with sources, a long tail."""
    rng = np.random.default_rng(seed)
    src = rng.gamma(4.0, 4.0, size=n).astype(int) + 2
    tgt = np.maximum(2, src + rng.integers(-4, 6, size=n))
    return list(zip(src.tolist(), tgt.tolist()))


def test_token_budget_respected_on_both_sides():
    lengths = random_lengths(5000)
    for max_tokens in (200, 500, 4096):
        for batch in make_batches(lengths, max_tokens, seed=1, epoch=0):
            chosen = np.array([lengths[i] for i in batch])
            assert len(batch) * chosen[:, 0].max() <= max_tokens
            assert len(batch) * chosen[:, 1].max() <= max_tokens


def test_every_example_in_exactly_one_batch():
    lengths = random_lengths(3000)
    batches = make_batches(lengths, 1000, seed=3, epoch=2)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))


def test_batches_are_full_and_little_padded():
    lengths = random_lengths(20000)
    batches = make_batches(lengths, 2000, seed=0, epoch=0)
    padded = [len(b) * max(max(lengths[i]) for i in b) for b in batches]
    assert np.mean(padded) > 0.9 * 2000          # batches use most of the budget
    src_frac, tgt_frac = padding_fraction(lengths, batches)
    assert src_frac < 0.1 and tgt_frac < 0.1
    order = np.random.default_rng(0).permutation(len(lengths)).tolist()
    unsorted = [order[i:i + len(b)] for i, b in zip(np.cumsum([0] + [len(b) for b in batches]),
                                                     batches)]
    assert padding_fraction(lengths, unsorted)[1] > 2 * tgt_frac   # sorting is what helps


def test_deterministic_per_seed_and_epoch():
    lengths = random_lengths(2000)
    a = make_batches(lengths, 800, seed=7, epoch=1)
    assert a == make_batches(lengths, 800, seed=7, epoch=1)
    assert a != make_batches(lengths, 800, seed=7, epoch=2)
    assert a != make_batches(lengths, 800, seed=8, epoch=1)


@pytest.mark.slow
def test_same_batches_in_another_process():
    lengths = random_lengths(500)
    code = (f"from annotated.data.batching import make_batches\n"
            f"print(make_batches({lengths!r}, 300, seed=5, epoch=3))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == str(make_batches(lengths, 300, seed=5, epoch=3))


def test_example_over_budget_is_an_error():
    with pytest.raises(ValueError) as error:
        make_batches([(2, 2), (9, 3)], 8, seed=0, epoch=0)
    says(error, "example 1", "9 source", "3 target")


@pytest.mark.parametrize("world_size, accum_steps", [(1, 1), (2, 1), (2, 3), (8, 4)])
def test_shard_covers_every_example_once_and_balances(world_size, accum_steps):
    lengths = random_lengths(4000)
    for batch in make_batches(lengths, 3000, seed=0, epoch=0)[:5]:
        parts = [shard(batch, r, world_size, accum_steps) for r in range(world_size)]
        assert all(len(p) == accum_steps for p in parts)
        micro = [m for p in parts for m in p]
        assert sorted(i for m in micro for i in m) == sorted(batch)
        sizes = [len(m) for m in micro]
        assert max(sizes) - min(sizes) <= 1
        # counts differ by one example at most; snake dealing keeps the rest of the token
        # counts close: the spread stays within two of the batch's longest examples
        tokens = [sum(sum(lengths[i]) for i in m) for m in micro]
        assert max(tokens) - min(tokens) <= 2 * max(sum(lengths[i]) for i in batch)


def test_shard_of_a_small_batch_leaves_empty_micro_batches():
    parts = [shard([10, 11, 12], r, world_size=2, accum_steps=2) for r in range(2)]
    assert parts == [[[10], [12]], [[11], []]]
    with pytest.raises(ValueError, match="rank 2 outside"):
        shard([1, 2], 2, 2)


def test_collate_adds_bos_eos_and_pads():
    pairs = [([5, 6, 7], np.array([8, 9])), ([4], [10, 11, 12, 13])]
    src, tgt_in, tgt_out = collate(pairs, [0, 1])
    assert src.dtype == tgt_in.dtype == torch.long
    assert src.tolist() == [[5, 6, 7, EOS], [4, EOS, PAD, PAD]]
    assert tgt_in.tolist() == [[BOS, 8, 9, PAD, PAD], [BOS, 10, 11, 12, 13]]
    assert tgt_out.tolist() == [[8, 9, EOS, PAD, PAD], [10, 11, 12, 13, EOS]]
    assert [list(x) for x in lengths_of(pairs)] == [[4, 3], [2, 5]]
    assert collate(pairs, [1])[0].tolist() == [[4, EOS]]
    with pytest.raises(ValueError, match="no examples"):
        collate(pairs, [])


def test_padding_fraction_by_hand():
    lengths = [(2, 3), (4, 3), (5, 5)]
    # batch 1: source 2+4 real of 2*4 slots, target 6 of 6; batch 2: no padding
    assert padding_fraction(lengths, [[0, 1], [2]]) == pytest.approx((2 / 13, 0.0))
