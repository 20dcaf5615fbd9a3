"""Small helpers the chapters use: show a piece of the package's source (one source of
truth: chapters display the code, never redefine it), save figures under stable names, draw
attention weights head by head, and read the switch between the quick and the full form of
the chapters.

Quick mode is the default: training cells train tiny models on the Multi30k sample shipped
with the package, so the chapters run offline in about a minute, whatever data location is
set. `python chapters/regenerate.py` sets ANNOTATED_FULL=1 for the full form: the real
corpus from the data location, the real training runs, the committed outputs and figures."""
import inspect
import os
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
    panel on the same colour scale 0..vmax."""
    import matplotlib.pyplot as plt
    layers, heads = weights.shape[:2]
    wrap = wrap or heads
    lines = -(-heads // wrap)                               # lines of panels per layer
    fig, axes = plt.subplots(layers * lines, wrap, squeeze=False, layout="constrained",
                             figsize=(size * wrap, size * layers * lines + 0.9))
    for l in range(layers):
        for i in range(heads):
            r, c = l * lines + i // wrap, i % wrap
            ax = axes[r, c]
            image = ax.imshow(weights[l, i], cmap="viridis", vmin=0, vmax=vmax)
            ax.set_xticks(range(len(columns)), columns if r == layers * lines - 1 else [],
                          rotation=90, fontsize=6)
            ax.set_yticks(range(len(rows)), rows if c == 0 else [], fontsize=6)
            if l == 0 or lines > 1:
                ax.set_title(f"head {i + 1}", fontsize=9)
        if layers > 1:
            axes[l * lines, 0].annotate(f"layer {l + 1}", (-0.9, 0.5), xycoords="axes fraction",
                                        rotation=90, va="center", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.5, pad=0.01, label="attention weight")
    fig.suptitle(title, fontsize=10)
    return fig
