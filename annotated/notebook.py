"""Small helpers the chapters use: show a piece of the package's source (one source of
truth: chapters display the code, never redefine it), save figures under stable names, and
read the quick-mode switch that CI sets."""
import inspect
import os
from pathlib import Path

FIGURES = Path(__file__).resolve().parent.parent / "figures"

#: CI sets ANNOTATED_QUICK=1: heavy cells (training) then run a tiny version of themselves.
QUICK = os.environ.get("ANNOTATED_QUICK", "0") == "1"


def show(obj):
    """Display the source of a module, class or function from `annotated/` as a code block."""
    from IPython.display import Markdown, display
    obj = inspect.unwrap(obj)                   # a decorated function: show the function itself
    source = inspect.getsource(obj)
    where = Path(inspect.getsourcefile(obj)).resolve().relative_to(FIGURES.parent)
    display(Markdown(f"`{where}`\n```python\n{source.rstrip()}\n```"))


def save_figure(fig, name: str):
    """Write `figures/<name>.png` (deterministic bytes: no timestamp metadata) and return its path."""
    FIGURES.mkdir(exist_ok=True)
    path = FIGURES / f"{name}.png"
    fig.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})
    return path
