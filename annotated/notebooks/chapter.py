"""What the chapters need besides figures: show a piece of the package's source (one source
of truth: chapters display the code, never redefine it), pick a section out of a results file,
check results against reference_numpy in one line, measure how spread out attention weights
are (entropy), save figures under stable names (refusing any whose text a page would show too
small to read; the one text size of the figures is set here), read the switch between the
quick and the full form of the chapters, do the bookkeeping of chapters 2 and 3's experiments
(our layer's weights in PyTorch's, which outputs a changed token moves, row A's measured
costs), and build chapter 6's table of the paper's training settings. The figures themselves
are drawn by `annotated.notebooks.plots` (the model, chapters 1-5) and
`annotated.notebooks.training_plots` (training, decoding and results, chapters 6-9), one call
per figure.

Quick mode is the default: training cells train tiny models on the Multi30k sample shipped
with the package, so the chapters run offline in about a minute, whatever data location is
set. `python chapters/regenerate.py` sets ANNOTATED_FULL=1 for the full form: the real
corpus from the data location, the real training runs, the committed outputs and figures."""
import inspect
import os
import re
import sys
import tempfile
from pathlib import Path

import torch

PACKAGE = Path(__file__).resolve().parents[1]        # annotated/, whose source show() prints
#: The widest printed line, in characters, that a page's 700-pixel column shows without
#: scrolling sideways.
OUTPUT_CHARS = 88

FULL_ENV = "ANNOTATED_FULL"


def full_form() -> bool:
    """Whether ANNOTATED_FULL asks for the chapters' full form: 1 (or true, yes, on). Another
    value than those and 0 (false, no, off) is said, and gives the quick form."""
    value = os.environ.get(FULL_ENV, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value not in ("", "0", "false", "no", "off"):
        print(f"note: {FULL_ENV}={os.environ[FULL_ENV]!r} is neither 1 nor 0, so the chapters "
              f"run in their quick form; set {FULL_ENV}=1 for the full one", file=sys.stderr)
    return False


#: Quick mode unless ANNOTATED_FULL=1: heavy cells (training) then run a tiny version of themselves.
QUICK = not full_form()
#: The Multi30k the chapters read: the shipped sample in quick mode, the full corpus otherwise.
MULTI30K = "multi30k_sample" if QUICK else "multi30k"
#: Where save_figure writes: ANNOTATED_FIGURES, which chapters/regenerate.py sets to the
#: project's figures/ folder, or else a scratch folder, so that the tests and a reader's own
#: runs never overwrite the committed figures.
FIGURES_ENV = "ANNOTATED_FIGURES"
SCRATCH_FIGURES = Path(tempfile.gettempdir()) / "annotated-transformer-figures"


def show(obj):
    """Display the source of a module, class or function from `annotated/` as a code block."""
    from IPython.display import Markdown, display
    obj = inspect.unwrap(obj)                   # a decorated function: show the function itself
    source = inspect.getsource(obj)
    where = Path(inspect.getsourcefile(obj)).resolve().relative_to(PACKAGE.parent)
    display(Markdown(f"`{where}`\n```python\n{source.rstrip()}\n```"))


def section(markdown: str, title: str) -> str:
    """The body of the section of a results file whose heading starts with '## title'."""
    found = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", markdown, re.S | re.M)
    if found is None:
        raise KeyError(f"no section '## {title}...' in the results file")
    return found.group(1).strip()


def agree_with_reference(pairs: list[tuple], tol: float = 1e-12):
    """The chapters' check against reference_numpy in one line: every (name, ours, reference)
    of `pairs` (tensors or arrays of one shape) agrees to `tol` in max abs difference (0: the
    same values). Prints the names checked, wrapped to fit a page's column; raises, naming every
    pair that does not agree."""
    import numpy as np
    def array(x):
        return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, np.float64)
    shapes = [f"{name} {array(a).shape} vs {array(b).shape}" for name, a, b in pairs
              if array(a).shape != array(b).shape]
    if shapes:
        raise AssertionError(f"shapes differ from reference_numpy: {', '.join(shapes)}")
    differ = {name: float(np.abs(array(a) - array(b)).max()) for name, a, b in pairs}
    off = [f"{name} ({d:.1e})" for name, d in differ.items() if not d <= tol]
    if off:
        raise AssertionError(f"differ from reference_numpy by more than {tol:g}: {', '.join(off)}")
    how = "are identical to" if tol == 0 else f"agree to {tol:g} (max abs difference) with"
    names = list(differ) if len(differ) <= 12 else [*list(differ)[:4], "...", list(differ)[-1]]
    head = f"all {len(pairs)} {how} reference_numpy:"
    lines = [f"{head} {', '.join(names)}"]
    if len(lines[0]) > OUTPUT_CHARS:                 # the names below it, whole, as many a line as fit
        lines = [head, " "]
        for name in names:
            if len(lines[-1]) + len(name) + 2 > OUTPUT_CHARS:
                lines.append(" ")
            lines[-1] += f" {name},"
        lines[-1] = lines[-1][:-1]
    print("\n".join(lines))


