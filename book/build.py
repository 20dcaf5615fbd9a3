"""Build the website from the committed notebooks in chapters/, without running them.

The notebooks are staged in a temporary folder, where three things are added to the copies only:
a download link and an estimate of the reading time under each chapter's title, and the tag
`hide-input` on cells that only draw a figure, which myst-nb shows folded in a <details>
element; the staged index page gets the whole book's reading time. Sphinx then renders the
stage with book/conf.py, and the committed notebooks are copied to the site's notebooks/ folder,
which the download links point to. Nothing is written outside the output folder.
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

from sphinx.cmd.build import build_main

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHAPTERS = ROOT / "chapters"
DEFAULT_OUT = ROOT / "build" / "site"
#: The rates behind the reading-time estimate: technical prose, code (the chapters' cells and
#: the package source they show) read line by line, and a look at each figure.
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE, MINUTES_PER_FIGURE = 200, 20, 0.5


def chapters() -> list[Path]:
    """The chapter notebooks, in reading order."""
    return sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))


def draws_only(cell: dict) -> bool:
    """True for a code cell whose outputs are all figures (a text/plain stand-in allowed)."""
    outputs = cell.get("outputs", [])
    if cell["cell_type"] != "code" or not outputs:
        return False
    return all(o["output_type"] in ("display_data", "execute_result")
               and any(m.startswith("image/") for m in o["data"])
               and all(m.startswith("image/") or m == "text/plain" for m in o["data"])
               for o in outputs)


def reading(nb: dict) -> tuple[float, str]:
    """Estimated minutes to read a chapter (prose, code, shown source and figures at the rates
    above; printed outputs not counted), and the counts behind them, in words."""
    def lines(text) -> int:
        return len("".join(text).splitlines())
    cells = nb["cells"]
    words = sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    outputs = [o for c in cells for o in c.get("outputs", [])]
    code = (sum(lines(c["source"]) for c in cells if c["cell_type"] == "code")
            + sum(lines(o["data"]["text/markdown"]) for o in outputs
                  if "text/markdown" in o.get("data", {})))
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    minutes = (words / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE
               + figures * MINUTES_PER_FIGURE)
    return minutes, (f"{words:,} words, {code:,} lines of code, {figures} "
                     f"figure{'s' if figures != 1 else ''}")


def stage_notebook(src: Path, dest: Path) -> float:
    """Copy one chapter to `dest` with its download link, its reading time and its figure cells
    folded; return the reading time in minutes."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    minutes, counts = reading(nb)
    link = (f'\n\n<p class="download-notebook"><a href="notebooks/{src.name}" download>'
            f'Download this chapter as a Jupyter notebook ({src.name})</a></p>\n'
            f'<p class="reading-time">About {minutes:.0f} minutes to read ({counts}).</p>\n')
    first = nb["cells"][0]
    lines = "".join(first["source"]).split("\n", 1)      # the title, then the rest
    first["source"] = lines[0] + link + (lines[1] if len(lines) > 1 else "")
    for cell in nb["cells"]:
        if draws_only(cell):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            tags.append("hide-input")
    dest.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    return minutes


def prepare_out(out: Path) -> None:
    """Empty the output folder, refusing one that holds files but is not a Sphinx site."""
    if out.exists() and any(out.iterdir()):
        if not (out / ".buildinfo").is_file():
            sys.exit(f"error: {out} is not empty and is not a site built before; "
                     f"choose another --out")
        shutil.rmtree(out)


def build(out: Path = DEFAULT_OUT) -> Path:
    """Render every chapter into `out` (replaced) and return the path of its index.html."""
    out = Path(out).resolve()
    prepare_out(out)
    with tempfile.TemporaryDirectory(prefix="book-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        total = sum(stage_notebook(nb, src / nb.name) for nb in chapters())
        index = (BOOK / "index.md").read_text(encoding="utf-8")
        (src / "index.md").write_text(index.replace("<!-- reading time -->", (
            f"Reading all {len(chapters())} chapters takes about {total / 60:.1f} hours at "
            f"{WORDS_PER_MINUTE} words of prose or {CODE_LINES_PER_MINUTE} lines of code a "
            f"minute and {MINUTES_PER_FIGURE * 60:.0f} seconds a figure; each chapter gives its "
            f"own estimate under its title.")),
            encoding="utf-8")
        args = ["-b", "html", "-q", "-W", "--keep-going", "-c", str(BOOK),
                "-d", str(Path(tmp) / "doctrees"), str(src), str(out)]
        if build_main(args) != 0:
            sys.exit("error: Sphinx could not build the site (its messages are above)")
    (out / "notebooks").mkdir()
    for nb in chapters():
        shutil.copy(nb, out / "notebooks" / nb.name)
    return out / "index.html"
