"""Chapter 9's coding exercises: averaging checkpoints, a batch's gradient computed in pieces,
unscaling the gradients of a scaled loss.

The right answers: the rule of annotated.store.checkpoint_file.average (a floating entry's
mean computed in float64, stored in its own dtype; any other entry the newest checkpoint's);
the gradient of the whole batch from reference_numpy's label-smoothed loss and its backward;
NumPy for the unscaled gradients.
"""
import numpy as np
import torch

from annotated.exercises.core import (Case, Exercise, Slip, Text, compare, entries, randn,
                                      seeded)
from annotated.exercises.messages import MESSAGES
from annotated.loss import label_smoothed_loss
from reference_numpy import layers as np_layers
from reference_numpy import loss as np_loss


# ---- 9.1 averaging checkpoints (§6.1) ----

def checkpoints(k: int, seed: int) -> list[dict]:
    """k state dicts of one small model, as a run writes them: weights of several dtypes,
    integer buffers (int64, int32) and a boolean mask that differ from one checkpoint to the
    next, and a step counter."""
    return [{"encoder.weight": randn(4, 6, seed=seed + i, dtype=torch.float32),
             "decoder.bias": randn(7, seed=seed + 10 + i, dtype=torch.float64),
             "generator.scale": 40_000 + 1_000 * randn(3, seed=seed + 20 + i, dtype=torch.float32).half(),
             "norm.gain": (1 + randn(6, seed=seed + 50 + i, dtype=torch.float32) / 64).bfloat16(),
             "tokens_seen": torch.randint(0, 10**6, (5,), generator=seeded(seed + 30 + i)),
             "batches_seen": torch.randint(0, 10**4, (4,), generator=seeded(seed + 60 + i),
                                           dtype=torch.int32),
             "padding_mask": torch.rand(6, generator=seeded(seed + 70 + i)) > 0.5,
             "step": torch.tensor(100 * (i + 1))} for i in range(k)]


def average_cases() -> list[Case]:
    five, three, eight = checkpoints(5, seed=0), checkpoints(3, seed=40), checkpoints(8, seed=60)
    return [
        Case(Text("five checkpoints, a float32 weight", "五个检查点，一个 float32 权重"),
             (five, "encoder.weight")),
        Case(Text("five checkpoints, a float64 bias of odd length 7",
                  "五个检查点，一个长度为奇数 7 的 float64 偏置"), (five, "decoder.bias")),
        Case(Text("a single checkpoint", "只有一个检查点"), (five[:1], "encoder.weight")),
        Case(Text("eight checkpoints", "八个检查点"), (eight, "encoder.weight")),
        Case(Text("float16 weights near 40,000: their sum passes 65,504",
                  "接近 40,000 的 float16 权重：它们的和超过 65,504"),
             (three, "generator.scale")),
        Case(Text("eight checkpoints, a bfloat16 gain near 1: a sum in bfloat16 is rounded",
                  "八个检查点，一个接近 1 的 bfloat16 增益：用 bfloat16 求和会被舍入"),
             (eight, "norm.gain")),
        Case(Text("the step counter, int64", "步数计数器，int64"), (five, "step")),
        Case(Text("an integer buffer that differs from checkpoint to checkpoint",
                  "一个各检查点取值不同的整数缓冲区"), (three, "tokens_seen")),
        Case(Text("an int32 buffer that differs from checkpoint to checkpoint",
                  "一个各检查点取值不同的 int32 缓冲区"), (five, "batches_seen")),
        Case(Text("a boolean mask that differs from checkpoint to checkpoint",
                  "一个各检查点取值不同的布尔掩码"), (five, "padding_mask")),
    ]


def average_answer(state_dicts, key):
    values = [sd[key] for sd in state_dicts]
    if not values[-1].is_floating_point():
        return values[-1]                                     # the newest checkpoint's
    return (sum(v.double() for v in values) / len(values)).to(values[-1].dtype)


def integers(rule):
    """A slip: floating entries averaged right, any other entry by `rule(values)`."""
    def average(state_dicts, key):
        values = [sd[key] for sd in state_dicts]
        if values[-1].is_floating_point():
            return average_answer(state_dicts, key)
        return rule(values)
    return average


def by_name_step(state_dicts, key):
    values = [sd[key] for sd in state_dicts]
    if key == "step":
        return values[-1]
    return (sum(v.double() for v in values) / len(values)).to(values[-1].dtype)


