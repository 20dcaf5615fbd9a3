"""The chapters staged as pages of the site, in a temporary folder, without running them.

Each notebook is checked first (a JSON notebook that nbformat's schema accepts, opening with a
markdown cell that holds its title), so that a damaged one is named in one line rather than in
a traceback from Sphinx. Only the staged copies (never the committed notebooks) get, in the
edition's language: download links (the notebook, and the project's zip) and an estimate of
the reading time under the chapter's title; the tag `hide-input` on cells that only draw a
figure, which myst-nb shows folded in a <details> element; their figures captioned (figures.py);
on the path above each listing that show() printed, a link to its module's page of the API
reference and to its highlighted source; and links to the book's pages, written
`../book/page.md` so that they work in the repository, made to lead to the pages on the site.
The staged index page gets the whole book's reading time and, unless book/index.md lists it,
a toctree entry for the API reference.

The reading time is an estimate for a careful first-time reader, who works through the prose
with its equations, reads each line of code against the equation it computes, checks the
printed numbers and tables against what the text claims and looks at each figure with its
caption. Such readers differ, and so the estimate is a range, from a quicker to a slower one
of them (READERS); the rates are those at which first-time readers of the book went. Doing
the exercises takes longer.
"""
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from annotated.base.errors import DataError
from book import explorer, i18n, languages
from book.figures import chapter_label, is_figure, stage_figures
from book.project import PROJECT_ZIP

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHAPTERS = ROOT / "chapters"
@dataclass(frozen=True)
class Reader:
    """The pace of a careful first-time reader: words of technical prose (with its equations),
    Chinese characters of it, lines of code (the chapters' cells and the package source they
    show, each read against what it computes) and lines of printed output or tables checked
    against the text, a minute; and the minutes a figure with its caption takes."""
    words: float
    hanzi: float
    code: float
    printed: float
    figure: float


#: The quicker and the slower end of the estimate. Chinese prose is read at the pace of the
#: English it translates: 100 English words become about 170 characters.
READERS = (Reader(words=90, hanzi=155, code=9, printed=12, figure=1.5),
           Reader(words=75, hanzi=130, code=7, printed=10, figure=2.0))
HANZI = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
#: What makes a run of prose between spaces (and Chinese characters) a word: a letter or a digit,
#: not punctuation alone ("，", "—").
WORD_CHARACTER = re.compile(r"[^\W_]")
#: The first line of a listing shown by annotated.notebooks.chapter.show(): the file's path.
LISTING = re.compile(r"`((?:annotated|reference_numpy)(?:/\w+)*\.py)`")
#: A chapter's link to a page of the book, written so that it works in the repository
#: (`[term](../book/glossary.md#glossary-term)`); on the site the pages sit beside the chapters.
BOOK_LINK = re.compile(r"\]\(\.\./book/(?=[\w-]+\.md[)#])")


@dataclass(frozen=True)
class Edition:
    """What one edition of the site is staged with: its language, the modules of the API
    reference its listings link to, the size of the project's zip in bytes (None: no zip), and
    whether it carries the exercises' worked solutions."""
    lang: str = languages.ENGLISH
    modules: frozenset = frozenset()
    zip_size: int | None = None
    solutions: bool = True


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


def reading(nb: dict, lang: str = languages.ENGLISH) -> tuple[tuple[float, float], str]:
    """Estimated minutes to read a chapter (prose, code, shown source, printed outputs and
    figures), from the quicker to the slower of READERS, and the counts behind them, in words of
    `lang`. A markdown output that holds a code block is shown source (code); any other (a
    table) is printed output, as are streams and plain-text results. Chinese prose is counted
    in characters, the Latin words between them as words."""
    words, hanzi, code, printed, figures = amounts(nb)
    minutes = tuple(words / r.words + hanzi / r.hanzi + code / r.code + printed / r.printed
                    + figures * r.figure for r in READERS)
    return minutes, languages.ALL[lang].counts(words, hanzi, code, printed, figures)


