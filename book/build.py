"""Build the website from the committed notebooks in chapters/, without running them.

The notebooks are staged in a temporary folder, where two things are added to the copies only:
a download link under each chapter's title, and the tag `hide-input` on cells that only draw a
figure, which myst-nb shows folded in a <details> element. Sphinx then renders the stage with
book/conf.py, and the committed notebooks are copied to the site's notebooks/ folder, which the
download links point to. Nothing is written outside the output folder.
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


def stage_notebook(src: Path, dest: Path) -> None:
    """Copy one chapter to `dest` with its download link and its figure cells folded."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    link = (f'\n\n<p class="download-notebook"><a href="notebooks/{src.name}" download>'
            f'Download this chapter as a Jupyter notebook ({src.name})</a></p>\n')
    first = nb["cells"][0]
    lines = "".join(first["source"]).split("\n", 1)      # the title, then the rest
    first["source"] = lines[0] + link + (lines[1] if len(lines) > 1 else "")
    for cell in nb["cells"]:
        if draws_only(cell):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            tags.append("hide-input")
    dest.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


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
        shutil.copy(BOOK / "index.md", src / "index.md")
        for nb in chapters():
            stage_notebook(nb, src / nb.name)
        args = ["-b", "html", "-q", "-W", "--keep-going", "-c", str(BOOK),
                "-d", str(Path(tmp) / "doctrees"), str(src), str(out)]
        if build_main(args) != 0:
            sys.exit("error: Sphinx could not build the site (its messages are above)")
    (out / "notebooks").mkdir()
    for nb in chapters():
        shutil.copy(nb, out / "notebooks" / nb.name)
    return out / "index.html"