def entropy(p):
    """Entropy in nats of attention weights p (..., keys) over the last axis: log(keys) when
    uniform, 0 when one-hot."""
    p = torch.as_tensor(p)
    return -(p * p.clamp_min(torch.finfo(p.dtype).tiny).log()).sum(-1)   # 0 log 0 = 0, any dtype


# ---- Figures: one text size, legible at a page's width, saved under stable names ----

#: Figures are saved at this many pixels per inch: a text of s points is s * DPI / 72 pixels
#: tall in the file.
DPI = 100
#: The widest a page shows a figure, in pixels: the text column. A wider figure is scaled down
#: to it, and its text with it.
COLUMN_PX = 700
#: The rule every saved figure meets: no text smaller than this many pixels on the page, its
#: size in points * DPI / 72 * min(1, COLUMN_PX / the figure's width in pixels).
SMALLEST_TEXT_PX = 9.0
#: The size in points of every text of the book's figures (titles, labels, ticks, legends,
#: notes), set in one place: FIGURE_STYLE gives it to matplotlib (the helpers decorated with
#: `styled` draw under it) and the helpers that size a text themselves read it. WIDE is the
#: width in inches of a figure that spans the page: 10 points in it show at
#: 10 * 100/72 * 700/900 = 10.8 pixels, with room to spare over the rule.
FONT_POINTS = 10
WIDE = 9.0
FIGURE_STYLE = {"font.size": FONT_POINTS, "axes.titlesize": FONT_POINTS,
                "axes.labelsize": FONT_POINTS, "xtick.labelsize": FONT_POINTS,
                "ytick.labelsize": FONT_POINTS, "legend.fontsize": FONT_POINTS,
                "legend.title_fontsize": FONT_POINTS, "figure.titlesize": FONT_POINTS}


def legible_points(width: float) -> float:
    """The smallest text, in points, that the rule allows in a figure `width` inches wide."""
    return SMALLEST_TEXT_PX * 72 / DPI * max(1.0, width * DPI / COLUMN_PX)


def styled(draw):
    """Decorator of the figure helpers: draw under FIGURE_STYLE (and draw a returned figure once
    before leaving it, so that its tick labels take the style's size, not the reader's)."""
    import functools

    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure
        with plt.rc_context(FIGURE_STYLE):
            result = draw(*args, **kwargs)
            if isinstance(result, Figure):
                result.canvas.draw()
        return result
    return drawn


