"""The figures of chapters 6 to 9 (training, beam search, results, engineering) and of the
appendix (the experiment log), each drawn by one call from its notebook and saved with
`save_figure` under a stable name (`draw_ablation` and `draw_sweep` return their figure, which
the notebook saves)."""
from annotated.notebooks.chapter import FONT_POINTS, WIDE, save_figure, styled

# ---- Chapter 6 (training, §5) ----

@styled
def plot_token_batching(lengths, batchings: dict, max_tokens: int, save_as: str):
    """Chapter 6's batching figure for {name: batches}: one point per batch (pairs against
    longest side), and the share of padding of each way of batching."""
    import matplotlib.pyplot as plt
    import numpy as np
    from annotated.data.batching import padding_fraction
    L = np.asarray(lengths)
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 4), gridspec_kw={"width_ratios": [1.6, 1]})
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
    ax.legend(loc="lower left")                     # the empty corner, below the curve
    ax = axes[1]
    fractions = [padding_fraction(lengths, b) for b in batchings.values()]
    x = np.arange(len(fractions))
    ax.bar(x - 0.2, [f[0] for f in fractions], 0.4, label="source")
    ax.bar(x + 0.2, [f[1] for f in fractions], 0.4, label="target")
    ax.set_xticks(x, list(batchings))
    ax.set(ylabel="share of tensor positions that are padding", ylim=(0, 1),
           title="Padding over one epoch")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_label_smoothing(q, y: int, grid, curves: dict, floors: dict, V: int, save_as: str):
    """Chapter 6's label-smoothing figure: the smoothed target `q` for the token `y`, and the
    loss at one position against p(y) for each {eps_ls: curve}, its floor H(q) dotted."""
    import matplotlib.pyplot as plt
    from annotated.data.tokenizer import PAD
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 3.8), gridspec_kw={"width_ratios": [1, 1.3]})
    ax = axes[0]
    colors = ["tab:gray" if c == PAD else "tab:red" if c == y else "tab:blue"
              for c in range(len(q))]
    ax.bar(range(len(q)), q, color=colors)
    ax.set_xticks(range(len(q)))
    ax.set(xlabel="token id (0 = PAD)", ylabel="q(c)", ylim=(0, 1),
           title=rf"Smoothed target for y = {y}, $\epsilon_{{ls}}$ = 0.1, V = {len(q)}")
    other = next(c for c in range(len(q)) if c not in (PAD, y) and q[c] > 0)
    for c in (y, other):
        ax.text(c, q[c] + 0.01, f"{q[c]:.2f}", ha="center")
    ax = axes[1]
    for eps_ls, curve in curves.items():
        ax.plot(grid, curve, label=rf"$\epsilon_{{ls}}$ = {eps_ls}")
        if eps_ls in floors:
            ax.plot([1 - eps_ls], [floors[eps_ls]], "k.", ms=9)
    ax.set(xlabel="p(y), the probability the model gives the correct token",
           ylabel="loss at this position (nats)", ylim=(0, 5),
           title=f"The loss is smallest at p(y) = 1 - eps (dots), V = {V:,}")
    ax.legend(loc="upper left")
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_lr_schedules(steps, curves: dict, peaks: dict, runs: dict, save_as: str):
    """Chapter 6's schedule figure: the paper's {name: rates at `steps`} with their
    {name: (step, peak)}, and this project's {name: (d_model, warmup, factor, steps)} runs."""
    import matplotlib.pyplot as plt
    import numpy as np
    from annotated.optim import noam_rate
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 4.4))
    for name, curve in curves.items():
        axes[0].plot(steps, curve, label=name)
    for at, peak in peaks.values():
        axes[0].annotate(f"{peak:.2e}", (at, peak), xytext=(at + 6000, peak * 1.02),
                         arrowprops=dict(arrowstyle="-", lw=0.5))
    axes[0].set(title="The paper's schedule (§5.3), warmup_steps = 4000", xlabel="training step")
    for name, (d_model, warmup, factor, total) in runs.items():
        s = np.arange(1, total + 1)
        axes[1].plot(s / total, [noam_rate(int(i), d_model, warmup, factor) for i in s],
                     label=name)
    axes[1].set(title="This project's small runs", xlabel="fraction of the run's steps")
    for ax in axes:
        ax.set_ylabel("learning rate")
    axes[0].legend()
    axes[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.18))   # long names: below
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_adam_on_noise(ratios, moves: dict, save_as: str):
    """Chapter 6's warmup figure: Adam's mean |update| / learning rate over the first 300
    steps, and the mean |update| of every step for each {schedule: moves}."""
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 3.6))
    axes[0].plot(range(1, 301), ratios[:300])
    axes[0].set(ylim=(0, 1.05), xlabel="step", ylabel="mean |update| / learning rate",
                title=r"Adam ($\beta_2$ = 0.98) on a pure-noise gradient")
    for name, move in moves.items():
        axes[1].plot(np.arange(1, len(move) + 1), move, label=name)
    axes[1].set(xscale="log", yscale="log", xlabel="step (log scale)",
                ylabel="mean |update| per parameter", title="How far each step moves the weights")
    axes[1].set_ylim(top=10 * max(move.max() for move in moves.values()))   # room above
    axes[1].legend(loc="upper right")               # the lines for the legend
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_training_run(metrics: dict, floor: float, save_as: str):
    """Chapter 6's training-run figure from a run's metrics by split ({"train": [...], "valid":
    [...]}, each from run_dir.read_metrics): the smoothed loss and -log p(y) per target token
    (train and valid) above the floor H(q), and the learning rate."""
    import matplotlib.pyplot as plt
    import numpy as np
    train, valid = metrics["train"], metrics["valid"]
    at = lambda log, key: [e[key] for e in log]
    fig, (ax, ax_lr) = plt.subplots(1, 2, figsize=(WIDE, 4), gridspec_kw={"width_ratios": [1.6, 1]})
    ax.plot(at(train, "step"), at(train, "loss"), label="train: smoothed loss")
    ax.plot(at(train, "step"), at(train, "nll"), label="train: $-\\log p(y)$")
    ax.plot(at(valid, "step"), at(valid, "loss"), "o-", label="valid: smoothed loss")
    ax.plot(at(valid, "step"), np.log(at(valid, "ppl")), "s--",
            label="valid: $-\\log p(y)$ = log perplexity")
    ax.axhline(floor, color="k", ls=":", lw=1, label="floor of the smoothed loss, H(q)")
    highest = max(max(at(train, "loss")), max(at(train, "nll")), floor)
    ax.set(xlabel="step", ylabel="nats per target token", ylim=(0, 1.5 * highest),
           title="Loss per target token")
    ax.legend(loc="upper right")                   # in the room left above the curves
    ax_lr.plot(at(train, "step"), at(train, "lr"))
    ax_lr.set(xlabel="step", ylabel="learning rate", title="Learning rate (§5.3), as logged")
    fig.tight_layout()
    save_figure(fig, save_as)


