"""The paper's two architecture figures, drawn anew with matplotlib patches and arrows:
`draw_transformer()` is Figure 1 (the encoder-decoder), `draw_attention()` is Figure 2
(scaled dot-product attention beside multi-head attention).

Every block names the section of the paper that defines it and, where one exists, the class
of this package that implements it, so that a reader can go from the picture to the text and
to the code. One colour per kind of block, the same in both figures. Lengths are in inches:
each panel's axes span its size in inches, so that boxes and 10-point text fit predictably."""
import math
from typing import NamedTuple

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

from annotated.notebooks.chapter import FONT_POINTS, styled

#: Fill colour of each kind of block, shared by both figures.
COLOURS = {"attention": "#f8cfa0", "feed-forward": "#b8d6f2", "norm": "#f6eaa6",
           "embedding": "#dcc8ee", "linear": "#c9e6c0", "softmax": "#f3b9b9", "step": "#e4e4e4"}
TITLE, NOTE = FONT_POINTS + 1, FONT_POINTS  # font sizes in points: block titles, notes under them
LINE = 0.21                                 # inches between two lines of text in a block
INK, GREY = "#222222", "#555555"
FRAME_PAD = 0.15                            # inches between a stack's last block and its frame


class Box(NamedTuple):
    """A drawn block: centre (x, y), width and height, in the axes' inches."""
    x: float
    y: float
    w: float
    h: float

    @property
    def top(self):
        return self.y + self.h / 2

    @property
    def bottom(self):
        return self.y - self.h / 2

    def side(self, direction):
        """x of the left (direction -1) or right (+1) edge."""
        return self.x + direction * self.w / 2


def _panel(fig, left, width, height):
    """Axes covering `width` x `height` inches of `fig` from `left` inches, in inch units."""
    fig_w, fig_h = fig.get_size_inches()
    ax = fig.add_axes((left / fig_w, 0, width / fig_w, height / fig_h))
    ax.set(xlim=(0, width), ylim=(0, height), aspect="equal")
    ax.axis("off")
    return ax


def _box(ax, x, bottom, w, title, note=None, kind="step", copies=0, dashed=False):
    """A rounded block from `bottom` up, centred on x: `title` (lines split by newlines) over a
    smaller grey `note`; `copies` offset shadows behind it stand for h parallel copies."""
    title_lines = title.count("\n") + 1
    note_lines = note.count("\n") + 1 if note else 0
    h = 0.16 + LINE * (title_lines + note_lines)
    box = Box(x, bottom + h / 2, w, h)
    for i in range(copies, -1, -1):          # the shadows first, the front block last
        ax.add_patch(FancyBboxPatch((x - w / 2 + 0.07 * i, box.bottom + 0.07 * i), w, h,
                                    boxstyle="round,pad=0,rounding_size=0.06",
                                    fc=COLOURS[kind], ec=INK, lw=1.0, ls="--" if dashed else "-"))
    top = box.top - 0.08
    ax.text(x, top - LINE * title_lines / 2, title, ha="center", va="center", fontsize=TITLE,
            color=INK, linespacing=1.3)
    if note:
        ax.text(x, top - LINE * (title_lines + note_lines / 2), note, ha="center", va="center",
                fontsize=NOTE, color=GREY, linespacing=1.3)
    return box


def _arrow(ax, *points, head=True):
    """A line through `points` (x, y), with an arrowhead at the last one unless `head` is False."""
    ax.add_patch(FancyArrowPatch(path=Path(points), arrowstyle="-|>" if head else "-",
                                 mutation_scale=12, color=INK, lw=1.2, shrinkA=0, shrinkB=0))


def _label(ax, x, y, text, size=NOTE, color=INK, **kwargs):
    """Free text: an input, an output or an annotation."""
    ax.text(x, y, text, fontsize=size, color=color, **kwargs)


def _add_and_norm(ax, x, below, w, branch_y, route_x):
    """The Add & Norm block above the sub-layer `below`, and the residual line that leaves the
    stream at `branch_y`, runs up beside the sub-layer along `route_x` and enters the block."""
    _arrow(ax, (x, below.top), (x, below.top + 0.25))
    norm = _box(ax, x, below.top + 0.25, w, "Add & Norm", "§3.1 · SublayerConnection", "norm")
    edge = norm.side(1 if route_x > x else -1)
    ax.add_patch(Circle((x, branch_y), 0.035, color=INK))
    _arrow(ax, (x, branch_y), (route_x, branch_y), (route_x, norm.y), (edge, norm.y))
    return norm


