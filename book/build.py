"""Build the website from the committed notebooks in chapters/, without running them.

Each notebook is checked first (a JSON notebook that nbformat's schema accepts, opening with a
markdown cell that holds its title), so that a damaged one is named in one line rather than in
a traceback from Sphinx. The notebooks are staged in a temporary folder, where the copies
only (never the committed notebooks) get: download links (the notebook, and the project's
zip) and an estimate of the reading time under each chapter's title; the tag `hide-input` on
cells that only draw a figure, which myst-nb shows folded in a <details> element; each figure's
caption (the `**Figure C.K.**` paragraph of the markdown cell after it, see CAPTION) set as the
figure's caption and as the image's alt text, with a generic alt text for a figure that has
none yet; and on the path above each listing that show() printed, a link to its module's page
of the API reference and to its highlighted source. The staged index page gets the whole
book's reading time and, unless book/index.md lists it, a toctree entry for the API reference
(book/api/index.md, its list of modules filled in, and one page per module that autodoc
writes from the docstrings). Sphinx then renders the stage with book/conf.py, the committed
notebooks are copied to the site's notebooks/ folder, and the zip of the project's tracked
files (`git ls-files`; skipped, with a note, outside a git checkout) to its top, which the
download links point to.

The reading time is calibrated, not guessed: a careful first-time reader needed about 7.5 to
8 hours for the nine chapters, where rates of 200 words and 20 lines of code a minute, printed
outputs not counted, gave 4.9. Such a reader works through the prose with its equations at
about 140 words a minute (not the 200-250 of plain prose), reads each line of code against
the equation it computes at about 14 lines a minute, checks the printed numbers and tables
against what the text claims at about 20 lines a minute, and spends about a minute on each
figure with its caption. At these rates the chapters as they stood then came to 7.6 hours;
tests/test_book.py checks that the whole book stays near that.

The site is built in a temporary folder and moved into the output folder only when the build
has succeeded, so a failed or interrupted build leaves the previous site as it was. The output
folder may be empty, missing, or a site built here before: a list of the files each build
writes, with their sha256 (`.book-files`), tells the next build what it may replace. A list
that does not look like ours, or that names anything but a file inside the folder, is refused.
A rebuild removes only listed files still as the last build wrote them, and overwrites only
those and listed ones it writes again (an edited page is rebuilt, with a note); anything else
in the folder stays (a `.git/` or a `CNAME` of a site published from it, a listed page edited
since that the new site no longer has). Every check (the list, and the new site's files
against what is there) comes before the first change; the swap then moves the old files aside
into a temporary folder inside the output folder, moves the new ones in, and on any failure or
Ctrl-C puts the old ones back.
"""
import ast
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path, PurePosixPath

import nbformat
from sphinx.cmd.build import build_main

from annotated.base.errors import DataError
from book import explorer, i18n

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHAPTERS = ROOT / "chapters"
DEFAULT_OUT = ROOT / "build" / "site"
MANIFEST = ".book-files"                  # in the output folder: the files the last build wrote
#: The manifest's first line, which tells it from a list this command did not write; each
#: further line is `<sha256 of the file>  <its path inside the output folder>`.
MANIFEST_HEADER = "# python -m book build wrote these files here: sha256, two spaces, path"
ASIDE = ".book-old-"                      # prefix of the folder the old files wait in
#: The rates behind the reading-time estimate (see the module docstring for why these):
#: technical prose, code (the chapters' cells and the package source they show) read line by
#: line, printed outputs and tables checked against the text, and a look at each figure.
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 140, 14
OUTPUT_LINES_PER_MINUTE, MINUTES_PER_FIGURE = 20, 1.0
#: Chinese prose: a translation of 140 English words runs to about 240 characters, read in the
#: same minute.
CJK_CHARS_PER_MINUTE = 240
HANZI = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


