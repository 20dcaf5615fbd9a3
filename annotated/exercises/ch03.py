"""Chapter 3's coding exercises: splitting into heads, Concat, and the whole multi-head layer."""
import math

import numpy as np
import torch

from annotated.attention import attention
from annotated.exercises.core import Case, Exercise, Slip, Text, randn
from reference_numpy import multihead as np_multihead


def labelled(*shape) -> torch.Tensor:
    """Entries numbered 0, 1, 2, ... in memory order (int64), so that a misplaced one shows."""
    return torch.arange(math.prod(shape)).view(*shape)


def tensor_of(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array)).to(dtype)


# ---- 3.1 splitting into heads ----

def split_cases() -> list[Case]:
    return [
        Case(Text("batch 2, 5 positions, h = 3 heads of width 4", "批次为 2，5 个位置，h = 3 个宽度为 4 的头"),
             (randn(2, 5, 12, seed=1), 3)),
        Case(Text("a batch of one, 7 positions, h = 8 heads of width 2, float32",
                  "批次中只有一个，7 个位置，h = 8 个宽度为 2 的头，float32"),
             (randn(1, 7, 16, seed=2, dtype=torch.float32), 8)),
        Case(Text("one head, h = 1", "只有一个头，h = 1"), (randn(2, 3, 6, seed=3), 1)),
        Case(Text("heads of width 1", "宽度为 1 的头"), (randn(2, 4, 6, seed=4), 6)),
        Case(Text("numbered entries (int64), h = 4", "按顺序编号的元素（int64），h = 4"),
             (labelled(2, 3, 8), 4)),
    ]


def split_answer(x, h):
    return tensor_of(np_multihead.split_heads(x.numpy(), h), x.dtype)