def int64_only(state_dicts, key):
    values = [sd[key] for sd in state_dicts]
    if values[-1].dtype == torch.int64:
        return values[-1]
    return (sum(v.double() for v in values) / len(values)).to(values[-1].dtype)


def summed_in_place(state_dicts, key):
    return sum(sd[key] for sd in state_dicts) / len(state_dicts)


def three_float_dtypes(state_dicts, key):
    values = [sd[key] for sd in state_dicts]
    if values[-1].dtype not in (torch.float16, torch.float32, torch.float64):
        return values[-1]
    return average_answer(state_dicts, key)


def first_two(state_dicts, key):
    return average_answer(state_dicts[:2], key)


def last_five(state_dicts, key):
    return average_answer(state_dicts[-5:], key)


def kept_float32(state_dicts, key):
    values = [sd[key] for sd in state_dicts]
    return (sum(v.double() for v in values) / len(values)).float()


INTEGERS_AVERAGED = Text(
    "Your code averages an integer entry into floats: a step counter or an integer buffer is "
    "not a weight. Keep the newest checkpoint's value, in its own dtype.",
    "你的代码把整数条目平均成了浮点数：步数计数器或整数缓冲区不是权重。"
    "应保留最新检查点的值，数据类型不变。")

LEFT_OUT = Text("Your average leaves out some checkpoints: every one of the K checkpoints it "
                "is given counts, with weight 1/K, however many there are.",
                "你的平均漏掉了一些检查点：传进来的 K 个检查点，不论有多少个，每一个都要算上，"
                "权重都是 1/K。")

