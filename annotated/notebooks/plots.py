"""The figures of the model's chapters (1-5: attention, masks, positions, the full model; chapter
8 draws its trained heads with `draw_heads` too), each drawn by one call from its chapter and
saved with `save_figure` under a stable name. Each
function takes the numbers the chapter computed with the package: the chapter shows how they
were computed, this module how they are drawn."""
from annotated.notebooks.chapter import (FONT_POINTS, WIDE, entropy, legible_points, save_figure,
                                         styled)

# ---- Chapter 1: why divide by sqrt(d_k) ----

@styled
def plot_softmax_saturation(unscaled, scaled, d_k: int, save_as: str):
    """Chapter 1's weights of one query (1, keys), unscaled and scaled, side by side, each
    titled with its largest weight and entropy."""
    import matplotlib.pyplot as plt
    n_keys = unscaled.shape[-1]
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 3.2), sharey=True)
    for ax, w, title, color in [(axes[0], unscaled, r"unscaled: softmax$(q K^\top)$", "tab:red"),
                                (axes[1], scaled, r"scaled: softmax$(q K^\top/\sqrt{d_k})$",
                                 "tab:blue")]:
        ax.bar(range(n_keys), w[0].numpy(), color=color)
        ax.set_title(f"{title}\nmax weight {w.max():.3f}, entropy {entropy(w)[0]:.2f} nats")
        ax.set_xlabel("key j")
        ax.set_xticks(range(n_keys))
    axes[0].set_ylabel("attention weight")
    fig.suptitle(f"One query, {n_keys} random keys, $d_k$ = {d_k}", y=1.1)
    save_figure(fig, save_as)


@styled
def plot_scaling_vs_dk(widths: list[int], stats: dict, n_keys: int, save_as: str):
    """Chapter 1's three panels against d_k for {"unscaled": rows, "scaled": rows} (each row a
    dict of var, entropy, grad): the scores' variance, the weights' entropy and the median
    gradient reaching the scores, the paper's d_k = 64 marked."""
    import math
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(WIDE, 3.4))
    style = {"unscaled": dict(color="tab:red", marker="o", label=r"$q\cdot k$"),
             "scaled": dict(color="tab:blue", marker="s", label=r"$q\cdot k/\sqrt{d_k}$")}
    for name in ("unscaled", "scaled"):
        for ax, key in zip(axes, ("var", "entropy", "grad")):
            ax.plot(widths, [row[key] for row in stats[name]], ms=4, **style[name])
    axes[0].set(title="variance of the scores", xscale="log", yscale="log")
    axes[1].axhline(math.log(n_keys), color="gray", ls=":", label="uniform")
    axes[1].set(title=f"entropy of the weights ({n_keys} keys)", xscale="log", ylabel="nats")
    axes[2].set(title="median gradient reaching the scores", xscale="log", yscale="log")
    for ax in axes:
        ax.set_xlabel("$d_k$")
        ax.axvline(64, color="gray", lw=0.8, alpha=0.5)
    axes[1].legend()
    fig.tight_layout()
    save_figure(fig, save_as)


# ---- Chapter 2: masks ----

@styled
def plot_padded_batch_masks(src, tgt_in, src_mask, tgt_mask, itos: list[str], save_as: str):
    """Chapter 2's masks of a padded batch, one column per sentence: the encoder's key mask
    (batch, 1, 1, seq) broadcast over the queries to a square (top), and the decoder's
    target mask (batch, 1, T, T) (bottom). Dark = may attend, light = blocked."""
    import matplotlib.pyplot as plt
    import numpy as np

    def draw(ax, m, labels, title):
        ax.imshow(np.asarray(m, dtype=float), cmap="Greys", vmin=-0.15, vmax=1.3)
        ax.set_xticks(range(len(labels)), labels, rotation=90)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_title(title)

    batch = src.size(0)
    fig, axes = plt.subplots(2, batch, figsize=(WIDE, 6), squeeze=False)
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


