"""Chapter 1's coding exercises: attention with and without the scale, a softmax that does not
overflow, and the softmax's backward."""
import math

import torch

from annotated.exercises.core import (ATTENTION, AUTOGRAD, Case, Exercise,
                                      Slip, Text, randn)
from reference_numpy import attention as np_attention
from reference_numpy import layers as np_layers


def rows(values: list[list[float]], dtype=torch.float64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


# ---- 1.1 scaled dot-product attention ----

def attention_cases() -> list[Case]:
    q, k, v = randn(2, 3, 4, seed=1), randn(2, 5, 4, seed=2), randn(2, 5, 3, seed=3)
    return [
        Case(Text("a batch of 2, 3 queries, 5 keys, d_k = 4, d_v = 3",
                  "批次为 2，3 个查询，5 个键，d_k = 4，d_v = 3"), (q, k, v)),
        Case(Text("batch and head axes (2, 2, ...), float32", "批次轴和头轴 (2, 2, ...)，float32"),
             (randn(2, 2, 4, 8, seed=4, dtype=torch.float32),
              randn(2, 2, 6, 8, seed=5, dtype=torch.float32),
              randn(2, 2, 6, 8, seed=6, dtype=torch.float32))),
        Case(Text("a batch of one, 1 query, 7 keys", "批次中只有一个，1 个查询，7 个键"),
             (q[:1, :1], randn(1, 7, 4, seed=7), randn(1, 7, 3, seed=8))),
        Case(Text("d_k = 512", "d_k = 512"),
             (randn(2, 3, 512, seed=9), randn(2, 10, 512, seed=10), randn(2, 10, 3, seed=11))),
        Case(Text("a single key", "只有一个键"), (q, k[:, :1], v[:, :1])),
        Case(Text("self-attention shapes: 5 queries, 5 keys (other values)",
                  "自注意力的形状：5 个查询，5 个键（取值不同）"),
             (randn(2, 5, 4, seed=26), k, v)),
        Case(Text("scores of a few hundred, float32: exp() of them overflows",
                  "几百大小的分数，float32：对它们取 exp() 会溢出"),
             (12 * randn(1, 3, 16, seed=23, dtype=torch.float32),
              12 * randn(1, 4, 16, seed=24, dtype=torch.float32),
              randn(1, 4, 3, seed=25, dtype=torch.float32))),
        Case(Text("float16", "float16"), (q.half(), k.half(), v.half())),
    ]


def attention_answer(q, k, v):
    out, cache = np_attention.attention_forward(q.double().numpy(), k.double().numpy(),
                                                v.double().numpy())
    return torch.from_numpy(out).to(q.dtype), torch.from_numpy(cache[0]).to(q.dtype)


def scaled_by(divisor, softmax_dim: int = -1, values: str = "v"):
    """Attention whose scores are divided by divisor(d_k), whose softmax runs over
    `softmax_dim`, and which averages `values` ("v", or "k" for the slip): slips unless
    divisor is sqrt, softmax_dim is -1 and values is "v"."""
    def attend(q, k, v):
        weights = (q @ k.transpose(-2, -1) / divisor(q.size(-1))).softmax(softmax_dim)
        return weights @ (v if values == "v" else k), weights
    return attend


def weights_first(q, k, v):
    out, weights = scaled_by(math.sqrt)(q, k, v)
    return weights, out


def exp_of_raw_scores(q, k, v):
    """The softmax written from its definition, exp(s) / sum exp(s): NaN once exp overflows."""
    e = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).exp()
    weights = e / e.sum(-1, keepdim=True)
    return weights @ v, weights