#: What the build writes into the pages, in each language of the site; the English edition is
#: at the site's top, each other language in a folder of its own (its name, e.g. zh/).
TEXT = {
    "en": {"counts": lambda words, code, printed, figures: (
               f"{words:,} words, {code:,} lines of code, {printed:,} lines of output, "
               f"{_plural(figures, 'figure')}"),
           "notebook": "Download this chapter as a Jupyter notebook ({name})",
           "project": ", or {link}the whole project ({zip}, {mb:.1f} MB)</a> to run it offline",
           "minutes": "About {minutes:.0f} minutes to read ({counts}).",
           "figure": "Figure from chapter {label}",
           "reference": "Reference",
           "sphinx": {},
           "total": ("Reading all {n} chapters takes about {hours:.1f} hours at {words} words "
                     "of prose, {code} lines of code or {printed} lines of printed output a "
                     "minute and {figure:.0f} seconds a figure; each chapter gives its own "
                     "estimate under its title.")},
    "zh": {"counts": lambda words, code, printed, figures: (
               f"{words:,} 字，{code:,} 行代码，{printed:,} 行输出，{figures} 幅图"),
           "notebook": "下载本章的 Jupyter 笔记本（{name}）",
           "project": "，或下载{link}整个项目（{zip}，{mb:.1f} MB）</a>，离线运行",
           "minutes": "阅读约需 {minutes:.0f} 分钟（{counts}）。",
           "figure": "第 {label} 章的图",
           "reference": "参考",
           "sphinx": {"language": i18n.LANGUAGES["zh"], "nb_code_prompt_show": "显示代码",
                      "nb_code_prompt_hide": "隐藏代码"},
           "total": ("读完全部 {n} 章约需 {hours:.1f} 小时：每分钟读 {chars} 个汉字的正文、"
                     "{code} 行代码或 {printed} 行打印输出，每幅图 {figure:.0f} 秒；"
                     "每章标题下给出该章的估计。")},
}
#: A figure's caption: a paragraph of the markdown cell right after the figure's cell that
#: begins `**Figure C.K.** ` (C the chapter's number, or a letter for an appendix; K from 1).
CAPTION = re.compile(r"\*\*(?:Figure|图) (([1-9]\d*|[A-Z])\.([1-9]\d*))\.\*\*\s+\S")
#: The first line of a listing shown by annotated.notebooks.chapter.show(): the file's path.
LISTING = re.compile(r"`((?:annotated|reference_numpy)(?:/\w+)*\.py)`")
#: The packages of the API reference (api/ in the site), read from the checkout's source.
API_PACKAGES = ("annotated", "reference_numpy")
#: The project's tracked files, for a reader who runs the chapters offline (site root).
PROJECT_ZIP = "annotated-transformer.zip"


def chapters() -> list[Path]:
    """The chapter notebooks, in reading order."""
    return sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))


def appendices() -> list[Path]:
    """The appendix notebooks (the experiment log), after the chapters."""
    return sorted(CHAPTERS.glob("appendix_*.ipynb"))


def pages() -> list[Path]:
    """The book's own markdown pages (start, glossary, ...), staged as they are; the index and
    the explorer's page are staged with numbers filled in."""
    return sorted(p for p in BOOK.glob("*.md") if p.name not in ("index.md", explorer.PAGE))


def draws_only(cell: dict) -> bool:
    """True for a code cell whose outputs are all figures (a text/plain stand-in allowed)."""
    outputs = cell.get("outputs", [])
    if cell.get("cell_type") != "code" or not outputs:
        return False
    return all(o.get("output_type") in ("display_data", "execute_result")
               and any(m.startswith("image/") for m in o.get("data", {}))
               and all(m.startswith("image/") or m == "text/plain" for m in o.get("data", {}))
               for o in outputs)


