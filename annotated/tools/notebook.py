"""Small helpers the chapters use: show a piece of the package's source (one source of
truth: chapters display the code, never redefine it), pick a section out of a results file,
save figures under stable names, draw attention weights head by head, and read the switch
between the quick and the full form of the chapters, and check results against
reference_numpy in one line. Chapters draw their figures with one call each to a plot_...
function here; chapter 6 also takes the table of the paper's training settings and a training
run whose log is kept off the page, chapter 8 its drawing of Table 3 at small scale.

Quick mode is the default: training cells train tiny models on the Multi30k sample shipped
with the package, so the chapters run offline in about a minute, whatever data location is
set. `python chapters/regenerate.py` sets ANNOTATED_FULL=1 for the full form: the real
corpus from the data location, the real training runs, the committed outputs and figures."""
import inspect
import os
import re
import tempfile
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[2] / "figures"

FULL_ENV = "ANNOTATED_FULL"
#: Quick mode unless ANNOTATED_FULL=1: heavy cells (training) then run a tiny version of themselves.
QUICK = os.environ.get(FULL_ENV, "0") != "1"
#: The Multi30k the chapters read: the shipped sample in quick mode, the full corpus otherwise.
MULTI30K = "multi30k_sample" if QUICK else "multi30k"
#: Quick-mode figures go here, so that CI and the tests never overwrite the committed ones.
QUICK_FIGURES = Path(tempfile.gettempdir()) / "annotated-transformer-quick-figures"


