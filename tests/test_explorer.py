"""The attention explorer page (book/explorer.py writes its data, book/explorer.md is the page,
book/static/explorer.js draws it), on the site that `python -m book build` builds.

- The data file: its weights equal the shipped model's own, recomputed here from the
  `weights` that annotated.multihead's MultiHeadAttention keeps when `record_weights` is on
  (not through the explorer's code), to the stored rounding (1/255), for several sentences,
  every kind, layer and head; every row sums to 1 within that rounding; the translations are
  the ones annotated.inference.batched.translate_lines gives; the file stays under 5 MB.
- The page, in headless Chromium over http (the `site`, `server` and `browser` fixtures of
  test_book): no console error, no request that leaves the site; a sentence, a kind, a layer
  and a head chosen, a row hovered, and the weights it lists, its table and its grid's cells
  equal to the data's (and so to the model's); text of 12 px or more; colours that follow the
  light and dark modes; the same page works from file://. Screenshots go to build/screenshots/.
"""
import base64
import json
import time

import numpy as np
import pytest
import torch

from annotated.base.files import read_lines
from annotated.data.tokenizer import BOS, EOS, PAD
from annotated.inference.batched import translate_lines
from annotated.masks import padding_mask, subsequent_mask
from annotated.store.checkpoint_file import load_model
from book import explorer
from test_book import (SCREENSHOTS, browser, page_problems, requested_urls,  # noqa: F401
                       server, site, visit)

LEVELS = 255
KINDS = ("encoder", "decoder", "cross")
MAX_BYTES = 5_000_000
# Sentences checked against the model: the one the page opens on, the shortest and the longest
# of those picked by hand, and one more.
CHECKED = (explorer.FEATURED[0], explorer.FEATURED[1], explorer.FEATURED[-1], 150)


@pytest.fixture(scope="module")
def data(site):
    """The data object of the built site's data file, parsed here (not by book.explorer)."""
    text = (site / "_static" / explorer.DATA).read_text(encoding="utf-8")
    head = "window.EXPLORER_DATA = "
    start = text.index(head) + len(head)
    parsed = json.loads(text[start:].rstrip().removesuffix(";"))
    parsed["bytes"] = np.frombuffer(base64.b64decode(parsed["weights"]), dtype=np.uint8)
    parsed["file_size"] = len(text.encode("utf-8"))
    return parsed


@pytest.fixture(scope="module")
def model():
    return load_model(explorer.CHECKPOINT)


