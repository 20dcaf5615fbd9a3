"""Chapter 7's coding exercises: the length penalty, one step of beam search, and the choice
among finished hypotheses.

reference_numpy has no search, so the answers come from the package's length_penalty and, for
one step of the beam, from sorting all k * V candidates in NumPy."""
import numpy as np
import torch

from annotated.data.tokenizer import EOS
from annotated.exercises.core import Case, Exercise, Slip, Text, compare, draw, seeded
from annotated.inference.search import length_penalty


# ---- 7.1 the length penalty ----

def lp_cases() -> list[Case]:
    length, alpha = draw(1, 1000, seed=7101), draw(0, 200, seed=7102) / 100
    return [
        Case(Text("|Y| = 10, alpha 0.6", "|Y| = 10，alpha 0.6"), (10, 0.6)),
        Case(Text("|Y| = 1 (EOS alone), alpha 0.6", "|Y| = 1（只有 EOS），alpha 0.6"), (1, 0.6)),
        Case(Text("|Y| = 23, alpha 0", "|Y| = 23，alpha 0"), (23, 0.0)),
        Case(Text("|Y| = 50, alpha 2", "|Y| = 50，alpha 2"), (50, 2.0)),
        Case(Text("|Y| = 301, alpha 0.3 (parsing)", "|Y| = 301，alpha 0.3（句法分析）"), (301, 0.3)),
        Case(Text("a tensor of lengths, float64", "一个长度张量，float64"),
             (torch.tensor([1.0, 4.0, 9.0, 30.0], dtype=torch.float64), 0.6)),
        Case(Text("a tensor of one length, float64", "只有一个长度的张量，float64"),
             (torch.tensor([7.0], dtype=torch.float64), 0.6)),
        Case(Text("a tensor of lengths, alpha 0", "一个长度张量，alpha 0"),
             (torch.tensor([2.0, 5.0], dtype=torch.float64), 0.0)),
        Case(Text("a tensor of whole-number lengths, int64 (as the search counts them)",
                  "一个整数长度张量，int64（搜索就是这样计数的）"),
             (torch.tensor([1, 3, 10, 24]), 0.6)),
        Case(Text(f"drawn at random, |Y| = {length}, alpha {alpha}",
                  f"随机抽取：|Y| = {length}，alpha {alpha}"), (length, alpha)),
    ]


TENSOR_FOR_A_NUMBER = Text(
    "a tensor for a number: `length` was a number here, so return a number to match (a tensor "
    "is the answer to a tensor of lengths)",
    "数值处返回了张量：这里的 `length` 是一个数，所以应返回一个数与之相配（张量是给长度张量的答案）")


WIDER_FOR_WHOLE_NUMBERS = Text(
    "a float64 tensor for whole-number lengths: the exercise asks for float32 there, PyTorch's "
    "default dtype, which the search's scores have too",
    "整数长度得到了 float64 张量：练习要求这里用 float32，即 PyTorch 的默认数据类型，搜索中的分数也是这个类型")


def number_to_match(expected, got, lang: str) -> str | None:
    """compare(), and a number for a number: the penalty of one length is not a tensor; and
    float32, the default dtype, for a tensor of whole numbers (whose expected result is the
    only float32 one)."""
    if isinstance(expected, (int, float)) and isinstance(got, torch.Tensor):
        return TENSOR_FOR_A_NUMBER(lang)
    if isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor) and \
            (expected.dtype, got.dtype) == (torch.float32, torch.float64):
        return WIDER_FOR_WHOLE_NUMBERS(lang)
    return compare(expected, got, lang)


