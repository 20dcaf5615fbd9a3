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