def stored(data: dict, n: int) -> dict[str, np.ndarray]:
    """Sentence n's weights from the data, as {kind: (N, h, rows, keys) in 0..255}; the
    decoder's masked keys (above the diagonal) are -1. The layout of book/explorer.py's
    docstring: encoder S x S, decoder lower triangle by rows, cross T x S, per layer and head."""
    entry, m = data["sentences"][n], data["model"]
    S, T, N, h = len(entry["src"]), len(entry["tgt"]), m["N"], m["h"]
    at = entry["offset"]
    out = {}
    for kind, size in [("encoder", S * S), ("decoder", T * (T + 1) // 2), ("cross", T * S)]:
        block = data["bytes"][at:at + N * h * size].astype(int).reshape(N, h, size)
        at += N * h * size
        if kind == "decoder":
            full = -np.ones((N, h, T, T), dtype=int)
            rows, keys = np.tril_indices(T)
            full[:, :, rows, keys] = block
            block = full
        out[kind] = block.reshape(N, h, -1, S if kind != "decoder" else T)
    return out


def model_weights(model, src_ids: list[int], out_ids: list[int]) -> dict[str, np.ndarray]:
    """The model's own attention weights for one sentence and its translation, teacher-forced:
    every MultiHeadAttention records its last weights in `.weights` (annotated/multihead.py)."""
    src = torch.tensor([src_ids + [EOS]])
    tgt = torch.tensor([[BOS] + out_ids[:-1]])
    layers = model.encoder.layers, model.decoder.layers
    for m in model.attention_modules():
        m.record_weights = True
    try:
        with torch.no_grad():
            model(src, tgt, padding_mask(src, PAD), subsequent_mask(tgt.size(1)))
        return {
            "encoder": np.stack([l.self_attn.weights[0].numpy() for l in layers[0]]),
            "decoder": np.stack([l.self_attn.weights[0].numpy() for l in layers[1]]),
            "cross": np.stack([l.src_attn.weights[0].numpy() for l in layers[1]])}
    finally:
        for m in model.attention_modules():
            m.record_weights, m.weights = False, None


def test_the_page_is_staged_with_its_numbers_filled_in(tmp_path, model):
    _, config, tokenizer = model
    explorer.stage(tmp_path)
    page = (tmp_path / explorer.PAGE).read_text(encoding="utf-8")
    assert page.startswith("# Attention explorer") and "{{" not in page
    prose = " ".join(page.split())
    assert f"{config.N} layers in each stack, {config.h} heads" in prose
    assert f"{tokenizer.vocab_size:,} subword pieces" in prose
    assert f"a beam of {config.beam_size}, length penalty alpha = {config.alpha}" in prose
    assert "(§3.2)" in prose and "(§3.2.3)" in prose and "http" not in prose


@pytest.mark.slow
def test_the_data_holds_every_sentence_and_stays_small(data, model):
    net, config, tokenizer = model
    lines = list(read_lines(explorer.SENTENCES))
    assert [s["source"] for s in data["sentences"]] == lines
    assert data["model"]["N"] == config.N and data["model"]["h"] == config.h
    assert data["file_size"] < MAX_BYTES, f"{data['file_size']:,} bytes"
    assert data["featured"] == list(explorer.FEATURED) and len(set(data["featured"])) == 20
    expected = translate_lines(net, tokenizer, lines, beam_size=config.beam_size,
                               alpha=config.alpha, max_extra=config.max_extra)
    for n, (entry, translation) in enumerate(zip(data["sentences"], expected)):
        assert entry["translation"] == translation, n
        assert tokenizer.decode(entry["out_ids"]) == translation
        assert entry["src_ids"] == tokenizer.encode(entry["source"])
        assert len(entry["src"]) == len(entry["src_ids"]) + 1 and entry["src"][-1] == "</s>"
        assert entry["tgt"][0] == "<s>" and entry["tgt"][1:] == entry["next"][:-1]
        assert len(entry["next"]) == len(entry["out_ids"])
    entry = data["sentences"][0]
    assert entry["src"][:8] == ["A", "man", "in", "an", "orange", "hat", "star", "·ring"]


@pytest.mark.slow
def test_every_row_sums_to_one_within_rounding(data):
    for n in range(len(data["sentences"])):
        for kind, q in stored(data, n).items():
            real = np.where(q >= 0, q, 0)
            keys = (q >= 0).sum(axis=-1)
            error = np.abs(real.sum(axis=-1) / LEVELS - 1)
            assert (error <= keys * 0.5 / LEVELS + 1e-9).all(), (n, kind)


@pytest.mark.slow
@pytest.mark.parametrize("n", CHECKED)
def test_the_stored_weights_are_the_models_own(data, model, n):
    net, config, _ = model
    entry = data["sentences"][n]
    ours, theirs = stored(data, n), model_weights(net, entry["src_ids"], entry["out_ids"])
    for kind in KINDS:
        q, w = ours[kind], theirs[kind]
        assert q.shape == w.shape == (config.N, config.h) + q.shape[2:], kind
        shown = q >= 0
        assert np.abs(q[shown] / LEVELS - w[shown]).max() <= 0.5 / LEVELS + 1e-6, kind
        assert (w[~shown] == 0).all(), "a masked key got weight"
    assert ours["decoder"].shape[2] == len(entry["out_ids"]) and ((ours["decoder"] < 0).sum()
                                                                   > 0)


# --- the page in a browser ------------------------------------------------------------------

PANEL_JS = """
return [...document.querySelectorAll('#explorer-hover .explorer-hover-head')].map(line => ({
  head: +line.dataset.head,
  keys: [...line.querySelectorAll('li')].map(li => +li.dataset.key),
  tokens: [...line.querySelectorAll('.explorer-token')].map(e => e.textContent),
  weights: [...line.querySelectorAll('.explorer-weight')].map(e => e.textContent)}));
"""
TABLE_JS = """
return [...document.querySelectorAll('#explorer-tables table')].map(t => ({
  head: +t.dataset.head,
  cols: [...t.tHead.rows[0].cells].slice(1).map(c => c.textContent),
  rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))}));
"""
GRID_JS = """
return [...document.querySelectorAll('#explorer-figure svg')].map(svg => ({
  head: +svg.dataset.head,
  rows: [...svg.querySelectorAll('text[data-row]')].map(t => t.textContent),
  cols: [...svg.querySelectorAll('text[data-col]')].map(t => t.textContent),
  row: [...svg.querySelectorAll('rect[data-row="' + arguments[0] + '"]')].map(r =>
    r.classList.contains('explorer-masked') ? null : r.getAttribute('fill-opacity'))}));
"""
# Font sizes of every element in the explorer that holds text, and the colours that the modes
# change: the grid's ink and its labels.
STYLE_JS = """
const sizes = [...document.querySelectorAll('#explorer *')]
  .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .filter(e => e.getClientRects().length)
  .map(e => parseFloat(getComputedStyle(e).fontSize));
const cell = document.querySelector('#explorer .explorer-cell');
const label = document.querySelector('#explorer text[data-row]');
return {smallest: Math.min(...sizes), cell: getComputedStyle(cell).fill,
        label: getComputedStyle(label).fill,
        background: getComputedStyle(document.body).backgroundColor};
"""


def choose(browser, sentence: int, kind: str, layer: int, head: str, typed: bool):
    """Pick a sentence (from the list, or typed into the number box), a kind, layer and head."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    if typed:
        box = browser.find_element(By.ID, "explorer-index")
        box.clear()
        box.send_keys(str(sentence))
    else:
        Select(browser.find_element(By.ID, "explorer-sentence")).select_by_value(str(sentence))
    browser.find_element(By.CSS_SELECTOR, f'input[name="explorer-kind"][value="{kind}"]').click()
    Select(browser.find_element(By.ID, "explorer-layer")).select_by_value(str(layer))
    Select(browser.find_element(By.ID, "explorer-head")).select_by_value(head)


def hover(browser, row: int):
    """Move the mouse onto the label of `row` in the first grid."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    label = browser.find_element(By.CSS_SELECTOR, f'#explorer-figure text[data-row="{row}"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", label)
    ActionChains(browser).move_to_element(label).perform()


def check_shown(browser, data, model, n: int, kind: str, layer: int, heads: list[int],
                row: int):
    """The hovered row's listed weights, its table and its grid cells against the data (and
    the data against the model)."""
    entry = data["sentences"][n]
    q = stored(data, n)[kind][layer - 1]                        # (h, rows, keys)
    w = model_weights(model[0], entry["src_ids"], entry["out_ids"])[kind][layer - 1]
    rows, cols = {"encoder": ("src", "src"), "decoder": ("tgt", "tgt"),
                  "cross": ("next", "src")}[kind]    # cross: the piece the row writes
    text = browser.find_element("id", "explorer-hover").text
    assert f"Row {row}, “{entry[rows][row]}”" in text
    if kind == "decoder":
        assert f"predicts “{entry['next'][row]}”" in text
    if kind == "cross":
        assert f"fed “{entry['tgt'][row]}”" in text
    panel = browser.execute_script(PANEL_JS)
    assert [line["head"] for line in panel] == heads
    for line in panel:
        values = q[line["head"] - 1, row]
        order = sorted((j for j in range(len(values)) if values[j] >= 0),
                       key=lambda j: (-values[j], j))[:5]
        assert line["keys"] == order
        assert line["tokens"] == [entry[cols][j] for j in order]
        assert line["weights"] == [f"{values[j] / LEVELS:.3f}" for j in order]
        for j, shown in zip(order, line["weights"]):
            assert abs(float(shown) - w[line["head"] - 1, row, j]) <= 0.5 / LEVELS + 0.0005
    tables = browser.execute_script(TABLE_JS)
    assert [t["head"] for t in tables] == heads
    for table in tables:
        values = q[table["head"] - 1]
        assert table["cols"] == entry[cols]
        assert [r[0] for r in table["rows"]] == entry[rows]
        for i, cells in enumerate(table["rows"]):
            assert cells[1:] == [f"{v / LEVELS:.3f}" if v >= 0 else "–" for v in values[i]]
    grids = browser.execute_script(GRID_JS, row)
    assert [g["head"] for g in grids] == heads
    for grid in grids:
        values = q[grid["head"] - 1, row]
        assert grid["rows"] == entry[rows] and grid["cols"] == entry[cols]
        assert grid["row"] == [f"{v / LEVELS:.3f}" if v >= 0 else None for v in values]


def screenshot(browser, name: str):
    """The explorer whole, in a window tall enough for it, saved in build/screenshots/."""
    size = browser.get_window_size()
    height = browser.execute_script("return document.getElementById('explorer').scrollHeight")
    browser.set_window_size(size["width"], height + 200)
    browser.execute_script("const e = document.getElementById('explorer');"
                           "window.scrollTo(0, e.getBoundingClientRect().top + scrollY - 70)")
    browser.save_screenshot(str(SCREENSHOTS / name))
    browser.set_window_size(size["width"], size["height"])


@pytest.mark.slow
def test_the_explorer_in_a_browser(site, server, browser, data, model):
    from selenium.webdriver.common.by import By
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    facts = visit(browser, server + "explorer.html")
    assert not page_problems("explorer.html", facts, server)
    assert browser.find_elements(By.CSS_SELECTOR, "#explorer-figure svg")
    options = browser.find_elements(By.CSS_SELECTOR, "#explorer-sentence option:not([hidden])")
    assert [int(o.get_attribute("value")) for o in options] == data["featured"]

    n = data["featured"][3]
    choose(browser, n, "cross", 3, "2", typed=False)
    hover(browser, 4)
    check_shown(browser, data, model, n, "cross", 3, [2], row=4)
    screenshot(browser, "explorer-light.png")

    choose(browser, 123, "decoder", 2, "all", typed=True)       # not in the list: typed
    assert browser.find_element(By.ID, "explorer-sentence").get_attribute("value") == "other"
    assert "Sentence 123 (English)" in browser.find_element(By.ID, "explorer-pair").text
    hover(browser, 3)
    check_shown(browser, data, model, 123, "decoder", 2, [1, 2, 3, 4], row=3)
    choose(browser, 7, "encoder", 4, "1", typed=True)
    hover(browser, 2)
    check_shown(browser, data, model, 7, "encoder", 4, [1], row=2)
    browser.execute_script(                     # the keyboard: a row's label takes the focus
        "document.querySelector('#explorer-figure text[data-row=\"5\"]').focus()")
    check_shown(browser, data, model, 7, "encoder", 4, [1], row=5)

    light = browser.execute_script(STYLE_JS)
    assert light["smallest"] >= 12, f"text of {light['smallest']} px"
    browser.execute_script("document.documentElement.dataset.theme = 'dark'")
    time.sleep(0.2)
    dark = browser.execute_script(STYLE_JS)
    assert dark["background"] != light["background"]
    assert dark["cell"] != light["cell"] and dark["label"] != light["label"]
    screenshot(browser, "explorer-dark.png")
    browser.execute_script("document.documentElement.dataset.theme = 'light'")
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    outside = [u for u in requested_urls(browser)
               if not u.startswith((server, "data:", "blob:", "about:"))]
    assert not errors and not outside, errors + outside


@pytest.mark.slow
def test_the_explorer_works_from_a_file_url(site, browser, data):
    from selenium.webdriver.common.by import By
    browser.get_log("browser"), browser.get_log("performance")
    browser.get((site / "explorer.html").as_uri())
    grids = browser.find_elements(By.CSS_SELECTOR, "#explorer-figure svg")
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    outside = [u for u in requested_urls(browser)
               if not u.startswith(("file://", "data:", "blob:", "about:"))]
    assert len(grids) == 1 and not errors and not outside, errors + outside
    first = data["sentences"][data["featured"][0]]
    assert first["source"] in browser.find_element(By.ID, "explorer-pair").text
