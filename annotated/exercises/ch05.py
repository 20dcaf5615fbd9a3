"""Chapter 5's coding exercises: the feed-forward network, the scaled embedding lookup, the
post-LN sublayer connection with its residual dropout."""
import math

import torch
from torch import nn

from annotated.exercises.core import Case, Exercise, Slip, Text, randn, seeded, tokens
from reference_numpy import embeddings as np_embeddings
from reference_numpy import feedforward as np_feedforward
from reference_numpy import sublayer as np_sublayer


# ---- 5.1 the position-wise feed-forward network ----

def ffn_weights(d_model: int, d_ff: int, seed: int, dtype=torch.float64) -> tuple:
    """W_1 (d_ff, d_model), b_1 (d_ff,), W_2 (d_model, d_ff), b_2 (d_model,): as nn.Linear
    stores them."""
    return (randn(d_ff, d_model, seed=seed, dtype=dtype), randn(d_ff, seed=seed + 1, dtype=dtype),
            randn(d_model, d_ff, seed=seed + 2, dtype=dtype),
            randn(d_model, seed=seed + 3, dtype=dtype))


def ffn_cases() -> list[Case]:
    return [
        Case(Text("2 sentences of 5 positions, d_model 8, d_ff 32",
                  "2 个句子，各 5 个位置，d_model 8，d_ff 32"),
             (randn(2, 5, 8, seed=1), *ffn_weights(8, 32, seed=10))),
        Case(Text("a batch of one, one position", "批次中只有一个句子，只有一个位置"),
             (randn(1, 1, 4, seed=2), *ffn_weights(4, 12, seed=20))),
        Case(Text("an odd length 7, float32", "奇数长度 7，float32"),
             (randn(3, 7, 6, seed=3, dtype=torch.float32),
              *ffn_weights(6, 20, seed=30, dtype=torch.float32))),
        Case(Text("no batch axis: (seq, d_model)", "没有批次轴：(seq, d_model)"),
             (randn(4, 8, seed=4), *ffn_weights(8, 16, seed=40))),
        Case(Text("d_ff = d_model = 6", "d_ff = d_model = 6"),
             (randn(2, 3, 6, seed=5), *ffn_weights(6, 6, seed=50))),
    ]


def ffn_answer(x, W_1, b_1, W_2, b_2):
    params = {name: p.double().numpy() for name, p in
              (("f.W_1.weight", W_1), ("f.W_1.bias", b_1), ("f.W_2.weight", W_2),
               ("f.W_2.bias", b_2))}
    out, _ = np_feedforward.feedforward_forward(params, "f", x.double().numpy())
    return torch.from_numpy(out).to(x.dtype)


FFN = Exercise(
    id="5.1", function="feed_forward",
    topic=Text("the feed-forward network", "前馈网络"),
    cases=ffn_cases, answer=ffn_answer,
    hint=Text("equation (2): a linear map to d_ff, a ReLU, a linear map back to d_model, on the "
              "last axis (§3.3); the weights are stored as nn.Linear stores them, (d_out, d_in), "
              "so the input is multiplied by their transpose.",
              "公式 (2)：先一个线性映射到 d_ff，再 ReLU，再一个线性映射回 d_model，都作用在最后"
              "一个轴上（§3.3）；权重按 nn.Linear 的方式存放，形状为 (d_out, d_in)，所以输入要乘"
              "以它们的转置。"),
    forbidden=("torch.nn.functional.linear", "torch.nn.Linear.forward", "torch.ops.aten.linear",
               "torch.ops.aten._addmm_activation"),
    slips=(
        Slip(Text("Your network has a ReLU after the second linear map too: eq. (2) ends with "
                  "+ b_2, so the output can be negative.",
                  "你的网络在第二个线性映射之后也加了 ReLU：公式 (2) 以 + b_2 结尾，所以输出可以为负。"),
             lambda x, W_1, b_1, W_2, b_2: ((x @ W_1.T + b_1).relu() @ W_2.T + b_2).relu()),
        Slip(Text("Your network has no ReLU: two linear maps in a row are one linear map, "
                  "max(0, .) is what makes the FFN more than that.",
                  "你的网络没有 ReLU：两个线性映射连在一起仍然是一个线性映射，正是 max(0, .) "
                  "让 FFN 不止于此。"),
             lambda x, W_1, b_1, W_2, b_2: (x @ W_1.T + b_1) @ W_2.T + b_2),
        Slip(Text("Your code multiplies by W itself: nn.Linear stores W as (d_out, d_in), so "
                  "x W^T is the product eq. (2) writes as x W.",
                  "你的代码直接乘以 W：nn.Linear 把 W 存为 (d_out, d_in)，所以公式 (2) 写的 x W "
                  "在这里是 x W^T。"),
             lambda x, W_1, b_1, W_2, b_2: (x @ W_1 + b_1).relu() @ W_2 + b_2),
        Slip(Text("Your code adds b_1 after the ReLU: the bias goes inside, max(0, x W_1 + b_1).",
                  "你的代码在 ReLU 之后才加 b_1：偏置应在里面，即 max(0, x W_1 + b_1)。"),
             lambda x, W_1, b_1, W_2, b_2: ((x @ W_1.T).relu() + b_1) @ W_2.T + b_2),
    ))