LP = Exercise(
    id="7.1", function="lp",
    topic=Text("the length penalty", "长度惩罚"),
    cases=lp_cases, answer=length_penalty, compare=number_to_match,
    hint=Text("§6.1 takes GNMT's penalty: the fraction (5 + |Y|) / 6, all of it raised to the "
              "power alpha; it is 1 for |Y| = 1 and for alpha = 0. Write it with operators that "
              "work on a number and on a tensor alike.",
              "§6.1 采用 GNMT 的惩罚：把 (5 + |Y|) / 6 整体取 alpha 次幂；|Y| = 1 或 "
              "alpha = 0 时它等于 1。请用对数值和张量都适用的运算符来写。"),
    slips=(
        Slip(Text("Your penalty is (5 + |Y|) / 6 without the power alpha.",
                  "你的惩罚是 (5 + |Y|) / 6，缺少 alpha 次幂。"),
             lambda n, alpha: (5.0 + n) / 6.0),
        Slip(Text("Your penalty is |Y|^alpha: GNMT's is ((5 + |Y|) / 6)^alpha, which grows more "
                  "slowly for short outputs.",
                  "你的惩罚是 |Y|^alpha：GNMT 的惩罚是 ((5 + |Y|) / 6)^alpha，它对短输出增长得更慢。"),
             lambda n, alpha: n ** alpha),
        Slip(Text("Your penalty raises only 5 + |Y| to the power alpha: the whole fraction "
                  "(5 + |Y|) / 6 is raised.",
                  "你的惩罚只把 5 + |Y| 取了 alpha 次幂：应把 (5 + |Y|) / 6 整体取幂。"),
             lambda n, alpha: (5.0 + n) ** alpha / 6.0),
    ))


# ---- 7.2 one step of beam search ----

def log_softmax(*shape, seed: int, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=seeded(seed), dtype=dtype).mul(2).log_softmax(-1)


def step_cases() -> list[Case]:
    """(scores, log_probs, k), without ties among the candidates that make the beam."""
    four = torch.tensor([-1.2, -1.9, -2.3, -3.1], dtype=torch.float64)
    never = log_softmax(4, 12, seed=3, dtype=torch.float32)
    never[:, [0, 2]] = float("-inf")                       # PAD and BOS, as the search sets them
    return [
        Case(Text("four live hypotheses, V = 10, k = 4", "四个活跃假设，V = 10，k = 4"),
             (four, log_softmax(4, 10, seed=1), 4)),
        Case(Text("the first step: one hypothesis, k = 3", "第一步：只有一个假设，k = 3"),
             (torch.zeros(1, dtype=torch.float64), log_softmax(1, 8, seed=2), 3)),
        Case(Text("PAD and BOS at -inf, float32", "PAD 和 BOS 为 -inf，float32"),
             (four.float(), never, 4)),
        Case(Text("one hypothesis far ahead of the others", "一个假设远远领先于其他假设"),
             (torch.tensor([-0.5, -9.0, -9.5, -10.0], dtype=torch.float64),
              log_softmax(4, 10, seed=4), 4)),
        Case(Text("greedy: one hypothesis, k = 1", "贪心：只有一个假设，k = 1"),
             (torch.tensor([-2.0], dtype=torch.float64), log_softmax(1, 9, seed=6), 1)),
        Case(Text("two hypotheses, V = 1,000, k = 2", "两个假设，V = 1,000，k = 2"),
             (torch.tensor([-4.0, -4.5], dtype=torch.float64), log_softmax(2, 1000, seed=5), 2)),
    ]