# ---- Chapter 7 (beam search) ----

@styled
def draw_beam_tree(live: list[list[list[int]]], scores: list[list[float]], best, label,
                   title: str, save_as: str):
    """Chapter 7's beam, read from the top down: row t holds the live prefixes after t tokens
    (`live[t-1]`, with their log P `scores[t-1]`), each under the prefix it extends, so that no
    two links cross: a row lists the children of its first box first, each family best first.
    The answer (`best`, a Hypothesis) sits in the row of its length, beside its siblings, as a
    red box with its last token, log P and score, and the path to it is red. `label(token)`
    names a token. Drawn 7 inches wide with 10-point text, so that it reads at a page's width."""
    import matplotlib.pyplot as plt
    from annotated.data.tokenizer import EOS
    answer = tuple(best.tokens)
    rows = [[((), 0.0)]]                                 # row t: (prefix, log P) of each box
    for t in range(1, max(len(live), len(answer)) + 1):
        boxes = [(tuple(p), s) for p, s in zip(live[t - 1], scores[t - 1])] if t <= len(live) else []
        rows.append(boxes + ([(answer, best.log_prob)] if t == len(answer) else []))
    x = {(): 0}                                          # prefix -> its column in its row
    for boxes in rows[1:]:
        boxes.sort(key=lambda box: (x[box[0][:-1]], -box[1]))   # by parent, then best first
        x.update((prefix, column) for column, (prefix, _) in enumerate(boxes))
    width = max(len(boxes) for boxes in rows)
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.56 * len(rows)))
    for t, boxes in enumerate(rows):
        for prefix, log_p in boxes:
            on_path = answer[:t] == prefix
            if t:
                ax.plot([x[prefix[:-1]], x[prefix]], [1 - t, -t], zorder=1,
                        color="tab:red" if on_path else "0.7", lw=2 if on_path else 0.8)
            if not t:
                text, style = "<s>", dict(fc="0.9", ec="0.6")
            elif prefix == answer:
                last = label(answer[-1]) if answer[-1] == EOS else f"{label(answer[-1])} (limit)"
                text = f"{last}\n{log_p:.2f}\nscore {best.score:.2f}"
                style = dict(fc="tab:red", ec="tab:red")
            else:
                text = f"{label(prefix[-1])}\n{log_p:.2f}"
                style = dict(fc="mistyrose", ec="tab:red") if on_path else dict(fc="white", ec="0.6")
            ax.text(x[prefix], -t, text, ha="center", va="center", fontsize=FONT_POINTS,
                    zorder=2, linespacing=1.1, color="white" if prefix == answer else "black",
                    bbox=dict(boxstyle="round,pad=0.25", **style))
    ax.set_xlim(-0.6, width - 0.4)
    ax.set_ylim(-len(rows) + 0.4, 0.5)
    ax.set_xticks([])
    ax.set_yticks([-t for t in range(len(rows))], [str(t) for t in range(len(rows))],
                  fontsize=FONT_POINTS)
    ax.set_ylabel("output tokens so far, t", fontsize=FONT_POINTS)
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=FONT_POINTS)
    for side in ("bottom", "right", "left", "top"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_length_vs_alpha(alphas, beam_sizes, length_ratio: dict, bleu: dict, sentences: int,
                         save_as: str):
    """Chapter 7's sweep: output length / reference length and sacreBLEU against alpha, one line
    per beam size, from {(beam, alpha): value}; the paper's 0.6 dashed."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 3.8))
    for k in beam_sizes:
        axes[0].plot(alphas, [length_ratio[k, a] for a in alphas], "o-", label=f"beam {k}")
        axes[1].plot(alphas, [bleu[k, a] for a in alphas], "o-", label=f"beam {k}")
    axes[0].axhline(1.0, color="k", lw=0.8, ls=":")
    axes[0].set_ylabel("output length / reference length")
    axes[1].set_ylabel("sacreBLEU")
    for ax in axes:
        ax.axvline(0.6, color="0.6", lw=0.8, ls="--")
        ax.set_xlabel(r"length penalty $\alpha$ (dashed: the paper's 0.6)")
    axes[0].legend(loc="upper left")                # short outputs: the corner stays empty
    axes[1].legend()
    fig.suptitle(f"The first {sentences} Multi30k test sentences")
    fig.tight_layout()
    save_figure(fig, save_as)


# ---- Chapter 8 (results) ----

@styled
def plot_learning_curves(train_log: list[dict], valid_log: list[dict], loss_floor: float,
                         ppl_at_optimum: float, eps_ls: float, title: str, save_as: str):
    """Chapter 8's curves of a run's metrics.jsonl lines: the smoothed loss above its floor
    (left) and the perplexity with its value at the smoothed optimum (right), train and valid,
    against the step, with the minutes of training on the top axis."""
    import matplotlib.pyplot as plt
    import numpy as np
    t_steps = np.array([m["step"] for m in train_log])
    v_steps = np.array([m["step"] for m in valid_log])
    clock = (np.r_[0, t_steps], np.r_[0, [m["elapsed"] / 60 for m in train_log]])  # step, min
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 4))
    for ax, key, mark, what in [(axes[0], "loss", loss_floor, "floor"),
                               (axes[1], "ppl", ppl_at_optimum, "at the smoothed optimum")]:
        ax.plot(t_steps, [m[key] for m in train_log], lw=1, label="train (dropout on)")
        ax.plot(v_steps, [m[key] for m in valid_log], "o-", ms=3, label="valid (1,014 sentences)")
        ax.axhline(mark, color="0.4", ls="--", lw=0.8, label=f"{what}, eps_ls = {eps_ls}")
        ax.set_xlabel("optimizer step")
        ax.set_xlim(0, t_steps[-1])
        top = ax.secondary_xaxis("top", functions=(lambda s: np.interp(s, *clock),
                                                   lambda m: np.interp(m, *clock[::-1])))
        top.set_xticks(np.arange(0, clock[1][-1], 10))
        top.set_xlabel("minutes of training")
        ax.legend()
    axes[0].set_ylabel("label-smoothed loss (nats per token)")
    axes[1].set_ylabel("perplexity per BPE token")
    axes[1].set_yscale("log")
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_table1_crossover(timings: dict, save_as: str):
    """Chapter 8's Table 1 measurement (experiments.paper_tables' timings): milliseconds per call of
    self-attention and of a recurrent layer against n for each width d (left), and their ratio
    against n / d beside the FLOP ratio n / d (right)."""
    import itertools
    import matplotlib.pyplot as plt
    import numpy as np
    rows = timings["rows"]
    widths = sorted({r["d"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 4.6))
    for color, d in zip(plt.cm.viridis(np.linspace(0, 0.8, len(widths))), widths):
        mine = sorted((r for r in rows if r["d"] == d), key=lambda r: r["n"])
        n = np.array([r["n"] for r in mine])
        att = np.array([r["attention_s"] for r in mine]) * 1e3
        rnn = np.array([r["recurrent_s"] for r in mine]) * 1e3
        axes[0].plot(n, att, "o-", color=color, label=f"d = {d}")
        axes[0].plot(n, rnn, "s--", color=color)
        axes[0].axvline(d, color=color, lw=0.8, ls=":")
        axes[1].plot(n / d, att / rnn, "o-", color=color, label=f"measured, d = {d}")
    grid = np.geomspace(min(r["n"] / r["d"] for r in rows), max(r["n"] / r["d"] for r in rows))
    axes[1].plot(grid, grid, "k--", lw=1, label=r"FLOP ratio $4n^2d \,/\, 4nd^2 = n/d$")
    axes[1].axhline(1, color="0.5", lw=0.8)
    axes[1].axvline(1, color="0.5", lw=0.8, ls=":")
    axes[0].set(xscale="log", yscale="log", xlabel="sequence length n",
                ylabel="milliseconds per call",
                title="time per layer (dotted: the FLOP crossover n = d)")
    axes[1].set(xscale="log", yscale="log", xlabel="n / d",
                ylabel="time of self-attention / recurrent",
                title="below 1: self-attention is faster")
    kinds = [plt.Line2D([], [], color="k", marker="o", label="self-attention"),
             plt.Line2D([], [], color="k", marker="s", ls="--", label="recurrent")]
    lines = axes[0].get_legend_handles_labels()[0]  # one per width: the legend's first row,
    columns = itertools.zip_longest(lines, kinds)   # the two kinds its second (by columns)
    axes[0].legend(handles=[h for column in columns for h in column if h is not None],
                   ncol=len(lines), loc="upper center", bbox_to_anchor=(0.5, -0.2))  # below
    axes[1].legend()
    fig.suptitle(f"Table 1 measured: batch 2, {timings['threads']} CPU threads")
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def draw_ablation(table: dict, base: str = "base"):
    """Table 3 at small scale beside the paper's: for every row of `table` (experiments.table3_small's
    JSON) but the base row's seeds, the change from row `base` in perplexity (percent) and BLEU
    (points), ours and the paper's, with the base row's spread over seeds as a grey band."""
    import matplotlib.pyplot as plt
    import numpy as np
    ref = table[base]
    seeds = [r for r in table.values() if r["paper_row"] == "base"]
    rows = [name for name, r in table.items() if r["paper_row"] != "base"]
    y = np.arange(len(rows))[::-1]                                  # the first row at the top
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 1.2 + 0.36 * len(rows)), sharey=True,
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
    axes[0].set(xlabel="% change in perplexity from the base row\n(lower is better)")
    axes[1].set(xlabel="BLEU points from the base row\n(higher is better)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


@styled
def plot_head_peaks(peaks: dict, save_as: str):
    """Chapter 8's figure of how sharp a trained model's heads are: for each kind of attention
    in `peaks` ({kind: (layers, heads) array of each head's mean largest weight of a query
    row}), every head as a dot and the mean of the layer's heads as a line, layer by layer."""
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for k, (kind, peak) in enumerate(peaks.items()):
        layers = np.arange(1, peak.shape[0] + 1)
        shift = (k - (len(peaks) - 1) / 2) * 0.08                  # the kinds side by side
        line = ax.plot(layers + shift, peak.mean(1), "o-", lw=2, label=kind)[0]
        for l, heads in zip(layers, peak):
            ax.plot(np.full(len(heads), l + shift), heads, ".", color=line.get_color(),
                    alpha=0.5)
    ax.set_xticks(layers, [f"layer {l}" for l in layers])
    ax.set(ylabel="peak: mean largest weight\nof a query row", ylim=(0, 1),
           title="Each head (dots) and the mean of its layer (line)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    save_figure(fig, save_as)


@styled
def plot_table2(rows: list[dict], save_as: str):
    """The paper's Table 2 as a figure, from experiments.paper_tables' JSON ("table2_published"):
    each system's newstest2014 BLEU (left) and training cost in FLOPs on a log scale (right),
    English-German and English-French side by side, the Transformer's rows in bold."""
    import matplotlib.pyplot as plt
    import numpy as np
    y = np.arange(len(rows))[::-1]                                  # the first row at the top
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 1.4 + 0.38 * len(rows)), sharey=True,
                             layout="constrained")
    for ax, what in zip(axes, ("bleu", "flops")):
        for shift, pair, name in ((0.2, "en_de", "English-German"), (-0.2, "en_fr",
                                                                     "English-French")):
            values = [r[f"{pair}_{what}"] for r in rows]
            shown = [i for i, v in enumerate(values) if v is not None]
            ax.barh(y[shown] + shift, [values[i] for i in shown], 0.4, label=name)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set(xlabel="BLEU on newstest2014", xlim=(20, 43))
    axes[1].set(xlabel="training cost, FLOPs (log scale)", xscale="log")
    axes[0].set_yticks(y, [r["model"] for r in rows])
    for label in axes[0].get_yticklabels():
        if label.get_text().startswith("Transformer"):
            label.set_fontweight("bold")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=2)
    save_figure(fig, save_as)