SPLIT = Exercise(
    id="3.1", function="split_into_heads",
    topic=Text("splitting into heads", "拆分成多个头"),
    cases=split_cases, answer=split_answer,
    hint=Text("the last axis holds the h heads side by side, head i's d features in one block "
              "(§3.2.2); cut it into (h, d), then move the head axis in front of the positions, "
              "so that attention treats it like a batch axis: (batch, h, seq, d).",
              "最后一个轴并排放着 h 个头，头 i 的 d 个特征连成一块（§3.2.2）；先把它切成 (h, d)，"
              "再把头轴移到位置轴前面，让注意力把它当作批次轴：(batch, h, seq, d)。"),
    slips=(
        Slip(Text("Your heads were cut with view(batch, h, seq, d) alone: that takes the numbers "
                  "in memory order, so each head mixes several positions. Cut the last axis "
                  "into (h, d), then move the head axis.",
                  "你只用 view(batch, h, seq, d) 切出了各个头：这样是按内存顺序取数，每个头都混进了"
                  "好几个位置。应先把最后一个轴切成 (h, d)，再移动头轴。"),
             lambda x, h: x.reshape(x.size(0), h, x.size(1), x.size(2) // h)),
        Slip(Text("Your heads take every h-th feature: head i's features are one block, "
                  "i*d to (i+1)*d - 1, so cut the last axis as (h, d), not (d, h).",
                  "你的每个头取的是每隔 h 个的特征：头 i 的特征是连在一起的一块，即 i*d 到 "
                  "(i+1)*d - 1，所以最后一个轴应切成 (h, d)，而不是 (d, h)。"),
             lambda x, h: x.reshape(*x.shape[:2], -1, h).permute(0, 3, 1, 2)),
        Slip(Text("Your heads have width h: here the second argument is the number of heads, "
                  "and each head's width is the last axis divided by h (the layer's own "
                  "split_heads takes the width instead).",
                  "你的每个头宽度为 h：这里第二个参数是头的个数，每个头的宽度是最后一个轴的长度除以 h"
                  "（层自带的 split_heads 接收的则是宽度）。"),
             lambda x, h: x.reshape(*x.shape[:2], -1, h).transpose(1, 2)),
        Slip(Text("Your heads stay behind the positions, (batch, seq, h, d): move the head axis "
                  "in front, (batch, h, seq, d).",
                  "你的头轴还在位置轴后面，即 (batch, seq, h, d)：应把头轴移到前面，"
                  "即 (batch, h, seq, d)。"),
             lambda x, h: x.reshape(*x.shape[:2], h, -1)),
    ))


# ---- 3.2 Concat ----

def concat_cases() -> list[Case]:
    return [
        Case(Text("batch 2, h = 3 heads, 5 positions, width 4", "批次为 2，h = 3 个头，5 个位置，宽度为 4"),
             (randn(2, 3, 5, 4, seed=5),)),
        Case(Text("a batch of one, h = 8 heads, 7 positions, width 2, float32",
                  "批次中只有一个，h = 8 个头，7 个位置，宽度为 2，float32"),
             (randn(1, 8, 7, 2, seed=6, dtype=torch.float32),)),
        Case(Text("one head, h = 1", "只有一个头，h = 1"), (randn(2, 1, 3, 5, seed=7),)),
        Case(Text("one position", "只有一个位置"), (randn(2, 4, 1, 3, seed=8),)),
        Case(Text("numbered entries (int64), h = 4", "按顺序编号的元素（int64），h = 4"),
             (labelled(2, 4, 3, 2),)),
    ]


def concat_answer(x):
    return tensor_of(np_multihead.merge_heads(x.numpy()), x.dtype)


CONCAT = Exercise(
    id="3.2", function="concat_heads",
    topic=Text("Concat of the heads", "拼接各个头"),
    cases=concat_cases, answer=concat_answer,
    hint=Text("Concat(head_1, ..., head_h) of §3.2.2 lays each position's h head outputs side "
              "by side, head 1's d features first: bring the head axis next to the feature axis, "
              "then merge the two.",
              "§3.2.2 的 Concat(head_1, ..., head_h) 把每个位置的 h 个头的输出并排放在一起，"
              "头 1 的 d 个特征在最前：先把头轴移到特征轴旁边，再把这两个轴合并。"),
    slips=(
        Slip(Text("Your heads were merged without moving the head axis back: positions are "
                  "mixed.",
                  "你在合并各个头之前没有把头轴移回去：不同位置的数混在了一起。"),
             lambda x: x.reshape(x.size(0), x.size(2), -1), "slip-view-merge"),
        Slip(Text("view() cannot merge axes that a transpose has put out of memory order: merge "
                  "them with reshape (or call .contiguous() before view).",
                  "转置之后，轴在内存中已不按顺序排列，`view()` 无法合并它们：请用 `reshape` 合并"
                  "（或者先调用 `.contiguous()` 再 `view`）。"),
             lambda x: x.transpose(1, 2).view(x.size(0), x.size(2), -1), "slip-view-merge"),
        Slip(Text("Your Concat interleaves the heads, feature j of head i at j*h + i: Concat puts "
                  "head 1's d features first, then head 2's.",
                  "你的拼接把各个头交错排列，头 i 的第 j 个特征落在 j*h + i 处：Concat 应先放头 1 "
                  "的 d 个特征，再放头 2 的。"),
             lambda x: x.permute(0, 2, 3, 1).reshape(x.size(0), x.size(2), -1)),
        Slip(Text("Your heads are not merged, (batch, seq, h, d): merge the last two axes into "
                  "one of width h*d.",
                  "你没有合并各个头，结果是 (batch, seq, h, d)：应把最后两个轴合并成宽度为 h*d "
                  "的一个轴。"),
             lambda x: x.transpose(1, 2)),
    ))


# ---- 3.3 multi-head attention ----

NAMES = ("W_Q", "W_K", "W_V", "W_O")


def layer_weights(d_model: int, h: int, d_k: int, d_v: int, seed: int,
                  dtype=torch.float64) -> dict:
    """The parameters of MultiHeadAttention(d_model, h, d_k, d_v), by their names, drawn with
    the variance of the layer's own initialisation."""
    widths = {"W_Q": (h * d_k, d_model), "W_K": (h * d_k, d_model),
              "W_V": (h * d_v, d_model), "W_O": (d_model, h * d_v)}
    params = {}
    for i, name in enumerate(NAMES):
        out, inp = widths[name]
        params[f"{name}.weight"] = randn(out, inp, seed=seed + 2 * i, dtype=dtype) / math.sqrt(inp)
        params[f"{name}.bias"] = 0.1 * randn(out, seed=seed + 2 * i + 1, dtype=dtype)
    return params


def multi_head_cases() -> list[Case]:
    x = randn(2, 5, 16, seed=20)
    query, key, value = randn(2, 3, 16, seed=21), randn(2, 5, 16, seed=22), randn(2, 5, 16, seed=23)
    odd = randn(1, 7, 12, seed=24, dtype=torch.float32)
    return [
        Case(Text("self-attention, d_model = 16, h = 4, d_k = d_v = 4",
                  "自注意力，d_model = 16，h = 4，d_k = d_v = 4"),
             (x, x, x, layer_weights(16, 4, 4, 4, seed=30), 4)),
        Case(Text("three different inputs, 3 queries, 5 keys, d_k = 3, d_v = 5",
                  "三个不同的输入，3 个查询，5 个键，d_k = 3，d_v = 5"),
             (query, key, value, layer_weights(16, 4, 3, 5, seed=40), 4)),
        Case(Text("a batch of one, 7 positions, h = 2, float32",
                  "批次中只有一个，7 个位置，h = 2，float32"),
             (odd, odd, odd, layer_weights(12, 2, 6, 6, seed=50, dtype=torch.float32), 2)),
        Case(Text("one head, h = 1, d_k = d_model", "只有一个头，h = 1，d_k = d_model"),
             (x, x, x, layer_weights(16, 1, 16, 16, seed=60), 1)),
        Case(Text("h = 8 heads of width 2", "h = 8 个宽度为 2 的头"),
             (x, x, x, layer_weights(16, 8, 2, 2, seed=70), 8)),
    ]


def multi_head_answer(query, key, value, params, h):
    arrays = {f"mha.{name}": p.double().numpy() for name, p in params.items()}
    out, _ = np_multihead.multihead_forward(arrays, "mha", query.double().numpy(),
                                            key.double().numpy(), value.double().numpy(), None, h)
    return torch.from_numpy(out).to(query.dtype)


def slipped(scale: str = "d_k", split: str = "transpose", merge: str = "transpose",
            project: str = "x W^T + b"):
    """Multi-head attention with the slips named by its arguments (the defaults are the
    right answer): the scale ("d_k" or "d_model"), the split and the merge ("transpose" or
    "view", the second without the transpose), the projections ("x W^T + b", "x W", "no bias",
    or "none": the inputs cut into heads as they are, W^O applied or not)."""
    def forward(query, key, value, params, h):
        def proj(x, name):
            if project == "x W":
                return x @ params[f"{name}.weight"] + params[f"{name}.bias"]
            bias = None if project == "no bias" else params[f"{name}.bias"]
            return torch.nn.functional.linear(x, params[f"{name}.weight"], bias)

        def heads(x):                                    # (batch, seq, h*d) -> (batch, h, seq, d)
            b, n, hd = x.shape
            return x.reshape(b, h, n, hd // h) if split == "view" else \
                x.reshape(b, n, h, hd // h).transpose(1, 2)

        unprojected = project in ("none", "none, no W^O")
        q, k, v = (heads(x if unprojected else proj(x, name))
                   for x, name in ((query, "W_Q"), (key, "W_K"), (value, "W_V")))
        d = query.size(-1) if scale == "d_model" else q.size(-1)
        out = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(-1) @ v   # (batch, h, q_len, d_v)
        b, _, n, d_v = out.shape
        concat = out.reshape(b, n, h * d_v) if merge == "view" else \
            out.transpose(1, 2).reshape(b, n, h * d_v)
        return concat if project == "none, no W^O" else proj(concat, "W_O")
    return forward


NO_PROJECTION = Text("Your heads are slices of the inputs themselves, with no W^Q, W^K, W^V: each "
                     "position then attends mostly to itself. Project first, then split.",
                     "你的各个头是输入本身的切片，没有经过 W^Q、W^K、W^V：于是每个位置几乎只关注"
                     "它自己。应先投影，再拆分。")

MULTI_HEAD = Exercise(
    id="3.3", function="multi_head",
    topic=Text("multi-head attention", "多头注意力"),
    cases=multi_head_cases, answer=multi_head_answer,
    allowed=(attention,),                       # "You may use ... `attention`"
    hint=Text("§3.2.2: project the inputs with W^Q, W^K, W^V (x W^T + b, as nn.Linear does), "
              "split each into h heads, run equation (1) in every head at once, scaled by the "
              "head's own width, Concat the heads, then project with W^O.",
              "§3.2.2：用 W^Q、W^K、W^V 对输入做投影（x W^T + b，与 nn.Linear 相同），"
              "各自拆成 h 个头，在所有头上同时计算公式 (1)，按每个头自己的宽度缩放，"
              "拼接各个头，最后用 W^O 投影。"),
    slips=(
        Slip(Text("Your scores are divided by sqrt(d_model), not by the head's sqrt(d_k): the "
                  "weights start out nearly uniform.",
                  "你的分数除以的是 sqrt(d_model)，而不是每个头的 sqrt(d_k)：权重一开始就几乎是均匀的。"),
             slipped(scale="d_model"), "slip-scale"),
        Slip(NO_PROJECTION, slipped(project="none"), "slip-no-projection"),
        Slip(NO_PROJECTION, slipped(project="none, no W^O"), "slip-no-projection"),
        Slip(Text("Your heads were merged without moving the head axis back: positions are "
                  "mixed.",
                  "你在合并各个头之前没有把头轴移回去：不同位置的数混在了一起。"),
             slipped(merge="view"), "slip-view-merge"),
        Slip(Text("Your heads were split with a view to (batch, h, seq, d) alone: each head mixes "
                  "several positions. Cut the features into (h, d), then move the head axis.",
                  "你只用 `view` 变成 (batch, h, seq, d) 来拆分各个头：每个头都混进了好几个位置。"
                  "应先把特征切成 (h, d)，再移动头轴。"),
             slipped(split="view")),
        Slip(Text("Your projections compute x W: a weight is stored as (out_features, "
                  "in_features), as in nn.Linear, so the projection is x W^T + b.",
                  "你的投影算的是 x W：权重按 (out_features, in_features) 存放，与 nn.Linear 相同，"
                  "所以投影应为 x W^T + b。"),
             slipped(project="x W")),
        Slip(Text("Your projections leave out the biases: each of the four has one, "
                  "x W^T + b.",
                  "你的投影漏掉了偏置：四个投影各有一个偏置，即 x W^T + b。"),
             slipped(project="no bias")),
    ))


EXERCISES = [SPLIT, CONCAT, MULTI_HEAD]
