"""Build the website from the committed notebooks in chapters/, without running them.

The notebooks are staged in a temporary folder, where three things are added to the copies only:
a download link and an estimate of the reading time under each chapter's title, and the tag
`hide-input` on cells that only draw a figure, which myst-nb shows folded in a <details>
element; the staged index page gets the whole book's reading time. Sphinx then renders the
stage with book/conf.py, and the committed notebooks are copied to the site's notebooks/ folder,
which the download links point to.

The site is built in a temporary folder and moved into the output folder only when the build
has succeeded, so a failed build leaves the previous site as it was. The output folder may be
empty, missing, or a site built here before: a list of the files each build writes
(`.book-files`) tells the next build what it may replace, and nothing else in the folder is
ever deleted (a `.git/` or a `CNAME` of a site published from it stays).
"""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from sphinx.cmd.build import build_main

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHAPTERS = ROOT / "chapters"
DEFAULT_OUT = ROOT / "build" / "site"
MANIFEST = ".book-files"                  # in the output folder: the files the last build wrote
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
    try:
        nb = json.loads(src.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        sys.exit(f"error: {src} is not a readable notebook ({e}); restore it with git "
                 f"checkout {src.relative_to(ROOT)}")
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


def files_under(folder: Path) -> set[str]:
    """Every file below `folder`, as paths relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}


def check_out(out: Path) -> set[str]:
    """The files an earlier build wrote into `out` (none if it is missing or empty); a folder
    that holds other files but no list of them is refused, before any work."""
    blocking = next((p for p in [out, *out.parents] if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        sys.exit(f"error: cannot make the site folder {out}: {blocking} is a file; choose "
                 f"another --out")
    if not out.exists() or not any(out.iterdir()):
        return set()
    if not (out / MANIFEST).is_file():
        sys.exit(f"error: {out} is not empty and holds no site built by this command (no "
                 f"{MANIFEST}); choose another --out, or empty it yourself")
    if not os.access(out, os.W_OK | os.X_OK):
        sys.exit(f"error: cannot write into {out}; choose another --out")
    return set((out / MANIFEST).read_text(encoding="utf-8").splitlines())


def install(site: Path, out: Path, before: set[str]) -> None:
    """Replace the earlier build's files in `out` with the new site's; other files stay. A file
    of the new site that would overwrite one the earlier build did not write is refused."""
    new = files_under(site)
    theirs = sorted((new & files_under(out)) - before) if out.is_dir() else []
    if theirs:
        sys.exit(f"error: {out} holds files this build would overwrite but did not write "
                 f"({', '.join(theirs[:3])}); move them away or choose another --out")
    for name in sorted(before - new):
        (out / name).unlink(missing_ok=True)
    for folder in sorted({(out / n).parent for n in before - new}, key=lambda p: -len(p.parts)):
        if folder != out and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    for name in sorted(new):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(site / name, out / name)
    (out / MANIFEST).write_text("".join(f"{n}\n" for n in sorted(new)), encoding="utf-8")


def build(out: Path = DEFAULT_OUT) -> Path:
    """Render every chapter into `out` (see the module docstring) and return the path of its
    index.html."""
    out = Path(out).expanduser().resolve()
    before = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".book-", dir=out.parent) as tmp:
        site = Path(tmp) / "site"
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
                "-d", str(Path(tmp) / "doctrees"), str(src), str(site)]
        if build_main(args) != 0:
            sys.exit("error: Sphinx could not build the site (its messages are above); the "
                     "site that was there, if any, is unchanged")
        (site / "notebooks").mkdir()
        for nb in chapters():
            shutil.copy(nb, site / "notebooks" / nb.name)
        out.mkdir(exist_ok=True)
        install(site, out, before)
    return out / "index.html"