def reading(nb: dict, lang: str = "en") -> tuple[float, str]:
    """Estimated minutes to read a chapter (prose, code, shown source, printed outputs and
    figures at the rates above), and the counts behind them, in words of `lang`. A markdown
    output that holds a code block is shown source (code); any other (a table) is printed
    output, as are streams and plain-text results. Chinese prose is counted in characters
    (CJK_CHARS_PER_MINUTE), the Latin words between them as words."""
    def lines(text) -> int:
        return len("".join(text).splitlines())
    cells = nb["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    hanzi = len(HANZI.findall(prose))
    words = len(HANZI.sub(" ", prose).split())
    outputs = [o for c in cells for o in c.get("outputs", [])]
    code = sum(lines(c["source"]) for c in cells if c["cell_type"] == "code")
    printed = figures = 0
    for o in outputs:
        data = o.get("data", {})
        if is_figure(o):
            figures += 1
        elif "text/markdown" in data:
            shown = lines(data["text/markdown"])
            if "```" in "".join(data["text/markdown"]):
                code += shown
            else:
                printed += shown
        elif o.get("output_type") == "stream":
            printed += lines(o.get("text", ""))
        elif "text/plain" in data:
            printed += lines(data["text/plain"])
    minutes = (words / WORDS_PER_MINUTE + hanzi / CJK_CHARS_PER_MINUTE
               + code / CODE_LINES_PER_MINUTE + printed / OUTPUT_LINES_PER_MINUTE
               + figures * MINUTES_PER_FIGURE)
    return minutes, TEXT[lang]["counts"](words + hanzi, code, printed, figures)


def is_figure(output: dict) -> bool:
    """True for an output that shows an image."""
    return (output.get("output_type") in ("display_data", "execute_result")
            and any(m.startswith("image/") for m in output.get("data", {})))


def paragraphs(cell: dict | None) -> list[str]:
    """The paragraphs of a markdown cell (none for any other cell, or for no cell)."""
    if not cell or cell.get("cell_type") != "markdown":
        return []
    return [p.strip() for p in re.split(r"\n[ \t]*\n", "".join(cell["source"])) if p.strip()]


def figures(nb: dict) -> list[dict]:
    """Every figure of a chapter, in order: the cell and the output that show it, and its
    caption, or None. The captions of a cell's figures are the caption paragraphs (see
    CAPTION) of the markdown cell right after it, in order, one per figure."""
    found, cells = [], nb["cells"]
    for i, cell in enumerate(cells):
        shown = [j for j, o in enumerate(cell.get("outputs", [])) if is_figure(o)]
        after = cells[i + 1] if i + 1 < len(cells) else None
        captions = [p for p in paragraphs(after) if CAPTION.match(p)]
        for k, j in enumerate(shown):
            caption = captions[k] if k < len(captions) else None
            found.append({"cell": i, "output": j, "caption": caption,
                          "number": CAPTION.match(caption).group(1) if caption else None})
    return found


def chapter_label(path: Path) -> str:
    """The chapter's number as its figures are numbered: '3' for 03_*.ipynb, 'A' for the
    appendix."""
    return "A" if path.name.startswith("appendix_") else str(int(path.name[:2]))


def caption_problems(nb: dict, label: str) -> list[str]:
    """What is wrong with a chapter's figure captions, one line each: numbers not 1, 2, 3...
    in order, or a caption that follows no figure (or one more than its cell draws). A figure
    without a caption is no problem here (see figures())."""
    cells = nb["cells"]
    written = [(i, CAPTION.match(p).group(1)) for i, c in enumerate(cells)
               for p in paragraphs(c) if CAPTION.match(p)]
    problems = [f"cell {i}: caption 'Figure {number}' where 'Figure {label}.{k}' comes next"
                for k, (i, number) in enumerate(written, start=1) if number != f"{label}.{k}"]
    attached = {f["number"] for f in figures(nb) if f["caption"]}
    problems += [f"cell {i}: caption 'Figure {number}' follows no figure of its own (each "
                 f"caption goes in the markdown cell right after the cell that draws it)"
                 for i, number in written if number not in attached]
    return problems


#: LaTeX as plain text, where MathJax does not reach: an image's alt text, a page's <title>.
#: Any other command loses its backslash.
LATEX_TEXT = {r"\infty": "∞", r"\sqrt": "√", r"\cdot": "·", r"\times": "×", r"\le": "≤",
              r"\leq": "≤", r"\ge": "≥", r"\geq": "≥", r"\ne": "≠", r"\neq": "≠",
              r"\approx": "≈", r"\to": "→", r"\rightarrow": "→", r"\in": "∈", r"\sum": "Σ",
              r"\alpha": "α", r"\beta": "β", r"\epsilon": "ε", r"\varepsilon": "ε",
              r"\mathrm": "", r"\text": "", r"\operatorname": "", r"\mathbf": "",
              r"\left": "", r"\right": "", r"\,": " ", r"\;": " ", r"\!": ""}


def plain_math(latex: str) -> str:
    """LaTeX math as plain text: `-\\infty` is '−∞', `\\sqrt{d_k}` is '√d_k'."""
    text = re.sub(r"\\[A-Za-z]+|\\[,;!]", lambda m: LATEX_TEXT.get(m[0], m[0][1:]), latex)
    return text.replace("{", "").replace("}", "").replace("-", "−")


def plain_text(markdown: str) -> str:
    """Markdown (a caption) as plain text, for an image's alt text: math by plain_math, links
    as their text, no emphasis or code marks."""
    text = re.sub(r"\$\$?(.+?)\$\$?", lambda m: plain_math(m[1]), markdown, flags=re.S)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(re.sub(r"[*`]", "", text).split())


def stage_figures(nb: dict, label: str, generic: str = TEXT["en"]["figure"]) -> None:
    """In a staged chapter: each figure in a cell of its own (the cell's other outputs, before
    and after it, in cells of their own; the code shows once, in the first), with its caption
    as the figure's caption and as the image's alt text, and the caption paragraphs taken out
    of the markdown cell after it. A figure without a caption gets a generic alt text."""
    found = figures(nb)
    used = {}                                  # the caption cell: the captions taken from it
    for figure in found:
        if figure["caption"]:
            used.setdefault(figure["cell"] + 1, []).append(figure["caption"])
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if i in used:
            text = "".join(cell["source"])
            for caption in used[i]:
                text = text.replace(caption, "", 1)
            if not text.strip():
                continue
            cell = {**cell, "source": re.sub(r"\n{3,}", "\n\n", text).strip("\n")}
        mine = {f["output"]: f for f in found if f["cell"] == i}
        if not mine:
            cells.append(cell)
            continue
        pieces, pending = [], []
        for j, output in enumerate(cell["outputs"]):
            if j in mine:
                pieces += [(pending, None)] if pending else []
                pieces.append(([output], mine[j]))
                pending = []
            else:
                pending.append(output)
        pieces += [(pending, None)] if pending else []
        for k, (outputs, figure) in enumerate(pieces):
            piece = json.loads(json.dumps({**cell, "outputs": outputs}))
            if k:                       # myst-nb skips a cell with no source: a comment
                piece.update(source="# continued", id=f"{cell.get('id', i)}-{k}")
                piece["metadata"]["tags"] = ["remove-input"]
            if figure:
                options = piece["metadata"].setdefault("mystnb", {})
                caption = figure["caption"]
                options["image"] = {"alt": plain_text(caption) if caption
                                    else generic.format(label=label)}
                if caption:
                    options["figure"] = {"caption": caption, "name":
                                         "figure-" + figure["number"].replace(".", "-")}
            cells.append(piece)
    nb["cells"] = cells


def link_listings(nb: dict, modules: set[str]) -> None:
    """In a staged chapter: the path above each listing that show() printed links to its
    module's page of the API reference (at the function or class shown, if public) and to
    its highlighted source."""
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("data", {}).get("text/markdown", ""))
            first, _, rest = text.partition("\n")
            found = LISTING.fullmatch(first.strip())
            module = found and found.group(1)[:-3].replace("/", ".").removesuffix(".__init__")
            if module not in modules:
                continue
            top = re.match(r"```python\n(?:@.*\n)*(?:async def|def|class) (\w+)", rest)
            name = top.group(1) if top and not top.group(1).startswith("_") else None
            page = f"api/{module}.html" + (f"#{module}.{name}" if name else "")
            source = f"_modules/{module.replace('.', '/')}.html" + (f"#{name}" if name else "")
            output["data"]["text/markdown"] = (
                f'<a class="listing-api" href="{page}" title="{module} in the API reference">'
                f'<code>{found.group(1)}</code></a> '
                f'<a class="listing-source" href="{source}">(highlighted source)</a>\n{rest}')