SCALED = Exercise(
    id="1.1", function="scaled_attention",
    topic=Text("scaled dot-product attention", "缩放点积注意力"),
    cases=attention_cases, answer=attention_answer,
    hint=Text("equation (1) of §3.2.1: one score per query and key, divided by the square root "
              "of the width they share; each query's row of weights sums to 1 over the keys; "
              "the output averages the values. Return (output, weights).",
              "§3.2.1 的公式 (1)：每个查询和每个键之间有一个分数，除以二者共同宽度的平方根；"
              "每个查询的那一行权重在各个键上求和为 1；输出是值的加权平均。返回 (output, weights)。"),
    forbidden=ATTENTION,
    slips=(
        Slip(Text("Your scores are not divided by sqrt(d_k): with wide vectors the softmax "
                  "saturates.",
                  "你的分数没有除以 sqrt(d_k)：向量较宽时，softmax 会饱和。"),
             scaled_by(lambda d_k: 1.0)),
        Slip(Text("Your scores are divided by d_k, not by sqrt(d_k): their variance shrinks to "
                  "1/d_k and the weights drift towards uniform.",
                  "你的分数除以的是 d_k，而不是 sqrt(d_k)：分数的方差缩小到 1/d_k，"
                  "权重趋向均匀。"),
             scaled_by(lambda d_k: d_k)),
        Slip(Text("Your softmax runs over the queries (dim=-2): each query's weights must sum to "
                  "1 over the keys, the last axis.",
                  "你的 softmax 是在查询上做的（dim=-2）：每个查询的权重应当在键上求和为 1，"
                  "也就是在最后一个轴上。"),
             scaled_by(math.sqrt, softmax_dim=-2)),
        Slip(Text("Your output averages the keys: the weights multiply the values v.",
                  "你的输出是对键求平均：权重应当乘以值 v。"),
             scaled_by(math.sqrt, values="k")),
        Slip(Text("Your function returns the weights first: return (output, weights).",
                  "你的函数先返回了权重：应返回 (output, weights)。"),
             weights_first),
        Slip(Text("Your softmax takes exp() of the raw scores: above about 88 in float32 exp "
                  "overflows to inf, and inf / inf is NaN. Use a softmax that cannot overflow: "
                  "torch's, or yours from Exercise 1.2.",
                  "你的 softmax 直接对原始分数取 exp()：在 float32 中，分数超过约 88 时 exp "
                  "就会溢出成 inf，而 inf / inf 是 NaN。请用不会溢出的 softmax："
                  "PyTorch 的，或者你在练习 1.2 中写的。"),
             exp_of_raw_scores),
    ))


# ---- 1.2 a softmax that does not overflow ----

def softmax_cases() -> list[Case]:
    inf = float("inf")
    return [
        Case(Text("three rows of five scores", "三行，每行五个分数"), (2 * randn(3, 5, seed=12),)),
        Case(Text("scores near +1000 and -1000, float32", "分数接近 +1000 和 -1000，float32"),
             (torch.cat([1000 + 40 * randn(1, 4, seed=21), -1000 + 40 * randn(1, 4, seed=22)])
              .float(),)),
        Case(Text("rows spread wide, from about -100 to +200, float32",
                  "分布很宽的行，从约 -100 到 +200，float32"),
             ((torch.tensor([[-100.0, 0.0, 200.0, 50.0, 120.0, -30.0],
                            [180.0, -90.0, 20.0, 0.0, 60.0, 140.0]])
               + randn(2, 6, seed=26)).float(),)),
        Case(Text("masked scores (-inf)", "被屏蔽的分数（-inf）"),
             (rows([[0.5, -inf, 1.0, -inf], [-inf, 2.0, -inf, -inf], [1, 2, 3, 4]]),)),
        Case(Text("float16, scores up to about 20", "float16，分数最高约为 20"),
             ((14 + 3 * randn(2, 3, 4, seed=13)).half(),)),
        Case(Text("a single score", "只有一个分数"), (rows([7.0]),)),
    ]


def softmax_answer(x):
    return torch.from_numpy(np_layers.softmax_forward(x.double().numpy())[0]).to(x.dtype)


def shifted_softmax(shift, dim: int = -1):
    """exp(x - shift(x)) normalised over `dim`: right only when shift(x) is each row's
    maximum, kept as an axis of its own."""
    def softmax(x):
        e = torch.exp(x - shift(x))
        return e / e.sum(dim, keepdim=True)
    return softmax