def show(obj):
    """Display the source of a module, class or function from `annotated/` as a code block."""
    from IPython.display import Markdown, display
    obj = inspect.unwrap(obj)                   # a decorated function: show the function itself
    source = inspect.getsource(obj)
    where = Path(inspect.getsourcefile(obj)).resolve().relative_to(FIGURES.parent)
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
    same values). Prints
    the names checked; raises, naming every pair that does not agree."""
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
    print(f"all {len(pairs)} {how} reference_numpy: " + ", ".join(names))


def save_figure(fig, name: str):
    """Write `figures/<name>.png` (deterministic bytes: no timestamp metadata; in quick mode
    under QUICK_FIGURES instead) and return its path."""
    folder = QUICK_FIGURES if QUICK else FIGURES
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})
    return path


def draw_heads(weights, rows: list[str], columns: list[str], title: str, vmax: float = 1.0,
               wrap: int | None = None, size: float = 2.0):
    """Heat maps of attention weights (layers, heads, queries, keys): each layer's heads side
    by side (`wrap` per line of panels, each `size` inches), layers one under another, every
    panel on the same colour scale 0..vmax. A label gets 0.8 of its row's height, up to 10 pt: for
    labels of 8 pt or more, choose size >= len(rows) / 7.2 inches (and keep the figure at most
    about 10 inches wide, so that a page shows it near full size)."""
    import matplotlib.pyplot as plt
    layers, heads = weights.shape[:2]
    wrap = wrap or heads
    lines = -(-heads // wrap)                               # lines of panels per layer
    # tick labels as large as the rows of a panel allow (points: 72 per inch), at most 10 pt
    fontsize = min(10.0, 0.8 * size * 72 / max(len(rows), len(columns)))
    aspect = len(rows) / len(columns)                       # a panel's height / width
    fig, axes = plt.subplots(layers * lines, wrap, squeeze=False, layout="constrained",
                             figsize=(size * wrap, size * aspect * layers * lines + 0.9))
    for l in range(layers):
        for i in range(heads):
            r, c = l * lines + i // wrap, i % wrap
            ax = axes[r, c]
            image = ax.imshow(weights[l, i], cmap="viridis", vmin=0, vmax=vmax)
            ax.set_xticks(range(len(columns)), columns if r == layers * lines - 1 else [],
                          rotation=90, fontsize=fontsize)
            ax.set_yticks(range(len(rows)), rows if c == 0 else [], fontsize=fontsize)
            if l == 0 or lines > 1:
                ax.set_title(f"head {i + 1}", fontsize=9)
        if layers > 1:
            axes[l * lines, 0].annotate(f"layer {l + 1}", (-0.9, 0.5), xycoords="axes fraction",
                                        rotation=90, va="center", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.5, pad=0.01, label="attention weight")
    fig.suptitle(title, fontsize=10)
    return fig


# ---- Chapter 6 (training, §5) and chapter 9 (engineering): tables, runs and figures ----

#: Table rows read from a Config: (what, field, where in the paper).
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


def read_metrics(run_dir) -> dict[str, list[dict]]:
    """The lines of RUN_DIR/metrics.jsonl by split: {"train": [...], "valid": [...]}."""
    import json
    lines = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text()
             .splitlines()]
    return {split: [e for e in lines if e["split"] == split] for split in ("train", "valid")}


def plot_token_batching(lengths, batchings: dict, max_tokens: int, save_as: str):
    """Chapter 6's batching figure for {name: batches}: one point per batch (pairs against
    longest side), and the share of padding of each way of batching."""
    import matplotlib.pyplot as plt
    import numpy as np
    from annotated.data.batching import padding_fraction
    L = np.asarray(lengths)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1.6, 1]})
    ax = axes[0]
    for (name, batches), marker in zip(batchings.items(), "ox+"):
        sizes = np.array([(len(b), L[b].max()) for b in batches])      # (pairs, longest side)
        ax.scatter(sizes[:, 1], sizes[:, 0], marker=marker, s=14, alpha=0.7, label=name)
    longest = np.linspace(5, 55, 100)
    ax.plot(longest, max_tokens / longest, "k--", lw=1, label=r"$b \times L$ = max_tokens")
    ax.set(xlabel="longest side L in the batch (positions)", ylabel="pairs b in the batch",
           yscale="log", title="One point per batch of one epoch")
    ax.set_yticks([25, 50, 100, 200, 400], ["25", "50", "100", "200", "400"])
    ax.minorticks_off()
    ax.legend(fontsize=8)
    ax = axes[1]
    fractions = [padding_fraction(lengths, b) for b in batchings.values()]
    x = np.arange(len(fractions))
    ax.bar(x - 0.2, [f[0] for f in fractions], 0.4, label="source")
    ax.bar(x + 0.2, [f[1] for f in fractions], 0.4, label="target")
    ax.set_xticks(x, list(batchings))
    ax.set(ylabel="share of tensor positions that are padding", ylim=(0, 1),
           title="Padding over one epoch")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_label_smoothing(q, y: int, grid, curves: dict, floors: dict, V: int, save_as: str):
    """Chapter 6's label-smoothing figure: the smoothed target `q` for the token `y`, and the
    loss at one position against p(y) for each {eps_ls: curve}, its floor H(q) dotted."""
    import matplotlib.pyplot as plt
    from annotated.data.tokenizer import PAD
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1, 1.3]})
    ax = axes[0]
    colors = ["tab:gray" if c == PAD else "tab:red" if c == y else "tab:blue"
              for c in range(len(q))]
    ax.bar(range(len(q)), q, color=colors)
    ax.set_xticks(range(len(q)))
    ax.set(xlabel="token id (0 = PAD)", ylabel="q(c)", ylim=(0, 1),
           title=rf"Smoothed target for y = {y}, $\epsilon_{{ls}}$ = 0.1, V = {len(q)}")
    other = next(c for c in range(len(q)) if c not in (PAD, y) and q[c] > 0)
    for c in (y, other):
        ax.text(c, q[c] + 0.01, f"{q[c]:.2f}", ha="center", fontsize=8)
    ax = axes[1]
    for eps_ls, curve in curves.items():
        ax.plot(grid, curve, label=rf"$\epsilon_{{ls}}$ = {eps_ls}")
        if eps_ls in floors:
            ax.plot([1 - eps_ls], [floors[eps_ls]], "k.", ms=9)
    ax.set(xlabel="p(y), the probability the model gives the correct token",
           ylabel="loss at this position (nats)", ylim=(0, 5),
           title=f"The loss is smallest at p(y) = 1 - eps (dots), V = {V:,}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_lr_schedules(steps, curves: dict, peaks: dict, runs: dict, save_as: str):
    """Chapter 6's schedule figure: the paper's {name: rates at `steps`} with their
    {name: (step, peak)}, and this project's {name: (d_model, warmup, factor, steps)} runs."""
    import matplotlib.pyplot as plt
    import numpy as np
    from annotated.optim import noam_rate
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, curve in curves.items():
        axes[0].plot(steps, curve, label=name)
    for at, peak in peaks.values():
        axes[0].annotate(f"{peak:.2e}", (at, peak), xytext=(at + 6000, peak * 1.02), fontsize=8,
                         arrowprops=dict(arrowstyle="-", lw=0.5))
    axes[0].set(title="The paper's schedule (§5.3), warmup_steps = 4000", xlabel="training step")
    for name, (d_model, warmup, factor, total) in runs.items():
        s = np.arange(1, total + 1)
        axes[1].plot(s / total, [noam_rate(int(i), d_model, warmup, factor) for i in s],
                     label=name)
    axes[1].set(title="This project's small runs", xlabel="fraction of the run's steps")
    for ax in axes:
        ax.set_ylabel("learning rate")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_adam_on_noise(ratios, moves: dict, save_as: str):
    """Chapter 6's warmup figure: Adam's mean |update| / learning rate over the first 300
    steps, and the mean |update| of every step for each {schedule: moves}."""
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].plot(range(1, 301), ratios[:300])
    axes[0].set(ylim=(0, 1.05), xlabel="step", ylabel="mean |update| / learning rate",
                title=r"Adam ($\beta_2$ = 0.98) on a pure-noise gradient")
    for name, move in moves.items():
        axes[1].plot(np.arange(1, len(move) + 1), move, label=name)
    axes[1].set(xscale="log", yscale="log", xlabel="step (log scale)",
                ylabel="mean |update| per parameter", title="How far each step moves the weights")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_training_run(metrics: dict, floor: float, save_as: str):
    """Chapter 6's training-run figure from `read_metrics`: the smoothed loss and -log p(y)
    per target token (train and valid) above the floor H(q), and the learning rate."""
    import matplotlib.pyplot as plt
    import numpy as np
    train, valid = metrics["train"], metrics["valid"]
    at = lambda log, key: [e[key] for e in log]
    fig, (ax, ax_lr) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1.6, 1]})
    ax.plot(at(train, "step"), at(train, "loss"), label="train: smoothed loss")
    ax.plot(at(train, "step"), at(train, "nll"), label="train: $-\\log p(y)$")
    ax.plot(at(valid, "step"), at(valid, "loss"), "o-", label="valid: smoothed loss")
    ax.plot(at(valid, "step"), np.log(at(valid, "ppl")), "s--",
            label="valid: $-\\log p(y)$ = log perplexity")
    ax.axhline(floor, color="k", ls=":", lw=1, label="floor of the smoothed loss, H(q)")
    ax.set(xlabel="step", ylabel="nats per target token", ylim=(0, None),
           title="Loss per target token")
    ax.legend(fontsize=8)
    ax_lr.plot(at(train, "step"), at(train, "lr"))
    ax_lr.set(xlabel="step", ylabel="learning rate", title="Learning rate (§5.3), as logged")
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_shards(lengths, batch: list[int], placements: list[tuple[int, int]], save_as: str):
    """Chapter 9's figure: one global batch cut by `shard` for each (world_size, accum_steps),
    piece k drawn as long as its target tokens, coloured by the process that computes it."""
    import matplotlib.pyplot as plt
    import numpy as np
    from annotated.data.batching import shard
    L = np.asarray(lengths)
    colors = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(10, 0.9 + 0.7 * len(placements)))
    for row, (world, accum) in enumerate(placements):
        left = 0
        for k in range(world * accum):              # piece k: process k % world, micro k // world
            rank, micro = k % world, k // world
            width = int(L[shard(batch, rank, world, accum)[micro], 1].sum())
            ax.barh(row, width, left=left, height=0.6, color=colors[rank % 10], edgecolor="white")
            ax.text(left + width / 2, row, f"process {rank}\nmicro {micro}", ha="center",
                    va="center", fontsize=7, color="white")
            left += width
    ax.set_yticks(range(len(placements)),
                  [f"{w} process{'es' if w > 1 else ''} x {a} micro-batch{'es' if a > 1 else ''}"
                   for w, a in placements])
    ax.invert_yaxis()
    ax.set(xlabel="target tokens of the global batch, piece by piece",
           title="One global batch, the same pieces, computed in different places")
    fig.tight_layout()
    save_figure(fig, save_as)