def api_modules() -> list[str]:
    """Every module of API_PACKAGES, from the checkout's files (none imported here)."""
    modules = []
    for package in API_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if all((ROOT.joinpath(*parts[:n]) / "__init__.py").is_file()
                   for n in range(1, len(parts))):
                modules.append(".".join(parts).removesuffix(".__init__"))
    return sorted(set(modules))


def summary(module: str) -> str:
    """The first sentence of a module's docstring, read from its file, as markdown text (code
    in backticks stays code; no other markup)."""
    path = ROOT.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = re.match(r"(.+?[.:;])(?=\s+[A-Z(`]|$)", first)
    text = (sentence[1] if sentence else first).rstrip(":;")
    parts = re.split(r"(`[^`]*`)", text)                 # code spans, at the odd places
    return "".join(part if k % 2 else re.sub(r"([\\*_\[\]$<>|{}#])", r"\\\1", part)
                   for k, part in enumerate(parts))


def stage_api(src: Path, modules: list[str], lang: str = "en") -> None:
    """The API reference in the stage: book/api/index.md with its list of modules filled in
    (a link and the first line of each module's docstring), and a page per module that
    autodoc fills from the docstrings. The module pages are linked from that list, not from
    a toctree, so that the navigation of every page stays short."""
    (src / "api").mkdir(exist_ok=True)
    lists = "".join(f"\n## {package}\n\n" + "".join(
        f"- {{doc}}`{m} <{m}>`: {summary(m)}\n" for m in modules if m.split(".")[0] == package)
        for package in API_PACKAGES)
    page = BOOK / "api" / "index.md"
    index = page.read_text(encoding="utf-8") if lang == "en" else i18n.translated_page(page, lang)
    (src / "api" / "index.md").write_text(index.replace("<!-- modules -->", lists),
                                          encoding="utf-8")
    for module in modules:                    # reStructuredText, which autodoc writes
        (src / "api" / f"{module}.rst").write_text(
            f":orphan:\n\n{module}\n{'=' * len(module)}\n\n.. automodule:: {module}\n",
            encoding="utf-8")


