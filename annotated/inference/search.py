"""Decoding (§6.1): greedy search and the paper's beam search, batched over sentences, with
incremental (cached) decoding, plus the attention weights of a decoded sentence.

Sequences follow the project's convention: the source is `ids + [EOS]` padded with PAD, the
output starts from [BOS] and ends at EOS. An output Y = (y_1, ..., y_n) is what comes after
BOS, EOS included when the hypothesis ended with one, and |Y| = n counts exactly those tokens.
PAD and BOS are never produced (their log-probabilities are set to -inf; the others are not
renormalised, so a score is the model's own log P(Y|X)).

Beam search as §6.1 describes it: beam size 4, a length penalty with alpha = 0.6, outputs at
most 50 tokens longer than the input, and early termination whenever it is safe. The length
penalty is GNMT's (Wu et al. 2016)

    lp(Y) = ((5 + |Y|) / 6)^alpha,     score(Y) = log P(Y|X) / lp(Y)

and the maximum length counts like tensor2tensor: |Y| <= |X| + max_extra (50), |X| the source
tokens including its EOS. At each step every live hypothesis is extended by every token; the
candidates are ranked by log-probability; a candidate ending in EOS that ranks among the top
`beam_size` is finished and set aside (never extended), and the `beam_size` best candidates
not ending in EOS stay live, so the beam stays full (they are all among the top 2 * beam_size,
since each live hypothesis has one EOS extension). A hypothesis that reaches the maximum
length without EOS is finished as it stands. The result is the finished hypothesis with the
best score. (With beam_size 1 and alpha = 0 this is exactly greedy search; with alpha > 0 it
may differ, because the length penalty can let a longer live hypothesis overtake an EOS.)

Early termination. A sentence stops as soon as no live hypothesis can beat its best finished
one. The bound: let a live hypothesis have log-probability L <= 0 now, and let Y be any
completion, |Y| <= m (the maximum length). Extending only adds log-probabilities <= 0, so
log P(Y) <= L; and lp is increasing in |Y| for alpha > 0, so 1 <= lp(Y) <= lp(m). Hence

    score(Y) = log P(Y) / lp(Y) <= L / lp(Y) <= L / lp(m)

(the first step divides by a positive number, the second uses L <= 0, for which dividing by a
larger positive number gives a larger result). With alpha = 0, lp = 1 and the bound is L
itself. So when the best finished score is >= (best live L) / lp(m), nothing left can win:
stopping there returns exactly what running to the maximum length would. For alpha < 0 there
is no such bound and we refuse it.

Incremental decoding (`cached=True`): each decoder layer keeps the keys and values of earlier
positions (annotated.decoder), so a step feeds only the newest token. The first step runs on
one row per sentence (every beam starts from the same [BOS]), so the encoder-decoder keys and
values are projected from the memory once per sentence and then copied to its beams. When
beams are re-ranked, or finished sentences leave the batch, `reorder_cache` picks the
surviving rows of every cached tensor. `cached=False` recomputes the whole prefix each step;
both give the same tokens and scores, which the tests check for greedy and beam search on a
random float32 model (scores to 1e-5).
"""
import contextlib
from dataclasses import dataclass

import numpy as np
import torch

from annotated.data.tokenizer import BOS, EOS, PAD
from annotated.masks import padding_mask, subsequent_mask


@dataclass
class Hypothesis:
    tokens: list[int]   # y_1 .. y_n after BOS; EOS last unless cut at the maximum length
    log_prob: float     # log P(Y|X)
    score: float        # log P(Y|X) / lp(Y); equal to log_prob for greedy search


def length_penalty(length, alpha: float):
    """lp(Y) = ((5 + |Y|) / 6)^alpha (GNMT, cited in §6.1); `length` a number or a tensor."""
    return ((5.0 + length) / 6.0) ** alpha


def source_batch(sentences: list[list[int]], device=None) -> torch.Tensor:
    """Token-id lists -> (batch, src_len) tensor of `ids + [EOS]`, right-padded with PAD."""
    width = max(len(ids) for ids in sentences) + 1
    rows = [ids + [EOS] + [PAD] * (width - len(ids) - 1) for ids in sentences]
    return torch.tensor(rows, dtype=torch.long, device=device)


