// The words this script writes, in the page's language, and the site's editions: the build
// gives every page window.BOOK_WORDS from book/languages/ (`{name}` is filled in here).
const BOOK = window.BOOK_WORDS;
const say = (key, values = {}) =>
  BOOK.words[key].replace(/\{(\w+)\}/g, (_, name) => String(values[name]));

// The language switch: every page links the same page in each other edition. The English
// edition is the site's top folder, each translation a folder of its own (zh/); Sphinx marks
// each page's edition folder (data-content_root), so the links are relative paths and work
// from file:// too.
document.addEventListener("DOMContentLoaded", () => {
  const root = new URL(document.documentElement.dataset.content_root || "./", location.href);
  const here = location.href.split("#")[0];
  if (!here.startsWith(root.href)) return;
  const page = here.slice(root.href.length) || "index.html";
  const me = BOOK.editions.find((e) => e.lang === BOOK.lang);
  const top = new URL(me.folder ? "../" : "./", root);          // the site's top folder
  const place = document.querySelector(".article-header-buttons") ||
    document.querySelector(".bd-header-article") || document.body;
  BOOK.editions.filter((e) => e !== me).reverse().forEach((other) => {
    const link = document.createElement("a");
    link.className = "language-switch";
    link.href = new URL(other.folder + page, top).href;
    link.lang = other.lang;
    link.hreflang = other.lang;
    link.title = other.read_in;
    link.textContent = other.name;
    place.prepend(link);
  });
});

// A displayed equation wider than the text column is scaled down to fit it (to 70% at the
// least) rather than scrolled sideways: MathJax 3 does not break long equations into lines.
window.addEventListener("load", () => {
  if (!window.MathJax || !MathJax.startup) return;
  MathJax.startup.promise.then(() => {
    document.querySelectorAll('mjx-container[display="true"]').forEach((eq) => {
      const ratio = (eq.clientWidth - 2) / eq.scrollWidth;
      if (ratio < 1) {
        const size = parseFloat(getComputedStyle(eq).fontSize);
        eq.style.fontSize = `${size * Math.max(ratio, 0.7)}px`;
      }
    });
  });
});

// Each figure of a chapter is a link to its image file (book/conf.py adds it). A click opens
// the image at full size over the page, with its caption; a click anywhere, or Escape, closes
// it and returns to the figure. Nothing is fetched but the image itself, so this works when
// the site is opened from the disk (file://) too. Without JavaScript the link opens the file.
document.addEventListener("DOMContentLoaded", () => {
  let view = null;
  let opener = null;
  const close = () => {
    if (!view) return;
    view.remove();
    view = null;
    if (opener) opener.focus();
  };
  const open = (link) => {
    close();
    opener = link;
    const small = link.querySelector("img");
    view = document.createElement("div");
    view.className = "figure-view";
    view.setAttribute("role", "dialog");
    view.setAttribute("aria-modal", "true");
    view.setAttribute("aria-label", small.alt);
    view.tabIndex = -1;
    const large = document.createElement("img");
    large.src = link.href;
    large.alt = small.alt;
    view.append(large);
    const caption = link.closest("figure")?.querySelector("figcaption .caption-text");
    if (caption) {
      const text = document.createElement("p");
      text.append(caption.cloneNode(true));
      view.append(text);
    }
    const hint = document.createElement("p");
    hint.className = "figure-view-hint";
    hint.textContent = say("close");
    view.append(hint);
    view.addEventListener("click", close);
    document.body.append(view);
    view.focus();
  };
  document.querySelectorAll("a.figure-link").forEach((link) => {
    link.title = say("open");
    link.addEventListener("click", (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      open(link);
    });
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && view) {
      event.preventDefault();
      close();
    }
  });
});

// Code, printed output, listings and tables wider than the column: their type shrinks just enough
// to fit (never below MIN_OUTPUT_PX; wider still, they scroll sideways), and grows back with
// the window. A table's cells rewrap as its type shrinks, so it is measured again each time.
const MIN_OUTPUT_PX = 11;
function fitOutputs() {
  document.querySelectorAll(".cell_output pre, .cell_input pre").forEach((pre) => {
    pre.style.fontSize = "";
    const style = getComputedStyle(pre);
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    const wide = pre.scrollWidth - padding, room = pre.clientWidth - padding;
    if (room > 0 && wide > room + 1) {
      const size = parseFloat(style.fontSize);
      pre.style.fontSize = `${Math.max(MIN_OUTPUT_PX, Math.floor(size * room / wide * 10) / 10)}px`;
    }
  });
  document.querySelectorAll(".pst-scrollable-table-container").forEach((box) => {
    const table = box.querySelector("table");
    if (!table) return;
    table.style.fontSize = "";
    for (let tries = 0; tries < 8 && box.scrollWidth > box.clientWidth + 1; tries++) {
      const size = parseFloat(getComputedStyle(table).fontSize);
      if (size <= MIN_OUTPUT_PX) break;
      const next = Math.floor(size * Math.max(0.9, box.clientWidth / box.scrollWidth) * 10) / 10;
      table.style.fontSize = `${Math.max(MIN_OUTPUT_PX, Math.min(next, size - 0.5))}px`;
    }
  });
}
window.addEventListener("load", fitOutputs);
let fitting;
window.addEventListener("resize", () => { clearTimeout(fitting); fitting = setTimeout(fitOutputs, 150); });