@styled
def plot_output_changes(change: dict, labels: list[str], save_as: str):
    """Chapter 2's leftward-flow figure: for each {name: (T changed tokens j, T outputs i)}
    matrix, log10 of how far decoder output i moved when token j changed; exact zeros white."""
    import matplotlib.pyplot as plt
    import numpy as np
    T = len(labels)
    fig, axes = plt.subplots(1, len(change), figsize=(WIDE, 4.6), squeeze=False,
                             layout="constrained")
    axes = axes[0]
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")   # exact zeros drawn white
    for ax, (name, c) in zip(axes, change.items()):
        shown = np.ma.masked_equal(np.asarray(c), 0.0)
        im = ax.imshow(np.ma.log10(shown), cmap=cmap, vmin=-2, vmax=0.5)
        ax.set_xticks(range(T), labels, rotation=90)
        ax.set_yticks(range(T), labels if ax is axes[0] else [])   # the same tokens: once
        ax.set_xlabel("decoder output at position i")
        ax.set_title(name)
    axes[0].set_ylabel("input token j that was changed")
    fig.colorbar(im, ax=axes, shrink=0.8, label=r"$\log_{10}$ max |change of output i|, white = 0")
    fig.suptitle("Change one target token, watch which decoder outputs move")
    save_figure(fig, save_as)


@styled
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
    ax.set_title(f"subsequent_mask({n}): dark = may attend ($j \\leq i$)")
    save_figure(fig, save_as)


@styled
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
    ax.set_xlabel("typical score of the open keys")
    ax.set_ylabel("weight on blocked keys")
    ax.set_title("A finite fill value leaks once the real scores come near it")
    ax.set_ylim(-0.08, 1.08)
    ax.legend(loc="center left", framealpha=0.95)
    save_figure(fig, save_as)


# ---- Chapter 3 (and 8): attention weights head by head, Table 3 row A ----

#: The colours of every attention map: white for a weight of 0, dark blue for 1, so that the
#: weights that matter stand out on a light page.
ATTENTION_COLOURS = "Blues"