def reorder_cache(cache, index: torch.Tensor):
    """Keep rows `index` (dim 0) of every cached tensor, in place; returns the cache.
    Serves beam re-ranking (one row per hypothesis) and dropping finished sentences alike."""
    for layer in cache:                       # one dict per decoder layer (annotated.decoder)
        for part in layer.values():           # "self" and "src" attention, each {"k": .., "v": ..}
            for name, tensor in part.items():  # (rows, h, positions, d_k or d_v)
                part[name] = tensor.index_select(0, index)
    return cache


@contextlib.contextmanager
def _inference(model):
    """Evaluation mode (no dropout) and no autograd for the duration; restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


class _NextToken:
    """log P(next token | prefix, X) for a batch of equally long prefixes, one row each."""

    def __init__(self, model, memory, src_mask, cached: bool):
        self.model, self.memory, self.src_mask = model, memory, src_mask
        self.cache = model.new_cache() if cached else None

    def __call__(self, prefixes):                         # (rows, t), prefixes[:, 0] = BOS
        t = prefixes.size(1)
        if self.cache is None:                            # the whole prefix, causally masked
            h = self.model.decode(self.memory, self.src_mask, prefixes,
                                  subsequent_mask(t, prefixes.device))
        else:                                             # only the newest token, at position t-1
            h = self.model.decode(self.memory, self.src_mask, prefixes[:, -1:], None,
                                  self.cache, start=t - 1)
        log_probs = self.model.generator(h[:, -1]).log_softmax(dim=-1)   # (rows, V)
        log_probs[:, [PAD, BOS]] = float("-inf")
        return log_probs

    def select(self, rows):
        """Continue with these rows only (beam re-ranking, finished sentences leaving)."""
        self.memory = self.memory.index_select(0, rows)
        self.src_mask = self.src_mask.index_select(0, rows)
        if self.cache is not None:
            reorder_cache(self.cache, rows)


def _start(model, src, max_extra, cached):
    """Encode the batch; per-sentence maximum output lengths |X| + max_extra."""
    src_mask = padding_mask(src, PAD)                     # (batch, 1, 1, src_len)
    max_len = (src != PAD).sum(dim=1) + max_extra         # (batch,)
    if model.max_positions() is not None:                 # learned positions end somewhere
        max_len = max_len.clamp(max=model.max_positions())
    memory = model.encode(src, src_mask)                  # (batch, src_len, d_model)
    bos = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=src.device)
    return _NextToken(model, memory, src_mask, cached), max_len, bos


def greedy_decode(model, src, max_extra: int = 50, cached: bool = True) -> list[Hypothesis]:
    """The most likely next token at every step, until EOS or |X| + max_extra tokens.
    src: (batch, src_len) from `source_batch`. Sentences that finish leave the batch."""
    with _inference(model):
        step, max_len, prefixes = _start(model, src, max_extra, cached)
        live = torch.arange(src.size(0), device=src.device)   # original index of each row
        log_p = torch.zeros(src.size(0), dtype=torch.float64, device=src.device)
        results = [None] * src.size(0)
        for t in range(1, int(max_len.max()) + 1):             # t = |Y| after this step
            best, token = step(prefixes).max(dim=-1)           # (rows,)
            log_p = log_p + best.double()
            prefixes = torch.cat([prefixes, token[:, None]], dim=1)
            done = (token == EOS) | (max_len[live] == t)
            for row in done.nonzero()[:, 0].tolist():
                lp = log_p[row].item()
                results[live[row]] = Hypothesis(prefixes[row, 1:].tolist(), lp, lp)
            rows = (~done).nonzero()[:, 0]
            if rows.numel() == 0:
                break
            live, log_p, prefixes = live[rows], log_p[rows], prefixes[rows]
            step.select(rows)
        return results


def beam_search(model, src, beam_size: int = 4, alpha: float = 0.6, max_extra: int = 50,
                cached: bool = True) -> list[Hypothesis]:
    """§6.1 beam search (see the module docstring) for every sentence of a batch at once.
    src: (batch, src_len) from `source_batch`. Returns the best hypothesis of each sentence.
    The paper's translation settings are the defaults; parsing (§6.3) used beam_size=21,
    alpha=0.3, max_extra=300."""
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0 for the early-termination bound, got {alpha}")
    k = beam_size
    with _inference(model):
        step, max_len, prefixes = _start(model, src, max_extra, cached)
        live = torch.arange(src.size(0), device=src.device)    # original index of each sentence
        log_p = torch.zeros(src.size(0), 1, dtype=torch.float64, device=src.device)  # (n, b)
        best_score = torch.full((src.size(0),), float("-inf"), dtype=torch.float64,
                                device=src.device)
        results = [None] * src.size(0)
        for t in range(1, int(max_len.max()) + 1):              # t = |Y| after this step
            n, b = log_p.shape            # live sentences, live hypotheses each (1 first, <= k)
            log_probs = step(prefixes).double()                 # (n * b, V)
            V = log_probs.size(-1)
            # log P of every one-token extension of every live hypothesis, ranked per sentence
            candidates = (log_p[:, :, None] + log_probs.view(n, b, V)).view(n, b * V)
            top, index = candidates.topk(min(2 * k, b * V), dim=1)          # (n, C)
            parent, token = index // V, index % V
            # finished now: EOS among the top k ranks, or anything at the maximum length (all
            # candidates of one step share |Y|, so the best of these is the best-ranked one)
            lp_t = length_penalty(t, alpha)
            at_limit = max_len[live] == t                                   # (n,)
            ends = (token == EOS) & (torch.arange(top.size(1), device=src.device) < k)
            ends |= at_limit[:, None]
            end_scores = top.masked_fill(~ends, float("-inf")) / lp_t      # (n, C)
            end_best, end_at = end_scores.max(dim=1)
            for i in (end_best > best_score[live]).nonzero()[:, 0].tolist():
                j = end_at[i].item()
                row = i * b + parent[i, j].item()
                results[live[i]] = Hypothesis(prefixes[row, 1:].tolist() + [token[i, j].item()],
                                              top[i, j].item(), end_best[i].item())
                best_score[live[i]] = end_best[i]
            # live next step: the k best candidates that do not end in EOS
            b_next = min(k, top.size(1) - b)          # at most b of the C candidates are EOS
            keep, pos = top.masked_fill(token == EOS, float("-inf")).topk(b_next, dim=1)
            bound = keep[:, 0] / length_penalty(max_len[live].double(), alpha)
            going = ~at_limit & (best_score[live] < bound)
            sentences = going.nonzero()[:, 0]
            if sentences.numel() == 0:
                break
            parent, token = parent.gather(1, pos)[sentences], token.gather(1, pos)[sentences]
            rows = (sentences[:, None] * b + parent).view(-1)                # (n' * b_next,)
            prefixes = torch.cat([prefixes[rows], token.reshape(-1, 1)], dim=1)
            live, log_p = live[sentences], keep[sentences]
            step.select(rows)
        return results


def attention_maps(model, src_ids: list[int], out_ids: list[int]) -> dict[str, np.ndarray]:
    """Attention weights of every layer and head for one decoded sentence, for drawing.

    src_ids: source tokens without EOS (it is appended); out_ids: the output, e.g.
    `Hypothesis.tokens`. The decoder is fed [BOS] + out_ids minus its last token, so query row
    i is the position that predicted out_ids[i]. Returns arrays of shape (layers, heads, q, k):
    "encoder" (src, src) self-attention, "decoder" (out, out) masked self-attention and
    "cross" (out, src) encoder-decoder attention; the source axis includes EOS.
    """
    device = next(model.parameters()).device
    src = source_batch([src_ids], device)
    tgt = torch.tensor([[BOS] + out_ids[:-1]], dtype=torch.long, device=device)
    modules = model.attention_modules()

    def stack(attns):                                   # per layer (1, h, q, k) -> (N, h, q, k)
        return np.stack([a.weights[0].double().cpu().numpy() for a in attns])

    with _inference(model):
        for m in modules:
            m.record_weights = True
        try:
            model(src, tgt, padding_mask(src, PAD), subsequent_mask(tgt.size(1), device))
            return {"encoder": stack([layer.self_attn for layer in model.encoder.layers]),
                    "decoder": stack([layer.self_attn for layer in model.decoder.layers]),
                    "cross": stack([layer.src_attn for layer in model.decoder.layers])}
        finally:
            for m in modules:
                m.record_weights, m.weights = False, None