def draw_ablation(table: dict, base: str = "base"):
    """Table 3 at small scale beside the paper's: for every row of `table` (results.table3_small's
    JSON) but the base row's seeds, the change from row `base` in perplexity (percent) and BLEU
    (points), ours and the paper's, with the base row's spread over seeds as a grey band."""
    import matplotlib.pyplot as plt
    import numpy as np
    ref = table[base]
    seeds = [r for r in table.values() if r["paper_row"] == "base"]
    rows = [name for name, r in table.items() if r["paper_row"] != "base"]
    y = np.arange(len(rows))[::-1]                                  # the first row at the top
    fig, axes = plt.subplots(1, 2, figsize=(10, 1.2 + 0.36 * len(rows)), sharey=True,
                             layout="constrained")
    for ax, key in zip(axes, ("ppl", "bleu")):
        def change(values, of):                   # perplexity in percent, BLEU in points
            return 100 * (values - of) / of if key == "ppl" else values - of
        ours = change(np.array([table[r][key] for r in rows]), ref[key])
        paper = change(np.array([table[r][f"paper_{key}"] for r in rows]), ref[f"paper_{key}"])
        band = change(np.array([min(r[key] for r in seeds), max(r[key] for r in seeds)]),
                      ref[key])
        ax.axvspan(*band, color="0.85", label=f"ours: base row over {len(seeds)} seeds")
        ax.barh(y + 0.2, ours, 0.4, label="ours: Multi30k val, small model")
        ax.barh(y - 0.2, paper, 0.4, label="paper: newstest2013, base model")
        ax.axvline(0, color="k", lw=0.8)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, [f"{table[r]['paper_row']}  {r.split(': ')[1]}" for r in rows])
    axes[0].set(xlabel="% change in perplexity from the base row (lower is better)")
    axes[1].set(xlabel="BLEU points from the base row (higher is better)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


# ---- Chapters 2, 4 and 5 (masking, positions, the full model): figures and a table ----

def plot_padded_batch_masks(src, tgt_in, src_mask, tgt_mask, itos: list[str], save_as: str):
    """Chapter 2's masks of a padded batch, one column per sentence: the encoder's key mask
    (batch, 1, 1, seq) broadcast over the queries to a square (top), and the decoder's
    target mask (batch, 1, T, T) (bottom). Dark = may attend, light = blocked."""
    import matplotlib.pyplot as plt
    import numpy as np

    def draw(ax, m, labels, title):
        ax.imshow(np.asarray(m, dtype=float), cmap="Greys", vmin=-0.15, vmax=1.3)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_title(title, fontsize=9)

    batch = src.size(0)
    fig, axes = plt.subplots(2, batch, figsize=(10, 6), squeeze=False)
    for b in range(batch):
        enc = src_mask[b, 0].expand(src.size(1), src.size(1))       # the same keys for every query
        draw(axes[0, b], enc, [itos[t] for t in src[b]], f"encoder self-attention, sentence {b}")
        draw(axes[1, b], tgt_mask[b, 0], [itos[t] for t in tgt_in[b]],
             f"decoder self-attention, sentence {b}")
    for ax in axes[:, 0]:
        ax.set_ylabel("query")
    for ax in axes[1]:
        ax.set_xlabel("key")
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_output_changes(change: dict, labels: list[str], save_as: str):
    """Chapter 2's leftward-flow figure: for each {name: (T changed tokens j, T outputs i)}
    matrix, log10 of how far decoder output i moved when token j changed; exact zeros white."""
    import matplotlib.pyplot as plt
    import numpy as np
    T = len(labels)
    fig, axes = plt.subplots(1, len(change), figsize=(10, 4.6), squeeze=False)
    axes = axes[0]
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")   # exact zeros drawn white
    for ax, (name, c) in zip(axes, change.items()):
        shown = np.ma.masked_equal(np.asarray(c), 0.0)
        im = ax.imshow(np.ma.log10(shown), cmap=cmap, vmin=-2, vmax=0.5)
        ax.set_xticks(range(T), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(T), labels, fontsize=8)
        ax.set_xlabel("decoder output at position i")
        ax.set_title(name, fontsize=10)
    axes[0].set_ylabel("input token j that was changed")
    fig.colorbar(im, ax=axes, shrink=0.8, label=r"$\log_{10}$ max |change of output i|, white = 0")
    fig.suptitle("Change one target token, watch which decoder outputs move", y=0.98)
    save_figure(fig, save_as)


def plot_causal_mask(mask, save_as: str):
    """Chapter 2's causal mask (1, 1, n, n) on its own: dark = query i may attend to key j."""
    import matplotlib.pyplot as plt
    n = mask.size(-1)
    fig, ax = plt.subplots(figsize=(4.2, 4))
    ax.imshow(mask[0, 0], cmap="Greys", vmin=-0.15, vmax=1.3)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    ax.set_title(f"subsequent_mask({n}): dark = may attend ($j \\leq i$)", fontsize=10)
    save_figure(fig, save_as)


def plot_mask_leak(offsets, leaks: dict, save_as: str):
    """Chapter 2's leak figure: the weight on the blocked keys against the open keys' typical
    score, one line per {fill: leak}. Lines that are all 0 coincide, so each gets its own
    marker, one every 60 points from a different start, so that every one shows."""
    import matplotlib.pyplot as plt
    styles = [dict(color="tab:blue", ls="-", marker="o"), dict(color="tab:orange", ls="--", marker="s"),
              dict(color="tab:green", ls="-.", marker="^"), dict(color="tab:red", ls=":", marker="v"),
              dict(color="tab:purple", ls=(0, (6, 2, 1, 2, 1, 2)), marker="D")]
    fig, ax = plt.subplots(figsize=(7.6, 3.8))
    for k, ((name, leak), style) in enumerate(zip(leaks.items(), styles)):
        ax.plot(offsets, leak, lw=1.8, markersize=6, markevery=(12 * k, 60), markerfacecolor="none",
                label=f"fill {name}", **style)
    ax.set_xlabel("typical score of the open keys", fontsize=11)
    ax.set_ylabel("weight on blocked keys", fontsize=11)
    ax.set_title("A finite fill value leaks once the real scores come near it", fontsize=12)
    ax.tick_params(labelsize=10)
    ax.set_ylim(-0.08, 1.08)
    ax.legend(fontsize=10, loc="center left", framealpha=0.95)
    save_figure(fig, save_as)


def plot_pe_curves(pe, save_as: str, fast_dims=(0, 1), slow_dims=(64, 128, 256), fast_len=25):
    """Chapter 4's curves of a sinusoid table (positions, d_model): the fastest pair's sine
    and cosine over `fast_len` positions (top), slower pairs' sines over all of them (bottom),
    each labelled with its pair and wavelength 2 pi 10000^(2i/d_model)."""
    import math
    import matplotlib.pyplot as plt
    d_model = pe.shape[1]
    wavelength = lambda dim: 2 * math.pi * 10000 ** (2 * (dim // 2) / d_model)
    fig, (fast, slow) = plt.subplots(2, 1, figsize=(10, 6))
    for dim, marker in zip(fast_dims, ["o-", "s--"]):
        kind = "sin" if dim % 2 == 0 else "cos"
        fast.plot(pe[:fast_len, dim], marker, markersize=4,
                  label=f"dim {dim} ({kind}, pair {dim // 2}, wavelength 2\u03c0 = {wavelength(dim):.1f})")
    fast.set_title("The fastest pair: one radian per position (values exist at integer positions only)")
    for dim in slow_dims:
        slow.plot(pe[:, dim], label=f"dim {dim} (sin, pair {dim // 2}, wavelength {wavelength(dim):.1f})")
    slow.set_title(f"Slower pairs over {len(pe)} positions")
    for ax in (fast, slow):
        ax.set_xlabel("position")
        ax.set_ylabel("PE(position, dim)")
        ax.set_ylim(-1.15, 1.7)
        ax.legend(loc="upper center", ncol=3, fontsize=8, framealpha=0.9)
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_pe_heatmap(pe, save_as: str):
    """Chapter 4's heat map of a sinusoid table (positions, d_model): the sines (columns 2i)
    above the cosines (2i+1), one column per pair i. Each entry is exactly 2 x 1 pixels with
    no resampling, since scaling fine stripes by a fraction of a pixel is what draws moire."""
    import matplotlib.pyplot as plt
    import numpy as np
    length, d_model = pe.shape
    dpi, cell_w, cell_h = 100, 2, 1                               # sizes below are in pixels
    left, right, top, gap, bottom = 70, 90, 40, 70, 55            # margins around the two panels
    w_px, h_px = cell_w * d_model // 2, cell_h * length
    fig_w, fig_h = left + w_px + right, top + 2 * h_px + gap + bottom
    fig = plt.figure(figsize=(fig_w / dpi, fig_h / dpi), dpi=dpi)
    axes = []
    for row, (title, columns) in enumerate([("sines: PE(pos, 2i)", pe[:, 0::2]),
                                            ("cosines: PE(pos, 2i+1)", pe[:, 1::2])]):
        bottom_px = fig_h - top - h_px - row * (h_px + gap)
        ax = fig.add_axes([left / fig_w, bottom_px / fig_h, w_px / fig_w, h_px / fig_h])
        im = ax.imshow(np.asarray(columns), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto",
                       interpolation="nearest")
        ax.set_title(f"{title}, d_model = {d_model}", fontsize=11)
        ax.set_ylabel("position", fontsize=11)
        ax.tick_params(labelsize=10)
        axes.append(ax)
    axes[1].set_xlabel("pair index i (frequency falls to the right)", fontsize=11)
    cax = fig.add_axes([(left + w_px + 15) / fig_w, bottom / fig_h, 12 / fig_w,
                        (2 * h_px + gap) / fig_h])
    fig.colorbar(im, cax=cax).ax.tick_params(labelsize=10)
    save_figure(fig, save_as)


def plot_wavelengths(wavelength, save_as: str):
    """Chapter 4's wavelength of each pair i on a log scale, between the paper's ends of the
    range, 2 pi and 10000 * 2 pi (dotted)."""
    import math
    import matplotlib.pyplot as plt
    pairs = len(wavelength)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.semilogy(range(pairs), wavelength, ".", markersize=3)
    ax.axhline(2 * math.pi, color="gray", lw=0.8, ls=":")
    ax.axhline(10000 * 2 * math.pi, color="gray", lw=0.8, ls=":")
    ax.text(pairs, 2 * math.pi * 1.4, "2\u03c0", ha="right")
    ax.text(0, 10000 * 2 * math.pi * 0.45, "10000 \u00b7 2\u03c0")
    ax.set_xlabel("pair index i")
    ax.set_ylabel("wavelength (positions)")
    ax.set_title("Wavelengths are geometric: a straight line on a log scale")
    save_figure(fig, save_as)


def plot_pe_rotation(R_k, pe, k: int, pairs: list[int], starts: list[int], save_as: str):
    """Chapter 4's rotation figure: the matrix R_k (left), and for each of `pairs` the points
    (cos, sin) of a sinusoid table's rows on the unit circle, coloured by position, with the
    shift by k drawn as an arrow from each of `starts`: the same angle from every start."""
    import math
    import matplotlib.pyplot as plt
    import torch
    positions, d_model = len(pe) - k, pe.shape[1]
    fig, axes = plt.subplots(1, 1 + len(pairs), figsize=(10, 3.6))
    axes[0].imshow(R_k, cmap="RdBu_r", vmin=-1, vmax=1)
    axes[0].set_title(f"R_{k}, d_model = {len(R_k)}")
    axes[0].set_xlabel("output dimension")
    axes[0].set_ylabel("input dimension")
    theta = torch.linspace(0, 2 * math.pi, 200)
    for ax, i in zip(axes[1:], pairs):
        sin_, cos_ = pe[:, 2 * i], pe[:, 2 * i + 1]
        ax.plot(torch.cos(theta), torch.sin(theta), color="lightgray", lw=1)
        ax.scatter(cos_[:positions], sin_[:positions], c=range(positions), cmap="viridis", s=18,
                   zorder=3)
        for start in starts:
            ax.annotate("", xy=(cos_[start + k], sin_[start + k]), xytext=(cos_[start], sin_[start]),
                        arrowprops=dict(arrowstyle="->", color="crimson", lw=1.5))
            ax.text(1.12 * cos_[start], 1.12 * sin_[start], str(start), fontsize=8, ha="center",
                    va="center")
        omega = 10000 ** (-2 * i / d_model)
        ax.set_title(f"pair {i}: turns {k} x {omega:.3f} rad per shift of {k}", fontsize=9)
        ax.set_xlabel("cos(pos \u00b7 \u03c9)  = PE(pos, 2i+1)")
        ax.set_ylabel("sin(pos \u00b7 \u03c9)  = PE(pos, 2i)")
        ax.set_aspect("equal")
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_pe_dot_products(gram, offsets, by_offset, save_as: str):
    """Chapter 4's dot products PE(p) . PE(q) of all pairs of positions (left: constant along
    each diagonal), and the same as the function `by_offset` of the offset p - q (right)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    im = axes[0].imshow(gram, cmap="viridis")
    axes[0].set_title("PE(p) \u00b7 PE(q): constant along diagonals")
    axes[0].set_xlabel("q")
    axes[0].set_ylabel("p")
    fig.colorbar(im, ax=axes[0], fraction=0.046)
    axes[1].plot(offsets, by_offset)
    axes[1].set_title("as a function of the offset p - q")
    axes[1].set_xlabel("p - q")
    axes[1].set_ylabel("dot product")
    fig.tight_layout()
    save_figure(fig, save_as)


def plot_normalised_token(normed: dict, save_as: str):
    """Chapter 5's LayerNorm-vs-BatchNorm figure: for each {norm: {batch: outputs}} the
    normalised features of the first token of the same sentence, one line per batch it sat in."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(normed), figsize=(10, 3.6), sharey=True)
    for ax, (kind, outputs) in zip(axes, normed.items()):
        for (label, o), style in zip(outputs.items(), ["o-", "s--", "^:"]):
            ax.plot(o[0], style, label=label, markersize=6, alpha=0.85)
        ax.set_title(f"{kind}: first token of sentence A")
        ax.set_xlabel("feature")
    axes[0].set_ylabel("normalised value")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, save_as)


#: Chapter 5's components of the model, top to bottom as drawn.
COMPONENTS = ["embedding (shared x3)", "encoder self-attention", "encoder FFN", "encoder LayerNorms",
              "decoder self-attention", "decoder enc-dec attention", "decoder FFN",
              "decoder LayerNorms"]


def plot_parameters_by_component(sizes: dict, model: str, save_as: str):
    """Chapter 5's bar chart of {component: parameters} (the COMPONENTS, every one of them),
    in millions: encoder blue, decoder orange, LayerNorms grey, the embedding green."""
    import matplotlib.pyplot as plt
    if set(sizes) != set(COMPONENTS):
        raise ValueError(f"expected the components {COMPONENTS}, got {sorted(sizes)}")
    order = COMPONENTS[::-1]                                     # the first one at the top
    values = [sizes[k] / 1e6 for k in order]
    fig, ax = plt.subplots(figsize=(9, 4))
    bars = ax.barh(order, values,
                   color=["tab:gray" if "Norm" in k else "tab:blue" if "encoder" in k else
                          "tab:orange" if "decoder" in k else "tab:green" for k in order])
    for bar, v in zip(bars, values):
        ax.text(bar.get_width() + 0.2, bar.get_y() + bar.get_height() / 2, f"{v:.2f}M",
                va="center", fontsize=9)
    ax.set_xlabel("parameters (millions)")
    ax.set_xlim(0, max(values) * 1.15)
    ax.set_title(f"{model}: {sum(sizes.values()) / 1e6:.2f}M parameters by component")
    fig.tight_layout()
    save_figure(fig, save_as)


def table3_params_table(rows) -> "Markdown":
    """Chapter 5's parameter column of Table 3 as a Markdown table, from `table3_params`'s
    (row, ours, paper in millions or None): ours and the paper's in millions, and the gap."""
    from IPython.display import Markdown
    lines = ["| row | ours (M) | paper (M) | ours - paper |", "| --- | ---: | ---: | ---: |"]
    for row, ours, paper in rows:
        gap = f"{ours / 1e6 - paper:+.2f}" if paper else ""
        lines.append(f"| {row} | {ours / 1e6:.2f} | {paper if paper else ''} | {gap} |")
    return Markdown("\n".join(lines))
