"""The notebook helpers the chapters rely on: show() prints the package's own source,
save_figure() keeps quick-mode figures out of figures/, agree_with_reference() checks against
the NumPy reference in one line, and the plotting helpers (draw_heads() lays out attention maps)
draw what the chapters claim, with text a page can show legibly."""
import itertools

import IPython.display
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from conftest import says

from annotated.base.files import atomic_open
from annotated.notebooks import chapter as notebook
from annotated.notebooks import plots, training_plots
from annotated.notebooks.chapter import show
from annotated.notebooks.plots import LEGIBLE_POINTS, draw_heads, draw_query_row
from annotated.notebooks.training_plots import draw_beam_tree
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
    assert text.startswith("`annotated/base/files.py`\n```python\n@contextmanager\ndef atomic_open(")


def test_draw_heads_lays_out_every_layer_and_head_on_one_scale():
    weights = np.full((2, 8, 3, 5), 0.2)                   # (layers, heads, queries, keys)
    fig = draw_heads(weights, list("abc"), list("vwxyz"), "t", wrap=4)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 16 and len(fig.axes) == 17      # 2 layers x 2 lines x 4, + colour bar
    assert all(ax.images[0].get_clim() == (0, 1) for ax in panels)
    assert [ax.get_title() for ax in panels[:8]] == [f"head {i}" for i in range(1, 9)]
    assert [t.get_text() for t in panels[-4].get_xticklabels()] == list("vwxyz")   # bottom line


def test_draw_heads_draws_the_heads_chosen_under_their_own_numbers_in_light_colours():
    weights = np.random.default_rng(0).dirichlet(np.ones(5), size=(1, 4, 3))   # (1, 4, 3, 5)
    fig = draw_heads(weights, list("abc"), list("vwxyz"), "t", wrap=2, heads=[2, 4])
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["head 2", "head 4"]
    assert np.array_equal(panels[1].images[0].get_array(), weights[0, 3])
    assert panels[0].images[0].get_cmap().name == plots.ATTENTION_COLOURS
    low = panels[0].images[0].get_cmap()(0.0)                        # a weight of 0: near white
    assert min(low[:3]) > 0.9
    plt.close(fig)


def test_entropy_is_log_n_when_uniform_and_zero_for_exact_zeros_in_every_dtype():
    for dtype in (torch.float16, torch.float32, torch.float64):
        one_hot = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=dtype)
        h = notebook.entropy(one_hot)
        assert h[0].item() == 0.0 and abs(h[1].item() - np.log(4)) < 1e-3, dtype
    assert abs(notebook.entropy(np.full(5, 0.2, dtype=np.float32)).item() - np.log(5)) < 1e-6


def test_figures_go_where_regenerate_says_and_never_over_the_committed_ones_otherwise(
        monkeypatch, tmp_path):
    """The package knows no path of the project around it: chapters/regenerate.py names the
    figures folder (ANNOTATED_FIGURES); without it, figures go to a scratch folder."""
    fig = plt.figure()
    monkeypatch.setenv(notebook.FIGURES_ENV, str(tmp_path / "figures"))
    assert notebook.save_figure(fig, "x") == tmp_path / "figures" / "x.png"
    monkeypatch.delenv(notebook.FIGURES_ENV)
    monkeypatch.setattr(notebook, "SCRATCH_FIGURES", tmp_path / "scratch")
    assert notebook.save_figure(fig, "x") == tmp_path / "scratch" / "x.png"
    assert (tmp_path / "figures" / "x.png").is_file() and (tmp_path / "scratch" / "x.png").is_file()
    plt.close(fig)


def test_save_figure_refuses_a_figure_whose_text_a_page_shows_below_nine_pixels(
        monkeypatch, tmp_path):
    """A page shows a figure at most 700 px wide: text of s points in a figure W px wide shows
    at s * 100/72 * min(1, 700/W) px. 6 points on a 12-inch canvas is about 5 px there: refused,
    naming the figure, its smallest text and that size, nothing written; 11 points on 7 inches
    is about 15 px: saved."""
    monkeypatch.setenv(notebook.FIGURES_ENV, str(tmp_path))
    wide, ax = plt.subplots(figsize=(12, 3))
    ax.set_title("the title", fontsize=11)
    ax.tick_params(labelsize=6)
    with pytest.raises(ValueError) as error:
        notebook.save_figure(wide, "wide")
    says(error, "'wide'", "6 pt", "9 px")
    assert not (tmp_path / "wide.png").exists()
    narrow, ax = plt.subplots(figsize=(7, 3))
    ax.set(title="the title", xlabel="x", ylabel="y")
    for text in [ax.title, ax.xaxis.label, ax.yaxis.label]:
        text.set_fontsize(11)
    ax.tick_params(labelsize=11)
    assert notebook.save_figure(narrow, "narrow").is_file()
    px, points, _, width = notebook.smallest_text(narrow)
    assert points == 11 and width <= 700 and px > 15
    plt.close("all")


