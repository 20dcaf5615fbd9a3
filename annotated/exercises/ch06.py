"""Chapter 6's coding exercises: the learning-rate schedule, the label-smoothed target
distribution, the loss over the non-padding tokens and its gradient with respect to the logits."""
import numpy as np
import torch

from annotated.exercises.core import (AUTOGRAD, Case, Exercise, Slip, Text,
                                      draw, randn, seeded, tokens)
from reference_numpy import loss as np_loss
from reference_numpy import optim as np_optim


# ---- 6.1 the learning-rate schedule ----

def lrate_cases() -> list[Case]:
    step, d_model = draw(1, 2_000_000, seed=6101), draw(1, 4096, seed=6102)
    warmup_steps = draw(1, 16_000, seed=6103)
    early = draw(1, warmup_steps, seed=6104)              # a step of that warm-up
    return [
        Case(Text("base, step 10 (warming up)", "base，第 10 步（预热中）"), (10, 512, 4000)),
        Case(Text("base, step 4,000 (the peak)", "base，第 4,000 步（峰值）"), (4000, 512, 4000)),
        Case(Text("big, step 30,000 (after the peak)", "big，第 30,000 步（峰值之后）"),
             (30_000, 1024, 4000)),
        Case(Text("the first step, step 1", "第一步，即第 1 步"), (1, 512, 4000)),
        Case(Text("a huge step, 3 billion", "极大的步数：30 亿"), (3_000_000_000, 512, 4000)),
        Case(Text("warmup_steps 1, step 7", "warmup_steps 为 1，第 7 步"), (7, 512, 1)),
        Case(Text("warmup_steps 8,000, step 100 (warming up)",
                  "warmup_steps 为 8,000，第 100 步（预热中）"), (100, 256, 8000)),
        Case(Text(f"drawn at random, step {step:,}, d_model {d_model}, warmup_steps "
                  f"{warmup_steps:,}", f"随机抽取：第 {step:,} 步，d_model {d_model}，"
                  f"warmup_steps 为 {warmup_steps:,}"), (step, d_model, warmup_steps)),
        Case(Text(f"drawn at random in the warm-up, step {early:,} of {warmup_steps:,}",
                  f"在预热中随机抽取：第 {early:,} 步（共 {warmup_steps:,} 步预热）"),
             (early, d_model, warmup_steps)),
    ]


def lrate_answer(step, d_model, warmup_steps):
    return np_optim.noam_rate(step, d_model, warmup_steps)


def noam(step, d_model, warmup_steps, pick=min, warmup_power=-1.5, scale=True):
    """The §5.3 formula written with Python floats, its parts changeable (the slips)."""
    rate = pick(step ** -0.5, step * warmup_steps ** warmup_power)
    return d_model ** -0.5 * rate if scale else rate


