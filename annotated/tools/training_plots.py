"""The figures of chapters 6, 8 and 9 (training, results, engineering), each drawn by one
call from its chapter and saved with `save_figure` under a stable name (`draw_ablation` returns
its figure, which the chapter saves)."""
from annotated.tools.notebook import save_figure

# ---- Chapter 6 (training, §5) ----

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


# ---- Chapter 9 (engineering) ----

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


# ---- Chapter 8 (results) ----

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
