// The words this script writes into a page, in the page's language (the <html lang>).
const WORDS = {
  en: { close: "Click anywhere or press Escape to close.", open: "Open this figure at full size",
        other: "中文", otherTitle: "阅读本页的中文版" },
  zh: { close: "点击任意处或按 Esc 关闭。", open: "查看原尺寸的图", other: "English",
        otherTitle: "Read this page in English" },
};
const LANG = document.documentElement.lang.startsWith("zh") ? "zh" : "en";
const say = (key) => WORDS[LANG][key];

// The language switch: every page links the same page in the other language. The English
// edition is the site's top folder, the Chinese one its zh/ folder; Sphinx marks each page's
// top folder (data-content_root), so the link is a relative path and works from file:// too.
document.addEventListener("DOMContentLoaded", () => {
  const root = new URL(document.documentElement.dataset.content_root || "./", location.href);
  const here = location.href.split("#")[0];
  if (!here.startsWith(root.href)) return;
  const page = here.slice(root.href.length) || "index.html";
  const target = LANG === "zh" ? new URL(`../${page}`, root) : new URL(`zh/${page}`, root);
  const link = document.createElement("a");
  link.className = "language-switch";
  link.href = target.href;
  link.lang = LANG === "zh" ? "en" : "zh";
  link.hreflang = link.lang;
  link.title = say("otherTitle");
  link.textContent = say("other");
  const place = document.querySelector(".article-header-buttons") ||
    document.querySelector(".bd-header-article") || document.body;
  place.prepend(link);
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
