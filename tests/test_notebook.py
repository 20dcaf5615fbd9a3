"""The notebook helpers the chapters rely on: show() prints the package's own source,
draw_heads() lays out attention maps, save_figure() keeps quick-mode figures out of figures/,
agree_with_reference() checks against the NumPy reference in one line."""
import IPython.display
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from annotated.tools import notebook
from annotated.tools.notebook import draw_heads, show
from annotated.data.files import atomic_open
from annotated.training.step import evaluate

matplotlib.use("Agg")


def shown(obj, monkeypatch) -> str:
    captured = []
    monkeypatch.setattr(IPython.display, "display", lambda md: captured.append(md.data))
    show(obj)
    (text,) = captured
    return text


def test_show_names_the_file_and_shows_the_source(monkeypatch):
    text = shown(evaluate, monkeypatch)
    assert text.startswith("`annotated/training/step.py`\n```python\n@torch.no_grad()\ndef evaluate(")
    assert text.endswith("```")


def test_show_unwraps_decorators_from_other_packages(monkeypatch):
    # contextlib.contextmanager wraps atomic_open in a function defined in contextlib
    text = shown(atomic_open, monkeypatch)
    assert text.startswith("`annotated/data/files.py`\n```python\n@contextmanager\ndef atomic_open(")


def test_draw_heads_lays_out_every_layer_and_head_on_one_scale():
    weights = np.full((2, 8, 3, 5), 0.2)                   # (layers, heads, queries, keys)
    fig = draw_heads(weights, list("abc"), list("vwxyz"), "t", wrap=4)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 16 and len(fig.axes) == 17      # 2 layers x 2 lines x 4, + colour bar
    assert all(ax.images[0].get_clim() == (0, 1) for ax in panels)
    assert [ax.get_title() for ax in panels[:8]] == [f"head {i}" for i in range(1, 9)]
    assert [t.get_text() for t in panels[-4].get_xticklabels()] == list("vwxyz")   # bottom line


def test_quick_mode_figures_never_overwrite_the_committed_ones(monkeypatch, tmp_path):
    monkeypatch.setattr(notebook, "QUICK_FIGURES", tmp_path / "quick")
    fig = plt.figure()
    monkeypatch.setattr(notebook, "QUICK", True)
    assert notebook.save_figure(fig, "x") == tmp_path / "quick" / "x.png"
    monkeypatch.setattr(notebook, "FIGURES", tmp_path / "full")
    monkeypatch.setattr(notebook, "QUICK", False)
    assert notebook.save_figure(fig, "x") == tmp_path / "full" / "x.png"
    assert (tmp_path / "quick" / "x.png").is_file() and (tmp_path / "full" / "x.png").is_file()
    plt.close(fig)


def test_training_settings_table_reads_the_presets_and_adam():
    text = notebook.training_settings_table().data
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    assert rows["model width"].startswith("| model width | 512 | 1,024 | `d_model`")
    assert rows["training steps"].startswith("| training steps | 100,000 | 300,000 |")
    assert "0.3 (0.1 for English-French, §6.1)" in rows["dropout"]
    assert rows["Adam β1, β2, ε"].startswith("| Adam β1, β2, ε | 0.9, 0.98, 1e-09 | 0.9, 0.98, 1e-09")
    assert "8 NVIDIA P100 GPUs" in rows["hardware"] and "| 12 hours | 3.5 days |" in text


def test_plot_shards_draws_each_piece_of_the_batch_once_per_placement(monkeypatch, tmp_path):
    monkeypatch.setattr(notebook, "QUICK_FIGURES", tmp_path)
    monkeypatch.setattr(notebook, "QUICK", True)
    lengths = [(n, n + 1) for n in range(5, 25)]                # 20 pairs
    notebook.plot_shards(lengths, list(range(20)), [(4, 1), (2, 2)], save_as="shards")
    (ax,) = plt.gcf().axes
    assert len(ax.patches) == 8                                # 4 pieces in each of 2 rows
    widths = [p.get_width() for p in ax.patches]
    assert sum(widths[:4]) == sum(widths[4:]) == sum(t for _, t in lengths)
    assert (tmp_path / "shards.png").is_file()
    plt.close("all")


def test_the_reference_check_names_what_differs_and_never_broadcasts(capsys):
    a = torch.zeros(2, 3, dtype=torch.float64)
    notebook.agree_with_reference([("same", a, a.numpy()), ("close", a, a.numpy() + 1e-14)])
    assert capsys.readouterr().out.startswith("all 2 agree to 1e-12 (max abs difference)")
    with pytest.raises(AssertionError, match=r"by more than 1e-12: off \(1.0e-06\)"):
        notebook.agree_with_reference([("same", a, a.numpy()), ("off", a, a.numpy() + 1e-6)])
    with pytest.raises(AssertionError, match=r"shapes differ .*: row \(2, 3\) vs \(3,\)"):
        notebook.agree_with_reference([("row", a, np.zeros(3))])
