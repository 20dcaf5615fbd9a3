"""Chapter 2's coding exercises: the causal mask, the padding mask, attention under a mask."""
import torch

from annotated.exercises.core import (ATTENTION, Case, Exercise, Slip, Text, draw, randn,
                                      seeded, tokens)
from reference_numpy import attention as np_attention
from reference_numpy import masks as np_masks


# ---- 2.1 the causal mask ----

def causal_cases() -> list[Case]:
    size = draw(2, 200, seed=2101)
    return [*(Case(Text(f"size {n}", f"长度 {n}"), (n,)) for n in (4, 1, 2, 3, 7, 12)),
            Case(Text(f"a size drawn at random, {size}", f"随机抽取的长度 {size}"), (size,))]


def causal_answer(size):
    return torch.from_numpy(np_masks.subsequent_mask(size))


CAUSAL = Exercise(
    id="2.1", function="causal_mask",
    topic=Text("the causal mask", "因果掩码"),
    cases=causal_cases, answer=causal_answer,
    hint=Text("query i may attend to the keys j with j <= i (§3.2.3), itself included; True "
              "means attend, and the mask broadcasts against scores (batch, h, q_len, k_len).",
              "查询 i 可以关注满足 j <= i 的键 j（§3.2.3），包括它自己；True 表示可以关注；"
              "掩码要能与分数 (batch, h, q_len, k_len) 广播。"),
    slips=(
        Slip(Text("Your mask opens the keys after each query: the future leaks.",
                  "你的掩码让每个查询看到了它之后的键：未来的信息泄漏了。"),
             lambda size: torch.ones(size, size, dtype=torch.bool).triu()[None, None],
             "slip-future-leak"),
        Slip(Text("Your mask is True where a key is blocked: this book's convention is True = "
                  "attend (nn.MultiheadAttention uses the opposite).",
                  "你的掩码在被屏蔽的键处为 True：本书的约定是 True 表示可以关注"
                  "（nn.MultiheadAttention 的约定正相反）。"),
             lambda size: ~torch.ones(size, size, dtype=torch.bool).tril()[None, None],
             "slip-future-leak"),
        Slip(Text("Your mask hides each position from itself: the diagonal must be open, or "
                  "the first query has no key at all.",
                  "你的掩码让每个位置看不到它自己：对角线必须是开放的，否则第一个查询一个键也没有。"),
             lambda size: torch.ones(size, size, dtype=torch.bool).tril(-1)[None, None]),
        Slip(Text("Your mask has no batch and head axes: give it the shape (1, 1, size, size).",
                  "你的掩码缺少批次轴和头轴：它的形状应为 (1, 1, size, size)。"),
             lambda size: torch.ones(size, size, dtype=torch.bool).tril()),
    ))


# ---- 2.2 the padding mask ----

PAD = 0


def padding_cases() -> list[Case]:
    return [
        Case(Text("three sentences, two padded", "三个句子，其中两个有填充"),
             (tokens([[5, 6, 7, 2], [5, 6, 2, 0], [8, 2, 0, 0]]), PAD)),
        Case(Text("a batch of one, no padding", "批次中只有一个句子，没有填充"),
             (tokens([[9, 4, 2]]), PAD)),
        Case(Text("a batch of one, padded", "批次中只有一个句子，有填充"),
             (tokens([[9, 4, 2, 0, 0]]), PAD)),
        Case(Text("an odd length, padding id 1", "奇数长度，填充的编号为 1"),
             (tokens([[4, 5, 6, 7, 2], [4, 2, 1, 1, 1]]), 1)),
        Case(Text("a row that is all padding", "一整行都是填充"),
             (tokens([[4, 5, 2], [0, 0, 0]]), PAD)),
        Case(Text("padding id 3, and real tokens with ids 1 and 2",
                  "填充的编号为 3，还有编号为 1 和 2 的真实词元"),
             (tokens([[1, 5, 2, 3], [4, 2, 3, 3]]), 3)),
        Case(Text("padding id 1, and a real token with id 0",
                  "填充的编号为 1，还有一个编号为 0 的真实词元"),
             (tokens([[0, 5, 2, 1], [4, 0, 2, 1]]), 1)),
        Case(Text("padding before the tokens (a batch padded on the left)",
                  "填充在词元之前（从左边填充的批次）"),
             (tokens([[0, 0, 5, 6, 2], [7, 8, 9, 6, 2]]), PAD)),
        drawn_batch(seed=2201),
    ]