def project_zip(dest: Path) -> int | None:
    """Write the project's tracked files (`git ls-files`, as they are in the working tree)
    into the zip `dest`, under one folder, the same bytes for the same files; return its size
    in bytes, or None, with a note, when the project is not a git checkout."""
    try:
        top = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if Path(top).resolve() != ROOT.resolve():
            raise ValueError(f"the checkout is {top}")
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        why = e.stderr.strip() if isinstance(e, subprocess.CalledProcessError) else e
        print(f"note: {ROOT} is not a git checkout ({why}), so the site has no download of "
              f"the project; the chapters' notebooks are still there", file=sys.stderr)
        return None
    folder = PROJECT_ZIP.removesuffix(".zip")
    with zipfile.ZipFile(dest, "w") as archive:
        for name in sorted(n for n in listed.split("\0") if n):
            path = ROOT / name
            if not path.is_file():                       # deleted, not yet committed
                continue
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | (path.stat().st_mode & 0o777)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes(), compresslevel=9)
    return dest.stat().st_size


def notebook_problem(nb) -> str | None:
    """What keeps `nb` (parsed JSON) from being a chapter the site can show, or None."""
    if not isinstance(nb, dict):
        return f"expected a notebook (a JSON object), found a JSON {type(nb).__name__}"
    if nb.get("nbformat") != 4:
        return (f"expected a Jupyter notebook of nbformat 4 (with cells), found nbformat "
                f"{nb.get('nbformat')!r} and keys {sorted(nb)[:5]}")
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        where = "/".join(str(part) for part in getattr(e, "absolute_path", []))
        message = (getattr(e, "message", None) or str(e)).split("\n")[0][:200]
        return f"nbformat's schema says {message}" + (f" (at {where})" if where else "")
    first = nb["cells"][0] if nb["cells"] else None
    if first is None or first["cell_type"] != "markdown" or \
            not "".join(first["source"]).startswith("# "):
        found = "no cells" if first is None else f"a {first['cell_type']} cell"
        return f"expected a first markdown cell holding the title ('# ...'), found {found}"
    return None


