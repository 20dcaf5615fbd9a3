"""The drawings of the paper's Figures 1 and 2: every block is labelled, no two labels
overlap, and the figures save as page-width PNGs."""
import itertools

import matplotlib
import matplotlib.pyplot as plt
import pytest

from annotated.notebooks import chapter as notebook
from annotated.notebooks.diagrams import draw_attention, draw_transformer

matplotlib.use("Agg")


@pytest.fixture(params=[draw_transformer, draw_attention])
def figure(request):
    fig = request.param()
    fig.canvas.draw()
    yield fig
    plt.close(fig)


def texts(fig):
    return [t for ax in fig.axes for t in ax.texts if t.get_text()]


def test_the_architecture_names_every_block_and_its_section():
    fig = draw_transformer()
    words = "\n".join(t.get_text() for t in texts(fig))
    plt.close(fig)
    assert words.count("Add & Norm") == 5              # 2 in the encoder layer, 3 in the decoder's
    assert words.count("MultiHeadAttention") == 3
    assert words.count("N ×") == 2
    for label in ["Input embedding", "Output embedding", "Outputs (shifted right)",
                  "Positional\nencoding §3.5", "Multi-head self-attention", "Masked multi-head",
                  "the encoder output", "Feed-forward", "PositionwiseFeedForward",
                  "SublayerConnection", "Embeddings", "Linear", "Softmax", "Output probabilities",
                  "§3.1", "§3.2.2", "§3.3", "§3.4"]:
        assert label in words, label


def test_the_attention_figure_shows_both_equations_and_every_step():
    fig = draw_attention()
    words = "\n".join(t.get_text() for t in texts(fig))
    plt.close(fig)
    for label in ["MatMul", r"$1/\sqrt{d_k}$", "Mask (optional)", "Softmax", "(1)",
                  r"\mathrm{Attention}(Q,K,V)", r"\sqrt{d_k}", "Concat", "W^O", "W_i^Q", "W_i^V",
                  r"d_\mathrm{model} \to d_k", r"d_\mathrm{model} \to d_v", r"\mathrm{MultiHead}",
                  "§3.2.1", "§3.2.2", "MultiHeadAttention"]:
        assert label in words, label


def test_no_two_labels_overlap(figure):
    renderer = figure.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts(figure)]
    assert len(boxes) > 15
    clashes = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
               if box_a.overlaps(box_b)]
    assert clashes == []


def test_fonts_are_at_least_ten_points(figure):
    assert min(t.get_fontsize() for t in texts(figure)) >= 10


def test_saves_as_a_page_width_png(figure, monkeypatch, tmp_path):
    monkeypatch.setattr(notebook, "QUICK", True)
    monkeypatch.setenv(notebook.FIGURES_ENV, str(tmp_path))
    path = notebook.save_figure(figure, "diagram")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width = plt.imread(path).shape[:2]
    assert 700 <= width <= 850 and height > 0.7 * width