@styled
def draw_heads(weights, rows: list[str], columns: list[str], title: str, vmax: float = 1.0,
               wrap: int | None = None, size: float = 2.0, heads: list[int] | None = None):
    """Heat maps of attention weights (layers, heads, queries, keys): each layer's heads side
    by side (`wrap` per line of panels, each up to `size` inches wide), layers one under
    another, every panel on the same colour scale 0..vmax (ATTENTION_COLOURS), the colour bar
    underneath; `heads` picks the heads drawn, numbered from 1 (all by default). The figure is
    at most WIDE inches wide, so that a page shows it near full size: the panels shrink to
    fit, and their labels with them (a label gets 0.85 of its row, up to FONT_POINTS); where
    that would make the labels smaller than a page shows legibly, fewer panels go on a line."""
    import matplotlib.pyplot as plt
    numbers = heads or list(range(1, weights.shape[1] + 1))
    weights = weights[:, [h - 1 for h in numbers]]
    layers, heads = weights.shape[:2]
    n = max(len(rows), len(columns))
    char = 0.6 / 72                                         # inches per character and point
    left = 0.2 + char * FONT_POINTS * max(map(len, rows)) + (0.3 if layers > 1 else 0)
    smallest = 1.05 * legible_points(WIDE)                  # with a margin for the crop
    wrap = wrap or heads
    while True:                                            # fewer panels a line if need be
        panel = min(size, (WIDE - left) / wrap)             # a panel's width, inches
        fontsize = min(FONT_POINTS, 0.85 * panel * 72 / n)  # points: 72 per inch
        if fontsize >= smallest or wrap == 1:
            break
        wrap -= 1
    lines = -(-heads // wrap)                               # lines of panels per layer
    height = panel * len(rows) / len(columns)               # a panel's height: square cells
    title_lines = 1 + len(title) // int(WIDE / (char * FONT_POINTS))
    below = 0.25 + char * fontsize * max(map(len, columns)) + 0.5   # x labels, colour bar
    fig, axes = plt.subplots(layers * lines, wrap, squeeze=False, layout="constrained",
                             figsize=(min(WIDE, left + panel * wrap),
                                      (height + 0.3) * layers * lines + below
                                      + 0.2 * title_lines))
    for l in range(layers):
        for i in range(heads):
            r, c = l * lines + i // wrap, i % wrap
            ax = axes[r, c]
            image = ax.imshow(weights[l, i], cmap=ATTENTION_COLOURS, vmin=0, vmax=vmax,
                              aspect="auto", interpolation="nearest")
            ax.set_xticks(range(len(columns)), columns if r == layers * lines - 1 else [],
                          rotation=90, fontsize=fontsize)
            ax.set_yticks(range(len(rows)), rows if c == 0 else [], fontsize=fontsize)
            if l == 0 or lines > 1:
                ax.set_title(f"head {numbers[i]}")
        for ax in axes[l * lines + (heads - 1) // wrap, heads % wrap or wrap:]:
            ax.axis("off")                                  # a short last line: no panels
        if layers > 1:
            axes[l * lines, 0].set_ylabel(f"layer {l + 1}")
    grid = (height + 0.3) * layers * lines              # inches: pad and bar are fractions of it
    fig.colorbar(image, ax=axes, orientation="horizontal", shrink=0.5, aspect=40,
                 pad=0.15 / grid, fraction=0.15 / grid, label="attention weight")
    fig.suptitle(title, wrap=True)
    return fig


#: What the figures read at a glance (chapter 3's query strips, chapter 7's beam tree: 7 inches
#: wide, FONT_POINTS) keep, beyond the rule every figure meets (`chapter.SMALLEST_TEXT_PX`,
#: checked by save_figure): text of at least this many points per 700 pixels of the figure's
#: width, so that it stays at least 9 points tall on a page that shows it 700 pixels wide.
LEGIBLE_POINTS = 9.0


@styled
def draw_query_row(weights, pieces: list[str], query: int, title: str, marked=(),
                   columns: int = 2):
    """One query's attention in every layer and head, the question of the paper's Figures
    3-5: `weights` (layers, heads, n, n), its row `query` drawn as one column per (layer, head)
    and one row per key piece, the pieces listed top to bottom in `columns` blocks side by side
    (like a newspaper's columns), so that every piece is a horizontal label. The query's own
    piece is marked in red, the pieces `marked` (indices) in bold. Drawn 7 inches wide with
    10-point text and rows a quarter of an inch tall, in ATTENTION_COLOURS, so that it stays
    legible at a page's width. Returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np
    layers, heads, n, _ = weights.shape
    rows = np.asarray(weights)[:, :, query, :].reshape(layers * heads, n).T   # (n, layers*heads)
    per_block = -(-n // columns)                                   # key pieces per block
    font = FONT_POINTS
    fig, axes = plt.subplots(1, columns, figsize=(7, 1.9 + 0.25 * per_block),
                             layout="constrained", squeeze=False)
    axes = axes[0]
    for b, ax in enumerate(axes):
        keys = range(b * per_block, min(n, (b + 1) * per_block))
        block = np.full((per_block, layers * heads), np.nan)        # a short last block: blank
        block[:len(keys)] = rows[list(keys)]
        image = ax.imshow(block, cmap=ATTENTION_COLOURS, vmin=0, vmax=1, aspect="auto",
                          interpolation="nearest")
        ax.set_yticks(range(len(keys)), [pieces[j] for j in keys], fontsize=font)
        for label, j in zip(ax.get_yticklabels(), keys):
            if j == query:
                label.set(color="crimson", fontweight="bold")
            elif j in marked:
                label.set(fontweight="bold")
        ax.set_xticks(range(layers * heads), [str(i + 1) for _ in range(layers)
                                              for i in range(heads)], fontsize=font)
        ax.set_xlabel("head", fontsize=font)
        ax.tick_params(length=2, pad=2)
        for l in range(1, layers):                                  # lines between layers
            ax.axvline(l * heads - 0.5, color="0.4", lw=1.2)
        top = ax.secondary_xaxis("top")
        top.set_xticks([l * heads + (heads - 1) / 2 for l in range(layers)],
                       [f"layer {l + 1}" for l in range(layers)], fontsize=font)
        top.tick_params(length=0)
    bar = fig.colorbar(image, ax=axes, orientation="horizontal", shrink=0.6, aspect=40)
    bar.set_label("attention weight", fontsize=font)
    bar.ax.tick_params(labelsize=font)
    fig.suptitle(title, fontsize=font)
    return fig


@styled
def plot_heads_constant_cost(table: list[dict], n_tokens: int, save_as: str):
    """Chapter 3's Table 3 row A figure: for each row of `table` (dicts with row, h, proj,
    attn, entries, bleu, ppl) the matrix-product FLOPs and attention weights h n^2 of one layer
    relative to the base row (left), and the paper's BLEU and perplexity against h (right)."""
    import matplotlib.pyplot as plt
    import numpy as np
    base = next(r for r in table if r["row"] == "base")
    x, hs = np.arange(len(table)), [r["h"] for r in table]
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 3.6))
    flops = [(r["proj"] + r["attn"]) / (base["proj"] + base["attn"]) for r in table]
    axes[0].bar(x - 0.2, flops, 0.4, label="matrix-product FLOPs")
    axes[0].bar(x + 0.2, [r["entries"] / base["entries"] for r in table], 0.4,
                label=r"attention weights, $h\,n^2$")
    axes[0].set_xticks(x, [f"{r['row']}\nh={r['h']}" for r in table])
    axes[0].set_ylabel("relative to base")
    axes[0].set_title(f"one layer, n = {n_tokens}: same compute, more weight maps")
    axes[0].legend(loc="upper left")
    axes[1].plot(hs, [r["bleu"] for r in table], "o-", label="BLEU (left axis)")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xticks(hs, [str(v) for v in hs])
    axes[1].set(xlabel="heads h  (d_k = d_v = 512 / h)", ylabel="BLEU, newstest2013",
                title="the paper's Table 3, row A (reported, not measured here)")
    ppl_axis = axes[1].twinx()
    ppl_axis.plot(hs, [r["ppl"] for r in table], "s--", color="tab:red",
                  label="perplexity (right axis)")
    ppl_axis.set_ylabel("perplexity", color="tab:red")
    handles = axes[1].get_legend_handles_labels()[0] + ppl_axis.get_legend_handles_labels()[0]
    axes[1].legend(handles, [line.get_label() for line in handles], ncol=2,
                   loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.tight_layout()
    save_figure(fig, save_as)


# ---- Chapter 4: positional encoding ----

@styled
def plot_pe_curves(pe, save_as: str, fast_dims=(0, 1), slow_dims=(64, 128, 256), fast_len=25):
    """Chapter 4's curves of a sinusoid table (positions, d_model): the fastest pair's sine
    and cosine over `fast_len` positions (top), slower pairs' sines over all of them (bottom),
    each labelled with its pair and wavelength 2 pi 10000^(2i/d_model)."""
    import math
    import matplotlib.pyplot as plt
    d_model = pe.shape[1]
    wavelength = lambda dim: 2 * math.pi * 10000 ** (2 * (dim // 2) / d_model)
    fig, (fast, slow) = plt.subplots(2, 1, figsize=(WIDE, 6.6))
    for dim, marker in zip(fast_dims, ["o-", "s--"]):
        kind = "sin" if dim % 2 == 0 else "cos"
        fast.plot(pe[:fast_len, dim], marker, markersize=4,
                  label=f"dim {dim} ({kind}, pair {dim // 2}, wavelength 2\u03c0 = {wavelength(dim):.1f})")
    fast.set_title("The fastest pair: one radian per position (values exist at integer positions only)")
    for dim in slow_dims:
        slow.plot(pe[:, dim], label=f"dim {dim} (sin, pair {dim // 2}, wavelength {wavelength(dim):.1f})")
    slow.set_title(f"Slower pairs over {len(pe)} positions")
    for ax in (fast, slow):                     # the legend in two columns above the curves
        ax.set_xlabel("position")
        ax.set_ylabel("PE(position, dim)")
        ax.set_ylim(-1.15, 1.75 if ax is fast else 2.3)
        ax.set_yticks([-1, -0.5, 0, 0.5, 1])
        ax.legend(loc="upper center", ncol=2, framealpha=0.9)
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
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
        ax.set_title(f"{title}, d_model = {d_model}")
        ax.set_ylabel("position")
        axes.append(ax)
    axes[1].set_xlabel("pair index i (frequency falls to the right)")
    cax = fig.add_axes([(left + w_px + 15) / fig_w, bottom / fig_h, 12 / fig_w,
                        (2 * h_px + gap) / fig_h])
    fig.colorbar(im, cax=cax)
    save_figure(fig, save_as)


@styled
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


@styled
def plot_pe_rotation(R_k, pe, k: int, pairs: list[int], starts: list[int], save_as: str):
    """Chapter 4's rotation figure: the matrix R_k (left), and for each of `pairs` the points
    (cos, sin) of a sinusoid table's rows on the unit circle, coloured by position, with the
    shift by k drawn as an arrow from each of `starts`: the same angle from every start."""
    import math
    import matplotlib.pyplot as plt
    import torch
    positions, d_model = len(pe) - k, pe.shape[1]
    fig, axes = plt.subplots(1, 1 + len(pairs), figsize=(WIDE, 3.6))
    axes[0].imshow(R_k, cmap="RdBu_r", vmin=-1, vmax=1)
    axes[0].set_title(f"R_{k}, d_model = {len(R_k)}")
    axes[0].set_xlabel("output dimension")
    axes[0].set_ylabel("input dimension")
    ticks = range(0, len(R_k), 4)                        # dimensions are whole numbers
    axes[0].set_xticks(ticks)
    axes[0].set_yticks(ticks)
    theta = torch.linspace(0, 2 * math.pi, 200)
    for ax, i in zip(axes[1:], pairs):
        sin_, cos_ = pe[:, 2 * i], pe[:, 2 * i + 1]
        ax.plot(torch.cos(theta), torch.sin(theta), color="lightgray", lw=1)
        ax.scatter(cos_[:positions], sin_[:positions], c=range(positions), cmap="viridis", s=18,
                   zorder=3)
        for start in starts:
            ax.annotate("", xy=(cos_[start + k], sin_[start + k]), xytext=(cos_[start], sin_[start]),
                        arrowprops=dict(arrowstyle="->", color="crimson", lw=1.5))
            ax.text(1.12 * cos_[start], 1.12 * sin_[start], str(start), ha="center",
                    va="center")
        omega = 10000 ** (-2 * i / d_model)
        ax.set_title(f"pair {i}: turns {k} x {omega:.3f} rad\nper shift of {k}")
        ax.set_xlabel("cos(pos \u00b7 \u03c9)  = PE(pos, 2i+1)")
        ax.set_ylabel("sin(pos \u00b7 \u03c9)  = PE(pos, 2i)")
        ax.set_aspect("equal")
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_pe_dot_products(gram, offsets, by_offset, save_as: str):
    """Chapter 4's dot products PE(p) . PE(q) of all pairs of positions (left: constant along
    each diagonal), and the same as the function `by_offset` of the offset p - q (right)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 4))
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


# ---- Chapter 5: the full model ----

@styled
def plot_normalised_token(normed: dict, save_as: str):
    """Chapter 5's LayerNorm-vs-BatchNorm figure: for each {norm: {batch: outputs}} the
    normalised features of the first token of the same sentence, one line per batch it sat in."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(normed), figsize=(WIDE, 3.6), sharey=True)
    for ax, (kind, outputs) in zip(axes, normed.items()):
        for (label, o), style in zip(outputs.items(), ["o-", "s--", "^:"]):
            ax.plot(o[0], style, label=label, markersize=6, alpha=0.85)
        ax.set_title(f"{kind}: first token of sentence A")
        ax.set_xlabel("feature")
    axes[0].set_ylabel("normalised value")
    axes[-1].legend()
    fig.tight_layout()
    save_figure(fig, save_as)


#: Chapter 5's components of the model, top to bottom as drawn.
COMPONENTS = ["embedding (shared x3)", "encoder self-attention", "encoder FFN", "encoder LayerNorms",
              "decoder self-attention", "decoder enc-dec attention", "decoder FFN",
              "decoder LayerNorms"]


def parameters_by_component(model) -> dict[str, int]:
    """{component: parameters} of an EncoderDecoder, each parameter given to one of the
    COMPONENTS by its name (the shared embedding counted once)."""
    sizes = dict.fromkeys(COMPONENTS, 0)
    for name, p in model.named_parameters():
        if "lut" in name or name.startswith("generator"):
            sizes["embedding (shared x3)"] += p.numel()
            continue
        role = ("self-attention" if ".self_attn." in name else "enc-dec attention"
                if ".src_attn." in name else "FFN" if ".ffn." in name else "LayerNorms")
        sizes[f"{'encoder' if name.startswith('encoder') else 'decoder'} {role}"] += p.numel()
    return sizes


@styled
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
                va="center")
    ax.set_xlabel("parameters (millions)")
    ax.set_xlim(0, max(values) * 1.15)
    ax.set_title(f"{model}: {sum(sizes.values()) / 1e6:.2f}M parameters by component")
    fig.tight_layout()
    save_figure(fig, save_as)