def amounts(nb: dict) -> tuple[int, int, int, int, int]:
    """A chapter's words, Chinese characters, lines of code, lines of printed output and
    figures (see reading)."""
    def lines(text) -> int:
        return len("".join(text).splitlines())
    cells = nb["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    hanzi = len(HANZI.findall(prose))
    words = sum(1 for w in HANZI.sub(" ", prose).split() if WORD_CHARACTER.search(w))
    code = sum(lines(c["source"]) for c in cells if c["cell_type"] == "code")
    printed = figures = 0
    for o in (o for c in cells for o in c.get("outputs", [])):
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
    return words, hanzi, code, printed, figures


def link_listings(nb: dict, modules: set[str], words: dict) -> None:
    """In a staged chapter: the path above each listing that show() printed links to its
    module's page of the API reference (at the function or class shown, if public) and to
    its highlighted source, in the `words` of the edition's language."""
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
                f'<a class="listing-api" href="{page}" '
                f'title="{words["api_title"].format(module=module)}">'
                f'<code>{found.group(1)}</code></a> '
                f'<a class="listing-source" href="{source}">{words["source"]}</a>\n{rest}')


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
    restore = i18n.restore_advice(src, ROOT)
    try:
        nb = json.loads(src.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise DataError(f"{src} is not a readable notebook ({e or 'nested too deep'}); "
                        f"{restore}") from None
    problem = notebook_problem(nb)
    if problem:
        raise DataError(f"{src} is not a chapter the site can show: {problem}; {restore} "
                        f"(or fix it in Jupyter)")
    return nb


def stage_notebook(src: Path, dest: Path, edition: Edition = Edition()) -> tuple[float, float]:
    """Copy one chapter to `dest`, in the edition's language (i18n.translated_notebook), with its
    download links (the project's zip too, if the edition has one), its reading time, its
    figure cells folded, its figures captioned (stage_figures), its listings linked to the API
    reference, its links to the book's pages (link_book_pages) leading to them on the site and
    its solutions paragraph leading to its solutions (or left out); return the
    reading time in minutes, from the quicker to the slower reader."""
    lang = edition.lang
    nb = read_chapter(src)
    if lang != languages.ENGLISH:
        nb = i18n.translated_notebook(nb, src, lang)
    solutions_paragraph(nb, src, edition)
    link_book_pages(nb)
    text, up = languages.ALL[lang].WORDS, "" if lang == languages.ENGLISH else "../"
    minutes, counts = reading(nb, lang)
    whole = (text["project"].format(link=f'<a href="{up}{PROJECT_ZIP}" download>',
                                    zip=PROJECT_ZIP, mb=edition.zip_size / 1e6)
             if edition.zip_size is not None else "")
    link = (f'\n\n<p class="download-notebook"><a href="notebooks/{src.name}" download>'
            f'{text["notebook"].format(name=src.name)}</a>{whole}</p>\n'
            f'<p class="reading-time">'
            f'{text["minutes"].format(low=minutes[0], high=minutes[1], counts=counts)}</p>\n')
    first = nb["cells"][0]
    lines = "".join(first["source"]).split("\n", 1)      # the title, then the rest
    first["source"] = lines[0] + link + (lines[1] if len(lines) > 1 else "")
    for cell in nb["cells"]:
        if draws_only(cell):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            tags.append("hide-input")
    tag_exercise_checks(nb)
    stage_figures(nb, chapter_label(src), text["figure"])
    link_listings(nb, set(edition.modules), text)
    dest.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    return minutes


def link_book_pages(nb: dict) -> None:
    """A staged chapter's links to the book's pages (BOOK_LINK) made to lead to them on the
    site, where the pages sit beside the chapters."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = BOOK_LINK.sub("](", "".join(cell["source"]))


def tag_exercise_checks(nb: dict) -> None:
    """Tag each cell that shows an exercise's check (annotated.exercises.show), so that its
    one-line verdict wraps on the page (book.css) instead of scrolling sideways."""
    for cell in nb["cells"]:
        if any("exercise" in o.get("metadata", {}) for o in cell.get("outputs", [])):
            cell.setdefault("metadata", {}).setdefault("tags", []).append("exercise-check")


def solutions_paragraph(nb: dict, chapter: Path, edition: Edition) -> None:
    """A chapter's paragraph that says where its exercises' solutions are (it begins with the
    language's `solutions_mark`): on the site it leads to the chapter's solutions page, or, in
    an edition without solutions, it is left out."""
    words = languages.ALL[edition.lang].WORDS
    paragraph = re.compile(rf"(^|\n\n){re.escape(words['solutions_mark'])}.*?(?=\n\n|\Z)", re.S)
    said = words["solutions_page"].format(page=f"solutions/{chapter.name}")
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = paragraph.sub(lambda m: m.group(1) + said if edition.solutions else "",
                                 "".join(cell["source"]))
            cell["source"] = text.strip("\n")


def stage_index(src: Path, total: tuple[float, float], edition: Edition) -> None:
    """The index page in the edition's language with the whole book's reading time (minutes,
    from the quicker to the slower reader), a toctree
    entry for the API reference unless the page lists it, and one for the solutions if the
    edition has them."""
    index = i18n.page_text(BOOK / "index.md", edition.lang)
    words = languages.ALL[edition.lang].WORDS
    if edition.solutions:                        # the solutions, after the chapters' pages
        index += (f"\n```{{toctree}}\n:caption: {words['solutions']}\n:maxdepth: 1\n:glob:\n\n"
                  f"solutions/*\n```\n")
    if "api/index" not in index:                 # the API reference, last
        index += (f"\n```{{toctree}}\n:caption: {words['reference']}\n:maxdepth: 1\n\n"
                  f"api/index\n```\n")
    quick, slow = READERS
    total_text = words["total"].format(
        n=len(chapters()), low=total[0] / 60, high=total[1] / 60, words=(slow.words, quick.words),
        hanzi=(slow.hanzi, quick.hanzi), code=(slow.code, quick.code),
        printed=(slow.printed, quick.printed), figure=(quick.figure, slow.figure))
    (src / "index.md").write_text(index.replace("<!-- reading time -->", total_text),
                                  encoding="utf-8")