def test_training_settings_table_reads_the_presets_and_adam():
    text = notebook.training_settings_table().data
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    assert rows["model width"].startswith("| model width | 512 | 1,024 | `d_model`")
    assert rows["training steps"].startswith("| training steps | 100,000 | 300,000 |")
    assert "0.3 (0.1 for English-French, §6.1)" in rows["dropout"]
    assert rows["Adam β1, β2, ε"].startswith("| Adam β1, β2, ε | 0.9, 0.98, 1e-09 | 0.9, 0.98, 1e-09")
    assert "8 NVIDIA P100 GPUs" in rows["hardware"] and "| 12 hours | 3.5 days |" in text


def test_plot_shards_draws_each_piece_of_the_batch_once_per_placement(monkeypatch, tmp_path):
    monkeypatch.setenv(notebook.FIGURES_ENV, str(tmp_path))
    monkeypatch.setattr(notebook, "QUICK", True)
    lengths = [(n, n + 1) for n in range(5, 25)]                # 20 pairs
    training_plots.plot_shards(lengths, list(range(20)), [(4, 1), (2, 2)], save_as="shards")
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
    with pytest.raises(AssertionError) as error:
        notebook.agree_with_reference([("same", a, a.numpy()), ("off", a, a.numpy() + 1e-6)])
    says(error, "1e-12", "off (1.0e-06)")
    with pytest.raises(AssertionError) as error:
        notebook.agree_with_reference([("row", a, np.zeros(3))])
    says(error, "shapes differ", "row (2, 3) vs (3,)")


def test_the_reference_check_wraps_a_long_list_of_names_between_whole_names(capsys):
    a = torch.zeros(2, dtype=torch.float64)
    names = ["output", "d memory (as key + value)"] + [f"W_{x}.{p}" for x in "QKVO" for p in ("weight", "bias")]
    notebook.agree_with_reference([(name, a, a.numpy()) for name in names])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 2 and all(len(line) <= notebook.OUTPUT_CHARS for line in lines)
    assert lines[0] == "all 10 agree to 1e-12 (max abs difference) with reference_numpy:"
    listed = [name.strip() for line in lines[1:] for name in line.split(",") if name.strip()]
    assert listed == names                                       # every name whole, in order


@pytest.fixture
def quick_figures(monkeypatch, tmp_path):
    """Figures of the helpers go to tmp_path; every figure is closed afterwards."""
    monkeypatch.setenv(notebook.FIGURES_ENV, str(tmp_path))
    monkeypatch.setattr(notebook, "QUICK", True)
    yield tmp_path
    plt.close("all")


def test_plot_padded_batch_masks_draws_both_masks_of_every_sentence(quick_figures):
    from annotated.masks import padding_mask, target_mask
    itos = ["<pad>", "<unk>", "<bos>", "<eos>", "a", "b", "c"]
    src = torch.tensor([[4, 5, 3], [6, 3, 0]])                   # (batch, src_len)
    tgt_in = torch.tensor([[2, 4, 5], [2, 6, 0]])                # (batch, tgt_len)
    plots.plot_padded_batch_masks(src, tgt_in, padding_mask(src, 0), target_mask(tgt_in, 0),
                                     itos, save_as="masks")
    axes = plt.gcf().axes
    assert len(axes) == 4 and (quick_figures / "masks.png").is_file()
    encoder_of_1 = axes[1].images[0].get_array()                 # (src_len, src_len), as drawn
    assert encoder_of_1.tolist() == [[True, True, False]] * 3    # the padding column blocked
    assert [t.get_text() for t in axes[3].get_xticklabels()] == ["<bos>", "c", "<pad>"]


def test_plot_output_changes_draws_exact_zeros_white(quick_figures):
    change = {"causal": torch.tensor([[1.0, 0.5], [0.0, 2.0]]), "none": torch.ones(2, 2)}
    plots.plot_output_changes(change, ["x", "y"], save_as="flow")
    image = plt.gcf().axes[0].images[0].get_array()
    assert image.mask.tolist() == [[False, False], [True, False]]   # only the exact zero
    assert (quick_figures / "flow.png").is_file()