# torch's functions that take a softmax or log-softmax inside, in C++ where no call is seen
SOFTMAX_INSIDE = ("torch.nn.functional.cross_entropy", "torch.nn.functional.linear_cross_entropy",
                  "torch.nn.functional.softmin", "torch.nn.functional.gumbel_softmax",
                  "torch._C._nn.cross_entropy_loss", "torch.ops.aten.cross_entropy_loss")


STABLE = Exercise(
    id="1.2", function="stable_softmax",
    topic=Text("a softmax that does not overflow", "不会溢出的 softmax"),
    cases=softmax_cases, answer=softmax_answer,
    hint=Text("the softmax does not change when the same number is subtracted from every score "
              "of a row; choose the number so that no exp() can exceed 1. Work along the last "
              "axis and keep the dtype.",
              "同一行的每个分数都减去同一个数，softmax 不变；选好这个数，让任何 exp() 都不超过 1。"
              "沿最后一个轴计算，保持数据类型不变。"),
    forbidden=tuple(f"{owner}.{kind}" for owner in ("torch", "torch.Tensor",
                                                    "torch.nn.functional", "torch.special")
                    for kind in ("softmax", "log_softmax"))
    + ("torch._softmax", "torch._log_softmax", "torch._masked_softmax", "torch.sparse.softmax",
       "torch.sparse.log_softmax", "torch.logsumexp", "torch.Tensor.logsumexp",
       "torch.special.logsumexp", "torch.logcumsumexp", "torch.Tensor.logcumsumexp",
       "torch.ops.aten.logsumexp", "torch.ops.aten.logcumsumexp")
    + tuple(f"torch.ops.aten.{op}" for op in ("softmax", "_softmax", "log_softmax",
                                               "_log_softmax", "special_softmax",
                                               "_sparse_softmax", "_sparse_log_softmax",
                                               "_masked_softmax", "_safe_softmax"))
    + SOFTMAX_INSIDE + ATTENTION,
    slips=(
        Slip(Text("Your softmax takes exp() of the raw scores: exp overflows to inf above about "
                  "88 in float32 (11 in float16), and inf / inf is NaN; exp of scores far below "
                  "0 gives 0 / 0.",
                  "你的 softmax 直接对原始分数取 exp()：在 float32 中，分数超过约 88 时 exp 就会"
                  "溢出成 inf（float16 中约为 11），而 inf / inf 是 NaN；远低于 0 的分数取 exp "
                  "则得到 0 / 0。"),
             shifted_softmax(lambda x: 0.0)),
        Slip(Text("Your softmax normalises down the first axis, not along each row: the last "
                  "axis must sum to 1.",
                  "你的 softmax 是沿第一个轴归一化的，而不是沿每一行：应当让最后一个轴求和为 1。"),
             shifted_softmax(lambda x: x.amax(0, keepdim=True), dim=0)),
        Slip(Text("Your softmax subtracts each row's minimum: the other scores stay far above 0 "
                  "and still overflow, and a -inf minimum turns the row into NaN.",
                  "你的 softmax 减去的是每行的最小值：其余分数仍远大于 0，照样溢出；"
                  "而最小值为 -inf 时，整行都变成 NaN。"),
             shifted_softmax(lambda x: x.amin(-1, keepdim=True))),
        Slip(Text("Your softmax subtracts each row's mean: scores far above the mean still "
                  "overflow. Only the row's maximum keeps every exp() at 1 or below.",
                  "你的 softmax 减去的是每行的平均值：远高于平均值的分数照样溢出。"
                  "只有减去每行的最大值，才能让每个 exp() 都不超过 1。"),
             shifted_softmax(lambda x: x.mean(-1, keepdim=True))),
        Slip(Text("Your softmax subtracts the maximum of the whole tensor, not of each row: a row "
                  "far below that maximum gets exp() = 0 everywhere, then 0 / 0.",
                  "你的 softmax 减去的是整个张量的最大值，而不是每行的最大值：远低于这个最大值的"
                  "一行，exp() 处处为 0，于是得到 0 / 0。"),
             shifted_softmax(lambda x: x.max())),
        Slip(Text("Your row maximum or row sum has lost its axis, so it does not line up with "
                  "the rows: keep it with keepdim=True.",
                  "你的每行最大值或每行之和丢掉了被归约的轴，于是与各行对不齐："
                  "用 keepdim=True 保留这个轴。"),
             shifted_softmax(lambda x: x.amax(-1))),
    ))