# ---- 5.2 the embedding lookup, scaled ----

def embed_cases() -> list[Case]:
    return [
        Case(Text("2 sentences, vocabulary 11, d_model 16", "2 个句子，词表 11，d_model 16"),
             (tokens([[4, 5, 6, 2], [7, 2, 0, 0]]), randn(11, 16, seed=1))),
        Case(Text("repeated ids", "重复的编号"), (tokens([[3, 3, 9, 3]]), randn(10, 6, seed=2))),
        Case(Text("a batch of one, one token", "批次中只有一个句子，只有一个词元"),
             (tokens([[1]]), randn(5, 8, seed=3))),
        Case(Text("d_model 512, float32", "d_model 512，float32"),
             (tokens([[5, 1, 2], [8, 8, 0]]), randn(9, 512, seed=4, dtype=torch.float32))),
    ]


def embed_answer(tokens, table):
    out, _ = np_embeddings.embedding_forward(tokens.numpy(), table.double().numpy())
    return torch.from_numpy(out).to(table.dtype)


EMBED = Exercise(
    id="5.2", function="embed_tokens",
    topic=Text("the scaled embedding", "缩放后的嵌入"),
    cases=embed_cases, answer=embed_answer,
    hint=Text("each id picks its row of the (vocab, d_model) table, and §3.4 multiplies the "
              "rows by sqrt(d_model), the width of a row: (batch, seq) -> (batch, seq, d_model).",
              "每个编号取出 (vocab, d_model) 表中对应的一行，§3.4 再把这些行乘以 sqrt(d_model)，"
              "即一行的宽度：(batch, seq) -> (batch, seq, d_model)。"),
    slips=(
        Slip(Text("Your rows are not scaled: §3.4 multiplies them by sqrt(d_model).",
                  "你的行没有缩放：§3.4 把它们乘以 sqrt(d_model)。"),
             lambda tokens, table: table[tokens]),
        Slip(Text("Your rows are divided by sqrt(d_model): §3.4 multiplies by it, to bring rows "
                  "of size d_model^-1/2 up to size 1.",
                  "你的行被除以了 sqrt(d_model)：§3.4 是乘以它，把大小约为 d_model^-1/2 的行放大"
                  "到 1 左右。"),
             lambda tokens, table: table[tokens] / math.sqrt(table.size(1))),
        Slip(Text("Your rows are multiplied by d_model: the scale is its square root.",
                  "你的行乘以了 d_model：缩放因子是它的平方根。"),
             lambda tokens, table: table[tokens] * table.size(1)),
        Slip(Text("Your scale is the square root of the vocabulary size: d_model is the width of "
                  "the table, its second axis.",
                  "你的缩放因子是词表大小的平方根：d_model 是表的宽度，即它的第二个轴。"),
             lambda tokens, table: table[tokens] * math.sqrt(table.size(0))),
    ))


# ---- 5.3 the sublayer connection: post-LN with residual dropout ----

class FixedDropout:
    """Dropout whose mask is chosen in advance, so that a check can repeat it: the mask is 0
    where an element is dropped and 1 / (1 - P_drop) where it is kept; None: dropout is off."""

    def __init__(self, mask: torch.Tensor | None):
        self.mask = mask

    def __call__(self, z):
        return z if self.mask is None else z * self.mask


def layer_norm(d_model: int, seed: int, dtype=torch.float64) -> nn.LayerNorm:
    """A LayerNorm whose gamma and beta are not the 1 and 0 of initialisation."""
    norm = nn.LayerNorm(d_model, eps=1e-5).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * randn(d_model, seed=seed, dtype=dtype))
        norm.bias.copy_(0.5 * randn(d_model, seed=seed + 1, dtype=dtype))
    return norm.requires_grad_(False)


def dropout_mask(shape: tuple, P_drop: float, seed: int, dtype=torch.float64) -> torch.Tensor:
    kept = torch.rand(*shape, generator=seeded(seed)) >= P_drop
    return kept.to(dtype) / (1 - P_drop)


def sublayer_case(label: Text, shape: tuple, P_drop: float | None, seed: int,
                  dtype=torch.float64, scale: float = 1.0) -> Case:
    mask = None if P_drop is None else dropout_mask(shape, P_drop, seed + 2, dtype)
    return Case(label, (scale * randn(*shape, seed=seed, dtype=dtype),
                        randn(*shape, seed=seed + 1, dtype=dtype),
                        layer_norm(shape[-1], seed + 3, dtype), FixedDropout(mask)))