AVERAGE = Exercise(
    id="9.1", function="averaged_entry",
    topic=Text("averaging checkpoints", "检查点平均"),
    cases=average_cases, answer=average_answer,
    hint=Text("§6.1 averages the weights element by element, (1/K) sum_k theta_k, over all K "
              "checkpoints. Add up in a wider dtype (float32 or float64) so that no sum "
              "overflows, and store the mean in the entry's own dtype; an entry that is not "
              "floating point is the newest checkpoint's (the last of the list).",
              "§6.1 对全部 K 个检查点的权重逐元素求平均：(1/K) sum_k theta_k。"
              "用更宽的数据类型（float32 或 float64）求和，以免和溢出，再把平均值存回该条目自己的数据类型；"
              "不是浮点数的条目取最新检查点（列表中最后一个）的值。"),
    slips=(
        Slip(INTEGERS_AVERAGED, integers(lambda vs: sum(v.float() for v in vs) / len(vs))),
        Slip(INTEGERS_AVERAGED, integers(lambda vs: sum(v.double() for v in vs) / len(vs))),
        Slip(Text("Your code averages the step counter and rounds it back to an integer: keep "
                  "the newest checkpoint's value instead, the step the averaged model stands "
                  "for.",
                  "你的代码对步数计数器求了平均，再取整回整数：应保留最新检查点的值，"
                  "也就是平均后的模型所代表的步数。"),
             integers(lambda vs: sum(vs) // len(vs))),
        Slip(Text("Your code asks torch.mean for the mean of an integer entry, which torch "
                  "refuses: an entry that is not floating point is not averaged; keep the "
                  "newest checkpoint's value.",
                  "你的代码让 `torch.mean` 对整数条目求平均，而 PyTorch 拒绝这样做：不是浮点数的条目不参与平均，"
                  "应保留最新检查点的值。"),
             integers(lambda vs: torch.stack(vs).mean(0))),
        Slip(Text("Your code keeps the newest value only of the entry named step: every entry "
                  "that is not floating point (a counter or an integer buffer, whatever its "
                  "name) is not a weight. Tell them by their dtype, and keep the newest "
                  "checkpoint's value.",
                  "你的代码只对名为 `step` 的条目保留最新值：凡不是浮点数的条目（计数器或整数缓冲区，"
                  "不论叫什么名字）都不是权重。应按数据类型来区分，保留最新检查点的值。"),
             by_name_step),
        Slip(Text("Your code keeps the newest value only of int64 entries: an int32 buffer or "
                  "a boolean mask is no weight either. Every entry that is not floating point "
                  "keeps the newest checkpoint's value.",
                  "你的代码只对 int64 条目保留最新值：int32 缓冲区或布尔掩码也不是权重。"
                  "凡不是浮点数的条目，都保留最新检查点的值。"),
             int64_only),
        Slip(Text("Your code keeps the first checkpoint's value of an integer entry: keep the "
                  "newest one's, the last of the list.",
                  "对整数条目，你的代码保留了第一个检查点的值：应保留最新检查点（列表中最后一个）的值。"),
             integers(lambda vs: vs[0])),
        Slip(Text("Your code adds the weights up in their own dtype: a float16 sum past 65,504 "
                  "is inf, although the mean is not, and a bfloat16 sum, with 8 bits of "
                  "precision, is rounded at each step. Add up in float32 or float64, then "
                  "convert back.",
                  "你的代码用权重自己的数据类型累加：float16 的和超过 65,504 就成了 inf，尽管平均值并不大；"
                  "bfloat16 只有 8 位精度，每加一次都要舍入。应在 float32 或 float64 中求和，再转换回来。"),
             summed_in_place),
        Slip(Text("Your code keeps the newest value of a bfloat16 entry: bfloat16 is a "
                  "floating-point dtype too, and its weights are averaged like the others. Tell "
                  "the entries apart with is_floating_point(), not by a list of dtypes.",
                  "对 bfloat16 条目，你的代码保留了最新值：bfloat16 也是浮点类型，它的权重要和其他权重一样求平均。"
                  "应该用 is_floating_point() 区分条目，而不是列出几种数据类型。"),
             three_float_dtypes),
        Slip(LEFT_OUT, first_two),
        Slip(LEFT_OUT, last_five),
        Slip(Text("Your average is float32: store it in the dtype the checkpoints hold (float64 "
                  "stays float64, float16 stays float16).",
                  "你的平均值是 float32：应以检查点原有的数据类型保存（float64 仍是 float64，"
                  "float16 仍是 float16）。"),
             kept_float32),
    ))


# ---- 9.2 one batch's gradient, computed in pieces ----

PAD, EPS_LS = 0, 0.1


def piece_loss(weight, x, y, pad: int = PAD):
    """The piece's label-smoothed loss summed over its non-padding target tokens, and their
    number: x (n, d) features, y (n,) target ids, weight (d, V) the output layer."""
    stats = label_smoothed_loss(x @ weight, y, pad=pad, eps_ls=EPS_LS)
    return stats.loss, stats.tokens


def piece(n: int, seed: int, padded: int = 0, dtype=torch.float64, pad: int = PAD):
    """n targets (the last `padded` of them the padding id `pad`; the first, where real, the
    id 0 when that is not padding) and their features, d = 6 wide, ids below V = 11."""
    g = seeded(seed)
    y = torch.randint(0, 10, (n,), generator=g)        # the 10 ids of 0..10 other than pad
    y[y >= pad] += 1
    if pad != 0 and n > padded:
        y[0] = 0                                       # a real token whose id is 0
    y[n - padded:] = pad
    return torch.randn(n, 6, generator=g, dtype=dtype), y


def weight_of(seed: int, dtype=torch.float64, d: int = 6, V: int = 11) -> torch.Tensor:
    return randn(d, V, seed=seed, dtype=dtype).requires_grad_()


class CountedLoss:
    """The loss_of of 9.2's cases: piece_loss, counting the backward passes that reach the
    weight it is given (a hook on that weight). The case and the learner's call share it, not
    a copy, so that the check reads the count afterwards (one_pass_per_piece)."""

    def __init__(self, pad: int = PAD):
        self.passes, self.weights, self.pad = 0, set(), pad

    def __deepcopy__(self, memo):
        return self

    def __call__(self, weight, x, y):
        if id(weight) not in self.weights and weight.requires_grad:
            self.weights.add(id(weight))
            weight.register_hook(self.reached)
        return piece_loss(weight, x, y, self.pad)

    def reached(self, grad):
        self.passes += 1


def pieces_cases() -> list[Case]:
    def case(en: str, zh: str, weight, pieces, pad: int = PAD) -> Case:
        return Case(Text(en, zh), (weight, pieces, CountedLoss(pad)))
    return [
        case("three pieces of 12, 5 and 8 tokens", "三块，分别有 12、5、8 个词元",
             weight_of(0), [piece(12, 1), piece(5, 2), piece(8, 3)]),
        case("two pieces of 1 and 9 tokens", "两块，分别有 1 个和 9 个词元",
             weight_of(4), [piece(1, 5), piece(9, 6)]),
        case("one piece: the whole batch", "只有一块：整个批次", weight_of(7), [piece(10, 8)]),
        case("pieces with padding targets", "含有填充目标的块",
             weight_of(9), [piece(8, 10, padded=3), piece(6, 11), piece(7, 12, padded=5)]),
        case("an empty piece, as a process with nothing to compute gets",
             "一个空块，就像无事可做的进程拿到的那样",
             weight_of(13), [piece(9, 14), piece(0, 15), piece(4, 16)]),
        case("float32, four pieces", "float32，四块", weight_of(17, torch.float32),
             [piece(n, 18 + n, dtype=torch.float32) for n in (7, 3, 11, 5)]),
        case("padding id 3, and real targets with the id 0", "填充的编号为 3，还有编号为 0 的真实目标",
             weight_of(35), [piece(8, 36, padded=2, pad=3), piece(6, 37, padded=4, pad=3)],
             pad=3),
    ]


def one_pass_per_piece(got, weight, pieces, loss_of) -> Text | None:
    """What is wrong with a right gradient `got`: it is not in weight.grad (the weight the
    learner's function was given) after the call, where the optimizer reads it (computed on a
    copy of the weight, or cleared); or fewer backward passes reached the weight than there
    are pieces with a token to learn from (the pieces joined, or their losses summed, into
    one graph: the memory accumulation exists to save)."""
    grad = weight.grad
    if grad is None or compare(got, grad, "en"):
        held = "nothing" if grad is None else "another gradient"
        return Text(f"your function returns the right gradient, but weight.grad holds {held} "
                    "after it: the optimizer steps with weight.grad, so the pieces' gradients "
                    "must add up there, in the weight you are given (not a copy of it), and "
                    "stay there",
                    f"你的函数返回的梯度是对的，但调用之后 weight.grad 里"
                    f"{'什么也没有' if grad is None else '是另一个梯度'}：优化器用 weight.grad 更新参数，"
                    "所以各块的梯度必须累加在那里，即传给你的那个权重里（而不是它的副本），并留在那里")
    needed = sum(1 for _, y in pieces if bool((y != loss_of.pad).any()))
    if loss_of.passes >= needed:
        return None
    passes = f"{loss_of.passes} backward pass" + ("" if loss_of.passes == 1 else "es")
    return Text(f"the gradient is right, but your code ran {passes} for {needed} pieces: it "
                "joined the pieces, or summed their losses, into one graph. Accumulation exists because one piece's graph is all "
                "that fits in memory: back-propagate each piece before computing the next",
                f"梯度是对的，但你的代码为 {needed} 块只做了 {loss_of.passes} 次反向传播：它把各块"
                "拼在一起，或把它们的损失加起来，放进了同一张计算图。梯度累积之所以存在，是因为内存只放得下"
                "一块的计算图：算下一块之前，先对这一块做反向传播")


def pieces_answer(weight, pieces, loss_of):
    """The gradient of the whole batch's loss, one batch of all the pieces' tokens, from
    reference_numpy (loss_of is the label-smoothed loss there too)."""
    x = np.concatenate([p[0].double().numpy() for p in pieces])        # (n, d)
    y = np.concatenate([p[1].numpy() for p in pieces])                 # (n,)
    w = weight.detach().double().numpy()                               # (d, V)
    log_p, _ = np_layers.log_softmax_forward((x @ w)[None])            # (1, n, V)
    _, cache = np_loss.label_smoothed_forward(log_p, y[None], loss_of.pad, EPS_LS)
    d_logits = np_loss.label_smoothed_logits_backward(cache)[0]        # (n, V)
    return torch.from_numpy(x.T @ d_logits).to(weight.dtype)           # (d, V)


def piece_gradients(weight, pieces, loss_of):
    """Each piece's gradient of its summed loss, and its token count."""
    found = []
    for x, y in pieces:
        loss, tokens = loss_of(weight, x, y)
        (grad,) = torch.autograd.grad(loss, weight)
        found.append((grad, tokens))
    return found


def left_in_grad(slip):
    """A slip that leaves what it returns in weight.grad too, as the learner's code would."""
    def gradient(weight, pieces, loss_of):
        weight.grad = slip(weight, pieces, loss_of)
        return weight.grad
    return gradient


def combined(rule):
    """A slip: the pieces' gradients g_k (of summed losses) and counts n_k put together by
    `rule(g, n)`, g and n lists over the pieces."""
    @left_in_grad
    def gradient(weight, pieces, loss_of):
        shares = piece_gradients(weight, pieces, loss_of)
        return rule([g for g, _ in shares], [n for _, n in shares])
    return gradient


@left_in_grad
def zero_as_padding(weight, pieces, loss_of):
    n = sum(int((y != 0).sum()) for _, y in pieces)
    return sum(g for g, _ in piece_gradients(weight, pieces, loss_of)) / n


@left_in_grad
def all_positions(weight, pieces, loss_of):
    n = sum(y.numel() for _, y in pieces)
    return sum(g for g, _ in piece_gradients(weight, pieces, loss_of)) / n


MEAN_OF_MEANS = Text("Your code averages the pieces' mean losses: a token in a small piece "
                     "weighs more than one in a large piece. Divide every piece's summed loss "
                     "by the global token count n.",
                     "你的代码对各块的平均损失求了平均：小块里的一个词元比大块里的一个词元分量更重。"
                     "每一块的损失之和都要除以全局词元数 n。")

PIECES = Exercise(
    id="9.2", function="piecewise_gradient",
    topic=Text("a batch's gradient in pieces", "分块计算一个批次的梯度"),
    cases=pieces_cases, answer=pieces_answer, rule=one_pass_per_piece,
    hint=Text("the step's loss is the sum over every target token of the whole batch divided by "
              "their number n (the tokens loss_of counts, padding excluded); so each piece "
              "back-propagates its summed loss divided by the global n, and the pieces' "
              "gradients add up in weight.grad.",
              "一步的损失是整个批次所有目标词元的损失之和，除以它们的个数 n（即 loss_of 计数的词元，不含填充）；"
              "所以每一块反向传播的是它的损失之和除以全局的 n，各块的梯度在 weight.grad 中累加。"),
    slips=(
        Slip(MEAN_OF_MEANS, combined(lambda g, n: sum(gk / nk for gk, nk in zip(g, n)) / len(g)),
             "slip-mean-of-means"),
        Slip(Text("Your code adds up the pieces' mean losses: each piece divides by its own "
                  "count, so the gradient is about K times too large, and tokens of small "
                  "pieces weigh more. Divide by the global count n.",
                  "你的代码把各块的平均损失加了起来：每块除以的是自己的词元数，所以梯度约大了 K 倍，"
                  "而且小块里的词元分量更重。应除以全局词元数 n。"),
             combined(lambda g, n: sum(gk / nk for gk, nk in zip(g, n))), "slip-mean-of-means"),
        Slip(Text("Your gradient is the sum over tokens: divide the loss by the global token "
                  "count n.",
                  "你的梯度是对词元的求和：应把损失除以全局词元数 n。"),
             combined(lambda g, n: sum(g))),
        Slip(Text("Your gradient is K times too small: the pieces' shares add up, they are not "
                  "averaged (DDP averages over processes, so each process multiplies its loss "
                  "by world_size to undo that).",
                  "你的梯度小了 K 倍：各块的份额应当相加，而不是求平均（DDP 对各进程求平均，"
                  "所以每个进程要把损失乘以 world_size 来抵消）。"),
             combined(lambda g, n: sum(g) / sum(n) / len(g))),
        Slip(Text("Your gradient holds the last piece only: .grad was reset between pieces. Let "
                  "the pieces' gradients accumulate, and reset once, before the first.",
                  "你的梯度只含最后一块：在各块之间 `.grad` 被清零了。应让各块的梯度累加，"
                  "只在第一块之前清零一次。"),
             combined(lambda g, n: g[-1] / sum(n))),
        Slip(Text("Your count includes padding positions: n is the number of tokens the loss "
                  "counts, the second value loss_of returns.",
                  "你的计数把填充位置也算进去了：n 是损失所计的词元数，即 loss_of 返回的第二个值。"),
             all_positions),
        Slip(Text("Your count takes the id 0 for padding: which id is padding is for loss_of to "
                  "know, and the count it returns is the one to divide by.",
                  "你的计数把编号 0 当成了填充：哪个编号是填充，由 loss_of 决定；"
                  "应当除以的是它返回的那个计数。"),
             zero_as_padding),
    ))


# ---- 9.3 unscaling the gradients of a scaled loss ----

def gradients(*sizes, seed: int, scale: float, dtype=torch.float32, size: float = 1e-3):
    """Gradients of a loss multiplied by `scale`: `size`-sized values times the scale."""
    return [(size * scale * randn(n, seed=seed + i, dtype=torch.float64)).to(dtype)
            for i, n in enumerate(sizes)]


def with_value(grads, which: int, where: int, value: float):
    grads[which][where] = value
    return grads


def unscale_cases() -> list[Case]:
    S = 2.0 ** 16
    return [
        Case(Text("three float32 gradients, S = 2^16, all finite",
                  "三个 float32 梯度，S = 2^16，全都有限"),
             (gradients(5, 3, 4, seed=0, scale=S), S)),
        Case(Text("an inf in the first of two gradients", "两个梯度中的第一个含有 inf"),
             (with_value(gradients(3, 4, seed=1, scale=S), 0, 0, float("-inf")), S)),
        Case(Text("an inf in the second of three gradients", "三个梯度中的第二个含有 inf"),
             (with_value(gradients(4, 6, 2, seed=3, scale=S), 1, 2, float("inf")), S)),
        Case(Text("a NaN in the first gradient, S = 2^10", "第一个梯度含有 NaN，S = 2^10"),
             (with_value(gradients(3, 5, seed=6, scale=2.0 ** 10), 0, 1, float("nan")),
              2.0 ** 10)),
        Case(Text("a single gradient, S = 1", "只有一个梯度，S = 1"),
             (gradients(6, seed=8, scale=1.0), 1.0)),
        Case(Text("float16 gradients near 1e-6 once unscaled", "float16 梯度，还原后约为 1e-6"),
             (gradients(8, 5, seed=9, scale=S, dtype=torch.float16, size=1e-6), S)),
        Case(Text("float16 at its largest, 65,504, beside 60,000: finite",
                  "float16 的最大值 65,504，旁边是 60,000：有限"),
             (with_value(with_value(gradients(4, seed=11, scale=S, dtype=torch.float16), 0, 1,
                                    65_504.0), 0, 2, 60_000.0), S)),
        Case(Text("float32 gradients near 3e38, finite, whose sum is not",
                  "接近 3e38 的 float32 梯度：本身有限，它们的和却不是"),
             (with_value(with_value(gradients(5, 3, seed=13, scale=S), 1, 0, 3e38), 1, 1, 3e38),
              S)),
    ]


def unscale_answer(grads, scale):
    values = [g.double().numpy() for g in grads]
    unscaled = tuple(torch.from_numpy(v / scale).float() for v in values)
    return unscaled, not all(np.isfinite(v).all() for v in values)


def tight(expected, got, lang: str) -> str | None:
    """compare(), then each unscaled gradient to a relative 1e-6 with no absolute tolerance:
    dividing by a power of two is exact in float32, and a gradient of 1e-6 unscaled in float16
    is off by far less than float32's absolute tolerance, but by percents."""
    problem = compare(expected, got, lang)
    if problem:
        return problem
    say = MESSAGES[lang]
    for i, (want, have) in enumerate(zip(expected[0], got[0])):
        want, have = want.double().numpy(), torch.as_tensor(have).double().numpy()
        off = ~np.isclose(have, want, rtol=1e-6, atol=0.0, equal_nan=True)
        if off.any():
            where = [int(j) for j in np.argwhere(off)[0]]
            shown = entries(want[tuple(where)], have[tuple(where)])
            value = say["value_at"].format(where=where, expected=shown[0], got=shown[1])
            inner = say["item"].format(i=i + 1, n=len(expected[0]), problem=value)
            return say["returned"].format(i=1, n=2, problem=inner)
    return None


def any_not_finite(grads) -> bool:
    return any(not torch.isfinite(g).all() for g in grads)


def unscaled_with(unscale=lambda g, scale: g.float() / scale, check=any_not_finite):
    """A slip: each gradient unscaled by `unscale`, the flag computed by `check`."""
    return lambda grads, scale: (tuple(unscale(g, scale) for g in grads), bool(check(grads)))


IN_FLOAT16 = Text("Your code divides in float16: a gradient near 1e-6 loses its digits there "
                  "(below 6e-5 float16 has few), which is what the scale was for. Convert to "
                  "float32 first, then divide by S.",
                  "你的代码在 float16 中做除法：约 1e-6 的梯度在那里会丢掉有效数字"
                  "（低于 6e-5 时 float16 的有效数字很少），而缩放本来就是为了避免这一点。"
                  "应先转成 float32，再除以 S。")

OVERFLOWED = Text("Your check overflows by itself: the norm or the sum of finite values near the "
                  "largest their dtype holds (65,504 in float16, about 3.4e38 in float32) is "
                  "inf, so a good step is reported as bad. Look at each value (torch.isfinite), "
                  "not at a norm or a sum of them.",
                  "你的检查本身溢出了：接近其数据类型最大值（float16 中为 65,504，float32 中约为 "
                  "3.4e38）的有限值，它们的范数或和是 inf，于是好的一步被报告成坏的。"
                  "应逐个检查每个值（torch.isfinite），而不是检查它们的范数或和。")

UNSCALE = Exercise(
    id="9.3", function="unscaled_gradients",
    topic=Text("unscaling the gradients", "梯度的反缩放"),
    cases=unscale_cases, answer=unscale_answer, compare=tight,
    forbidden=tuple(f"{owner}._amp_foreach_non_finite_check_and_unscale_"    # GradScaler's own
                    for owner in ("torch", "torch.ops.aten")),
    hint=Text("the loss was multiplied by S, so every gradient is S times too large: divide each "
              "by S, in float32 (the dtype of the weights they update), and report whether any "
              "value of any gradient is inf or NaN: then GradScaler skips the step and halves S.",
              "损失乘以了 S，所以每个梯度都大了 S 倍：把每个梯度都除以 S，结果用 float32"
              "（它们所更新的权重的数据类型），并报告是否有任何一个梯度的任何一个值是 inf 或 NaN："
              "若有，GradScaler 就跳过这一步，并把 S 减半。"),
    slips=(
        Slip(IN_FLOAT16, unscaled_with(lambda g, scale: (g / scale).float())),
        Slip(IN_FLOAT16, unscaled_with(lambda g, scale: g / scale)),
        Slip(Text("Your gradients are still scaled: divide each by S.",
                  "你的梯度仍然是缩放过的：要把每个梯度都除以 S。"),
             unscaled_with(lambda g, scale: g.float())),
        Slip(Text("Your code checks only the first gradient: an inf in any of them makes the step "
                  "unusable.",
                  "你的代码只检查了第一个梯度：任何一个梯度中有 inf，这一步都不能用。"),
             unscaled_with(check=lambda vs: not torch.isfinite(vs[0]).all())),
        Slip(Text("Your code looks for inf only: a NaN (from inf - inf, or 0 x inf) makes the "
                  "step just as unusable.",
                  "你的代码只查找 inf：NaN（来自 inf - inf 或 0 x inf）同样会让这一步不能用。"),
             unscaled_with(check=lambda vs: any(torch.isinf(v).any() for v in vs))),
        Slip(Text("Your code looks for NaN only: an inf (the scaled loss overflowed) makes the "
                  "step just as unusable.",
                  "你的代码只查找 NaN：inf（缩放后的损失溢出了）同样会让这一步不能用。"),
             unscaled_with(check=lambda vs: any(torch.isnan(v).any() for v in vs))),
        Slip(OVERFLOWED, unscaled_with(check=lambda vs: any(not torch.isfinite(v.norm())
                                                            for v in vs))),
        Slip(OVERFLOWED, unscaled_with(check=lambda vs: any(not torch.isfinite(v.sum())
                                                            for v in vs))),
        Slip(OVERFLOWED, unscaled_with(check=lambda vs: any(not torch.isfinite(v.float().sum())
                                                            for v in vs))),
        Slip(Text("Your flag is True when every gradient is finite: it must say whether any value "
                  "is inf or NaN.",
                  "所有梯度都有限时，你的标志却是 True：它应当表示是否有任何值是 inf 或 NaN。"),
             unscaled_with(check=lambda vs: all(torch.isfinite(v).all() for v in vs))),
    ))


EXERCISES = [AVERAGE, PIECES, UNSCALE]