# ---- The appendix (experiment log) ----

def sweep_source(run: dict, candidates: dict) -> str:
    """The candidate that a run outside the sweep (experiments.multi30k_sweep's "second_hour"
    and "other_seed") repeats or continues: the one with its preset, processes and overrides,
    a seed override aside."""
    def key(r):
        return (r["preset"], r.get("processes", 1),
                sorted(o for o in r["overrides"] if not o.startswith("seed=")))
    found = [name for name, c in candidates.items() if key(c) == key(run)]
    if len(found) != 1:
        raise ValueError(f"expected one candidate with the run's settings {key(run)}, found "
                         f"{found or 'none'}")
    return found[0]


@styled
def draw_sweep(sweep: dict, labels: dict | None = None, average: int = 5, beam: int = 4):
    """The appendix's sweep figure from experiments.multi30k_sweep's JSON: every candidate's
    best validation lowercased BLEU in the order tried, the runs that repeat one with another
    seed or continue it past the hour beside it (left); and each candidate's gain from the
    length penalty over alpha = 0.6, for the average of `average` checkpoints and beam `beam`
    (right). `labels` gives each candidate a short name (default: 1, 2, ... in the order
    tried, as the appendix's table numbers them)."""
    import itertools
    import matplotlib.pyplot as plt
    candidates = sweep["candidates"]
    names = list(candidates)
    labels = labels or {name: str(i) for i, name in enumerate(names, start=1)}
    y = {name: i for i, name in enumerate(names[::-1])}             # the first tried at the top
    best = lambda run: max(r["lowercase_bleu"] for r in run["rows"])
    fig, axes = plt.subplots(1, 2, figsize=(WIDE, 1.6 + 0.3 * len(names)), layout="constrained")
    ax = axes[0]
    for processes, color in ((1, "tab:gray"), (2, "tab:blue")):
        mine = [n for n in names if candidates[n].get("processes", 1) == processes]
        ax.plot([best(candidates[n]) for n in mine], [y[n] for n in mine], "o", color=color,
                label=f"candidate, {processes} process{'es' if processes > 1 else ''}")
    for group, marker, what in (("other_seed", "x", "the same, another seed"),
                                ("second_hour", "^", "the same, continued past the hour")):
        runs = sweep.get(group, {})
        ax.plot([best(r) for r in runs.values()],
                [y[sweep_source(r, candidates)] for r in runs.values()], marker, color="k",
                ls="none", label=what)
    ax.set_yticks(list(y.values()), [labels[n] for n in y])
    ax.set(xlabel="best validation BLEU (lowercased)", ylabel="candidate",
           title="Each candidate at its best")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="center left")
    ax = axes[1]
    colors = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7]   # 7: grey
    markers = iter("os^Dv")                 # the one-process candidates, all grey, apart
    for k, name in enumerate(names):
        rows = {r["alpha"]: r["lowercase_bleu"] for r in candidates[name]["rows"]
                if r["average"] == average and r["beam"] == beam}
        if 0.6 not in rows:
            continue
        alphas = sorted(rows)
        lowercased = any(o == "lowercase=true" for o in candidates[name]["overrides"])
        one = candidates[name].get("processes", 1) == 1
        ax.plot(alphas, [rows[a] - rows[0.6] for a in alphas], marker=next(markers) if one
                else "o", ms=4 if one else 3, lw=1,
                ls="--" if lowercased else "-", label=labels[name],
                color="tab:gray" if one else colors[k % len(colors)])
    ax.axhline(0, color="k", lw=0.8)
    ax.set(xlabel=r"length penalty $\alpha$", ylabel="validation BLEU gained over alpha 0.6",
           title=f"Average of {average} checkpoints, beam {beam}; dashed: lowercased")
    ax.grid(alpha=0.3)
    handles = ax.get_legend_handles_labels()[0]     # below the panel, in two rows: the
    half = -(-len(handles) // 2)                     # lines fill it (matplotlib fills columns)
    columns = itertools.zip_longest(handles[:half], handles[half:])
    ax.legend(handles=[h for column in columns for h in column if h is not None],
              title="candidate", ncol=half, loc="upper center", bbox_to_anchor=(0.5, -0.16),
              handlelength=1.5, columnspacing=1.0)
    return fig


# ---- Chapter 9 (engineering) ----

@styled
def plot_shards(lengths, batch: list[int], placements: list[tuple[int, int]], save_as: str):
    """Chapter 9's figure: one global batch cut by `shard` for each (world_size, accum_steps),
    piece k drawn as long as its target tokens, coloured by the process that computes it."""
    import matplotlib.pyplot as plt
    import numpy as np
    from annotated.data.batching import shard
    L = np.asarray(lengths)
    colors = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(WIDE, 0.9 + 0.9 * len(placements)))
    for row, (world, accum) in enumerate(placements):
        ax.text(0, row - 0.34, f"{world} process{'es' if world > 1 else ''} x {accum} "
                f"micro-batch{'es' if accum > 1 else ''}", va="bottom")   # above its bar
        left = 0
        for k in range(world * accum):              # piece k: process k % world, micro k // world
            rank, micro = k % world, k // world
            width = int(L[shard(batch, rank, world, accum)[micro], 1].sum())
            ax.barh(row, width, left=left, height=0.6, color=colors[rank % 10], edgecolor="white")
            ax.text(left + width / 2, row, f"process {rank}\nmicro {micro}", ha="center",
                    va="center", color="white")
            left += width
    ax.set_yticks([])
    ax.set_ylim(len(placements) - 0.6, -0.8)        # the first placement at the top
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set(xlabel="target tokens of the global batch, piece by piece",
           title="One global batch, the same pieces, computed in different places")
    fig.tight_layout()
    save_figure(fig, save_as)