def sublayer_cases() -> list[Case]:
    one_dropped = sublayer_case(Text("one position entirely dropped", "一个位置被整个丢弃"),
                                (2, 3, 6), 0.1, seed=40)
    one_dropped.args[3].mask[1, 2] = 0.0
    return [
        sublayer_case(Text("2 sentences of 5 positions, d_model 8, P_drop 0.1",
                           "2 个句子，各 5 个位置，d_model 8，P_drop 0.1"), (2, 5, 8), 0.1, seed=10),
        sublayer_case(Text("a batch of one, one position, float32",
                           "批次中只有一个句子，只有一个位置，float32"), (1, 1, 4), 0.5, seed=20,
                      dtype=torch.float32),
        sublayer_case(Text("an input 100 times larger", "输入大 100 倍"), (2, 3, 8), 0.1,
                      seed=30, scale=100.0),
        one_dropped,
        sublayer_case(Text("dropout off (eval mode)", "关闭 dropout（评估模式）"), (2, 4, 8),
                      None, seed=50),
    ]


def sublayer_answer(x, fx, norm, drop):
    params = {"s.norm.weight": norm.weight.detach().double().numpy(),
              "s.norm.bias": norm.bias.detach().double().numpy()}
    masks = None if drop.mask is None else {"s.dropout": drop.mask.double().numpy()}
    out, _ = np_sublayer.sublayer_forward(params, "s", x.double().numpy(), fx.double().numpy(),
                                          masks)
    return torch.from_numpy(out).to(x.dtype)


PRE_LN = Text("Your code returns x + Dropout(fx) with no norm after the sum: that is the "
              "residual of pre-LN, x + Sublayer(LayerNorm(x)), not the paper's model. In the "
              "paper the norm comes after the residual sum: LayerNorm(x + Dropout(Sublayer(x))).",
              "你的代码返回 x + Dropout(fx)，求和之后没有归一化：这是 Pre-LN 的残差，即 "
              "x + Sublayer(LayerNorm(x))，不是论文的模型。论文中归一化在残差求和之后："
              "LayerNorm(x + Dropout(Sublayer(x)))。")


SUBLAYER = Exercise(
    id="5.3", function="post_ln",
    topic=Text("the sublayer connection", "子层连接"),
    cases=sublayer_cases, answer=sublayer_answer,
    hint=Text("§3.1 and §5.4: dropout on the sublayer's output, then the residual sum with x, "
              "then the LayerNorm of that sum; call the `norm` and `drop` you are given, each "
              "once.",
              "§3.1 和 §5.4：先对子层的输出做 dropout，再与 x 做残差求和，最后对这个和做"
              "层归一化；调用传给你的 `norm` 和 `drop`，各一次。"),
    slips=(
        Slip(PRE_LN, lambda x, fx, norm, drop: x + drop(fx), "slip-pre-ln"),
        Slip(Text("Your code normalises x before adding the sublayer's output: "
                  "LayerNorm(x) + Dropout(fx) is neither the paper's post-LN nor pre-LN. The "
                  "norm takes the sum: LayerNorm(x + Dropout(fx)).",
                  "你的代码在加上子层输出之前就对 x 做了归一化：LayerNorm(x) + Dropout(fx) 既不是"
                  "论文的 Post-LN，也不是 Pre-LN。归一化的对象是和：LayerNorm(x + Dropout(fx))。"),
             lambda x, fx, norm, drop: norm(x) + drop(fx), "slip-pre-ln"),
        Slip(Text("Your dropout hits x, the residual, too (on the sum, or on x and fx each): "
                  "§5.4 drops the sublayer's output before it is added to x, so x always passes "
                  "whole.",
                  "你的 dropout 连残差 x 也一起丢弃了（作用在和上，或分别作用在 `x` 和 `fx` 上）："
                  "§5.4 是在子层的输出加到 x 之前对它做 dropout，所以 x 总是完整地通过。"),
             lambda x, fx, norm, drop: norm(drop(x + fx))),
        Slip(Text("Your dropout comes after the LayerNorm: §5.4 drops the sublayer's output "
                  "before it is added to x and normalised.",
                  "你的 dropout 放在层归一化之后：§5.4 是在子层的输出加到 x 上、再做归一化之前"
                  "对它做 dropout。"),
             lambda x, fx, norm, drop: drop(norm(x + fx))),
        Slip(Text("Your code has no residual: x must be added to the sublayer's output before "
                  "the norm.",
                  "你的代码没有残差：在归一化之前，必须把 x 加到子层的输出上。"),
             lambda x, fx, norm, drop: norm(drop(fx))),
        Slip(Text("Your code does not call `drop`: §5.4 applies dropout to the output of every "
                  "sublayer before the residual sum.",
                  "你的代码没有调用 `drop`：§5.4 在残差求和之前，对每个子层的输出做 dropout。"),
             lambda x, fx, norm, drop: norm(x + fx)),
    ))


EXERCISES = [FFN, EMBED, SUBLAYER]