def text_on_the_page(fig) -> tuple[list[tuple[float, str]], float]:
    """What a page shows of `fig` saved by save_figure: every text it draws, as (points,
    text), and its width in pixels after the tight crop. The figure is drawn to find them, so
    that only texts that appear count (tick labels included), each once per line."""
    if not hasattr(fig.canvas, "get_renderer"):          # a figure made without pyplot
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    texts = []
    draw_text = renderer.draw_text

    def record(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            texts.append((prop.get_size_in_points(), s))
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = record
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text
    import matplotlib
    box = fig.get_tightbbox(renderer).padded(matplotlib.rcParams["savefig.pad_inches"])
    return texts, box.width * DPI


def smallest_text(fig) -> tuple[float, float, str, float]:
    """The smallest text of `fig` on the page: (its size in pixels at COLUMN_PX, in points, the
    text, the saved figure's width in pixels)."""
    texts, width = text_on_the_page(fig)
    if not texts:
        return float("inf"), float("inf"), "", width
    points, text = min(texts, key=lambda t: t[0])
    return points * DPI / 72 * min(1.0, COLUMN_PX / width), points, text, width


def check_legible(fig, name: str) -> None:
    """Refuse a figure with any text smaller than SMALLEST_TEXT_PX pixels on the page."""
    px, points, text, width = smallest_text(fig)
    if px < SMALLEST_TEXT_PX:
        raise ValueError(
            f"figure {name!r} is not legible on the page: its smallest text, {text!r} at "
            f"{points:g} pt, shows at {px:.1f} px when the figure ({width:.0f} px wide after the "
            f"tight crop) is scaled to a {COLUMN_PX} px column; the rule is at least "
            f"{SMALLEST_TEXT_PX:g} px (points * {DPI}/72 * min(1, {COLUMN_PX}/width)). Draw its "
            f"text larger or the figure narrower (see FONT_POINTS and WIDE in "
            f"annotated/notebooks/chapter.py).")


def save_figure(fig, name: str):
    """Write `<name>.png` into ANNOTATED_FIGURES (or the scratch folder), with deterministic
    bytes (no timestamp metadata), and return its path; refuse it first (check_legible) if any
    of its texts would show smaller than SMALLEST_TEXT_PX on a page COLUMN_PX wide."""
    check_legible(fig, name)
    folder = Path(os.environ.get(FIGURES_ENV) or SCRATCH_FIGURES)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return path


# ---- Chapters 2 and 3 (masks, heads): the experiments' bookkeeping ----

def torch_multihead_like(ours):
    """A `torch.nn.MultiheadAttention` holding the weights of one of our `MultiHeadAttention`
    layers (it stacks W^Q, W^K, W^V into one `in_proj_weight`), in the same dtype; it needs
    h * d_k = h * d_v = d_model."""
    theirs = torch.nn.MultiheadAttention(ours.W_Q.in_features, ours.h, batch_first=True,
                                         dtype=ours.W_Q.weight.dtype)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_Q.weight, ours.W_K.weight, ours.W_V.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.W_Q.bias, ours.W_K.bias, ours.W_V.bias]))
        theirs.out_proj.weight.copy_(ours.W_O.weight)
        theirs.out_proj.bias.copy_(ours.W_O.bias)
    return theirs


def decoder_output_changes(model, src, tgt_in, tgt_mask, other: int, fallback: int):
    """Which decoder outputs move when one target token changes. Entry (j, i) of the (T, T)
    result is the largest change of output i when the token at position j becomes `other`
    (`fallback` where it already is `other`), the source and every other token kept.
    src: (1, S), tgt_in: (1, T), tgt_mask: any mask `decode` takes."""
    from annotated.data.tokenizer import PAD
    from annotated.masks import padding_mask
    src_mask = padding_mask(src, PAD)
    with torch.no_grad():
        memory = model.encode(src, src_mask)                         # (1, S, d_model)
        base = model.decode(memory, src_mask, tgt_in, tgt_mask)      # (1, T, d_model)
        change = torch.zeros(tgt_in.size(1), tgt_in.size(1), dtype=base.dtype)
        for j in range(tgt_in.size(1)):
            changed = tgt_in.clone()
            changed[0, j] = other if tgt_in[0, j] != other else fallback
            moved = model.decode(memory, src_mask, changed, tgt_mask) - base
            change[j] = moved[0].abs().amax(-1)                      # (T,): one value per output
    return change