def test_plot_pe_heatmap_gives_each_entry_two_by_one_whole_pixels(quick_figures):
    from annotated.positional import sinusoid_table
    plots.plot_pe_heatmap(sinusoid_table(40, 16), save_as="heat")
    sines, cosines = [ax.get_window_extent() for ax in plt.gcf().axes[:2]]
    assert (round(sines.width), round(sines.height)) == (16, 40)   # 8 pairs x 2, 40 positions
    assert (round(cosines.width), round(cosines.height)) == (16, 40)


def test_plot_parameters_by_component_needs_every_component_and_draws_them_in_order(
        quick_figures):
    sizes = {name: 1_000_000 * (i + 1) for i, name in enumerate(plots.COMPONENTS)}
    plots.plot_parameters_by_component(sizes, "m", save_as="params")
    (ax,) = plt.gcf().axes
    assert [t.get_text() for t in ax.get_yticklabels()] == plots.COMPONENTS[::-1]
    assert ax.get_title() == "m: 36.00M parameters by component"
    with pytest.raises(ValueError, match="expected the components"):
        plots.plot_parameters_by_component({"FFN": 1}, "m", save_as="params")


def test_draw_ablation_draws_each_row_against_the_base_and_the_seed_band():
    row = lambda paper_row, ppl, bleu, paper_ppl, paper_bleu: dict(
        paper_row=paper_row, ppl=ppl, bleu=bleu, paper_ppl=paper_ppl, paper_bleu=paper_bleu)
    table = {"base": row("base", 10.0, 30.0, 5.0, 25.0),
             "base, seed 2": row("base", 11.0, 29.0, 5.0, 25.0),
             "A: h=1": row("A1", 12.0, 31.5, 5.5, 24.0)}
    fig = training_plots.draw_ablation(table)
    ppl, bleu = fig.axes[:2]
    ours_ppl, paper_ppl = [p.get_width() for p in ppl.patches[1:]]    # patches[0]: the band
    assert (round(ours_ppl, 9), round(paper_ppl, 9)) == (20.0, 10.0)  # percent from the base row
    ours_bleu, paper_bleu = [p.get_width() for p in bleu.patches[1:]]
    assert (ours_bleu, paper_bleu) == (1.5, -1.0)                      # points from the base row
    band = ppl.patches[0]
    assert (band.get_x(), round(band.get_width(), 9)) == (0.0, 10.0)   # seeds 10, 11: 0 to +10%
    assert [t.get_text() for t in ppl.get_yticklabels()] == ["A1  h=1"]
    plt.close(fig)


def test_draw_sweep_places_each_run_and_its_gain_from_the_length_penalty():
    row = lambda average, alpha, bleu: dict(average=average, beam=4, alpha=alpha,
                                            lowercase_bleu=bleu, bleu=bleu, val_ppl=5.0)
    run = lambda overrides, rows, processes=1: dict(preset="multi30k_tiny", overrides=overrides,
                                                     processes=processes, rows=rows)
    sweep = {"candidates": {"one": run([], [row(5, 0.6, 30.0), row(5, 1.0, 31.0)]),
                            "two": run(["P_drop=0.2"], [row(1, 0.6, 39.0), row(5, 0.6, 38.0),
                                                         row(5, 1.4, 38.5)], processes=2)},
             "other_seed": {"two_seed2": run(["P_drop=0.2", "seed=2"], [row(1, 0.6, 40.0)],
                                             processes=2)},
             "second_hour": {"two_2h": run(["P_drop=0.2"], [row(5, 1.0, 41.0)], processes=2)}}
    assert training_plots.sweep_source(sweep["other_seed"]["two_seed2"],
                                       sweep["candidates"]) == "two"
    fig = training_plots.draw_sweep(sweep)
    best, gains = fig.axes[:2]
    points = {tuple(line.get_xydata()[0]) for line in best.lines if len(line.get_xydata())}
    assert points == {(31.0, 1.0), (39.0, 0.0), (40.0, 0.0), (41.0, 0.0)}  # "one" on top
    assert [t.get_text() for t in best.get_yticklabels()] == ["2", "1"]
    curves = [line.get_xydata().tolist() for line in gains.lines if line.get_label() in ("1", "2")]
    assert curves == [[[0.6, 0.0], [1.0, 1.0]], [[0.6, 0.0], [1.4, 0.5]]]  # over alpha 0.6
    plt.close(fig)


