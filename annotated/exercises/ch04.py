"""Chapter 4's coding exercises: the sinusoid table, the rotation between its rows, the gradient
of a learned table."""
import numpy as np
import torch

from annotated.exercises.core import (AUTOGRAD, Case, Exercise, Slip, Text, as_array, compare,
                                      draw, randn)
from reference_numpy import positional as np_positional


def interleaved(angle: torch.Tensor) -> torch.Tensor:
    """(length, d_model/2) angles -> (length, d_model): sin in the even columns, cos in the odd."""
    pe = torch.empty(angle.size(0), 2 * angle.size(1), dtype=angle.dtype)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe


# ---- 4.1 the sinusoid table ----

def table_cases() -> list[Case]:
    length, d_model = draw(1, 400, seed=4101), 2 * draw(1, 128, seed=4102)
    return [
        Case(Text("8 positions, d_model 16", "8 个位置，d_model 16"), (8, 16)),
        Case(Text("a single position", "只有一个位置"), (1, 16)),
        Case(Text("an odd length, 7 positions, d_model 6", "奇数长度，7 个位置，d_model 6"),
             (7, 6)),
        Case(Text("d_model 2: one pair", "d_model 2：只有一对"), (5, 2)),
        Case(Text("50 positions, d_model 512", "50 个位置，d_model 512"), (50, 512)),
        Case(Text("positions 0 to 10,000, d_model 16", "位置 0 到 10,000，d_model 16"),
             (10_001, 16)),
        Case(Text(f"drawn at random, {length} positions, d_model {d_model}",
                  f"随机抽取：{length} 个位置，d_model {d_model}"), (length, d_model)),
    ]


def table_answer(length, d_model):
    return torch.from_numpy(np_positional.sinusoid_table(length, d_model)).float()