def attention_layer_costs(rows: list[str], n_tokens: int) -> list[dict]:
    """Chapter 3's look at Table 3's row A: for each preset in `rows`, one multi-head
    self-attention layer on `n_tokens` tokens, its parameters and the FLOPs that PyTorch's
    counter records while it computes eq. (1) literally (projections: `addmm`, the two attention
    products: `bmm`), with the number of attention weights h n^2 and the paper's PPL and BLEU."""
    from torch.utils.flop_counter import FlopCounterMode
    from annotated.configs import PAPER, get
    from annotated.multihead import MultiHeadAttention
    table = []
    for row in rows:
        cfg = get(row)
        layer = MultiHeadAttention(cfg.d_model, cfg.h, cfg.d_k, cfg.d_v)
        layer.fast = False                                  # count eq. (1) literally
        x = torch.randn(1, n_tokens, cfg.d_model)           # (1, n, d_model)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            layer(x, x, x)
        ops = {str(op): count for op, count in counter.get_flop_counts()["Global"].items()}
        table.append(dict(row=row, h=cfg.h, d_k=cfg.d_k, d_v=cfg.d_v,
                          params=sum(p.numel() for p in layer.parameters()),
                          proj=ops["aten.addmm"], attn=ops["aten.bmm"],
                          entries=cfg.h * n_tokens ** 2, ppl=PAPER[row].ppl, bleu=PAPER[row].bleu))
    return table


# ---- Chapter 6 (training, §5) and chapter 9 (engineering): tables and runs ----

PRESET_ROWS = [("layers per stack", "N", "Table 3"), ("model width", "d_model", "Table 3"),
               ("feed-forward width", "d_ff", "Table 3"), ("heads", "h", "Table 3"),
               ("key and value width", "d_k", "Table 3"), ("dropout", "P_drop", "§5.4"),
               ("label smoothing", "eps_ls", "§5.4"), ("warmup steps", "warmup_steps", "§5.3"),
               ("training steps", "train_steps", "§5.2"),
               ("tokens per batch, source side", "max_tokens", "§5.1")]
#: What the paper reports of its two runs that no Config field holds: (what, base, big, where).
PAPER_RUNS = [
    ("hardware", "one machine, 8 NVIDIA P100 GPUs", "the same", "§5.2"),
    ("time per step", "0.4 s", "1.0 s", "§5.2"),
    ("training time", "12 hours", "3.5 days", "§5.2"),
    ("batch", "about 25,000 source + 25,000 target tokens", "the same", "§5.1"),
    ("checkpoints averaged", "the last 5, written every 10 minutes", "the last 20", "§6.1"),
]


def training_settings_table():
    """The paper's base and big training settings as a Markdown table: the model and schedule
    rows from PRESETS["base"] and ["big"], Adam's constants from `make_optimizer`, the rest
    (hardware, time, averaging) as the paper reports them."""
    import torch
    from IPython.display import Markdown
    from annotated.configs import PRESETS
    from annotated.optim import make_optimizer
    base, big = PRESETS["base"], PRESETS["big"]
    cell = lambda v: f"{v:,}" if isinstance(v, int) else f"{v:g}"
    rows = [(what, cell(getattr(base, field)), cell(getattr(big, field)), f"`{field}`, {where}")
            for what, field, where in PRESET_ROWS]
    dropout = next(i for i, (_, field, _) in enumerate(PRESET_ROWS) if field == "P_drop")
    what, b, g, where = rows[dropout]
    rows[dropout] = (what, b, f"{g} (0.1 for English-French, §6.1)", where)
    weights = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(1))])   # no random init
    adam = make_optimizer(weights, base.d_model, base.warmup_steps)[0].defaults
    constants = f"{adam['betas'][0]:g}, {adam['betas'][1]:g}, {adam['eps']:g}"
    rows += [("Adam β1, β2, ε", constants, constants, "`make_optimizer`, §5.3"), *PAPER_RUNS]
    lines = ["| setting | base | big | where |", "| --- | --- | --- | --- |"]
    return Markdown("\n".join(lines + [f"| {' | '.join(row)} |" for row in rows]))


def train_quietly(run_dir, *args) -> str:
    """Run `python -m annotated.train --run-dir RUN_DIR ARGS...` in this process and return its
    log (metric lines, checkpoints, the model at work) instead of printing it."""
    import io
    from contextlib import redirect_stderr, redirect_stdout
    from annotated import train
    log = io.StringIO()
    try:
        with redirect_stdout(log), redirect_stderr(log):
            train.main(["--run-dir", str(run_dir), *map(str, args)])
    except SystemExit as stop:                    # a user's error: show what the command said
        raise RuntimeError(f"training stopped:\n{log.getvalue()[-3000:]}") from stop
    return log.getvalue()