def test_plot_head_peaks_draws_each_kinds_layer_means_and_every_head(quick_figures):
    peaks = {"encoder": np.array([[0.2, 0.4], [0.6, 0.8]]), "cross": np.array([[0.5, 0.5],
                                                                                 [0.9, 0.7]])}
    training_plots.plot_head_peaks(peaks, "peaks")
    ax = plt.gcf().axes[0]
    means = [line for line in ax.lines if line.get_label() in peaks]
    assert [line.get_label() for line in means] == ["encoder", "cross"]
    assert np.allclose([line.get_ydata() for line in means], [[0.3, 0.7], [0.5, 0.8]])
    heads = sorted(y for line in ax.lines if line.get_label() not in peaks
                   for y in line.get_ydata())
    assert heads == sorted(np.concatenate([p.ravel() for p in peaks.values()]))
    plt.close("all")


def test_plot_table2_draws_each_reported_number_once_and_the_transformer_in_bold(
        quick_figures):
    rows = [dict(model="ByteNet", en_de_bleu=23.75, en_fr_bleu=None, en_de_flops=None,
                 en_fr_flops=None),
            dict(model="Transformer (big)", en_de_bleu=28.4, en_fr_bleu=41.8, en_de_flops=2.3e19,
                 en_fr_flops=None)]
    training_plots.plot_table2(rows, "t2")
    bleu, cost = plt.gcf().axes[:2]
    assert sorted(p.get_width() for p in bleu.patches) == [23.75, 28.4, 41.8]
    assert [p.get_width() for p in cost.patches] == [2.3e19]
    labels = {t.get_text(): t.get_fontweight() for t in bleu.get_yticklabels()}
    assert labels == {"ByteNet": "normal", "Transformer (big)": "bold"}
    plt.close("all")


def test_parameters_by_component_gives_every_parameter_to_exactly_one_component():
    from annotated.model import count_parameters, make_model
    model = make_model(11, N=2, d_model=8, d_ff=16, h=2)          # one shared vocabulary
    sizes = plots.parameters_by_component(model)
    assert list(sizes) == plots.COMPONENTS and sum(sizes.values()) == count_parameters(model)
    assert sizes["embedding (shared x3)"] == 11 * 8                  # one table, counted once
    assert sizes["encoder FFN"] == sizes["decoder FFN"] == 2 * (2 * 8 * 16 + 16 + 8)
    assert sizes["decoder enc-dec attention"] == sizes["encoder self-attention"] == 2 * 4 * (8 * 8 + 8)


def test_torch_multihead_like_computes_our_layer_with_pytorchs():
    from annotated.multihead import MultiHeadAttention
    ours = MultiHeadAttention(16, 4).double()
    theirs = notebook.torch_multihead_like(ours)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        expected = ours(x, x, x)
        got, _ = theirs(x, x, x, need_weights=False)
    assert theirs.in_proj_weight.dtype == torch.float64
    assert (got - expected).abs().max().item() < 1e-12


def test_decoder_output_changes_finds_no_change_left_of_the_changed_token_only_under_the_causal_mask():
    from annotated.masks import padding_mask, target_mask
    from annotated.model import make_model
    torch.manual_seed(0)
    model = make_model(12, 12, N=2, d_model=16, d_ff=32, h=2, P_drop=0.0).double().eval()
    src, tgt_in = torch.tensor([[5, 6, 7, 3]]), torch.tensor([[2, 8, 9, 10, 11]])
    causal = notebook.decoder_output_changes(model, src, tgt_in, target_mask(tgt_in, 0), 4, 5)
    no_mask = notebook.decoder_output_changes(model, src, tgt_in, padding_mask(tgt_in, 0), 4, 5)
    left = torch.ones(5, 5, dtype=torch.bool).tril(-1)        # entry (j, i) with i < j
    assert causal.shape == (5, 5)
    assert (causal[left] == 0).all() and (causal[~left] > 0).all()
    assert (no_mask > 0).all()


def test_attention_layer_costs_of_row_a_are_constant_and_match_the_count_from_shapes():
    from annotated.configs import get
    from annotated.training.flops import attention_flops
    table = notebook.attention_layer_costs(["A1", "base", "A4"], n_tokens=7)
    assert [r["h"] for r in table] == [1, 8, 32]
    for r in table:                       # the measured counter agrees with the shape formula
        cfg = get(r["row"])
        assert r["proj"] + r["attn"] == attention_flops(7, 7, cfg.d_model, cfg.h, cfg.d_k, cfg.d_v)
        assert r["entries"] == cfg.h * 49
    assert len({(r["params"], r["proj"], r["attn"]) for r in table}) == 1


def smallest_text_on_the_page(fig, path) -> float:
    """The smallest text of `fig` (saved as `path`) as a page shows it: its size in points,
    scaled by 700 pixels over the width of the saved image (a page shows a figure at most about
    700 pixels wide)."""
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip()]
    width = plt.imread(path).shape[1]
    return min(sizes) * 700 / width


