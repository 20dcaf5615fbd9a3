"""Chapter 8's coding exercises: BLEU's brevity penalty, corpus BLEU from its counts, perplexity.

The right answers come from sacreBLEU's own computation (`BLEU.compute_bleu`, which
annotated.inference.bleu scores with) and, for perplexity, from NumPy in float64.
"""
import math

import numpy as np
import torch
from sacrebleu.metrics import BLEU

from annotated.exercises.core import (Case, Exercise, Slip, Text, as_array, compare, draw,
                                      kind, seeded)
from annotated.exercises.messages import MESSAGES


def one_number(expected, got, lang: str) -> str | None:
    """compare() for an answer that is one real number, in whatever holds it: a Python int or
    float, a NumPy number, a 0-d tensor; right to the tolerance of the expected value's dtype:
    float64 for BLEU and its penalty, computed from whole numbers (exact), float32 for
    perplexity, which its exercise lets a learner add up in float32 (number)."""
    value = as_array(got)
    if value is not None and value.ndim == 0 and kind(value.dtype) in ("int", "float"):
        got = value.astype(np.float64)
    problem = compare(expected, got, lang)
    want = as_array(expected)
    if problem and value is not None and value.dtype == np.float16 and want is not None and \
            abs(float(got) - float(want)) <= HALF_STEP * abs(float(want)):
        problem += MESSAGES[lang]["half_rounding"].format(
            off=f"{abs(float(got) - float(want)):.1g}")
    return problem


# float16 keeps 11 significant bits: rounding to it moves a number by up to 2^-11 of itself
HALF_STEP = 2.0 ** -11


def number(x) -> np.float32:
    return np.float32(x)


def exact(x) -> np.float64:
    return np.float64(x)


# ---- 8.1 the brevity penalty ----