def drawn_batch(seed: int) -> Case:
    """A batch whose size, lengths, token ids and padding id are drawn at random."""
    pad, rows, seq = draw(0, 3, seed), draw(2, 6, seed + 1), draw(2, 12, seed + 2)
    ids = torch.randint(4, 100, (rows, seq), generator=seeded(seed + 3))
    lengths = torch.randint(1, seq + 1, (rows, 1), generator=seeded(seed + 4))
    batch = ids.masked_fill(torch.arange(seq) >= lengths, pad)
    return Case(Text(f"a batch drawn at random, {rows} x {seq}, padding id {pad}",
                     f"随机抽取的批次，{rows} x {seq}，填充的编号为 {pad}"), (batch, pad))


def padding_answer(batch, pad):
    return torch.from_numpy(np_masks.padding_mask(batch.numpy(), pad))


PADDING = Exercise(
    id="2.2", function="key_mask",
    topic=Text("the padding mask", "填充掩码"),
    cases=padding_cases, answer=padding_answer,
    hint=Text("a key may be attended to when it is a real token, not padding; the mask of "
              "(batch, seq) tokens has the shape (batch, 1, 1, seq), one row shared by every "
              "head and every query.",
              "一个键只要是真实词元而不是填充，就可以被关注；(batch, seq) 词元的掩码形状为 "
              "(batch, 1, 1, seq)：所有头、所有查询共用同一行。"),
    slips=(
        Slip(Text("Your mask is True at the padding: this book's convention is True = attend.",
                  "你的掩码在填充处为 True：本书的约定是 True 表示可以关注。"),
             lambda t, pad: (t == pad)[:, None, None, :]),
        Slip(Text("Your mask blocks query rows, not key columns: padding must get no weight as a "
                  "key, so the sequence axis goes last, (batch, 1, 1, seq).",
                  "你的掩码屏蔽的是查询所在的行，而不是键所在的列：填充作为键时不能得到权重，"
                  "所以序列轴应放在最后，即 (batch, 1, 1, seq)。"),
             lambda t, pad: (t != pad)[:, None, :, None]),
        Slip(Text("Your mask keeps the ids above `pad`: a real token may have a smaller id "
                  "(0, say); only the id `pad` itself is padding.",
                  "你的掩码保留的是编号大于 `pad` 的词元：真实词元的编号也可能更小（比如 0）；"
                  "只有编号正好等于 `pad` 的才是填充。"),
             lambda t, pad: (t > pad)[:, None, None, :]),
        Slip(Text("Your mask also blocks the id 0: only the id `pad` itself is padding, and a "
                  "real token may have the id 0.",
                  "你的掩码把编号 0 也屏蔽了：只有编号正好等于 `pad` 的才是填充，真实词元的编号也可能是 0。"),
             lambda t, pad: ((t != pad) & (t != 0))[:, None, None, :]),
        Slip(Text("Your mask compares the tokens with 0, not with `pad`.",
                  "你的掩码把词元与 0 比较，而不是与 `pad` 比较。"),
             lambda t, pad: (t != 0)[:, None, None, :]),
        Slip(Text("Your mask takes padding to run to the end of each row, but a batch may be "
                  "padded on the left too: padding is wherever the id `pad` stands.",
                  "你的掩码假定填充一直延续到每行末尾，但批次也可能从左边填充："
                  "编号 `pad` 出现在哪里，哪里就是填充。"),
             lambda t, pad: (torch.cumsum((t == pad).int(), 1) == 0)[:, None, None, :]),
        Slip(Text("Your mask has no head and query axes: give it the shape (batch, 1, 1, seq).",
                  "你的掩码缺少头轴和查询轴：它的形状应为 (batch, 1, 1, seq)。"),
             lambda t, pad: t != pad),
    ))


# ---- 2.3 attention under a mask ----