def test_draw_query_row_lists_every_key_once_in_order_and_marks_the_query(quick_figures):
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(5), size=(2, 3, 5))          # (layers, heads, queries, keys)
    pieces = ["a", "b", "c", "d", "e"]
    fig = draw_query_row(weights, pieces, query=2, title="t", marked=[3])
    blocks = [ax for ax in fig.axes if ax.images]
    assert len(blocks) == 2                                      # the keys in two blocks
    labels = [label for ax in blocks for label in ax.get_yticklabels()]
    assert [label.get_text() for label in labels] == pieces      # every key once, in order
    assert labels[2].get_color() == "crimson" and labels[2].get_fontweight() == "bold"
    assert labels[3].get_fontweight() == "bold" and labels[1].get_fontweight() != "bold"
    assert [t.get_text() for t in blocks[0].get_xticklabels()] == ["1", "2", "3"] * 2
    first = blocks[0].images[0].get_array()                      # (keys of block 0, layers*heads)
    assert np.allclose(first[:3], weights[:, :, 2, :3].reshape(6, 3).T)
    path = notebook.save_figure(fig, "query")
    assert smallest_text_on_the_page(fig, path) >= LEGIBLE_POINTS


def test_draw_beam_tree_boxes_every_prefix_under_its_parent_with_no_links_crossing(quick_figures):
    from annotated.data.tokenizer import EOS
    from annotated.inference.search import Hypothesis
    # k = 2, three steps; in row 2 the better prefix extends the worse one of row 1, so links
    # drawn in the order of the ranks would cross
    live = [[[5], [6]], [[6, 8], [5, 7]], [[5, 7, 9], [6, 8, 9]]]
    scores = [[-0.1, -2.0], [-1.5, -2.5], [-3.0, -4.0]]
    best = Hypothesis([5, 7, EOS], -2.6, -1.8)                      # ends after 3 tokens
    draw_beam_tree(live, scores, best, lambda t: "EOS" if t == EOS else f"w{t}", "t",
                   save_as="beam")
    fig = plt.gcf()
    (ax,) = fig.axes
    boxes = [t for t in ax.texts if t.get_bbox_patch() is not None]
    where = {t.get_text(): t.get_position() for t in boxes}
    assert len(boxes) == 1 + 6 + 1                                 # BOS, 3 steps x 2, the answer
    assert "w9\n-3.00" in where and "w8\n-1.50" in where
    assert where["EOS\n-2.60\nscore -1.80"][1] == -3             # in the row of its length
    assert where["w7\n-2.50"][0] < where["w8\n-1.50"][0]         # under its parent w5: left
    links = [line.get_data() for line in ax.lines]
    assert len(links) == 7                                         # one into every box but BOS
    for (x1, y1), (x2, y2) in itertools.combinations(links, 2):
        if y1[1] == y2[1]:                                         # between the same two rows
            assert (x1[0] - x2[0]) * (x1[1] - x2[1]) >= 0, "two links cross"
    fig.canvas.draw()
    extents = [t.get_bbox_patch().get_window_extent() for t in boxes]
    assert not any(a.overlaps(b) for i, a in enumerate(extents) for b in extents[i + 1:])
    assert smallest_text_on_the_page(fig, quick_figures / "beam.png") >= LEGIBLE_POINTS


@pytest.mark.parametrize("value, full, noted", [("1", True, False), ("true", True, False),
                                                ("0", False, False), ("", False, False),
                                                ("full", False, True)])
def test_the_full_form_is_asked_for_by_1_or_true_and_anything_else_is_said(value, full, noted,
                                                                          monkeypatch, capsys):
    from annotated.notebooks.chapter import FULL_ENV, full_form
    monkeypatch.setenv(FULL_ENV, value)
    assert full_form() is full
    err = capsys.readouterr().err
    if noted:
        says(err, "ANNOTATED_FULL='full'", "quick form", "ANNOTATED_FULL=1")
    else:
        assert err == ""


@pytest.mark.slow
def test_a_chapter_is_checked_the_same_from_another_folder(tmp_path):
    """nbval on one chapter run from outside the project: the sanitize file that pyproject's
    addopts names relative to the project is found, not 21 errors of a missing file."""
    import subprocess
    import sys
    from pathlib import Path
    chapter = Path(__file__).resolve().parents[1] / "chapters" / "02_masking.ipynb"
    done = subprocess.run([sys.executable, "-m", "pytest", "--nbval", str(chapter), "-q",
                           "-n", "0"], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "sanitize.cfg" not in done.stdout
