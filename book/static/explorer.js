// The attention explorer (explorer.md): draws the weights that book/explorer.py computed at
// build time and stored in _static/explorer-data.js as window.EXPLORER_DATA (see that module
// for the layout). Plain JavaScript and SVG; nothing is fetched, so it works from file:// too.
(function () {
  "use strict";
  const root = document.getElementById("explorer");
  if (!root) return;
  const data = window.EXPLORER_DATA;
  const $ = (id) => document.getElementById(id);
  // The words the explorer writes, in the page's language: the build gives every page
  // window.BOOK_WORDS from book/languages/ (`{name}` is filled in here).
  const W = window.BOOK_WORDS.words;
  const say = (key, values = {}) =>
    W[key].replace(/\{(\w+)\}/g, (_, name) => String(values[name]));
  if (!data || !data.sentences) {
    $("explorer-pair").textContent = W.missing;
    return;
  }

  const SVG = "http://www.w3.org/2000/svg";
  const N = data.model.N, H = data.model.h, LEVELS = data.levels;
  const TOP = 5;                                  // attended keys listed for a hovered row
  const FONT_PX = 13;
  const T = {
    names: { encoder: W.encoder, decoder: W.decoder, cross: W.cross },
    head: (h) => say("head", { h }), of: (i, n) => say("of", { i, n }), allHeads: W.all_heads,
    which: (list) => (list.length > 1 ? say("which_all", { heads: H })
      : say("which_one", { head: list[0], heads: H })),
    axes: { encoder: [W.axis_encoder, W.axis_encoder],
            decoder: [W.axis_decoder, W.axis_decoder_keys],
            cross: [W.axis_cross, W.axis_encoder] },
    caption: (name, layer, which, rows, keys) =>
      say("caption", { name, layer, layers: N, which, rows, keys }),
    table: (name, layer, head) => say("table", { name, layer, head }),
    corner: W.corner,
    row: (i, token) => say("row", { i, token }),
    predicts: (next) => say("predicts", { next }),
    fed: (fed) => say("fed", { fed }),
    hover: (text) => say("hover", { text }),
    sentence: (n) => say("sentence", { n }), translation: W.translation,
    label: (label) => say("label", { label }),
  };
  const NAMES = T.names;
  const bytes = Uint8Array.from(atob(data.weights), (c) => c.charCodeAt(0));
  const state = { sentence: data.featured[0], kind: "encoder", layer: 1, head: "1", row: null };

  // --- the data -------------------------------------------------------------------------
  function axes(s, kind) {
    // [row labels, column labels] of one kind of attention: a decoder position is labelled by
    // the piece fed in where its keys are pieces fed in too (self-attention), and by the piece
    // it writes where it reads the English (encoder-decoder attention)
    if (kind === "encoder") return [s.src, s.src];
    if (kind === "decoder") return [s.tgt, s.tgt];
    return [s.next, s.src];
  }

  function rowBytes(s, kind, layer, head, i) {
    // the stored weights (0..LEVELS) of row i; a decoder row holds keys 0..i only
    const S = s.src.length, T = s.tgt.length, tri = (T * (T + 1)) / 2;
    const index = (layer - 1) * H + (head - 1);
    let start = s.offset, length = S;
    if (kind === "encoder") {
      start += index * S * S + i * S;
    } else if (kind === "decoder") {
      start += N * H * S * S + index * tri + (i * (i + 1)) / 2;
      length = i + 1;
    } else {
      start += N * H * (S * S + tri) + index * T * S + i * S;
    }
    return bytes.subarray(start, start + length);
  }

  const shown = (q) => (q / LEVELS).toFixed(3);

  function topKeys(row) {
    return Array.from(row, (q, j) => [q, j])
      .sort((a, b) => b[0] - a[0] || a[1] - b[1])
      .slice(0, TOP);
  }

  // --- drawing ----------------------------------------------------------------------------
  const measure = document.createElement("canvas").getContext("2d");
  function textWidth(text) {
    measure.font = `700 ${FONT_PX}px ${getComputedStyle(root).fontFamily}`;   // bold: the widest
    return measure.measureText(text).width;
  }

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function heads() {
    return state.head === "all" ? Array.from({ length: H }, (_, i) => i + 1) : [+state.head];
  }

  function grid(s, head, cell) {
    // one head's weights as an SVG grid, tokens on both axes
    const [rows, cols] = axes(s, state.kind);
    const left = Math.ceil(Math.max(...rows.map(textWidth))) + 10;
    const top = Math.ceil(Math.max(...cols.map(textWidth))) + 10;
    const width = left + cols.length * cell + 2, height = top + rows.length * cell + 2;
    const svg = el("svg", {
      width, height, viewBox: `0 0 ${width} ${height}`, class: "explorer-grid",
      role: "group", "data-head": head,
      "aria-label": `${NAMES[state.kind]}, layer ${state.layer}, head ${head}: ` +
        `${rows.length} rows by ${cols.length} columns; the table below lists every weight`,
    });
    const colLabels = el("g", { class: "explorer-cols" }, svg);
    cols.forEach((token, j) => {
      const x = left + j * cell + cell / 2 + FONT_PX / 3, y = top - 6;
      const t = el("text", { x, y, transform: `rotate(-90 ${x} ${y})`, "data-col": j }, colLabels);
      t.textContent = token;
    });
    const cells = el("g", { class: "explorer-cells" }, svg);
    const rowLabels = el("g", { class: "explorer-rows" }, svg);
    rows.forEach((token, i) => {
      const y = top + i * cell;
      const label = el("text", {
        x: left - 6, y: y + cell / 2 + FONT_PX / 3, "text-anchor": "end", "data-row": i,
        tabindex: 0, role: "button", "aria-label": `row ${i}, ${token}: show its largest weights`,
      }, rowLabels);
      label.textContent = token;
      const weights = rowBytes(s, state.kind, state.layer, head, i);
      cols.forEach((key, j) => {
        const masked = j >= weights.length;
        const rect = el("rect", {
          x: left + j * cell, y, width: cell, height: cell, "data-row": i,
          class: masked ? "explorer-masked" : "explorer-cell",
        }, cells);
        if (!masked) rect.setAttribute("fill-opacity", (weights[j] / LEVELS).toFixed(3));
        const tip = el("title", {}, rect);
        tip.textContent = masked ? `${token} → ${key}: masked (a later position)`
          : `${token} → ${key}: ${shown(weights[j])}`;
      });
    });
    el("rect", {
      x: left, y: top, width: cols.length * cell, height: rows.length * cell,
      class: "explorer-frame",
    }, svg);
    el("rect", { class: "explorer-mark", x: left - 1, y: 0, width: cols.length * cell + 2,
                 height: cell + 2, visibility: "hidden" }, svg);
    svg.dataset.left = left;
    svg.dataset.top = top;
    svg.dataset.cell = cell;
    return svg;
  }

  function draw() {
    const s = data.sentences[state.sentence];
    const [rows, cols] = axes(s, state.kind);
    const figure = $("explorer-figure");
    figure.textContent = "";
    const list = heads();
    const room = Math.max(figure.clientWidth, 320);
    const labels = Math.ceil(Math.max(...rows.map(textWidth))) + 12;
    const across = list.length > 1 ? Math.min(2, list.length) : 1;
    const fit = Math.floor((room / across - labels - 24) / cols.length);
    const cell = Math.max(list.length > 1 ? 14 : 15, Math.min(list.length > 1 ? 24 : 36, fit));
    for (const head of list) {
      const box = document.createElement("figure");
      box.className = "explorer-head";
      const title = document.createElement("figcaption");
      title.textContent = T.head(head);
      box.appendChild(title);
      box.appendChild(grid(s, head, cell));
      figure.appendChild(box);
    }
    const [what, keys] = T.axes[state.kind];
    $("explorer-caption").textContent =
      T.caption(NAMES[state.kind], state.layer, T.which(list), what, keys);
    drawTables(s, rows, cols, list);
    highlight(state.row !== null && state.row < rows.length ? state.row : 0);
  }

  function drawTables(s, rows, cols, list) {
    const box = $("explorer-tables");
    box.textContent = "";
    for (const head of list) {
      const wrap = document.createElement("div");
      wrap.className = "explorer-table-wrap";
      const table = document.createElement("table");
      table.className = "explorer-table";
      table.dataset.head = head;
      const caption = table.createCaption();
      caption.textContent = T.table(NAMES[state.kind], state.layer, head);
      const headRow = table.createTHead().insertRow();
      const corner = document.createElement("th");
      corner.textContent = T.corner;
      headRow.appendChild(corner);
      cols.forEach((token) => {
        const th = document.createElement("th");
        th.scope = "col";
        th.textContent = token;
        headRow.appendChild(th);
      });
      const body = table.createTBody();
      rows.forEach((token, i) => {
        const tr = body.insertRow();
        const th = document.createElement("th");
        th.scope = "row";
        th.textContent = token;
        tr.appendChild(th);
        const weights = rowBytes(s, state.kind, state.layer, head, i);
        cols.forEach((_, j) => {
          tr.insertCell().textContent = j < weights.length ? shown(weights[j]) : "–";
        });
      });
      wrap.appendChild(table);
      box.appendChild(wrap);
    }
  }

  function highlight(i) {
    state.row = i;
    const s = data.sentences[state.sentence];
    const [rows, cols] = axes(s, state.kind);
    const panel = $("explorer-hover");
    panel.textContent = "";
    const title = document.createElement("p");
    title.className = "explorer-hover-title";
    let text = T.row(i, rows[i]);
    if (state.kind === "decoder") text += T.predicts(s.next[i]);
    if (state.kind === "cross") text += T.fed(s.tgt[i]);
    title.textContent = T.hover(text);
    panel.appendChild(title);
    for (const svg of root.querySelectorAll("svg.explorer-grid")) {
      const head = +svg.dataset.head, cell = +svg.dataset.cell;
      const mark = svg.querySelector(".explorer-mark");
      mark.setAttribute("y", +svg.dataset.top + i * cell - 1);
      mark.setAttribute("visibility", "visible");
      const top = topKeys(rowBytes(s, state.kind, state.layer, head, i));
      svg.querySelectorAll("text[data-row]").forEach((t) => {
        t.classList.toggle("explorer-on", +t.dataset.row === i);
      });
      const best = new Set(top.filter(([q]) => q > 0).slice(0, 3).map(([, j]) => j));
      svg.querySelectorAll("text[data-col]").forEach((t) => {
        t.classList.toggle("explorer-on", best.has(+t.dataset.col));
      });
      const line = document.createElement("div");
      line.className = "explorer-hover-head";
      line.dataset.head = head;
      const name = document.createElement("span");
      name.className = "explorer-hover-name";
      name.textContent = T.label(T.head(head)).trimEnd();
      line.appendChild(name);
      const list = document.createElement("ol");
      for (const [q, j] of top) {
        const item = document.createElement("li");
        item.dataset.key = j;
        const token = document.createElement("span");
        token.className = "explorer-token";
        token.textContent = cols[j];
        const weight = document.createElement("span");
        weight.className = "explorer-weight";
        weight.textContent = shown(q);
        item.append(token, " ", weight);
        list.appendChild(item);
      }
      line.appendChild(list);
      panel.appendChild(line);
    }
  }

  // --- the controls -----------------------------------------------------------------------
  const sentenceSelect = $("explorer-sentence"), indexBox = $("explorer-index");
  const layerSelect = $("explorer-layer"), headSelect = $("explorer-head");
  const last = data.sentences.length - 1;
  const clip = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

  function option(select, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
    return o;
  }

  const other = option(sentenceSelect, "other", "");
  other.hidden = true;
  for (const i of data.featured) option(sentenceSelect, i, `${i}: ${clip(data.sentences[i].source, 70)}`);
  for (let l = 1; l <= N; l++) option(layerSelect, l, T.of(l, N));
  for (let h = 1; h <= H; h++) option(headSelect, h, T.of(h, H));
  option(headSelect, "all", T.allHeads);
  indexBox.max = last;

  function showPair() {
    const s = data.sentences[state.sentence];
    const pair = $("explorer-pair");
    pair.textContent = "";
    for (const [label, text, lang] of [
      [T.sentence(state.sentence), s.source, "en"],
      [T.translation, s.translation, "de"],
    ]) {
      const p = document.createElement("p");
      const b = document.createElement("strong");
      b.textContent = T.label(label);
      const t = document.createElement("span");
      t.lang = lang;
      t.textContent = text;
      p.append(b, t);
      pair.appendChild(p);
    }
  }

  function chooseSentence(i) {
    state.sentence = i;
    state.row = 0;
    indexBox.value = i;
    if (data.featured.includes(i)) {
      sentenceSelect.value = String(i);
      other.hidden = true;
    } else {
      other.textContent = `${i}: ${clip(data.sentences[i].source, 70)}`;
      other.hidden = false;
      sentenceSelect.value = "other";
    }
    showPair();
    draw();
  }

  sentenceSelect.addEventListener("change", () => {
    if (sentenceSelect.value !== "other") chooseSentence(+sentenceSelect.value);
  });
  indexBox.addEventListener("input", () => {
    const i = Number(indexBox.value);
    const ok = indexBox.value !== "" && Number.isInteger(i) && i >= 0 && i <= last;
    indexBox.setAttribute("aria-invalid", ok ? "false" : "true");
    if (ok && i !== state.sentence) chooseSentence(i);
  });
  for (const radio of root.querySelectorAll('input[name="explorer-kind"]')) {
    radio.addEventListener("change", () => {
      state.kind = radio.value;
      state.row = 0;
      draw();
    });
  }
  layerSelect.addEventListener("change", () => { state.layer = +layerSelect.value; draw(); });
  headSelect.addEventListener("change", () => { state.head = headSelect.value; draw(); });
  $("explorer-controls").addEventListener("submit", (e) => e.preventDefault());

  const figure = $("explorer-figure");
  function rowOf(event) {
    const target = event.target.closest && event.target.closest("[data-row]");
    return target ? +target.dataset.row : null;
  }
  figure.addEventListener("mouseover", (e) => {
    const i = rowOf(e);
    if (i !== null && i !== state.row) highlight(i);
  });
  figure.addEventListener("focusin", (e) => {
    const i = rowOf(e);
    if (i !== null) highlight(i);
  });
  let width = figure.clientWidth;
  window.addEventListener("resize", () => {
    if (Math.abs(figure.clientWidth - width) > 40) {
      width = figure.clientWidth;
      draw();
    }
  });

  $("explorer-controls").hidden = false;
  const checked = root.querySelector('input[name="explorer-kind"]:checked');
  state.kind = checked ? checked.value : "encoder";
  state.layer = +layerSelect.value || 1;
  state.head = headSelect.value || "1";
  chooseSentence(data.featured[0]);
})();