def masked_cases() -> list[Case]:
    causal = torch.ones(5, 5, dtype=torch.bool).tril()[None, None]
    padded = torch.tensor([True, True, True, False, False])[None, None, None]
    q, k, v = randn(2, 2, 5, 4, seed=1), randn(2, 2, 5, 4, seed=2), randn(2, 2, 5, 3, seed=3)
    # Open scores of about -12,000 and -2e10, below the common fills -1e4 and -1e9, and a
    # blocked score of 1e12, far above what adding those numbers takes away: only -inf keeps
    # the blocked keys at zero weight.
    one_q = torch.ones(1, 1, 1, 4, dtype=torch.float64)
    near_k = -6000 + randn(1, 1, 5, 4, seed=4)                     # scores q.k/2 ~ -12,000
    far_k = torch.full((1, 1, 5, 4), -1e10, dtype=torch.float64)   # scores -2e10
    loud_k = randn(1, 1, 5, 4, seed=5).index_fill(2, torch.tensor([3]), 5e11)    # blocked: 1e12
    return [
        Case(Text("the causal mask, float64", "因果掩码，float64"), (q, k, v, causal)),
        Case(Text("a padding mask, float32", "填充掩码，float32"),
             (q.float(), k.float(), v.float(), padded)),
        Case(Text("two sentences padded differently: a mask of shape (2, 1, 1, 5)",
                  "两个句子的填充不同：掩码形状为 (2, 1, 1, 5)"),
             (q, k, v, torch.tensor([[True] * 5, [True, True, False, False, False]])
              [:, None, None])),
        Case(Text("a batch of one, odd length 3", "批次中只有一个句子，奇数长度 3"),
             (q[:1, :, :3], k[:1, :, :3], v[:1, :, :3], causal[..., :3, :3])),
        Case(Text("open scores near -12,000", "开放的分数约为 -12,000"),
             (one_q, near_k, v[:1, :1], padded)),
        Case(Text("open scores far below -1e9", "开放的分数远低于 -1e9"),
             (one_q, far_k, v[:1, :1], padded)),
        Case(Text("a blocked key scoring 1e12, far above the open ones",
                  "一个被屏蔽的键的分数为 1e12，远高于开放的分数"),
             (one_q, loud_k, v[:1, :1], padded)),
        Case(Text("float16", "float16"), (q.half(), k.half(), v.half(), causal)),
        Case(Text("float16, the one open key scoring about -65,500, near the lowest float16 "
                  "holds", "float16，唯一开放的键分数约为 -65,500，接近 float16 能表示的最小数"),
             (one_q[..., :1].half(), torch.tensor([-65500.0, 100, 200, 3, 7])[None, None, :, None]
              .half(), v[:1, :1].half(), torch.tensor([True, False, False, False, False])
              [None, None, None])),
    ]


def masked_answer(q, k, v, mask):
    dtype = q.dtype
    out, cache = np_attention.attention_forward(
        q.double().numpy(), k.double().numpy(), v.double().numpy(), mask.numpy())
    return torch.from_numpy(out).to(dtype), torch.from_numpy(cache[0]).to(dtype)


def filled(fill, scale=lambda d_k: d_k ** 0.5, inverted: bool = False):
    """Attention whose blocked scores are filled with `fill` (a slip unless -inf; a function of
    the scores' dtype for the lowest number it holds), its scores divided by scale(d_k) (a slip
    unless sqrt(d_k))."""
    def attend(q, k, v, mask):
        scores = q @ k.transpose(-2, -1) / scale(q.size(-1))
        value = fill(scores.dtype) if callable(fill) else fill
        weights = scores.masked_fill(mask if inverted else ~mask, value).softmax(-1)
        return weights @ v, weights
    return attend


def added(fill: float):
    """Attention with `fill` added to the blocked scores (an additive mask), not -inf put there."""
    def attend(q, k, v, mask):
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
        weights = (scores + (~mask).to(scores.dtype) * fill).softmax(-1)
        return weights @ v, weights
    return attend