LRATE = Exercise(
    id="6.1", function="lrate",
    topic=Text("the learning-rate schedule", "学习率调度"),
    cases=lrate_cases, answer=lrate_answer,
    hint=Text("equation (3) of §5.3 is the smaller of two curves, a line that grows with the step "
              "and a decay like 1/sqrt(step), times d_model^-0.5; the two curves meet at step = "
              "warmup_steps, and steps count from 1.",
              "§5.3 的公式 (3) 取两条曲线中较小的那条：一条随步数增长的直线，一条像 1/sqrt(step) "
              "那样衰减的曲线，再乘以 d_model^-0.5；两条曲线在 step = warmup_steps 处相交，"
              "步数从 1 开始计。"),
    slips=(
        Slip(Text("Your rate takes the larger of the two terms: §5.3 takes the smaller, which is "
                  "why the rate first climbs and then falls.",
                  "你的学习率取了两项中较大的一项：§5.3 取的是较小的一项，所以学习率先升后降。"),
             lambda s, d, w: noam(s, d, w, pick=max)),
        Slip(Text("Your warmup term is step * warmup_steps^-0.5: the exponent is -1.5, so that the "
                  "two terms meet at step = warmup_steps.",
                  "你的预热项是 step * warmup_steps^-0.5：指数应为 -1.5，这样两项才会在 "
                  "step = warmup_steps 处相交。"),
             lambda s, d, w: noam(s, d, w, warmup_power=-0.5)),
        Slip(Text("Your warmup term is 0 until step reaches warmup_steps: it divides step by "
                  "warmup_steps with //, which rounds down to a whole number. Divide with /.",
                  "在 `step` 达到 `warmup_steps` 之前，你的预热项都是 0：它用 // 把 `step` 除以 "
                  "`warmup_steps`，结果向下取整成了整数。应该用 / 来除。"),
             lambda s, d, w: d ** -0.5 * min(s ** -0.5, s // w * w ** -0.5)),
        Slip(Text("Your rate at step s is the paper's rate at step s + 1: step here already counts "
                  "from 1, as in the paper; only a counter that starts at 0 (LambdaLR's) needs the "
                  "+ 1.",
                  "你在第 s 步的学习率是论文第 s + 1 步的学习率：这里的 `step` 和论文一样已经从 1 "
                  "开始计；只有从 0 开始的计数器（如 LambdaLR 的）才需要加 1。"),
             lambda s, d, w: noam(s + 1, d, w)),
        Slip(Text("Your rate at step s is the paper's rate at step s - 1: step here counts from 1, "
                  "as in the paper, so use it as it is (at step 1 your formula divides by zero).",
                  "你在第 s 步的学习率是论文第 s - 1 步的学习率：这里的 `step` 和论文一样从 1 "
                  "开始计，直接使用即可（在第 1 步，你的公式会除以零）。"),
             lambda s, d, w: noam(s - 1, d, w)),
        Slip(Text("Your rate lacks the factor d_model^-0.5, which makes a wider model's rate "
                  "smaller.",
                  "你的学习率缺少因子 d_model^-0.5，正是它让更宽的模型学习率更小。"),
             lambda s, d, w: noam(s, d, w, scale=False)),
    ))


# ---- 6.2 the smoothed target distribution ----

def targets_cases() -> list[Case]:
    ids = torch.randint(4, 37_000, (2, 3), generator=seeded(6))
    return [
        Case(Text("two sentences, one padded (V = 8)", "两个句子，其中一个有填充（V = 8）"),
             (tokens([[5, 6, 7, 3], [4, 3, 0, 0]]), 8, 0, 0.1)),
        Case(Text("one sentence without a batch axis (V = 6, eps_ls = 0.2)",
                  "一个没有批次轴的句子（V = 6，eps_ls = 0.2）"),
             (torch.tensor([4, 2, 5, 3]), 6, 0, 0.2)),
        Case(Text("an odd length, padding id 1 (V = 9)", "奇数长度，填充的编号为 1（V = 9）"),
             (tokens([[4, 5, 6, 7, 3], [2, 3, 1, 1, 1]]), 9, 1, 0.1)),
        Case(Text("eps_ls = 0 (no smoothing)", "eps_ls = 0（不做平滑）"),
             (tokens([[2, 4, 3], [4, 3, 0]]), 5, 0, 0.0)),
        Case(Text("a row that is all padding (V = 7)", "一整行都是填充（V = 7）"),
             (tokens([[4, 6, 3], [0, 0, 0]]), 7, 0, 0.1)),
        Case(Text("the paper's vocabulary, V = 37,000", "论文的词表，V = 37,000"),
             (ids, 37_000, 0, 0.1)),
        Case(Text("one padded sentence without a batch axis (V = 6)",
                  "一个有填充、没有批次轴的句子（V = 6）"),
             (torch.tensor([3, 4, 0, 0]), 6, 0, 0.2)),
        Case(Text("a batch of one sentence, (1, 3) (V = 8)", "只有一个句子的批次 (1, 3)（V = 8）"),
             (tokens([[3, 4, 0]]), 8, 0, 0.1)),
        Case(Text("three axes, (2, 2, 3), with padding (V = 7)",
                  "三个轴 (2, 2, 3)，有填充（V = 7）"),
             (tokens([[[4, 5, 3], [6, 3, 0]], [[5, 0, 0], [4, 6, 5]]]), 7, 0, 0.1)),
    ]


def targets_answer(target, V, pad, eps_ls):
    return torch.from_numpy(np_loss.smoothed_distribution(target.numpy(), V, pad, eps_ls)).float()


def spread(target, V, pad, eps_ls, share, zero_pad=True, zero_rows=True):
    """q with `share` on every class but y (a slip unless share = eps_ls / (V - 2) and both
    zeroings are on)."""
    q = torch.full((*target.shape, V), share, dtype=torch.float32)
    q.scatter_(-1, target[..., None], 1.0 - eps_ls)
    if zero_pad:
        q[..., pad] = 0.0
    if zero_rows:
        q[target == pad] = 0.0
    return q


SPREAD_OVER_PAD = Text("Your q gives PAD a share of eps_ls: padding is never a right answer, so "
                       "eps_ls is spread over the V - 2 classes that are neither the answer nor "
                       "PAD, and q(PAD) = 0.",
                       "你的 q 把 eps_ls 的一份分给了 PAD：填充永远不是正确答案，所以 eps_ls "
                       "应平分给既不是答案也不是 PAD 的 V - 2 个类，且 q(PAD) = 0。")


TARGETS = Exercise(
    id="6.2", function="smoothed_targets",
    topic=Text("the smoothed target distribution", "平滑后的目标分布"),
    cases=targets_cases, answer=targets_answer,
    hint=Text("at a real position q puts 1 - eps_ls on the answer, nothing on PAD and shares "
              "eps_ls evenly among the other classes, so it sums to 1 (§5.4); a padding position "
              "gets a row of zeros. The result has one more axis than target, of size V.",
              "在真实位置上，q 给答案 1 - eps_ls，给 PAD 0，其余的类平分 eps_ls，所以总和为 1"
              "（§5.4）；填充位置得到全零的一行。结果比 `target` 多一个长度为 V 的轴。"),
    slips=(
        Slip(SPREAD_OVER_PAD, lambda t, V, pad, e: spread(t, V, pad, e, e / (V - 1),
                                                          zero_pad=False),
             "slip-smoothing-padding"),
        Slip(Text("Your q spreads eps_ls over all V classes, the answer and PAD included: the "
                  "answer keeps exactly 1 - eps_ls, PAD gets none, and eps_ls goes to the "
                  "classes left.",
                  "你的 q 把 eps_ls 平分给了全部 V 个类，包括答案和 PAD：答案应恰好保留 "
                  "1 - eps_ls，PAD 一点也不分，eps_ls 只分给余下的类。"),
             lambda t, V, pad, e: spread(t, V, pad, e, e / V, zero_pad=False)
             + torch.nn.functional.one_hot(t, V) * (t != pad)[..., None] * e / V,
             "slip-smoothing-padding"),
        Slip(Text("Your q gives PAD eps_ls / (V - 2) as well: it sums to more than 1. Set "
                  "q(PAD) = 0.",
                  "你的 q 也给了 PAD eps_ls / (V - 2)：它的总和超过了 1。应令 q(PAD) = 0。"),
             lambda t, V, pad, e: spread(t, V, pad, e, e / (V - 2), zero_pad=False),
             "slip-smoothing-padding"),
        Slip(Text("Your q is not zero at the padding positions: a position whose target is PAD "
                  "gets a row of zeros, so that it adds nothing to the loss.",
                  "你的 q 在填充位置上不为零：目标是 PAD 的位置应得到全零的一行，"
                  "这样它对损失没有任何贡献。"),
             lambda t, V, pad, e: spread(t, V, pad, e, e / (V - 2), zero_rows=False),
             "slip-smoothing-padding"),
    ))


# ---- 6.3 the label-smoothed loss ----

def random_target(shape, low: int, high: int, lengths: list[int], pad: int, seed: int):
    """(batch, T) ids drawn from low..high-1, row i padded after its first lengths[i]."""
    ids = torch.randint(low, high, shape, generator=seeded(seed))
    for row, n in enumerate(lengths):
        ids[row, n:] = pad
    return ids


def loss_cases() -> list[Case]:
    """(logits, target, pad, eps_ls): padded batches, padding id 2, a row of padding only, a
    model that gives PAD probability 0 at the padding positions, probabilities below float32's
    range. In the float64 cases eps_ls and V - 2 are powers of 2, so q holds the same numbers
    in float32 (exercise 6.2's dtype) and float64: any float32 work in the answer shows."""
    padded = random_target((3, 7), 4, 10, [7, 5, 3], 0, seed=11)
    one = random_target((1, 5), 4, 10, [5], 0, seed=12)
    pad2 = random_target((2, 5), 3, 9, [5, 2], 2, seed=13)         # ids 3..8, then padding
    never_pad = randn(3, 7, 10, seed=15)
    never_pad[..., 0] = never_pad[..., 0].masked_fill(padded == 0, float("-inf"))
    tiny = randn(2, 4, 10, seed=16, dtype=torch.float32)
    tiny[..., 7] -= 300.0                                  # class 7: probability e^-300 or less
    tiny_target = random_target((2, 4), 4, 7, [4, 3], 0, seed=17)
    return [
        Case(Text("three sentences of 7, 5 and 3 tokens, float64 (V = 10)",
                  "三个句子，分别有 7、5、3 个词元，float64（V = 10）"),
             (randn(3, 7, 10, seed=1), padded, 0, 0.125)),
        Case(Text("a batch of one without padding, float32", "批次中只有一个句子，没有填充，float32"),
             (randn(1, 5, 10, seed=2, dtype=torch.float32), one, 0, 0.1)),
        Case(Text("padding id 2, eps_ls = 0.25", "填充的编号为 2，eps_ls = 0.25"),
             (randn(2, 5, 10, seed=3), pad2, 2, 0.25)),
        Case(Text("a sentence that is all padding", "一个全是填充的句子"),
             (randn(3, 4, 6, seed=4), random_target((3, 4), 3, 6, [4, 0, 2], 0, seed=14),
              0, 0.125)),
        Case(Text("PAD has probability 0 at the padding positions (log p = -inf)",
                  "填充位置上 PAD 的概率为 0（log p = -inf）"),
             (never_pad, padded, 0, 0.0625)),
        Case(Text("a probability below float32's range (e^-300)", "低于 float32 表示范围的概率（e^-300）"),
             (tiny, tiny_target, 0, 0.1)),
    ]


def log_p64(logits: torch.Tensor) -> np.ndarray:
    return logits.double().log_softmax(dim=-1).numpy()


def loss_answer(logits, target, pad, eps_ls):
    value, _ = np_loss.label_smoothed_forward(log_p64(logits), target.numpy(), pad, eps_ls)
    return torch.tensor(value, dtype=logits.dtype)


def smoothed_q(target, V, pad, eps_ls, dtype, over_pad=False):
    """q of §5.4 (or, over_pad, with eps_ls spread over the V - 1 classes PAD included)."""
    if over_pad:
        return spread(target, V, pad, eps_ls, eps_ls / (V - 1), zero_pad=False).to(dtype)
    return spread(target, V, pad, eps_ls, eps_ls / (V - 2)).to(dtype)


def position_losses(logits, target, pad, eps_ls, over_pad=False, log_p=None):
    """(batch, T): -sum_c q_c log p_c at every position, 0 at padding; terms with q_c = 0
    left out."""
    log_p = logits.log_softmax(dim=-1) if log_p is None else log_p
    q = smoothed_q(target, logits.size(-1), pad, eps_ls, logits.dtype, over_pad)
    return -torch.where(q > 0, q * log_p, 0.0).sum(dim=-1)


def masked_by_multiplying(logits, target, pad, eps_ls):
    """Every position's loss with its own target, PAD taken as the answer at padding, then
    multiplied by a 0/1 mask."""
    V, log_p = logits.size(-1), logits.log_softmax(dim=-1)
    log_p_y = log_p.gather(-1, target[..., None])[..., 0]
    others = log_p.sum(dim=-1) - log_p_y - log_p[..., pad]
    losses = -((1 - eps_ls) * log_p_y + eps_ls / (V - 2) * others)
    mask = (target != pad).to(logits.dtype)
    return (losses * mask).sum() / mask.sum()


def mean_over_tokens(losses, target, pad):
    return losses.sum() / (target != pad).sum()


def mean_of_sentence_means(losses, target, pad):
    return (losses.sum(dim=1) / (target != pad).sum(dim=1)).mean()


def torch_label_smoothing(logits, target, pad, eps_ls):
    """PyTorch's own smoothing: eps_ls spread over all V classes, the answer and PAD included."""
    return torch.nn.functional.cross_entropy(logits.flatten(0, -2), target.flatten(),
                                             ignore_index=pad, label_smoothing=eps_ls)


def plain_cross_entropy(logits, target, pad, eps_ls):
    log_p_y = logits.log_softmax(dim=-1).gather(-1, target[..., None])[..., 0]
    return mean_over_tokens(torch.where(target != pad, -log_p_y, 0.0), target, pad)


LOSS = Exercise(
    id="6.3", function="smoothed_loss",
    topic=Text("the label-smoothed loss", "标签平滑损失"),
    cases=loss_cases, answer=loss_answer,
    hint=Text("the loss is the cross-entropy -sum_c q(c) log p(c) of §5.4 at each target "
              "position, with log p from log_softmax of the logits, added up over the positions "
              "whose target is not padding and divided by their number; leave padding out by "
              "selecting (torch.where or indexing), not by multiplying.",
              "损失是 §5.4 的交叉熵 -sum_c q(c) log p(c)：在每个目标位置上计算，log p 由 logits "
              "经 log_softmax 得到；把目标不是填充的位置的损失加起来，再除以这些位置的个数；"
              "要用选取（torch.where 或下标）而不是乘法来排除填充。"),
    slips=(
        Slip(Text("Your loss is NaN where the model gives PAD probability 0: the padding "
                  "positions were multiplied by a 0/1 mask, and 0 * inf is NaN. Select the "
                  "non-padding positions instead.",
                  "在模型给 PAD 的概率为 0 的地方，你的损失是 NaN：填充位置被乘上了 0/1 掩码，"
                  "而 0 * inf 是 NaN。应改为选取非填充的位置。"),
             masked_by_multiplying, "slip-smoothing-padding"),
        Slip(Text("Your loss divides by every position of the batch: padding positions must not "
                  "be counted, so divide by the number of non-padding target tokens.",
                  "你的损失除以了批次中的全部位置：填充位置不能计入，应除以非填充目标词元的个数。"),
             lambda z, t, pad, e: position_losses(z, t, pad, e).sum() / t.numel(),
             "slip-smoothing-padding"),
        Slip(Text("Your loss averages each sentence first and then the sentences: a token of a "
                  "short sentence weighs more than one of a long sentence. Sum over all the "
                  "batch's tokens, then divide by their number.",
                  "你的损失先对每个句子求平均，再对句子求平均：短句中的一个词元比长句中的一个词元"
                  "权重更大。应对批次中的全部词元求和，再除以它们的个数。"),
             lambda z, t, pad, e: mean_of_sentence_means(position_losses(z, t, pad, e), t, pad),
             "slip-mean-of-means"),
        Slip(SPREAD_OVER_PAD,
             lambda z, t, pad, e: mean_over_tokens(position_losses(z, t, pad, e, over_pad=True),
                                                   t, pad),
             "slip-smoothing-padding"),
        Slip(Text("Your loss is the sum over the tokens: divide it by the number of non-padding "
                  "target tokens.",
                  "你的损失是对词元的总和：应除以非填充目标词元的个数。"),
             lambda z, t, pad, e: position_losses(z, t, pad, e).sum()),
        Slip(Text("Your loss spreads eps_ls over all V classes, the answer and PAD included, "
                  "as the label_smoothing option of PyTorch's cross_entropy does: this book's q "
                  "(exercise 6.2) is not that one.",
                  "你的损失把 eps_ls 平分给了全部 V 个类，包括答案和 PAD，这正是 PyTorch 的 "
                  "cross_entropy 的 label_smoothing 选项的做法：本书的 q（练习 6.2）不是这样的。"),
             torch_label_smoothing, "slip-smoothing-padding"),
        Slip(Text("Your loss is the plain cross-entropy -log p(y): it ignores eps_ls.",
                  "你的损失是普通的交叉熵 -log p(y)：它忽略了 eps_ls。"),
             plain_cross_entropy),
        Slip(Text("Your loss is inf where a probability is below the dtype's range: log(softmax) "
                  "rounds it to log 0 = -inf. Take log_softmax of the logits, which stays finite.",
                  "在概率低于数据类型表示范围的地方，你的损失是 inf：log(softmax) 把它舍入成了 "
                  "log 0 = -inf。应对 logits 取 log_softmax，它的结果是有限的。"),
             lambda z, t, pad, e: mean_over_tokens(
                 position_losses(z, t, pad, e, log_p=z.softmax(dim=-1).log()), t, pad)),
    ))


# ---- 6.4 the gradient of the loss with respect to the logits ----

def grad_answer(logits, target, pad, eps_ls):
    _, cache = np_loss.label_smoothed_forward(log_p64(logits), target.numpy(), pad, eps_ls)
    return torch.from_numpy(np_loss.label_smoothed_logits_backward(cache)).to(logits.dtype)


def grad_with(logits, target, pad, eps_ls, q=None, rows="real", n=None, sign=1.0):
    """(softmax - q) / n with its parts changeable (the slips): q (default §5.4's), the rows
    that get it ("real": the non-padding ones, "all"), and n (default the non-padding count)."""
    p = logits.softmax(dim=-1)
    q = smoothed_q(target, logits.size(-1), pad, eps_ls, logits.dtype) if q is None else q
    real = (target != pad)[..., None]
    n = real.sum() if n is None else n
    g = sign * (p - q) / n
    return g if rows == "all" else torch.where(real, g, 0.0)


def one_hot_target(logits, target):
    return torch.nn.functional.one_hot(target, logits.size(-1)).to(logits.dtype)


GRAD = Exercise(
    id="6.4", function="smoothed_loss_grad",
    topic=Text("the gradient of the smoothed loss", "平滑损失的梯度"),
    cases=loss_cases, answer=grad_answer,
    hint=Text("the loss of exercise 6.3 is the mean over the n non-padding positions of a "
              "cross-entropy against q of a softmax, whose gradient with respect to the logits "
              "is softmax minus target; a padding position is not in the loss at all. The result "
              "is shaped like the logits.",
              "练习 6.3 的损失是 n 个非填充位置上交叉熵的平均，交叉熵是 softmax 相对 q 的，"
              "它对 logits 的梯度是 softmax 减去目标；填充位置根本不在损失之中。"
              "结果的形状与 logits 相同。"),
    forbidden=AUTOGRAD,
    slips=(
        Slip(Text("Your gradient is not divided by n: the loss is a mean over the n non-padding "
                  "positions, so each position's softmax - q is divided by n.",
                  "你的梯度没有除以 n：损失是 n 个非填充位置上的平均，所以每个位置的 "
                  "softmax - q 都要除以 n。"),
             lambda z, t, pad, e: grad_with(z, t, pad, e, n=1)),
        Slip(Text("Your gradient is not zero at the padding positions: they are not in the loss, "
                  "so they get exactly zero.",
                  "你的梯度在填充位置上不为零：它们不在损失之中，所以梯度恰好为零。"),
             lambda z, t, pad, e: grad_with(z, t, pad, e, rows="all"), "slip-smoothing-padding"),
        Slip(Text("Your gradient uses the one-hot target: with label smoothing it is softmax "
                  "minus the smoothed q.",
                  "你的梯度用的是独热目标：做标签平滑时，梯度是 softmax 减去平滑后的 q。"),
             lambda z, t, pad, e: grad_with(z, t, pad, e, q=one_hot_target(z, t))),
        Slip(Text("Your gradient divides by every position of the batch: n counts the "
                  "non-padding target tokens only.",
                  "你的梯度除以了批次中的全部位置：n 只计非填充目标词元。"),
             lambda z, t, pad, e: grad_with(z, t, pad, e, n=t.numel()), "slip-smoothing-padding"),
        Slip(Text("Your gradient has the wrong sign: the gradient points the way the loss "
                  "rises, and a step against yours would raise it.",
                  "你的梯度符号反了：梯度指向损失上升的方向，而沿你的梯度的反方向走一步，"
                  "损失反而会上升。"),
             lambda z, t, pad, e: grad_with(z, t, pad, e, sign=-1.0)),
        Slip(Text("Your gradient is that of a mean of sentence means: each token is divided by "
                  "the batch size times its own sentence's length, where the loss divides every "
                  "token by the same n.",
                  "你的梯度是“句子平均的平均”的梯度：每个词元除以批次大小乘以它所在句子的长度，"
                  "而损失对每个词元都除以同一个 n。"),
             lambda z, t, pad, e: grad_with(z, t, pad, e, n=(t != pad).sum(dim=1)[:, None, None]
                                            * t.size(0)),
             "slip-mean-of-means"),
    ))


EXERCISES = [LRATE, TARGETS, LOSS, GRAD]
