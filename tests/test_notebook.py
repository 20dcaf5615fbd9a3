"""The notebook helpers the chapters rely on: show() prints the package's own source,
save_figure() keeps quick-mode figures out of figures/, agree_with_reference() checks against
the NumPy reference in one line, and the plotting helpers (draw_heads() lays out attention maps)
draw what the chapters claim."""
import IPython.display
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from annotated.base.files import atomic_open
from annotated.notebooks import chapter as notebook
from annotated.notebooks import plots, training_plots
from annotated.notebooks.chapter import show
from annotated.notebooks.plots import draw_heads
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
    with pytest.raises(AssertionError, match=r"by more than 1e-12: off \(1.0e-06\)"):
        notebook.agree_with_reference([("same", a, a.numpy()), ("off", a, a.numpy() + 1e-6)])
    with pytest.raises(AssertionError, match=r"shapes differ .*: row \(2, 3\) vs \(3,\)"):
        notebook.agree_with_reference([("row", a, np.zeros(3))])


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


def test_table3_params_table_leaves_rows_without_a_printed_count_blank():
    text = notebook.table3_params_table([("base", 63_082_496, 65), ("A1", 63_082_496, None),
                                         ("big", 214_245_376, 213)]).data
    lines = text.splitlines()
    assert lines[2:] == ["| base | 63.08 | 65 | -1.92 |", "| A1 | 63.08 |  |  |",
                         "| big | 214.25 | 213 | +1.25 |"]


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


def test_parameters_by_component_gives_every_parameter_to_exactly_one_component():
    from annotated.model import count_parameters, make_model
    model = make_model(11, 11, N=2, d_model=8, d_ff=16, h=2)
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