def read_chapter(src: Path) -> dict:
    """The notebook at `src`, checked by notebook_problem; a damaged one is one line."""
    restore = (f"restore it with `git checkout -- {src.relative_to(ROOT)}`"
               if src.is_relative_to(ROOT) else "restore it")
    try:
        nb = json.loads(src.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{src} is not a readable notebook ({e}); {restore}")
    problem = notebook_problem(nb)
    if problem:
        raise DataError(f"{src} is not a chapter the site can show: {problem}; {restore} "
                        f"(or fix it in Jupyter)")
    return nb


def stage_notebook(src: Path, dest: Path, modules=frozenset(), project: int | None = None,
                   lang: str = "en") -> float:
    """Copy one chapter to `dest`, in `lang` (i18n.translated_notebook), with its download
    links (the project's zip too, if it is `project` bytes, not None), its reading time, its
    figure cells folded, its figures captioned (stage_figures) and its listings linked to the
    API reference's `modules`; return the reading time in minutes."""
    nb = read_chapter(src)
    if lang != "en":
        nb = i18n.translated_notebook(nb, src, lang)
    text, up = TEXT[lang], "" if lang == "en" else "../"
    minutes, counts = reading(nb, lang)
    whole = (text["project"].format(link=f'<a href="{up}{PROJECT_ZIP}" download>',
                                    zip=PROJECT_ZIP, mb=project / 1e6)
             if project is not None else "")
    link = (f'\n\n<p class="download-notebook"><a href="notebooks/{src.name}" download>'
            f'{text["notebook"].format(name=src.name)}</a>{whole}</p>\n'
            f'<p class="reading-time">{text["minutes"].format(minutes=minutes, counts=counts)}'
            f'</p>\n')
    first = nb["cells"][0]
    lines = "".join(first["source"]).split("\n", 1)      # the title, then the rest
    first["source"] = lines[0] + link + (lines[1] if len(lines) > 1 else "")
    for cell in nb["cells"]:
        if draws_only(cell):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            tags.append("hide-input")
    stage_figures(nb, chapter_label(src), text["figure"])
    link_listings(nb, set(modules))
    dest.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    return minutes


def files_under(folder: Path) -> set[str]:
    """Every file below `folder`, as paths relative to it."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


def sha256(path: Path) -> str:
    """The file's sha256, which tells a file as a build wrote it from one changed since."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def entry_problem(out: Path, name: str) -> str | None:
    """Why `name`, a path from the manifest, is not a file a build could have written inside
    `out`, or None."""
    if name in ("", ".") or str(PurePosixPath(name)) != name:
        return f"{name!r} is not a plain relative path to a file"
    if PurePosixPath(name).is_absolute():
        return f"{name} is an absolute path, not one inside {out}"
    if ".." in PurePosixPath(name).parts:
        return f"{name} goes up out of the folder ('..')"
    if name == MANIFEST or name.startswith(ASIDE):
        return f"{name} is the build's own bookkeeping, never a file of the site"
    return None


def changed_since(out: Path, name: str) -> str | None:
    """Why the listed file `name` can no longer be replaced as a file of the site: it is now a
    folder, or a link leading out of `out`; None if it can."""
    if not (out / name).resolve().is_relative_to(out):
        return "a link that leads outside the folder"
    if (out / name).is_dir():
        return "a folder"
    return None


def read_manifest(out: Path) -> dict[str, str]:
    """The manifest of `out` as {path: sha256}, every entry checked by entry_problem; a list
    that this command did not write, or that was edited, is refused before any change."""
    manifest = out / MANIFEST
    lines = manifest.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()                                   # the final newline
    if not lines or lines[0] != MANIFEST_HEADER:
        raise DataError(f"{manifest} is not a list this command wrote (its first line should "
                        f"be {MANIFEST_HEADER!r}); if {out} holds a site built by an older "
                        f"version, empty it (keep what you added, such as .git/ or CNAME) and "
                        f"build again; otherwise choose another --out")
    entries = {}
    for number, line in enumerate(lines[1:], start=2):
        digest, sep, name = line.partition("  ")
        problem = (f"expected '<sha256>  <path>', found {line!r}"
                   if not sep or len(digest) != 64 or digest.strip("0123456789abcdef")
                   else f"{name} is listed twice" if name in entries
                   else entry_problem(out, name))
        if problem:
            raise DataError(f"{manifest}, line {number}: {problem}; this command did not "
                            f"write that line, so the list cannot say what a rebuild may "
                            f"replace: restore the list, or choose another --out")
        now = changed_since(out, name)
        if now:
            raise DataError(f"{out / name}, a file of the site the last build wrote, is now "
                            f"{now}; a rebuild will not touch it: move it away, or choose another "
                            f"--out")
        entries[name] = digest
    return entries


def check_out(out: Path) -> dict[str, str]:
    """The files an earlier build wrote into `out`, with their sha256 (none if it is missing
    or empty); a folder that holds other files but no list of them is refused, before any
    work."""
    blocking = next((p for p in [out, *out.parents] if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise DataError(f"cannot make the site folder {out}: {blocking} is a file; choose "
                        f"another --out")
    if not out.exists() or not any(out.iterdir()):
        return {}
    if not (out / MANIFEST).is_file():
        raise DataError(f"{out} is not empty and holds no site built by this command (no "
                        f"{MANIFEST}); choose another --out, or empty it yourself")
    if not os.access(out, os.W_OK | os.X_OK):
        raise DataError(f"cannot write into {out}; choose another --out")
    return read_manifest(out)


def still_ours(out: Path, before: dict[str, str]) -> set[str]:
    """The listed files that are still regular files as the last build wrote them."""
    return {name for name, digest in before.items()
            if (out / name).is_file() and not (out / name).is_symlink()
            and sha256(out / name) == digest}


def in_the_way(out: Path, new: set[str], going: set[str]) -> list[str]:
    """The paths in `out` (relative), other than the `going` files the swap moves aside, that
    stand where the new site puts a file, or a folder on the way to one."""
    blocked = set()
    for name in new:
        parts = PurePosixPath(name).parts
        for i in range(1, len(parts) + 1):
            part = "/".join(parts[:i])
            path = out / part
            if not os.path.lexists(path) or part in going:
                continue
            if i == len(parts) or path.is_symlink() or not path.is_dir():
                blocked.add(part)
    return sorted(blocked)


def install(site: Path, out: Path, before: dict[str, str]) -> None:
    """Replace the earlier build's files in `out` with the new site's; other files stay. The
    listed files still as the last build wrote them go, and so do listed ones the new site
    writes again (an edited page is rebuilt); a listed file changed since and no longer part
    of the site stays, and anything in the way of a new file is refused before any change."""
    new = files_under(site)
    ours = still_ours(out, before)
    rebuilt = {n for n in before if n in new and os.path.lexists(out / n)} - ours
    theirs = in_the_way(out, new, ours | rebuilt)
    if theirs:
        raise DataError(f"{out} holds files this build would overwrite but did not write "
                        f"({', '.join(theirs[:3])}{', ...' if len(theirs) > 3 else ''}); move them "
                        f"away or choose another --out")
    listing = MANIFEST_HEADER + "\n" + "".join(f"{sha256(site / n)}  {n}\n" for n in sorted(new))
    swap(site, out, sorted(new), sorted(ours | rebuilt), listing)
    kept = sorted(n for n in before if n not in ours | new and os.path.lexists(out / n))
    for names, what in [(sorted(rebuilt), "replaced"), (kept, "kept")]:
        if names:
            print(f"note: {what} {len(names)} file(s) in {out} that the last build wrote but "
                  f"that were changed since: {', '.join(names[:3])}"
                  f"{', ...' if len(names) > 3 else ''}", file=sys.stderr)


def make_parents(out: Path, path: Path, made: list[Path]) -> None:
    """Create the missing folders between `out` and `path`, recording each in `made`."""
    missing = [p for p in path.parents if p.is_relative_to(out) and not p.exists()]
    for folder in reversed(missing):
        folder.mkdir()
        made.append(folder)


def remove_emptied(out: Path, names, removed: list[Path]) -> None:
    """Remove the folders below `out` that moving `names` away has left empty."""
    folders = {p for n in names for p in (out / n).parents if p != out and p.is_relative_to(out)}
    for folder in sorted(folders, key=lambda p: -len(p.parts)):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            removed.append(folder)


def swap(site: Path, out: Path, new: list[str], old: list[str], listing: str) -> None:
    """Move the `old` files of `out` aside, the `new` ones of `site` in, then write the list;
    on any failure (Ctrl-C included) put everything back as it was."""
    aside = Path(tempfile.mkdtemp(prefix=ASIDE, dir=out))
    moved, removed, placed, made = [], [], [], []
    try:
        for name in old:
            (aside / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(out / name, aside / name)
            moved.append(name)
        remove_emptied(out, old, removed)
        for name in new:
            make_parents(out, out / name, made)
            shutil.move(site / name, out / name)
            placed.append(name)
        (aside / MANIFEST).write_text(listing, encoding="utf-8")
        os.replace(aside / MANIFEST, out / MANIFEST)
    except BaseException as e:
        put_back(out, aside, moved, removed, placed, made)
        if isinstance(e, OSError):
            why = f"{e.filename}: {e.strerror}" if e.filename else e
            raise DataError(f"moving the new site into {out} failed ({why}); the site that was "
                            f"there is back as it was") from None
        raise
    shutil.rmtree(aside)


def put_back(out: Path, aside: Path, moved, removed, placed, made) -> None:
    """Undo a swap that stopped half-way: the old files and folders return, the new go."""
    try:
        for name in reversed(placed):
            (out / name).unlink(missing_ok=True)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        for folder in reversed(removed):
            folder.mkdir(exist_ok=True)
        for name in moved:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(aside / name, out / name)
        shutil.rmtree(aside)
    except OSError as e:
        raise DataError(f"the new site could not be moved into {out}, and putting the old one "
                        f"back failed too ({e}); its files are in {aside}: move them back into "
                        f"{out}") from None


class CtrlC(BaseException):
    """Ctrl-C while Sphinx runs: not a KeyboardInterrupt, which Sphinx would catch, report
    as its own error and turn into a failed build."""


def sphinx(args: list[str]) -> int:
    """Sphinx's build_main(args), but Ctrl-C stays Ctrl-C (a KeyboardInterrupt here)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return build_main(args)
    pressed = []

    def on_interrupt(signum, frame):
        pressed.append(signum)
        raise CtrlC
    signal.signal(signal.SIGINT, on_interrupt)
    try:
        code = build_main(args)
    except CtrlC:
        raise KeyboardInterrupt from None
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:                            # pressed where something caught it anyway
        raise KeyboardInterrupt
    return code


def stage_index(src: Path, total: float, lang: str) -> None:
    """The index page in `lang` with the whole book's reading time, and a toctree entry for the
    API reference unless the page lists it."""
    index = (BOOK / "index.md").read_text(encoding="utf-8") if lang == "en" else \
        i18n.translated_page(BOOK / "index.md", lang)
    if "api/index" not in index:                 # the API reference, after the chapters
        index += (f"\n```{{toctree}}\n:caption: {TEXT[lang]['reference']}\n:maxdepth: 1\n\n"
                  f"api/index\n```\n")
    total_text = TEXT[lang]["total"].format(
        n=len(chapters()), hours=total / 60, words=WORDS_PER_MINUTE, chars=CJK_CHARS_PER_MINUTE,
        code=CODE_LINES_PER_MINUTE, printed=OUTPUT_LINES_PER_MINUTE,
        figure=MINUTES_PER_FIGURE * 60)
    (src / "index.md").write_text(index.replace("<!-- reading time -->", total_text),
                                  encoding="utf-8")


def render(lang: str, tmp: Path, modules: list[str], project: int | None) -> Path:
    """Stage and render the whole book in `lang` into a folder of `tmp`; return the folder."""
    src = tmp / f"src-{lang}"
    site = tmp / ("site" if lang == "en" else f"site-{lang}")     # the English edition: the top
    src.mkdir()
    stage_api(src, modules, lang)
    total = sum(stage_notebook(nb, src / nb.name, modules, project, lang) for nb in chapters())
    for nb in appendices():
        stage_notebook(nb, src / nb.name, modules, project, lang)
    for page in pages():
        (src / page.name).write_text(page.read_text(encoding="utf-8") if lang == "en" else
                                     i18n.translated_page(page, lang), encoding="utf-8")
    stage_index(src, total, lang)
    explorer.stage(src, lang)                   # the attention explorer's page
    args = ["-b", "html", "-q", "-W", "--keep-going", "-c", str(BOOK),
            "-d", str(tmp / f"doctrees-{lang}"), str(src), str(site)]
    for name, value in TEXT[lang]["sphinx"].items():    # Sphinx's own words in this language
        args[:0] = ["-D", f"{name}={value}"]
    if sphinx(args) != 0:
        raise DataError("Sphinx could not build the site (its messages are above); the "
                        "site that was there, if any, is unchanged")
    if (site / explorer.PAGE.replace(".md", ".html")).is_file():
        explorer.write_data(site)               # its weights, beside the page
    (site / "notebooks").mkdir()
    for nb in chapters() + appendices():        # the notebooks in this language, to download
        if lang == "en":
            shutil.copy(nb, site / "notebooks" / nb.name)
        else:
            translated = i18n.translated_notebook(read_chapter(nb), nb, lang)
            (site / "notebooks" / nb.name).write_text(
                json.dumps(translated, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return site


def build(out: Path = DEFAULT_OUT) -> Path:
    """Render the book into `out` (see the module docstring), the English edition at the top
    and each translation in a folder of its own (zh/), and return the path of its index.html."""
    out = Path(out).expanduser().resolve()
    before = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".book-", dir=out.parent) as tmp:
        tmp = Path(tmp)
        project = project_zip(tmp / PROJECT_ZIP)
        modules = api_modules()
        site = render("en", tmp, modules, project)
        for lang in i18n.LANGUAGES:
            os.replace(render(lang, tmp, modules, project), site / lang)
        if project is not None:
            os.replace(tmp / PROJECT_ZIP, site / PROJECT_ZIP)
        out.mkdir(exist_ok=True)
        install(site, out, before)
    return out / "index.html"