def shifted_by_every_score(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    weights = (scores - scores.amax(-1, keepdim=True)).exp() * mask
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


def first_sentence_mask(q, k, v, mask):
    """Attention with the first sentence's mask (and first head's) used for every one."""
    return filled(float("-inf"))(q, k, v, mask[:1, :1])


def masked_after_softmax(q, k, v, mask):
    weights = (q @ k.transpose(-2, -1) / q.size(-1) ** 0.5).softmax(-1) * mask
    return weights @ v, weights


FINITE = Text("Your code fills the blocked scores with a finite number, or adds one to them (such "
              "as -1e9, -1e4 or the lowest number the dtype holds): a blocked key keeps some "
              "weight whenever the open scores come near it, or it scores far above them, and "
              "in float16 the number may not even be stored. Fill with -inf.",
              "你的代码用有限数（例如 -1e9、-1e4 或该数据类型能表示的最小数）填充被屏蔽的分数，或把这样的数加到分数上："
              "只要开放的分数接近它，或被屏蔽的键分数远高于开放的键，被屏蔽的键就会留下一些权重；"
              "在 float16 中这个数甚至可能无法表示。请用 -inf 填充。")


MASKED = Exercise(
    id="2.3", function="masked_attention",
    topic=Text("attention under a mask", "带掩码的注意力"),
    cases=masked_cases, answer=masked_answer, forbidden=ATTENTION,
    hint=Text("blocked scores must get exactly zero weight after the softmax, however large or "
              "small the open scores are (§3.2.3); mask the scores, then take the softmax.",
              "无论开放的分数多大或多小，被屏蔽的分数在 softmax 之后都必须恰好得到零权重"
              "（§3.2.3）；先对分数加掩码，再取 softmax。"),
    slips=(
        Slip(Text("Your code uses one sentence's mask for every sentence: the mask broadcasts "
                  "against the scores (batch, h, q_len, k_len), so each sentence keeps its own "
                  "padding.",
                  "你的代码把一个句子的掩码用在了每个句子上：掩码要与分数 (batch, h, q_len, k_len) "
                  "广播，每个句子保留自己的填充。"),
             first_sentence_mask),
        Slip(FINITE, filled(-1e9), "slip-finite-mask"),
        Slip(FINITE, filled(-1e4), "slip-finite-mask"),
        Slip(FINITE, filled(lambda dtype: torch.finfo(dtype).min), "slip-finite-mask"),
        Slip(FINITE, added(-1e9), "slip-finite-mask"),
        Slip(FINITE, added(-1e4), "slip-finite-mask"),
        Slip(Text("Your code fills the keys the mask opens: in this book True means attend, so "
                  "fill where the mask is False (~mask).",
                  "你的代码填充的是掩码开放的键：本书中 True 表示可以关注，所以应在掩码为 False "
                  "的地方（`~mask`）填充。"),
             filled(float("-inf"), inverted=True), "slip-future-leak"),
        Slip(Text("Your code subtracts the row's largest score, blocked ones included: when a "
                  "blocked key scores far above the open ones, every open exp() becomes 0 and "
                  "the row is 0 / 0 = NaN. Mask the scores first, then take the softmax.",
                  "你的代码减去的是该行最大的分数，其中包括被屏蔽的分数：当被屏蔽的键的分数远高于开放的分数时，"
                  "所有开放位置的 exp() 都变成 0，这一行就成了 0 / 0 = NaN。应先对分数加掩码，再取 softmax。"),
             shifted_by_every_score),
        Slip(Text("Your code zeroes the weights after the softmax: the rows no longer sum to 1.",
                  "你的代码在 softmax 之后才把权重置零：每行的和不再是 1。"),
             masked_after_softmax),
        Slip(Text("Your scores are not divided by sqrt(d_k).",
                  "你的分数没有除以 sqrt(d_k)。"),
             filled(float("-inf"), scale=lambda d_k: 1.0)),
        Slip(Text("Your scores are divided by d_k, not by sqrt(d_k) (§3.2.1).",
                  "你的分数除以的是 d_k，而不是 sqrt(d_k)（§3.2.1）。"),
             filled(float("-inf"), scale=lambda d_k: d_k)),
    ))


EXERCISES = [CAUSAL, PADDING, MASKED]