# ---- 1.3 the softmax's backward ----

def backward_cases() -> list[Case]:
    masked = rows([[0.3, float("-inf"), 1.2, -0.4], [float("-inf"), 0.8, float("-inf"), 2.0]])
    return [
        Case(Text("three rows of five", "三行，每行五个"),
             (randn(3, 5, seed=14), randn(3, 5, seed=15).softmax(-1))),
        Case(Text("a batch (2, 3, 4), float32", "一个批次 (2, 3, 4)，float32"),
             (randn(2, 3, 4, seed=16, dtype=torch.float32),
              randn(2, 3, 4, seed=17, dtype=torch.float32).softmax(-1))),
        Case(Text("masked entries, p = 0 exactly", "被屏蔽的元素，p 恰好为 0"),
             (randn(2, 4, seed=18), masked.softmax(-1))),
        Case(Text("a saturated row, p nearly one-hot", "饱和的一行，p 几乎是独热向量"),
             (randn(1, 6, seed=19), (40 * randn(1, 6, seed=20)).softmax(-1))),
        Case(Text("a single entry, p = 1", "只有一个元素，p = 1"),
             (rows([[0.7]]), rows([[1.0]]))),
    ]


def backward_answer(dp, p):
    return torch.from_numpy(np_layers.softmax_backward(dp.double().numpy(),
                                                       p.double().numpy())).to(p.dtype)


BACKWARD = Exercise(
    id="1.3", function="softmax_backward",
    topic=Text("the softmax's backward", "softmax 的反向传播"),
    cases=backward_cases, answer=backward_answer,
    hint=Text("each score moves every weight of its row: dp_i/ds_j = p_i (delta_ij - p_j). "
              "Multiply the incoming gradient by this whole Jacobian, row by row along the last "
              "axis; the off-diagonal entries matter as much as the diagonal.",
              "每个分数都会牵动它那一行的所有权重：dp_i/ds_j = p_i (delta_ij - p_j)。"
              "把传入的梯度乘以整个雅可比矩阵，沿最后一个轴逐行计算；非对角元素和对角元素同样重要。"),
    forbidden=AUTOGRAD,
    slips=(
        Slip(Text("Your gradient keeps only the diagonal of the Jacobian, p (1 - p) dp: each "
                  "score also moves the other weights of its row, by -p_i p_j.",
                  "你的梯度只保留了雅可比矩阵的对角线，即 p (1 - p) dp：每个分数还会以 -p_i p_j "
                  "牵动同一行的其他权重。"),
             lambda dp, p: p * (1 - p) * dp),
        Slip(Text("Your gradient is p * dp: the sum term, the rowwise sum of dp * p, is "
                  "missing.",
                  "你的梯度是 p * dp：少了求和项，也就是 dp * p 按行求的和。"),
             lambda dp, p: p * dp),
        Slip(Text("Your sum term adds up dp alone: it is the rowwise sum of dp * p, each "
                  "gradient weighted by its p.",
                  "你的求和项只对 `dp` 求和：它应当是 `dp * p` 按行求的和，每个梯度都要乘以它的 p。"),
             lambda dp, p: p * (dp - dp.sum(-1, keepdim=True))),
        Slip(Text("Your gradient is not multiplied by p in front: a masked entry (p = 0) must "
                  "get exactly zero gradient.",
                  "你的梯度前面没有乘以 p：被屏蔽的元素（p = 0）的梯度必须恰好为零。"),
             lambda dp, p: dp - (dp * p).sum(-1, keepdim=True)),
        Slip(Text("Your sum runs down the first axis, not along each row: each row of p is a "
                  "softmax of its own.",
                  "你的求和是沿第一个轴做的，而不是沿每一行：p 的每一行各自是一个 softmax。"),
             lambda dp, p: p * (dp - (dp * p).sum(0, keepdim=True))),
    ))


EXERCISES = [SCALED, STABLE, BACKWARD]