def _stack(ax, x, bottom, side, blocks, w=2.4):
    """One encoder or decoder layer drawn as a frame marked "N ×": each of `blocks`
    (title, note, kind) followed by Add & Norm with its residual line on the `side` (-1 left,
    +1 right). Returns the frame's top and the sub-layer boxes."""
    route_x = x + side * (w / 2 + 0.18)
    start, sublayers = bottom, []
    for title, note, kind in blocks:
        _arrow(ax, (x, start), (x, start + 0.45))
        box = _box(ax, x, start + 0.45, w, title, note, kind)
        start = _add_and_norm(ax, x, box, w, start + 0.2, route_x).top
        sublayers.append(box)
    top = start + FRAME_PAD
    left, right = sorted((x - side * (w / 2 + 0.15), route_x + side * 0.17))
    ax.add_patch(FancyBboxPatch((left, bottom), right - left, top - bottom, fc="none", ec=GREY,
                                lw=1.3, boxstyle="round,pad=0,rounding_size=0.12"))
    _label(ax, (right + 0.05) if side > 0 else (left - 0.05), (bottom + top) / 2, "N ×",
           size=13, weight="bold", ha="left" if side > 0 else "right", va="center")
    return top, sublayers


def _embedded_input(ax, x, side, label, title):
    """From the tokens at the bottom: embedding box, then "+" the positional encoding, drawn as
    a sinusoid in a circle on the `side` of the column. Returns where the stream goes on."""
    _label(ax, x, 0.25, label, ha="center", va="center")
    _arrow(ax, (x, 0.4), (x, 0.65))
    embed = _box(ax, x, 0.65, 2.4, title, "§3.4 · Embeddings", "embedding")
    plus_y, pe_x = embed.top + 0.38, x + side * 0.55
    _arrow(ax, (x, embed.top), (x, plus_y - 0.12))
    ax.add_patch(Circle((x, plus_y), 0.12, fc="white", ec=INK, lw=1.2))
    _label(ax, x, plus_y, "+", size=13, ha="center", va="center_baseline")
    ax.add_patch(Circle((pe_x, plus_y), 0.17, fc=COLOURS["embedding"], ec=INK, lw=1.0))
    t = [i / 40 for i in range(41)]                         # one period of a sine
    ax.plot([pe_x - 0.12 + 0.24 * s for s in t],
            [plus_y + 0.08 * math.sin(2 * math.pi * s) for s in t], color=INK, lw=1.0)
    _arrow(ax, (pe_x - side * 0.17, plus_y), (x + side * 0.12, plus_y))
    _label(ax, pe_x + side * 0.25, plus_y, "Positional\nencoding §3.5", va="center",
           ha="left" if side > 0 else "right", linespacing=1.3)
    return plus_y + 0.12


ATTENTION_NOTE = "§3.2.2 · MultiHeadAttention"
FEED_FORWARD = ("Feed-forward", "§3.3 · PositionwiseFeedForward", "feed-forward")
ENCODER_LAYER = [("Multi-head self-attention", ATTENTION_NOTE, "attention"), FEED_FORWARD]
DECODER_LAYER = [("Masked multi-head\nself-attention", ATTENTION_NOTE, "attention"),
                 ("Multi-head attention over\nthe encoder output", ATTENTION_NOTE, "attention"),
                 FEED_FORWARD]


@styled
def draw_transformer():
    """Figure 1 of the paper: the encoder (left) and decoder (right) stacks with their inputs,
    the encoder output feeding every decoder layer, and the output layers on top."""
    enc_x, dec_x, gap_x = 2.05, 5.95, 4.0
    fig = plt.figure(figsize=(8, 10.2))
    ax = _panel(fig, 0, 8, 10.2)
    bottom = _embedded_input(ax, enc_x, -1, "Inputs (source tokens)", "Input embedding") + 0.25
    _embedded_input(ax, dec_x, 1, "Outputs (shifted right)", "Output embedding")
    for x in (enc_x, dec_x):
        _arrow(ax, (x, bottom - 0.25), (x, bottom), head=False)
    enc_top, _ = _stack(ax, enc_x, bottom, -1, ENCODER_LAYER)
    dec_top, (_, cross, _) = _stack(ax, dec_x, bottom, 1, DECODER_LAYER)
    memory_y = enc_top + 0.25
    _arrow(ax, (enc_x, enc_top - FRAME_PAD), (enc_x, memory_y), (gap_x, memory_y), (gap_x, cross.y),
           (cross.side(-1), cross.y))
    _label(ax, gap_x - 0.1, memory_y + 0.08, "encoder output\n(the memory)", ha="right",
           va="bottom", linespacing=1.3)
    _label(ax, gap_x + 0.08, cross.y + 0.06, "K, V", va="bottom")
    _label(ax, dec_x - 0.08, cross.bottom - 0.12, "Q", ha="right", va="center")
    _label(ax, enc_x - 1.5, enc_top + 0.08, "Encoder · §3.1", size=TITLE, va="bottom")
    _label(ax, dec_x + 1.55, dec_top + 0.08, "Decoder · §3.1", size=TITLE, ha="right",
           va="bottom")
    _arrow(ax, (dec_x, dec_top - FRAME_PAD), (dec_x, dec_top + 0.35))
    linear = _box(ax, dec_x, dec_top + 0.35, 1.8, "Linear · §3.4", kind="linear")
    _arrow(ax, (dec_x, linear.top), (dec_x, linear.top + 0.25))
    softmax = _box(ax, dec_x, linear.top + 0.25, 1.8, "Softmax · §3.4", kind="softmax")
    _arrow(ax, (dec_x, softmax.top), (dec_x, softmax.top + 0.3))
    _label(ax, dec_x, softmax.top + 0.35, "Output probabilities", ha="center", va="bottom")
    return fig


