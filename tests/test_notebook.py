"""The notebook helpers the chapters rely on: show() prints the package's own source."""
import IPython.display

from annotated.notebook import show
from annotated.tokenizer import atomic_open
from annotated.train import evaluate


def shown(obj, monkeypatch) -> str:
    captured = []
    monkeypatch.setattr(IPython.display, "display", lambda md: captured.append(md.data))
    show(obj)
    (text,) = captured
    return text


def test_show_names_the_file_and_shows_the_source(monkeypatch):
    text = shown(evaluate, monkeypatch)
    assert text.startswith("`annotated/train.py`\n```python\n@torch.no_grad()\ndef evaluate(")
    assert text.endswith("```")


def test_show_unwraps_decorators_from_other_packages(monkeypatch):
    # contextlib.contextmanager wraps atomic_open in a function defined in contextlib
    text = shown(atomic_open, monkeypatch)
    assert text.startswith("`annotated/tokenizer.py`\n```python\n@contextmanager\ndef atomic_open(")
