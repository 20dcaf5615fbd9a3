"""Batches by token count (§5.1). The paper groups sentence pairs of similar length and sizes
each batch by tokens, not sentences: about 25,000 source and 25,000 target tokens per step.

A batch is a list of example indices. Its cost is what the model computes on, padding included:
a batch of b pairs whose longest source has S tokens and longest target T tokens fills a
(b, S) and a (b, T) tensor, so we require b * S <= max_tokens and b * T <= max_tokens. Sorting
the pairs by length before cutting them into batches makes neighbours nearly equally long, so
little of each tensor is padding (`padding_fraction` measures it; benchmarks/padding.py prints it
for Multi30k).

Lengths count what the model sees: the source is `ids + [EOS]`, the target input `[BOS] + ids`
and the target output `ids + [EOS]`, so both sides have len(ids) + 1 positions (`lengths_of`).

Under data parallelism every rank builds the same global batches from the same (seed, epoch),
then `shard` gives each rank its own part; with gradient accumulation each rank's part is
further cut into micro-batches. The global batch, not the micro-batch, is the paper's batch:
25,000 + 25,000 tokens per step on 8 GPUs is max_tokens=25_000 with world_size=8, or on one
device the same global batch split into accum_steps=8 micro-batches.
"""
import numpy as np
import torch

from annotated.base.errors import DataError
from annotated.data.tokenizer import BOS, EOS, PAD


def lengths_of(pairs) -> list[tuple[int, int]]:
    """(source, target) positions of each pair of token-id sequences: one more than the ids
    on each side, for EOS (source and target output) or BOS (target input)."""
    return [(len(src) + 1, len(tgt) + 1) for src, tgt in pairs]


def make_batches(lengths, max_tokens: int, seed: int, epoch: int) -> list[list[int]]:
    """Cut examples into batches of at most max_tokens padded tokens per side, in shuffled order.

    lengths: (src_len, tgt_len) per example, BOS/EOS included. The result depends only on
    (lengths, max_tokens, seed, epoch), so every process of a run builds the same batches, and a
    resumed run rebuilds the epoch it stopped in.
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1, 2)
    too_long = np.flatnonzero(lengths.max(axis=1) > max_tokens)
    if too_long.size:
        i = int(too_long[0])
        raise DataError(f"example {i} has {lengths[i, 0]} source and {lengths[i, 1]} target "
                         f"tokens, more than max_tokens={max_tokens} on its own; raise max_tokens "
                         f"or lower max_sentence_len")
    rng = np.random.default_rng([seed, epoch])
    # Shuffle first so that pairs of equal length meet different neighbours every epoch, then
    # sort stably by the longer side (the one the budget binds on), then by source and target
    # length: a batch holds one stretch of this order. (Sorting by the source alone would leave
    # the targets of a batch unequal, and pad them more.)
    shuffled = rng.permutation(len(lengths))
    src, tgt = lengths[shuffled, 0], lengths[shuffled, 1]
    longer = np.maximum(src, tgt)
    order = shuffled[np.lexsort((tgt, src, longer))]

    batches, current = [], []
    for i, n in zip(order.tolist(), np.sort(longer).tolist()):
        # the order rises in the longer side, so n is the longest side of the batch so far
        if current and (len(current) + 1) * n > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return [batches[j] for j in rng.permutation(len(batches))]


def shard(batch: list[int], rank: int, world_size: int, accum_steps: int = 1) -> list[list[int]]:
    """This rank's accum_steps micro-batches of one global batch.

    The batch (sorted by length) is dealt like cards into world_size * accum_steps pieces, in
    snake order 0, 1, ..., P-1, P-1, ..., 1, 0, 0, 1, ... so that over every two rounds each
    piece gets one shorter and one longer example: the pieces' counts are within one of each
    other and their token counts differ by little more than one example (not exactly equal:
    the budget, so the sort, is on the longer side of each pair, while tokens count both
    sides). Piece k goes to rank k % world_size
    as its micro-batch k // world_size, so every example lands in exactly one micro-batch.

    A batch with fewer examples than pieces leaves the last pieces empty (`[]`). A rank that gets
    an empty micro-batch has nothing to compute for it; under DistributedDataParallel it must
    still join that step's gradient all-reduce (e.g. backward of a zero loss over its
    parameters), and the loss is normalised by the global token count, so the update is the same.
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside 0..{world_size - 1}")
    if accum_steps < 1:
        raise ValueError(f"accum_steps must be >= 1, got {accum_steps}")
    pieces = world_size * accum_steps
    dealt = [[] for _ in range(pieces)]
    for j, example in enumerate(batch):
        round_, k = divmod(j, pieces)
        dealt[k if round_ % 2 == 0 else pieces - 1 - k].append(example)
    return [dealt[a * world_size + rank] for a in range(accum_steps)]


def collate(pairs, indices, pad: int = PAD):
    """The tensors of one (micro-)batch, right-padded with `pad`:

        src     (batch, S)  ids + [EOS]     what the encoder reads
        tgt_in  (batch, T)  [BOS] + ids     what the decoder reads (outputs shifted right, §3.1)
        tgt_out (batch, T)  ids + [EOS]     what it must predict at each position
    """
    if len(indices) == 0:
        raise ValueError("collate got no examples; shard() returns empty micro-batches when a "
                         "global batch has fewer examples than shards: skip those")
    chosen = [pairs[i] for i in indices]
    sources, targets = [s for s, _ in chosen], [t for _, t in chosen]
    return (padded(sources, pad, last=EOS), padded(targets, pad, first=BOS),
            padded(targets, pad, last=EOS))


def padded(rows, pad: int, *, first: int | None = None, last: int | None = None):
    """Token-id rows, each with `first` put before it or `last` after it, right-padded into one
    (len(rows), longest + 1) tensor. One numpy scatter, not a loop over rows: a base-model batch
    holds hundreds of sentences, and a row at a time took longer than a GPU's whole step."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    out = np.full((len(rows), int(lengths.max()) + 1), pad, dtype=np.int64)
    total = int(lengths.sum())
    if total:
        row = np.repeat(np.arange(len(rows)), lengths)                 # the row of each id
        col = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[row, col + (first is not None)] = np.concatenate(rows)
    if first is not None:
        out[:, 0] = first
    else:
        out[np.arange(len(rows)), lengths] = last
    return torch.from_numpy(out)


def padding_fraction(lengths, batches) -> tuple[float, float]:
    """Share of the (source, target) tensor positions that are padding, over all batches."""
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1, 2)
    real, padded = np.zeros(2), np.zeros(2)
    for batch in batches:
        if len(batch) == 0:
            continue
        chosen = lengths[batch]                          # (batch, 2)
        real += chosen.sum(axis=0)
        padded += len(batch) * chosen.max(axis=0)
    src_frac, tgt_frac = 1.0 - real / np.maximum(padded, 1)
    return float(src_frac), float(tgt_frac)