def _title(ax, text, note):
    """A panel's title, and under it in grey the section and the code that implements it."""
    top = ax.get_ylim()[1]
    _label(ax, ax.get_xlim()[1] / 2, top - 0.05, text, size=TITLE + 1, weight="bold",
           ha="center", va="top")
    _label(ax, ax.get_xlim()[1] / 2, top - 0.35, note, color=GREY, ha="center", va="top")


def _result(ax, x, below, y, equation):
    """An arrow from the block `below` up to the panel's `equation`, written at height y."""
    _arrow(ax, (x, below.top), (x, y - 0.05))
    _label(ax, x, y, equation, size=TITLE, ha="center", va="bottom", linespacing=1.6)


def _scaled_dot_product(ax, equation_y):
    """Left panel of Figure 2: equation (1) as a flow from Q and K up to the weighted values."""
    x, w, v_x = 1.7, 2.3, 3.35
    for name, input_x in (("Q", 1.2), ("K", 2.2), ("V", v_x)):
        _label(ax, input_x, 0.25, name, size=TITLE, ha="center", va="center")
    for input_x in (1.2, 2.2):
        _arrow(ax, (input_x, 0.4), (input_x, 0.65))
    box = _box(ax, x, 0.65, w, "MatMul", r"$Q K^\top$: every query · every key", "step")
    for title, note, kind, optional in [
            (r"Scale by $1/\sqrt{d_k}$", "keeps the scores near unit size", "step", False),
            ("Mask (optional)", "−∞ on blocked keys, §3.2.3", "step", True),
            ("Softmax", "each row over the keys", "softmax", False),
            ("MatMul", "weights times V", "step", False)]:
        _arrow(ax, (x, box.top), (x, box.top + 0.3))
        box = _box(ax, x, box.top + 0.3, w, title, note, kind, dashed=optional)
    _arrow(ax, (v_x, 0.4), (v_x, box.y), (box.side(1), box.y))
    _result(ax, x, box, equation_y,
            r"$\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\left(\dfrac{QK^\top}{\sqrt{d_k}}\right)V$"
            "  (1)")
    _title(ax, "Scaled dot-product attention", "§3.2.1 · attention()")


def _multi_head(ax, equation_y):
    """Right panel of Figure 2: h projections of Q, K and V, h attentions, Concat, W^O."""
    x = 2.1
    for name, input_x, width in (("Q", 0.75, "k"), ("K", 2.1, "k"), ("V", 3.45, "v")):
        _label(ax, input_x, 0.25, name, size=TITLE, ha="center", va="center")
        _arrow(ax, (input_x, 0.4), (input_x, 0.65))
        linear = _box(ax, input_x, 0.65, 1.15, rf"Linear $W_i^{name}$",
                      rf"$d_\mathrm{{model}} \to d_{width}$", "linear", copies=2)
        _arrow(ax, (input_x, linear.top), (input_x, linear.top + 0.6))
    heads = _box(ax, x, linear.top + 0.6, 3.0, "Scaled dot-product attention",
                 "h heads in parallel, equation (1)", "attention", copies=2)
    _arrow(ax, (x, heads.top), (x, heads.top + 0.6))
    concat = _box(ax, x, heads.top + 0.6, 2.4, "Concat",
                  r"$\mathrm{head}_1, \ldots, \mathrm{head}_h$: width $h d_v$", "step")
    _arrow(ax, (x, concat.top), (x, concat.top + 0.45))
    output = _box(ax, x, concat.top + 0.45, 2.4, r"Linear $W^O$",
                  r"$h d_v \to d_\mathrm{model}$", "linear")
    _result(ax, x, output, equation_y,
            r"$\mathrm{MultiHead}(Q,K,V)="
            r"\mathrm{Concat}(\mathrm{head}_1,\ldots,\mathrm{head}_h)W^O$" "\n"
            r"$\mathrm{head}_i=\mathrm{Attention}(QW_i^Q,\,KW_i^K,\,VW_i^V)$")
    _title(ax, "Multi-head attention", "§3.2.2 · MultiHeadAttention")


@styled
def draw_attention():
    """Figure 2 of the paper: scaled dot-product attention (left) and multi-head attention
    (right), whose middle block runs h copies of the left panel side by side."""
    fig = plt.figure(figsize=(8, 6.6))
    _scaled_dot_product(_panel(fig, 0, 3.6, 6.6), 5.2)
    _multi_head(_panel(fig, 3.6, 4.4, 6.6), 5.2)
    return fig