def table_with(angles, layout=interleaved):
    """A table whose angles (length, d_model/2), computed in float64, are `angles(pos, i,
    d_model)` with i the pair index: the slips of the formula."""
    def table(length, d_model):
        pos = torch.arange(length, dtype=torch.float64)[:, None]
        i = torch.arange(d_model // 2, dtype=torch.float64)
        return layout(angles(pos, i, d_model)).float()
    return table


def swapped(angle):
    pe = torch.empty(angle.size(0), 2 * angle.size(1), dtype=angle.dtype)
    pe[:, 0::2], pe[:, 1::2] = angle.cos(), angle.sin()
    return pe


def halves(angle):
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


# Computing an angle pos * omega_i in float32 moves it by a few units in its last place (the
# frequency's rounding, the product's, exp's); a table off by no more than this many units of
# each angle is named as computed so.
FLOAT32_ULPS = 8


def table_compare(expected, got, lang: str):
    """compare(), and where every entry of a float answer is off by no more than computing
    the angles pos * omega_i in float32 makes it (FLOAT32_ULPS of each angle, plus float32's
    rounding of the table), that named: however the float32 steps were written."""
    problem = compare(expected, got, lang)
    have = as_array(got)
    if problem is None or have is None or have.shape != tuple(expected.shape) or \
            have.dtype != np.float32:                  # another dtype is named as that alone
        return problem
    length, d_model = expected.shape
    angle = np.arange(length)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    off = np.abs(have.astype(np.float64) - expected.double().numpy())
    if (off <= FLOAT32_ULPS * 2.0 ** -24 * np.repeat(angle, 2, axis=1) + 1e-6).all():
        return problem + FLOAT32(lang)
    return problem


FLOAT32 = Text(" (your angles pos * omega_i were computed in float32: far from position 0 "
               "their rounding shows in the table; compute them in float64 and cast the table to "
               "float32 at the end)",
               "（你的角度 pos * omega_i 是用 float32 计算的：离位置 0 越远，舍入误差在表中越明显；"
               "请用 float64 计算角度，最后再把表转换为 float32）")


TABLE = Exercise(
    id="4.1", function="sinusoids",
    topic=Text("the sinusoid table", "正弦表"),
    cases=table_cases, answer=table_answer, compare=table_compare,
    hint=Text("pair i of the d_model dimensions is a sine (dimension 2i) and a cosine (dimension "
              "2i+1) of the same angle pos / 10000^(2i/d_model) (§3.5); the table is (length, "
              "d_model), returned in float32.",
              "d_model 个维度中的第 i 对，是同一个角度 pos / 10000^(2i/d_model) 的正弦（第 2i 维）"
              "和余弦（第 2i+1 维）（§3.5）；表的形状为 (length, d_model)，以 float32 返回。"),
    slips=(
        Slip(Text("Your sines and cosines are swapped: the sine goes in the even dimensions 2i, "
                  "the cosine in the odd ones 2i+1.",
                  "你的正弦和余弦放反了：正弦放在偶数维 2i，余弦放在奇数维 2i+1。"),
             table_with(lambda pos, i, d: pos / 10000 ** (2 * i / d), swapped)),
        Slip(Text("Your exponent is i/d_model with i the pair: the paper's is 2i/d_model, so your "
                  "slowest pair turns far too fast.",
                  "你的指数是 i/d_model（i 是对的编号）：论文中是 2i/d_model，所以你最慢的那一对"
                  "转得太快了。"),
             table_with(lambda pos, i, d: pos / 10000 ** (i / d))),
        Slip(Text("Your table puts all the sines first and all the cosines after them: in the "
                  "paper's table they alternate, dimension 2i a sine and 2i+1 its cosine.",
                  "你的表先放全部正弦，再放全部余弦：论文的表中它们是交替的，第 2i 维是正弦，"
                  "第 2i+1 维是对应的余弦。"),
             table_with(lambda pos, i, d: pos / 10000 ** (2 * i / d), halves)),
        Slip(Text("Your exponent 2i/d_model was computed with integer division (//): it is 0 for "
                  "every pair, so every pair turns by one radian per position.",
                  "你的指数 2i/d_model 用的是整数除法（//）：每一对的指数都是 0，于是每一对都是"
                  "每个位置转一弧度。"),
             table_with(lambda pos, i, d: pos / 10000 ** ((2 * i) // d))),
        Slip(Text("Your frequencies grow with i: pos is multiplied by 10000^(2i/d_model) where it "
                  "should be divided by it.",
                  "你的频率随 i 增大：`pos` 被乘以 10000^(2i/d_model)，而它应当被除以这个数。"),
             table_with(lambda pos, i, d: pos * 10000 ** (2 * i / d))),
    ))


# ---- 4.4 the rotation from PE(pos) to PE(pos + k) ----

def rotation_cases() -> list[Case]:
    k, d_model = draw(-2000, 2000, seed=4401), 2 * draw(1, 40, seed=4402)
    return [
        Case(Text("k = 1, d_model 8", "k = 1，d_model 8"), (1, 8)),
        Case(Text("k = 3, d_model 16", "k = 3，d_model 16"), (3, 16)),
        Case(Text("a negative offset, k = -2", "负的偏移，k = -2"), (-2, 8)),
        Case(Text("k = 0, d_model 6", "k = 0，d_model 6"), (0, 6)),
        Case(Text("d_model 2: one pair, k = 5", "d_model 2：只有一对，k = 5"), (5, 2)),
        Case(Text("k = 5,000, d_model 64", "k = 5,000，d_model 64"), (5_000, 64)),
        Case(Text("the paper's d_model 512, k = 7", "论文的 d_model 512，k = 7"), (7, 512)),
        Case(Text(f"drawn at random, k = {k}, d_model {d_model}",
                  f"随机抽取：k = {k}，d_model {d_model}"), (k, d_model)),
    ]


def blocks(c: np.ndarray, s: np.ndarray, pairs) -> np.ndarray:
    """The (d_model, d_model) matrix whose pair (p, q) of rows and columns, for each (p, q) in
    `pairs`, holds [[c, -s], [s, c]]."""
    d_model = 2 * len(c)
    m = np.zeros((d_model, d_model))
    p, q = pairs
    m[p, p], m[p, q], m[q, p], m[q, q] = c, -s, s, c
    return m


def pair_dims(d_model: int):
    return np.arange(0, d_model, 2), np.arange(1, d_model, 2)


def rotation_answer(k, d_model):
    # row k of the reference table holds sin(k omega_i) and cos(k omega_i), pair by pair
    row = np_positional.sinusoid_table(1, d_model, start=k)[0]             # (d_model,)
    return torch.from_numpy(blocks(row[1::2], row[0::2], pair_dims(d_model)))


def rotation_with(angle, pairs=pair_dims, transposed=False):
    """The block matrix of the slips: the angle of pair i is `angle(k, i, d_model)`."""
    def rotation(k, d_model):
        i = np.arange(d_model // 2, dtype=np.float64)
        b = angle(k, i, d_model)
        m = torch.from_numpy(blocks(np.cos(b), np.sin(b), pairs(d_model)))
        return m.T.contiguous() if transposed else m
    return rotation


def true_angle(k, i, d_model):
    return k / 10000 ** (2 * i / d_model)


def halves_dims(d_model: int):
    return np.arange(d_model // 2), np.arange(d_model // 2, d_model)


ROTATION = Exercise(
    id="4.4", function="rotation",
    topic=Text("the rotation R_k", "旋转矩阵 R_k"),
    cases=rotation_cases, answer=rotation_answer,
    hint=Text("PE(pos + k) = PE(pos) M with PE(pos) a row vector: M is block diagonal, one 2 x 2 "
              "block per pair (dimensions 2i and 2i+1), and block i turns by the angle k * "
              "omega_i of that pair (§3.5); (d_model, d_model), float64.",
              "PE(pos + k) = PE(pos) M，其中 PE(pos) 是行向量：M 是分块对角矩阵，每一对"
              "（第 2i 维和第 2i+1 维）一个 2 x 2 块，第 i 块转过这一对的角度 k * omega_i"
              "（§3.5）；形状为 (d_model, d_model)，float64。"),
    slips=(
        Slip(Text("Your matrix is the transpose of M: it turns every pair by -k * omega_i, so it "
                  "maps PE(pos) to PE(pos - k). Mind which side the row vector stands on.",
                  "你的矩阵是 M 的转置：它把每一对转过 -k * omega_i，于是把 PE(pos) 映射到 "
                  "PE(pos - k)。注意行向量在哪一边。"),
             rotation_with(true_angle, transposed=True)),
        Slip(Text("Your blocks all turn by the same angle k: each pair turns at its own speed "
                  "omega_i = 1 / 10000^(2i/d_model).",
                  "你的每个块都转过同一个角度 k：每一对都以自己的速度 "
                  "omega_i = 1 / 10000^(2i/d_model) 旋转。"),
             rotation_with(lambda k, i, d: k + 0 * i)),
        Slip(Text("Your matrix turns dimension i with dimension i + d_model/2, the layout of "
                  "tables that put all the sines before the cosines: in the paper's table pair i "
                  "is dimensions 2i and 2i+1.",
                  "你的矩阵把第 i 维和第 i + d_model/2 维一起旋转，这是先放全部正弦、再放全部余弦"
                  "的表的排法：论文的表中，第 i 对是第 2i 维和第 2i+1 维。"),
             rotation_with(true_angle, pairs=halves_dims)),
        Slip(Text("Your angles use the exponent i/d_model: the frequency of pair i is "
                  "1 / 10000^(2i/d_model).",
                  "你的角度用了指数 i/d_model：第 i 对的频率是 1 / 10000^(2i/d_model)。"),
             rotation_with(lambda k, i, d: k / 10000 ** (i / d))),
    ))


# ---- 4.5 the gradient of a learned position table ----

def learned_cases() -> list[Case]:
    return [
        Case(Text("2 sentences of 5 positions, max_len 8", "2 个句子，各 5 个位置，max_len 8"),
             (randn(2, 5, 4, seed=1), 8)),
        Case(Text("a batch of one", "批次中只有一个句子"), (randn(1, 3, 4, seed=2), 6)),
        Case(Text("sentences as long as max_len", "句子与 max_len 一样长"),
             (randn(3, 7, 2, seed=3), 7)),
        Case(Text("one position, float32", "只有一个位置，float32"),
             (randn(4, 1, 6, seed=4, dtype=torch.float32), 5)),
    ]


def learned_answer(dy, max_len):
    table_shape = (max_len, dy.size(-1))
    _, dtable = np_positional.learned_backward(dy.numpy(), (dy.size(1), table_shape))
    return torch.from_numpy(dtable)


def padded_rows(rows: torch.Tensor, max_len: int) -> torch.Tensor:
    """(n, d_model) rows on top of zero rows: a (max_len, d_model) table."""
    return torch.cat([rows, rows.new_zeros(max_len - rows.size(0), rows.size(1))])


LEARNED = Exercise(
    id="4.5", function="learned_table_grad",
    topic=Text("the gradient of a learned table", "可学习表的梯度"),
    cases=learned_cases, answer=learned_answer, forbidden=AUTOGRAD,
    hint=Text("position t of every sentence adds row t of the table, so row t collects the "
              "output gradient at position t from every sentence of the batch; rows no sentence "
              "reaches collect nothing. The gradient has the table's shape, (max_len, d_model).",
              "每个句子的位置 t 都加上表的第 t 行，所以第 t 行收集批次中每个句子在位置 t 上的"
              "输出梯度；没有句子到达的行什么也收集不到。梯度的形状与表相同，为 "
              "(max_len, d_model)。"),
    slips=(
        Slip(Text("Your rows average the gradient over the sentences: row t is used once by each "
                  "sentence, so the gradients add up.",
                  "你的每一行对各句子的梯度取了平均：每个句子都用了一次第 t 行，所以梯度要相加。"),
             lambda dy, max_len: padded_rows(dy.mean(dim=0), max_len)),
        Slip(Text("Your gradient has one row per position of the batch, not one per row of the "
                  "table: the rows from seq to max_len - 1 are part of the table too, with a "
                  "gradient of zero.",
                  "你的梯度每个批次位置一行，而不是表的每行一行：从 `seq` 到 `max_len - 1` 的行也属于"
                  "这张表，它们的梯度为零。"),
             lambda dy, max_len: dy.sum(dim=0)),
        Slip(Text("Your code sums over the positions of each sentence, not over the sentences: "
                  "row t must collect position t of every sentence.",
                  "你的代码把每个句子的各个位置加在一起，而不是把各个句子加在一起：第 t 行应当"
                  "收集每个句子在位置 t 上的梯度。"),
             lambda dy, max_len: dy.sum(dim=1)),
    ))


EXERCISES = [TABLE, ROTATION, LEARNED]