def penalty_cases() -> list[Case]:
    r = draw(1, 30_000, seed=8101)
    c = draw(max(1, r * 4 // 5), r * 5 // 4, seed=8102)        # within a quarter of r
    return [
        Case(Text("an output shorter than the reference, c = 18, r = 20",
                  "输出比参考译文短，c = 18，r = 20"), (18, 20)),
        Case(Text("an output longer than the reference, c = 25, r = 20",
                  "输出比参考译文长，c = 25，r = 20"), (25, 20)),
        Case(Text("equal lengths, c = r = 20", "长度相等，c = r = 20"), (20, 20)),
        Case(Text("a test set 6 words short, c = 12,100, r = 12,106",
                  "整个测试集短了 6 个词，c = 12,100，r = 12,106"), (12_100, 12_106)),
        Case(Text("one word against thirty, c = 1, r = 30", "一个词对三十个词，c = 1，r = 30"),
             (1, 30)),
        Case(Text("an empty output, c = 0, r = 12", "空输出，c = 0，r = 12"), (0, 12)),
        Case(Text("an empty reference, c = 5, r = 0", "空的参考译文，c = 5，r = 0"), (5, 0)),
        Case(Text("an empty output and an empty reference, c = 0, r = 0",
                  "输出和参考译文都为空，c = 0，r = 0"), (0, 0)),
        Case(Text(f"drawn at random, c = {c:,}, r = {r:,}", f"随机抽取：c = {c:,}，r = {r:,}"),
             (c, r)),
    ]


def penalty_answer(c, r):
    # sacreBLEU computes the penalty inside compute_bleu, from the lengths alone: any counts do
    return exact(BLEU.compute_bleu([1] * 4, [1] * 4, c, r).bp)


UPSIDE_DOWN = Text("Your ratio is upside down: the penalty is e^(1 - r/c), reference length over "
                   "output length, so a short output gets a factor below 1.",
                   "你的比值颠倒了：惩罚是 e^(1 - r/c)，即参考译文长度除以输出长度，"
                   "这样短的输出得到的因子才小于 1。")

PENALTY = Exercise(
    id="8.1", function="brevity_penalty",
    topic=Text("BLEU's brevity penalty", "BLEU 的简短惩罚"),
    cases=penalty_cases, answer=penalty_answer,
    compare=one_number, forbidden=("sacrebleu.",),       # its answer's own source
    hint=Text("BLEU's n-gram precisions already punish words that are not in the reference; "
              "the penalty punishes only an output shorter than the reference, c < r, and is 1 "
              "otherwise. It is min(1, e^(1 - r/c)); for c = 0, take its limit as c shrinks to 0.",
              "BLEU 的 n 元组精确率已经惩罚了参考译文中没有的词；简短惩罚只惩罚比参考译文短的输出，"
              "即 c < r，其余情况为 1。它等于 min(1, e^(1 - r/c))；c = 0 时，取 c 趋于 0 时它的极限。"),
    slips=(
        Slip(Text("Your code divides by c = 0 for an empty output: such an output gets a "
                  "penalty of 0, as in sacreBLEU.",
                  "输出为空时，你的代码除以了 c = 0：这样的输出的惩罚应为 0，与 sacreBLEU 一致。"),
             lambda c, r: exact(1.0) if c >= r else exact(math.exp(1 - r / c))),
        Slip(Text("Your penalty is 0 for every empty output: an empty output of an empty "
                  "reference is not shorter than it, and only c < r is penalised.",
                  "你的惩罚对每个空输出都是 0：参考译文也为空时，输出并不比它短，而只有 c < r 才受惩罚。"),
             lambda c, r: exact(0.0) if c == 0 else exact(min(1.0, math.exp(1 - r / c)))),
        Slip(UPSIDE_DOWN, lambda c, r: exact(math.exp(1 - c / r)) if c < r else exact(1.0)),
        Slip(UPSIDE_DOWN, lambda c, r: exact(min(1.0, math.exp(1 - c / r)))),
        Slip(Text("Your penalty is e^(1 - r/c) whatever the lengths: for an output longer than "
                  "the reference it exceeds 1 and raises the score. Take min(1, ...): only "
                  "c < r is penalised.",
                  "无论长度如何，你的惩罚都是 e^(1 - r/c)：输出比参考译文长时它大于 1，反而抬高了分数。"
                  "要取 min(1, ...)：只有 c < r 才受惩罚。"),
             lambda c, r: exact(math.exp(1 - r / c))),
        Slip(Text("Your penalty also punishes an output longer than the reference: BLEU leaves "
                  "that to the precisions, whose denominators grow with every extra word.",
                  "你的惩罚也惩罚了比参考译文长的输出：BLEU 把这件事交给精确率，"
                  "多出的每个词都会增大精确率的分母。"),
             lambda c, r: exact(math.exp(1 - r / c) if c < r else math.exp(1 - c / r))),
    ))


# ---- 8.2 corpus BLEU from its counts ----

def bleu_cases() -> list[Case]:
    return [
        Case(Text("a test set, output 3% shorter than the references",
                  "一个测试集，输出比参考译文短 3%"),
             ([7_640, 4_980, 3_210, 2_080], [11_740, 10_740, 9_740, 8_740], 11_740, 12_106)),
        Case(Text("an output longer than the references", "输出比参考译文长"),
             ([700, 380, 200, 100], [1_100, 1_000, 900, 800], 1_100, 1_000)),
        Case(Text("a perfect output", "完美的输出"),
             ([12, 11, 10, 9], [12, 11, 10, 9], 12, 12)),
        Case(Text("one sentence, no 4-gram matched", "一个句子，没有一个 4 元组匹配"),
             ([8, 4, 1, 0], [10, 9, 8, 7], 10, 11)),
        Case(Text("a three-word output: no 4-gram at all", "三个词的输出：根本没有 4 元组"),
             ([3, 2, 1, 0], [3, 2, 1, 0], 3, 3)),
        Case(Text("an empty output", "空输出"), ([0, 0, 0, 0], [0, 0, 0, 0], 0, 9)),
        drawn_counts(seed=8201),
    ]


def drawn_counts(seed: int) -> Case:
    """A test set's statistics drawn at random: `sentences` sentences of c words in all, so
    c - (n - 1) * sentences n-grams of each order n, each order matching at most as many
    n-grams as the order below it."""
    sentences = draw(1, 500, seed)
    c = draw(4 * sentences, 30 * sentences, seed + 1)
    totals = [c - n * sentences for n in range(4)]
    matches = [draw(1, totals[0], seed + 2)]
    for n in range(1, 4):
        matches.append(draw(0, min(matches[-1], totals[n]), seed + 2 + n))
    r = draw(max(1, c * 4 // 5), c * 5 // 4, seed + 6)
    return Case(Text(f"drawn at random, {sentences} sentences, c = {c:,}, r = {r:,}",
                     f"随机抽取：{sentences} 个句子，c = {c:,}，r = {r:,}"),
                (matches, totals, c, r))


def bleu_answer(matches, totals, c, r):
    # sacreBLEU's corpus score from the same statistics, unsmoothed like the paper's script
    # (annotated.inference.bleu.paper_bleu): an order without a match makes BLEU 0
    return exact(BLEU.compute_bleu(list(matches), list(totals), c, r,
                                    smooth_method="none").score)


def shares(matches, totals) -> list[float]:
    """The n-gram precisions, 0 for an order with no n-gram at all."""
    return [m / t if t else 0.0 for m, t in zip(matches, totals)]


def geometric(p) -> float:
    return 0.0 if min(p) == 0 else math.exp(sum(math.log(x) for x in p) / len(p))


def penalty(c, r) -> float:
    return 0.0 if c == 0 else min(1.0, math.exp(1 - r / c))


def bleu_with(mean=geometric, bp=penalty, per=shares, points=100.0):
    """BLEU computed with one of its parts swapped for a slip's version."""
    return lambda matches, totals, c, r: exact(bp(c, r) * mean(per(matches, totals)) * points)


def over_output_length(matches, totals):
    c = totals[0]
    return [m / c if c else 0.0 for m in matches]


def logs_of_zero(matches, totals, c, r):
    return exact(penalty(c, r) * math.exp(sum(math.log(m / t) for m, t in zip(matches, totals))
                                           / 4) * 100)


def zero_over_zero(matches, totals, c, r):
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.asarray(matches, dtype=np.float64) / np.asarray(totals, dtype=np.float64)
        return exact(penalty(c, r) * np.exp(np.log(p).mean()) * 100)


BLEU_SCORE = Exercise(
    id="8.2", function="bleu_from_counts",
    topic=Text("corpus BLEU from its counts", "由计数求语料级 BLEU"),
    cases=bleu_cases, answer=bleu_answer,
    compare=one_number, forbidden=("sacrebleu.",),
    hint=Text("BLEU multiplies the brevity penalty by the geometric mean of the four precisions "
              "p_n = matches[n] / totals[n], exp((1/4) sum log p_n), and reports it in points "
              "(0 to 100). Without smoothing, one order with no match (or no n-gram at all) "
              "makes BLEU 0.",
              "BLEU 是简短惩罚乘以四个精确率 p_n = matches[n] / totals[n] 的几何平均 "
              "exp((1/4) sum log p_n)，以分数（0 到 100）报告。不做平滑时，只要有一阶没有匹配"
              "（或根本没有 n 元组），BLEU 就是 0。"),
    slips=(
        Slip(Text("Your code takes the arithmetic mean of the precisions: BLEU takes their "
                  "geometric mean, so one poor order pulls the score down.",
                  "你的代码对精确率取了算术平均：BLEU 取的是几何平均，所以只要有一阶很差，分数就会被拉低。"),
             bleu_with(mean=lambda p: sum(p) / len(p))),
        Slip(Text("Your score has no brevity penalty: a short output keeps its high precisions.",
                  "你的分数没有简短惩罚：短的输出保住了它的高精确率。"),
             bleu_with(bp=lambda c, r: 1.0)),
        Slip(Text("Your brevity penalty is upside down: it is e^(1 - r/c) for c < r.",
                  "你的简短惩罚颠倒了：当 c < r 时它等于 e^(1 - r/c)。"),
             bleu_with(bp=lambda c, r: math.exp(1 - c / r) if c < r else 1.0)),
        Slip(Text("Your brevity penalty exceeds 1 for a long output: take min(1, e^(1 - r/c)).",
                  "输出较长时，你的简短惩罚大于 1：要取 min(1, e^(1 - r/c))。"),
             bleu_with(bp=lambda c, r: math.exp(1 - r / c) if c else 0.0)),
        Slip(Text("Your score is a fraction: report BLEU in points, 100 times it, as sacreBLEU "
                  "does.",
                  "你的分数是小数：BLEU 要像 sacreBLEU 那样以分数报告，即乘以 100。"),
             bleu_with(points=1.0)),
        Slip(Text("Your precisions divide every order's matches by the output's length c: "
                  "divide by that order's own count of n-grams, totals[n].",
                  "你的精确率把每一阶的匹配数都除以输出长度 c：应除以这一阶自己的 n 元组总数 totals[n]。"),
             bleu_with(per=over_output_length)),
        Slip(Text("Your code takes the log of a precision of 0: without smoothing an order with "
                  "no match makes BLEU 0, before any log is taken.",
                  "你的代码对值为 0 的精确率取了对数：不做平滑时，只要有一阶没有匹配，BLEU 就是 0，"
                  "用不着取对数。"),
             logs_of_zero),
        Slip(Text("Your code divides 0 by 0 for an order with no n-gram at all (an output "
                  "shorter than 4 words): its precision counts as 0, and BLEU is 0.",
                  "对于根本没有 n 元组的一阶（输出不到 4 个词），你的代码算了 0 除以 0："
                  "这一阶的精确率应记为 0，BLEU 为 0。"),
             zero_over_zero),
    ))


# ---- 8.3 perplexity over a corpus ----

def log_probs(lengths: list[int], seq: int, seed: int, dtype=torch.float64):
    """(batch, seq) log-probabilities of reference tokens and the (batch, seq) mask of the real
    ones; padding positions hold log-probabilities too, which must be left out."""
    g = seeded(seed)
    logits = torch.randn(len(lengths), seq, 50, generator=g, dtype=torch.float64)
    target = torch.randint(0, 50, (len(lengths), seq), generator=g)
    logits.scatter_add_(-1, target[..., None], torch.full((len(lengths), seq, 1), 2.0,
                                                          dtype=torch.float64))  # a fair model
    lp = logits.log_softmax(-1).gather(-1, target[..., None]).squeeze(-1)      # (batch, seq)
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]         # (batch, seq)
    return lp.to(dtype), mask


def perplexity_cases() -> list[Case]:
    padded, with_inf = log_probs([9, 4, 1], 9, seed=1), log_probs([6, 2, 5], 6, seed=4)
    long_lp, long_mask = log_probs([4_000] * 8, 4_000, seed=6)
    return [
        Case(Text("three sentences of 9, 4 and 1 tokens, float64",
                  "三个句子，分别有 9、4、1 个词元，float64"), padded),
        Case(Text("a batch of one, no padding", "批次中只有一个句子，没有填充"),
             log_probs([7], 7, seed=2)),
        Case(Text("a row that is all padding, float32", "一整行都是填充，float32"),
             tuple(x.float() if x.is_floating_point() else x for x in log_probs([5, 0, 3], 5, 3))),
        Case(Text("padding positions hold -inf", "填充位置上的值是 -inf"),
             (with_inf[0].masked_fill(~with_inf[1], float("-inf")).float(), with_inf[1])),
        Case(Text("float64, 2,000 tokens: the product of their 1/p passes float64's largest "
                  "number", "float64，2,000 个词元：它们的 1/p 之积超过 float64 能表示的最大数"),
             log_probs([500] * 4, 500, seed=7)),
        Case(Text("float16, 32,000 tokens: the sum of -log p passes 65,504",
                  "float16，32,000 个词元：-log p 之和超过 65,504"), (long_lp.half(), long_mask)),
    ]


def perplexity_answer(log_probs, mask):
    lp, real = log_probs.double().numpy(), mask.numpy()
    return number(np.exp(-lp[real].sum() / real.sum()))


def in_dtype(fn):
    """A slip computed in the dtype of the log-probabilities, as the learner's code would."""
    return lambda lp, mask: number(fn(lp, mask).item())


def mean_per_sentence(lp, mask):
    real = torch.where(mask, lp, torch.zeros((), dtype=lp.dtype))
    return (-real.sum(-1) / mask.sum(-1)).exp().mean()


PERPLEXITY = Exercise(
    id="8.3", function="corpus_perplexity",
    topic=Text("perplexity over a corpus", "语料上的困惑度"),
    cases=perplexity_cases, answer=perplexity_answer,
    compare=one_number,
    hint=Text("perplexity is exp(-(1/T) sum_t log p(y_t)): the mean of -log p over the T real "
              "tokens of the whole corpus, then one exp. Leave padding out by selecting the "
              "real tokens, and add up in float32 or float64.",
              "困惑度是 exp(-(1/T) sum_t log p(y_t))：先对整个语料的 T 个真实词元求 -log p 的平均，"
              "再取一次 exp。通过挑出真实词元来排除填充，并用 float32 或 float64 求和。"),
    slips=(
        Slip(Text("Your code adds up in float16: past 65,504 the sum is inf. Convert the "
                  "log-probabilities to float32 or float64 before adding them up.",
                  "你的代码用 float16 求和：超过 65,504 后，和就成了 inf。"
                  "求和之前先把对数概率转成 float32 或 float64。"),
             in_dtype(lambda lp, mask: (-lp[mask].sum() / mask.sum()).exp())),
        Slip(Text("Your code multiplies the 1/p of the tokens, then takes the T-th root: the "
                  "product passes the largest float (inf) long before the root is taken. Add up "
                  "-log p instead (the log of a product is the sum of the logs), then take one "
                  "exp of the mean.",
                  "你的代码把各词元的 1/p 连乘，再开 T 次方根：还没开根，乘积就已超过最大的浮点数"
                  "（inf）。应改为把 -log p 相加（乘积的对数就是对数之和），再对平均值取一次 exp。"),
             in_dtype(lambda lp, mask: (-lp[mask]).exp().prod() ** (1 / mask.sum()))),
        Slip(Text("Your code takes exp of the sum, not of the mean: divide by the number of real "
                  "tokens before the exp.",
                  "你的代码对总和取了 exp，而不是对平均值：在取 exp 之前要除以真实词元的个数。"),
             in_dtype(lambda lp, mask: (-lp[mask].sum()).exp())),
        Slip(Text("Your code averages exp(-log p) = 1/p over the tokens: perplexity is exp of "
                  "the mean of -log p, one exp at the end.",
                  "你的代码对各词元的 exp(-log p) = 1/p 求了平均：困惑度是 -log p 平均值的 exp，"
                  "最后只取一次 exp。"),
             in_dtype(lambda lp, mask: (-lp[mask]).exp().mean())),
        Slip(Text("Your code averages the perplexities of the sentences: a token of a short "
                  "sentence weighs more than one of a long sentence. Pool the tokens of the "
                  "corpus, then take one mean.",
                  "你的代码对各句子的困惑度求了平均：短句里的一个词元比长句里的一个词元分量更重。"
                  "应把整个语料的词元合在一起，只求一次平均。"),
             in_dtype(mean_per_sentence), "slip-mean-of-means"),
        Slip(Text("Your code counts the padding positions: leave them out of both the sum and "
                  "the count.",
                  "你的代码把填充位置也算了进去：求和与计数都要排除它们。"),
             in_dtype(lambda lp, mask: (-lp.mean()).exp())),
        Slip(Text("Your code divides by every position, padding included: T is the number of "
                  "real tokens.",
                  "你的代码除以了所有位置的个数，填充也算在内：T 是真实词元的个数。"),
             in_dtype(lambda lp, mask: (-lp[mask].sum() / mask.numel()).exp())),
        Slip(Text("Your code leaves out the minus sign: log p is negative, so exp of its mean is "
                  "below 1; perplexity is exp of the mean of -log p.",
                  "你的代码漏了负号：log p 是负数，它平均值的 exp 小于 1；困惑度是 -log p 平均值的 exp。"),
             in_dtype(lambda lp, mask: lp[mask].mean().exp())),
        Slip(Text("Your code uses base 2: the log-probabilities are natural logarithms, so the "
                  "perplexity is e to their mean, not 2.",
                  "你的代码用了以 2 为底：对数概率是自然对数，所以困惑度是 e 的幂，而不是 2 的幂。"),
             in_dtype(lambda lp, mask: 2 ** (-lp[mask].mean()))),
        Slip(Text("Your code multiplies by the mask: at padding the log-probability may be "
                  "-inf, and -inf x 0 is NaN. Select the real tokens instead.",
                  "你的代码乘以了掩码：填充处的对数概率可能是 -inf，而 -inf x 0 是 NaN。"
                  "应当直接挑出真实词元。"),
             in_dtype(lambda lp, mask: (-(lp * mask).sum() / mask.sum()).exp()),
             "slip-smoothing-padding"),
    ))


EXERCISES = [PENALTY, BLEU_SCORE, PERPLEXITY]