def step_answer(scores, log_probs, k):
    V = log_probs.size(-1)
    candidates = (scores.double()[:, None] + log_probs.double()).numpy().ravel()   # (b * V,)
    best = np.argsort(-candidates, kind="stable")[:k]                              # best first
    return (torch.from_numpy(candidates[best]).to(scores.dtype),
            torch.from_numpy(best // V), torch.from_numpy(best % V))


def ranked(candidates, k, V, split=None):
    """The k best of the flat candidates, their row and token (split: the number that the flat
    index is divided by, V unless a slip)."""
    top, index = candidates.reshape(-1).topk(k)
    split = V if split is None else split
    return top, index // split, index % split


def each_beam_its_best(scores, log_probs, k):
    best, token = (scores[:, None] + log_probs).max(dim=-1)
    order = best.argsort(descending=True)
    return best[order], order, token[order]


def ranked_then_added(scores, log_probs, k):
    _, beam, token = ranked(log_probs, k, log_probs.size(-1))
    return scores[beam] + log_probs[beam, token], beam, token


def last_beam_only(scores, log_probs, k):
    top, token = (scores[-1] + log_probs[-1]).topk(k)
    return top, torch.full_like(token, scores.size(0) - 1), token


def k_worst(scores, log_probs, k):
    V = log_probs.size(-1)
    candidates = (scores[:, None] + log_probs).reshape(-1)
    worst = candidates.argsort()[:k]
    return candidates[worst], worst // V, worst % V


RANKED_BY_LOG_P = Text("Your candidates are ranked by the new token's log p alone: add the score "
                       "of the hypothesis it extends before ranking, since log P(Y) is a sum over "
                       "all its tokens.",
                       "你的候选只按新词元的 log p 排序：排序之前应加上它所扩展的假设的分数，"
                       "因为 log P(Y) 是所有词元的和。")


STEP = Exercise(
    id="7.2", function="beam_step",
    topic=Text("one step of beam search", "束搜索的一步"),
    cases=step_cases, answer=step_answer,
    hint=Text("every live hypothesis is extended by every token: candidate (i, w) has log P = "
              "scores[i] + log_probs[i, w], and the k best of all b x V candidates survive, "
              "whichever hypotheses they extend (§6.1, chapter 7 section 2); a flat index f into "
              "(b, V) is hypothesis f // V, token f % V.",
              "每个活跃假设都用每个词元来扩展：候选 (i, w) 的 log P = scores[i] + "
              "log_probs[i, w]；在全部 b x V 个候选中，最好的 k 个存活下来，不管它们扩展的是"
              "哪个假设（§6.1，第 7 章第 2 节）；(b, V) 中的扁平下标 f 对应假设 f // V、"
              "词元 f % V。"),
    slips=(
        Slip(Text("Your beam keeps the best token of each hypothesis: that is k greedy searches "
                  "side by side. Rank all k x V candidates together: two of the k best may "
                  "extend the same hypothesis.",
                  "你的束为每个假设各保留一个最好的词元：这相当于并排做 k 次贪心搜索。应把全部 "
                  "k x V 个候选放在一起排序：最好的 k 个中可能有两个扩展的是同一个假设。"),
             each_beam_its_best),
        Slip(RANKED_BY_LOG_P, lambda s, lp, k: ranked(lp, k, lp.size(-1))),
        Slip(RANKED_BY_LOG_P, ranked_then_added),
        Slip(Text("Your candidates all extend the last hypothesis: take the k best over every "
                  "hypothesis of the beam.",
                  "你的候选都扩展自最后一个假设：应从束中所有假设的扩展里取最好的 k 个。"),
             last_beam_only),
        Slip(Text("Your hypothesis and token indices split the flat index by the beam's size "
                  "(k, or b, which are equal here): the candidates are laid out (b, V), so "
                  "index f is hypothesis f // V and token f % V.",
                  "你用束的大小（k 或 b，这里二者相等）拆分扁平下标，得到假设和词元的下标："
                  "候选的布局是 (b, V)，所以下标 f 对应假设 f // V 和词元 f % V。"),
             lambda s, lp, k: ranked(s[:, None] + lp, k, lp.size(-1), split=k)),
        Slip(Text("Your beam keeps the k worst candidates: argsort sorts in increasing order, so "
                  "the best are at the end (or sort descending, or use topk).",
                  "你的束保留了最差的 k 个候选：`argsort` 按升序排序，最好的在最后"
                  "（或者按降序排序，或者用 `topk`）。"),
             k_worst),
    ))


# ---- 7.3 the best finished hypothesis ----

def finished(*pairs) -> list:
    """(length, log P) pairs -> (tokens, log P) hypotheses whose tokens end with EOS."""
    return [(list(range(10, 10 + n - 1)) + [EOS], log_p) for n, log_p in pairs]


def finished_cases() -> list[Case]:
    g = seeded(7)
    lengths = torch.randint(1, 30, (6,), generator=g).tolist()
    rates = (0.3 + 0.3 * torch.rand(6, generator=g, dtype=torch.float64)).tolist()
    drawn = finished(*[(n, -r * n - 1.0) for n, r in zip(lengths, rates)])
    cut = ([10, 11, 12, 13, 14, 15, 16, 17], -5.0)        # cut at the maximum length: no EOS
    return [
        Case(Text("three hypotheses, alpha 0.6", "三个假设，alpha 0.6"),
             (finished((4, -3.0), (9, -3.8), (14, -5.5)), 0.6)),
        Case(Text("alpha 0", "alpha 0"), (finished((4, -3.0), (9, -3.8), (14, -2.9)), 0.0)),
        Case(Text("one hypothesis", "只有一个假设"), (finished((6, -2.5)), 0.6)),
        Case(Text("EOS alone against a long output, alpha 1.0", "只有 EOS 的输出对一个长输出，alpha 1.0"),
             (finished((1, -2.0), (12, -4.5)), 1.0)),
        Case(Text("six drawn at random, alpha 1.0", "随机抽取的六个假设，alpha 1.0"), (drawn, 1.0)),
        Case(Text("one cut at the maximum length (no EOS), alpha 0.6",
                  "一个在最大长度处被截断的假设（没有 EOS），alpha 0.6"),
             (finished((7, -5.2), (3, -2.4)) + [cut], 0.6)),
    ]


def best_by(score):
    """best_finished with `score(tokens, log_prob, alpha)` in place of log P / lp (the slips)."""
    def best(hypotheses, alpha):
        scores = [score(tokens, log_p, alpha) for tokens, log_p in hypotheses]
        i = max(range(len(scores)), key=scores.__getitem__)
        return i, scores[i]
    return best


finished_answer = best_by(lambda tokens, log_p, alpha: log_p / length_penalty(len(tokens), alpha))


def score_first(hypotheses, alpha):
    position, score = finished_answer(hypotheses, alpha)
    return score, position


FINISHED = Exercise(
    id="7.3", function="best_finished",
    topic=Text("the best finished hypothesis", "最好的已完成假设"),
    cases=finished_cases, answer=finished_answer,
    hint=Text("a finished hypothesis is scored by log P(Y|X) / lp(Y), with lp(Y) = ((5 + |Y|) / "
              "6)^alpha and |Y| its number of tokens, EOS included (§6.1); return the position of "
              "the best one in the list and its score.",
              "已完成假设的分数是 log P(Y|X) / lp(Y)，其中 lp(Y) = ((5 + |Y|) / 6)^alpha，|Y| "
              "是它的词元个数，包括 EOS（§6.1）；返回分数最高的假设在列表中的位置及其分数。"),
    slips=(
        Slip(Text("Your choice goes by log P alone: every token lowers log P, so the shortest "
                  "output wins. Divide by lp(Y).",
                  "你只按 log P 选择：每多一个词元 log P 就更低，于是最短的输出胜出。"
                  "应除以 lp(Y)。"),
             best_by(lambda tokens, log_p, alpha: log_p)),
        Slip(Text("Your score divides log P by the length |Y|: §6.1 divides by "
                  "lp(Y) = ((5 + |Y|) / 6)^alpha.",
                  "你的分数用 log P 除以长度 |Y|：§6.1 除以的是 lp(Y) = ((5 + |Y|) / 6)^alpha。"),
             best_by(lambda tokens, log_p, alpha: log_p / len(tokens))),
        Slip(Text("Your score divides by |Y|^alpha: the penalty is ((5 + |Y|) / 6)^alpha.",
                  "你的分数除以的是 |Y|^alpha：惩罚应为 ((5 + |Y|) / 6)^alpha。"),
             best_by(lambda tokens, log_p, alpha: log_p / len(tokens) ** alpha)),
        Slip(Text("Your |Y| leaves out the EOS: it counts every token of the hypothesis, EOS "
                  "included, as the search's scores do.",
                  "你的 |Y| 没有计入 EOS：它应计入假设的每个词元，包括 EOS，和搜索的分数一致。"),
             best_by(lambda tokens, log_p, alpha: log_p / length_penalty(len(tokens) - 1, alpha))),
        Slip(Text("Your score multiplies log P by lp(Y): divide, so that a longer output's lower "
                  "log P is forgiven, not punished twice.",
                  "你的分数用 log P 乘以 lp(Y)：应当相除，这样长输出较低的 log P 才会得到宽容，"
                  "而不是受到双重惩罚。"),
             best_by(lambda tokens, log_p, alpha: log_p * length_penalty(len(tokens), alpha))),
        Slip(Text("Your function returns the score first: return (position, score).",
                  "你的函数先返回了分数：应返回 (position, score)。"),
             score_first),
    ))


EXERCISES = [LP, STEP, FINISHED]
