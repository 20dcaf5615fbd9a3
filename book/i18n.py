"""Translations of the book, kept in step with the English.

Each English page has one translation file per language of book/languages/ but English,
book/<lang>/<name>.md: a chapter
chapters/NN_name.ipynb has book/zh/NN_name.md, a page book/start.md has book/zh/start.md. The
file is a list of units, each the translation of one piece of English, which it quotes:

    === cell 5a1e8d9b ===            a chapter's markdown cell, by its cell id
    --- en ---
    the English text this unit translates, exactly as it was then
    --- zh ---
    the translation

    === block ===                    a page's block: a paragraph, heading, list or directive
    --- en ---
    ...

A header may end with the order in which the translation puts the English's code, math,
links and numbers, where it is not the English's: `=== cell 5a1e8d9b (order 1-4 6 5) ===`
(order_changed).

A unit is *stale* when the English it quotes is no longer the English of its cell (or, for a
page, no longer one of its blocks), *missing* when English text has no unit, and the files say
exactly what changed: `python -m book translations` prints, for each stale unit, the difference
between the English it translated and the English now. MyST-NB cannot translate notebooks
through Sphinx's gettext catalogues, so the translated chapters are made here instead: the
English notebook with each markdown cell replaced by its translation, every code cell and
output untouched but the tables (translated_notebook).

A chapter's results tables are outputs: markdown tables (text/markdown with a row of `| --- |`)
that the code draws. Their cells are translated by one file for the whole book,
book/<lang>/tables.md, of `=== block ===` units, each the English of one cell (a header, a row
label, a value; or a line of the output outside the table) with each number written `#`: the
cell "dropout 0.3 instead of 0.1" is the unit "dropout # instead of #", whose translation puts
the cell's numbers back at its `#`s, in order (a number inside a word, test2016, 6k, 5e-03, is
text, not a number). A cell needs a unit when, outside inline code, it
has a word of two or more Latin letters; numbers, identifiers (`d_model=64`, `test2016`) and code
need none. Data and names (a test sentence and its German, `multi30k`, sacreBLEU) have a unit
whose translation is the English as it is. check_tables names, for each cell with no unit, the
chapter, the table's caption number and the cell; a unit no table shows any more is an orphan.
"""
import copy
import difflib
import os
import re
import unicodedata
import warnings
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

from annotated.base.errors import DataError
from annotated.base.files import read_lines, with_line_ends_of, write_files
from book import languages

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHAPTERS = ROOT / "chapters"
HEADER = re.compile(r"^=== (cell [0-9a-zA-Z_-]+|block)(?: \(order ([0-9 -]+)\))? ===$")
# The lines git writes around a conflict it leaves in a file.
CONFLICT = re.compile(r"^(<{7}|\|{7}|>{7})( |$)|^={7}$")
EN, TARGET = "--- en ---", "--- {lang} ---"
MARK = re.compile(r"^--- [a-z]{2}(-[A-Za-z]+)? ---$")        # the line that opens a side
TABLES = "tables.md"                     # book/<lang>/tables.md: the chapters' table cells
NUMBER = re.compile(r"(?<![\w.])(?<!\de-)\d+(?:,\d{3})*(?:\.\d+)?(?!\w)")  # 11,152 0.3, not in 5e-03
WORD = re.compile(r"\b[A-Za-z]{2,}\b")
TABLE_RULE = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")                 # | --- | ---: |
CAPTION = re.compile(r"^\*\*(Table [\w.]+?)\.\*\*")
DIRECTIVE = re.compile(r"(?:```|~~~|:::)\{([^}]*)\}")      # ```{note}, ~~~{figure}, :::{note}


@dataclass
class Unit:
    key: str                 # "cell <id>" or "block"
    en: str                  # the English it translates, as it was
    text: str                # the translation
    line: int                # where the unit starts in its file, for messages
    order: tuple[int, ...] = ()   # the order its translation puts the English's code, math,
                                  # links and numbers in, where not the English's (order_changed)


def marks_trimmed(lines, lang: str) -> list[str]:
    """A translation file's lines with the spaces after each unit header and separator line
    removed: they are no matter, however an editor left them."""
    target = TARGET.format(lang=lang)
    return [line.rstrip() if HEADER.match(line.rstrip()) or line.rstrip() in (EN, target)
            else line for line in lines]


def read_units(path: Path, lang: str) -> list[Unit]:
    """The units of a translation file, in order; a malformed file (not UTF-8, a git conflict
    left in it, a unit without its separator lines) is one DataError naming the file, the line
    and what was expected there."""
    if path.is_symlink() or (path.exists() and not path.is_file()):   # a pipe would wait
        what = "a link" if path.is_symlink() else "not a regular file"   # for a writer
        raise DataError(f"{path} is {what}; a translation file is the project's own: restore "
                        f"it from git (git checkout -- {path.name} in its folder)")
    target = TARGET.format(lang=lang)
    lines = marks_trimmed(read_lines(path), lang)
    for number, line in enumerate(lines, 1):
        if "\r" in line:
            raise DataError(f"{path}:{number}: a carriage return inside the line: the file's "
                            f"lines end in \\r alone (old Mac line endings); save it with \\n "
                            f"line endings")
        hidden = [c for c in line if unicodedata.category(c) == "Cf" or c == "\u00a0"]
        if hidden and HEADER.match("".join(" " if c == "\u00a0" else c for c in line
                                           if unicodedata.category(c) != "Cf")):
            raise DataError(f"{path}:{number}: a unit header holding a character one cannot "
                            f"see (U+{ord(hidden[0]):04X}); delete it")
        if line.startswith("=== ") and not HEADER.match(line) and not hidden:
            raise DataError(f"{path}:{number}: {line[:60]!r} is not a unit header: write "
                            f"'=== cell ID ===' or '=== block ==='")
        if CONFLICT.match(line):
            raise conflict_marker(f"{path}:{number}", line)
    units, i = [], 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        header = HEADER.match(lines[i])
        if not header:
            raise DataError(f"{path}:{i + 1}: expected a unit header ('=== cell ID ===' or "
                            f"'=== block ==='), found {lines[i][:60]!r}")
        if i + 1 >= len(lines) or lines[i + 1] != EN:
            raise DataError(f"{path}:{i + 2}: expected '{EN}' after the unit header")
        end = next((j for j in range(i + 2, len(lines)) if HEADER.match(lines[j])), len(lines))
        mid = _separator(path, lines, i, end, target)
        unit = Unit(header.group(1), "\n".join(lines[i + 2:mid]).strip("\n"),
                    "\n".join(lines[mid + 1:end]).strip("\n"), i + 1,
                    order_read(header.group(2) or ""))
        twin = next((u for u in units if u.key.startswith("cell ") and u.key == unit.key), None)
        if twin:
            raise DataError(f"{path}:{i + 1}: {unit.key} is translated twice (also at line "
                            f"{twin.line}); keep one of the two units")
        units.append(unit)
        i = end
    return units


def conflict_marker(where: str, line: str) -> DataError:
    """The error for a git conflict marker `line` at `where` (FILE:LINE)."""
    heading = (" (to underline a heading, write the heading with # instead)"
               if line.startswith("=") else "")
    return DataError(f"{where}: a git conflict marker ({line[:40]!r}): a merge left two "
                     f"versions here; keep one, delete the marker lines, then run python -m "
                     f"book translations again{heading}")


def _separator(path: Path, lines: list[str], start: int, end: int, target: str) -> int:
    """The index of the one `target` line ('--- zh ---') of the unit that spans lines[start:end]
    (its header, its '--- en ---', ...); a unit without it, or with a second separator line
    (two units run together), is a DataError naming the line."""
    found = [j for j in range(start + 2, end) if lines[j] in (EN, target)]
    if not found or lines[found[0]] != target:
        where = f"line {found[0] + 1}" if found else \
            (f"the next unit (line {end + 1})" if end < len(lines) else "the end of the file")
        raise DataError(f"{path}:{start + 1}: this unit has no '{target}' line between its "
                        f"English and {where}; add it where the English ends and its "
                        f"translation begins")
    if len(found) > 1:
        raise DataError(f"{path}:{found[1] + 1}: a second {lines[found[1]]!r} line in the unit "
                        f"that starts at line {start + 1}; each unit has one '{EN}' and one "
                        f"'{target}' line: if two units ran together, put a unit header ("
                        f"'=== block ===' or '=== cell ID ===') before the second")
    return found[0]


def write_units(path: Path, units: list[Unit], lang: str) -> None:
    """Write a translation file (the format read_units reads), whole or not at all, with the
    line ends it has (a file saved on Windows keeps them)."""
    parts = [f"{header(u.key, u.order)}\n{EN}\n{u.en}\n{TARGET.format(lang=lang)}\n{u.text}\n"
             for u in units]
    write_files({path: with_line_ends_of(path, "\n".join(parts))})


def header(key: str, order: tuple[int, ...]) -> str:
    """A unit's header line: its key, and the order of its pieces where it is not the
    English's (1-4 for 1 2 3 4: `=== cell ID (order 1-4 6 5 7-9) ===`)."""
    if order == tuple(range(1, len(order) + 1)):
        return f"=== {key} ==="
    runs = [[order[0]]]
    for n in order[1:]:
        runs[-1].append(n) if n == runs[-1][-1] + 1 else runs.append([n])
    written = [f"{r[0]}-{r[-1]}" if len(r) > 2 else " ".join(map(str, r)) for r in runs]
    return f"=== {key} (order {' '.join(written)}) ==="


def order_read(written: str) -> tuple[int, ...]:
    """The order of a unit's header, `1-4 6 5` read as (1, 2, 3, 4, 6, 5)."""
    found = []
    for part in written.split():
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not (last.isdigit() and int(last) > int(first))):
            return (0,)                              # not an order: order_changed names it
        found += range(int(first), int(last or first) + 1)
    return tuple(found)


def restore_advice(path: Path, root: Path) -> str:
    """How to get back a file of the project in `root` that was damaged: git has it."""
    return (f"restore it with `git checkout -- {path.relative_to(root)}`"
            if path.is_relative_to(root) else "restore it")


def read_notebook(source: Path):
    """A notebook as nbformat reads it (each cell's source one string); one that is damaged
    (cut short, not JSON, not a notebook, a folder), or whose cells lack ids or share one
    (the translations name cells by id), is one line naming it and how to restore it."""
    import nbformat
    restore = restore_advice(source, ROOT)
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            nb = nbformat.read(source, as_version=4)
    except OSError as e:
        raise DataError(f"{source}: {e.strerror or e}; {restore}") from None
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, nbformat.ValidationError) as e:
        why = " ".join(str(e).split())[:160] or type(e).__name__
        raise DataError(f"{source} is not a readable notebook ({why}); {restore}") from None
    if twice := next((str(w.message).split(".")[0] for w in seen
                      if "Non-unique cell id" in str(w.message)), None):
        raise DataError(f"{source}: {twice}, and the translations name cells by id; give the "
                        f"cell an id of its own (or {restore})")
    if any("id" not in cell for cell in nb.cells):
        raise DataError(f"{source} has cells without ids (a notebook of nbformat "
                        f"4.{nb.nbformat_minor}, an older Jupyter's), and the translations name "
                        f"cells by id; open and save it in a current Jupyter (or {restore})")
    return nb


def source_units(source: Path) -> list[tuple[str, str]]:
    """The English pieces of a chapter or page that need a translation: (key, text). A git
    conflict marker anywhere in the page (a cell of code too) is a DataError naming it."""
    if source.suffix == ".ipynb":
        nb = read_notebook(source)
        for cell in nb.cells:
            marker = next((line for line in cell["source"].split("\n") if CONFLICT.match(line)),
                          None)
            if marker is not None:
                raise conflict_marker(f"{source}, cell {cell.get('id')}", marker)
        units = [(f"cell {c['id']}", c["source"].strip("\n")) for c in nb.cells
                 if c.cell_type == "markdown" and c["source"].strip()]
    else:
        text = read_page(source)
        for number, line in enumerate(text.split("\n"), start=1):
            if CONFLICT.match(line):
                raise conflict_marker(f"{source}:{number}", line)
        units = [("block", block) for block in page_blocks(text) if translatable(block)]
    for key, text in units:
        if not HEADER.match(f"=== {key} ==="):
            raise DataError(f"{source}: the cell id {key.removeprefix('cell ')!r} is not one "
                            f"the translation files can name (letters, digits, - and _ only); "
                            f"give the cell another id")
        if mark := next((line for line in text.split("\n") if HEADER.match(line.rstrip())
                         or MARK.match(line.rstrip())), None):
            raise DataError(f"{source}, {key}: its line {mark!r} reads as a mark of the "
                            f"translation files, which would cut its unit in two; indent it "
                            f"or reword it")
    return units


def read_page(source: Path) -> str:
    """An English markdown page's text, read as the translation files are (read_lines): one
    line naming the file and line if it is not UTF-8."""
    return "".join(line + "\n" for line in read_lines(source))


def page_blocks(text: str) -> list[str]:
    """A markdown page cut into blocks at blank lines, a fenced block (``` ... ```) whole."""
    blocks, current, fence = [], [], None
    for line in text.split("\n"):
        opening = re.match(r"^(`{3,}|:{3,})", line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        if not line.strip() and fence is None:
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def translatable(block: str) -> bool:
    """False for what stays as it is in every language: code, and blocks made only of labels
    (`(name)=`), comments, raw HTML or front matter. A label line before a paragraph is kept
    in the translation as it is."""
    lines = [line for line in block.split("\n") if line.strip()]
    if re.match(r"^`{3,}\s*[A-Za-z]", lines[0]):          # ```python, ```bash: code
        return False
    keep = re.compile(r"^(\(.+\)=$|<!--.*-->$|</?(div|script|link|p|canvas|svg)\b|---$)")
    return not all(keep.match(line.strip()) for line in lines)


def translation_file(source: Path, lang: str) -> Path:
    """book/<lang>/<name>.md; a page in a folder of book/ or of chapters/ is named with its
    folder (book/api/index.md -> api_index.md, chapters/solutions/02_masking.ipynb ->
    solutions_02_masking.md)."""
    if source.parent not in (BOOK, CHAPTERS) and (source.is_relative_to(BOOK) or
                                                  source.is_relative_to(CHAPTERS)):
        return BOOK / lang / f"{source.parent.name}_{source.stem}.md"
    return BOOK / lang / f"{source.stem}.md"


@dataclass
class Report:
    missing: list[str]       # English with no unit
    stale: list[str]         # units whose English changed, each with its difference
    orphans: list[str]       # units whose English is gone

    def ok(self) -> bool:
        return not (self.missing or self.stale or self.orphans)


def check(source: Path, lang: str) -> Report:
    """Compare a page's English with its translation file."""
    where = translation_file(source, lang)
    english = source_units(source)
    units = read_units(where, lang) if os.path.lexists(where) else []
    name = where.relative_to(ROOT)
    report = Report([], [], [])
    cells = [(key, text) for key, text in english if key != "block"]
    by_cell = {u.key: u for u in units if u.key != "block"}
    known = {key for key, _ in cells}
    misheaded = {u.key: u for u in by_cell.values() if u.key not in known}
    for key, text in cells:
        if key not in by_cell and (twin := next((u for u in misheaded.values() if u.en == text),
                                                None)):
            report.stale.append(f"{name}:{twin.line}: the unit headed '{twin.key}' translates "
                                f"{key} (its English is that cell's): write '=== {key} ===' "
                                f"as its header")
            del misheaded[twin.key]
            continue
        _compare(by_cell.get(key), key, text, name, report)
    code = ({f"cell {c['id']}" for c in read_notebook(source).cells if c.cell_type != "markdown"}
            if source.suffix == ".ipynb" else set())
    report.orphans += [f"{name}:{u.line}: {u.key} is a code cell, and code is not translated: "
                       f"remove this unit" if u.key in code else
                       moved_to(u, name, source, lang) or
                       f"{name}:{u.line}: {u.key} translates a cell that is no longer there: "
                       f"{short(u.en)}" for u in misheaded.values()]
    _check_blocks([text for key, text in english if key == "block"],
                  [u for u in units if u.key == "block"], name, report)
    return report


def moved_to(unit: Unit, name, source: Path, lang: str) -> str | None:
    """The line for a unit of `source`'s translation file `name` whose cell another notebook
    holds: moved into the wrong file, it is named with the file it belongs in; else None."""
    here = translation_file(source, lang)
    home = next((s for s in sources() if s.suffix == ".ipynb" and s.is_relative_to(ROOT)
                 and translation_file(s, lang) != here
                 and any(f"cell {c.get('id')}" == unit.key for c in read_notebook(s).cells)),
                None)
    if home is None:
        return None
    return (f"{name}:{unit.line}: {unit.key} is a cell of {home.relative_to(ROOT)}, not of "
            f"this page: move the unit to {translation_file(home, lang).relative_to(ROOT)}")


def _compare(unit: Unit | None, key: str, text: str, name, report: Report) -> None:
    """One piece of English against the unit that translates it (or none). A quote that is not
    the English now comes first: the translation is to be read again against the new English,
    and what it lacks beside the old quote says nothing."""
    if unit is None or not unit.text.strip():
        report.missing.append(f"{name}: no translation of {key} {short(text)}")
    elif unit.en != text:
        diff = "\n".join(difflib.unified_diff(unit.en.split("\n"), text.split("\n"),
                                              "translated", "English now", lineterm="", n=1))
        report.stale.append(f"{name}:{unit.line}: {key}: the English changed since it was "
                            f"translated{unseen_difference(unit.en, text)}:\n{diff}")
    elif problem := translation_problem(unit):
        report.missing.append(f"{name}:{unit.line}: {key}: {problem}")


#: A line that opens or closes a fenced code block in markdown.
FENCE = re.compile(r"^\s*(```|~~~)")
#: Where raw HTML in a page links or loads from: the value of an href or src attribute.
HTML_TARGET = re.compile(r"""\b(?:href|src)\s*=\s*["']?([^"'\s<>]+)""", re.I)
#: The link forms of markdown and MyST beside [text](target): an angle-bracketed target
#: [text](<a b>), an autolink <https://...>, a reference definition "[label]: target".
LINK_TARGETS = (re.compile(r"\]\(<([^<>\n]+)>\)"),
                re.compile(r"<((?:[a-z][a-z0-9+.-]*:|www\.)[^<>\s]+)>", re.I),
                re.compile(r"^[ ]{0,3}\[(?!\^)[^\]\n]+\]:\s*<?([^\s>]+)>?", re.M))
#: A footnote's mark, [^label], where it is cited and where it is defined.
FOOTNOTE = re.compile(r"\[\^[^\]\n]+\]")
#: A MyST role, {name}`content`: its target is what stands in <...>, or the whole content.
ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
#: A MyST substitution, {{ name }}: the build would write the name's value, or the braces.
SUBSTITUTION = re.compile(r"\{\{[^{}\n]*\}\}")
#: A raw HTML element's tag, opening (by its name) or closing (outside code and math).
HTML_TAG = re.compile(r"<([A-Za-z][\w-]*)(?:\s[^<>]*)?/?>")
HTML_CLOSING = re.compile(r"</[A-Za-z][\w-]*\s*>")
#: An HTML comment, which a page shows nothing of (one left open runs to the end).
HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
#: What is blanked out of a unit to leave its prose, in this order, and whether a translation
#: keeps it as it is: display math, code blocks fenced with ``` or ~~~, inline code and inline
#: math are kept; a directive block's caption and text are translated.
BLANKED = ((r"\$\$.+?\$\$", True), (r"```(?!\{).*?```", True), (r"```\{.*?```", False),
           (r"~~~(?!\{).*?~~~", True), (r"~~~\{.*?~~~", False), (r"`[^`]+`", True),
           (r"\$[^$]+\$", True))


def role_target(body: str) -> str:
    """What a role's content points to: the part in <...> ({ref}`text <label>`), or all of it
    ({doc}`/index`)."""
    found = re.search(r"<([^<>]+)>$", body)
    return (found[1] if found else body).strip()


def kept_and_prose(text: str) -> tuple[list[str], str]:
    """What a translation keeps as it is, whitespace normalised: display and inline math, code
    (not directives, whose captions are translated), inline code, the target of each link in
    whatever form (markdown link or image, angle-bracketed, autolink, reference definition, raw
    HTML href or src: their text is translated), each MyST role's name and target and each
    substitution, and each raw HTML element; and the text with all of those blanked out, the
    prose a translation translates."""
    found = [f"{{{name}}}`{role_target(body)}`" for name, body in ROLE.findall(text)
             if name != "math"] + SUBSTITUTION.findall(text)
    text = SUBSTITUTION.sub(" ", ROLE.sub(lambda m: m[0] if m[1] == "math" else " ", text))
    for pattern in LINK_TARGETS:
        found += [f"]({t})" for t in pattern.findall(text)]
        text = pattern.sub(" ", text)
    found += FOOTNOTE.findall(text)
    text = FOOTNOTE.sub(" ", text)
    found += [f"]({t})" for t in re.findall(r"\[[^\[\]]*\]\(([^()\s]+)\)", text)]  # images too
    found += [f"]({t})" for t in HTML_TARGET.findall(text)]         # <a href>, <img src>
    text = re.sub(r"\]\([^)\s]+\)", "] ", text)
    for pattern, kept in BLANKED:
        if kept:
            found += re.findall(pattern, text, re.S)
        text = re.sub(pattern, " ", text, flags=re.S)
    found += ["<!-- -->" for _ in HTML_COMMENT.findall(text)]      # it hides what it holds
    text = HTML_COMMENT.sub(" ", text)
    found += [f"<{tag.lower()}>" for tag in HTML_TAG.findall(text)]
    text = HTML_CLOSING.sub(" ", HTML_TAG.sub(" ", text))
    return [" ".join(piece.split()) for piece in found], text


def kept_pieces(text: str) -> list[str]:
    """What a translation keeps as it is (kept_and_prose)."""
    return kept_and_prose(text)[0]


def translation_problem(unit: Unit) -> str | None:
    """What makes a unit's translation unfit to publish though it is there: the English left
    as it is (prose words, outside code and math, the same as the quote), code, math or a link
    target that is not as in the English (kept_pieces), a formula or a code block it adds, a
    number of its prose changed, added (numbers_changed) or moved to another noun
    (numbers_moved), code, math, links or numbers in another order (order_changed), or what
    would break its page (unpublishable: markup added, or blocks not the English's, such as a
    heading at another level or a paragraph made code or a comment)."""
    prose_words = WORD.findall(kept_and_prose(unit.en)[1])
    if unit.text.strip() == unit.en.strip() and len(prose_words) >= 3:
        return (f"its translation is the English itself, {short(unit.en)}: translate it "
                f"(the page would show English)")
    if broken := open_block(unit) or open_math(unit) or open_emphasis(unit):   # first: they
        return broken                                                           # hide the rest
    if hidden := invisible_added(unit) or entity_added(unit):
        return hidden
    english, translated = Counter(kept_pieces(unit.en)), Counter(kept_pieces(unit.text))
    if lacking := english - translated:    # each one as often as the English has it: `True` twice
        changed = next(iter(lacking))
        return (f"its translation lacks {short(changed)} (or has it fewer times) as the English "
                f"has it: code, math and link targets stay exactly as they are (only link "
                f"text is translated)")
    added = [piece for piece in translated - english      # a symbol or a name may be repeated,
             if piece.startswith(("$", "```"))             # or named where the English leaves
             and not SYMBOL.fullmatch(piece)]              # it implicit, but not a formula
    if added:
        return (f"its translation has {short(added[0])}, a formula or a code block the English "
                f"has not (or has fewer times): keep the English's, and only those")
    return (numbers_changed(unit) or numbers_moved(unit) or order_changed(unit)
            or unpublishable(unit))


def invisible_added(unit: Unit) -> str | None:
    """An invisible formatting character (Unicode category Cf: a zero-width space, a
    right-to-left override) that the translation has and the English has not: it can hide a
    word from the checks, or reorder what readers see."""
    english = {c for c in unit.en if unicodedata.category(c) == "Cf"}
    found = next((c for c in unit.text if unicodedata.category(c) == "Cf" and c not in english),
                 None)
    if found is None:
        return None
    return (f"its translation holds an invisible character, U+{ord(found):04X} "
            f"({unicodedata.name(found, 'unnamed')}), which the English has not: remove it (it "
            f"can hide a word from the checks, or reorder what readers see)")


#: An HTML entity, as markdown passes it on: &nbsp;, &lt;, &#8212;.
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")


def entity_added(unit: Unit) -> str | None:
    """An HTML entity (&nbsp;, &lt;) that the translation has and the English has not: the page
    shows a character the English does not write, or hides one (a no-break space)."""
    added = Counter(ENTITY.findall(kept_and_prose(unit.text)[1])) - Counter(
        ENTITY.findall(kept_and_prose(unit.en)[1]))
    if not added:
        return None
    return (f"its translation adds the HTML entity {next(iter(added))}, which the English has "
            f"not: write the character itself (a space for &nbsp;), or leave it out")


#: The MyST extensions the book's pages are written with (book/conf.py enables these).
MYST_EXTENSIONS = ["dollarmath", "amsmath"]
#: Markdown as the site's build reads it.
MARKDOWN = create_md_parser(MdParserConfig(enable_extensions=set(MYST_EXTENSIONS)),
                            RendererHTML)
#: What a reader sees of each kind of block, by markdown-it's name for it.
BLOCK_NAMES = {"paragraph": "a paragraph", "code_block": "a code block (lines indented by four "
               "spaces or a tab)", "fence": "a code block (```)", "math_block": "a formula ($$)",
               "bullet_list": "a bulleted list", "ordered_list": "a numbered list",
               "list_item": "a list item", "blockquote": "a quote (>)", "table": "a table",
               "hr": "a horizontal rule (---, *** or ___)", "html_block": "raw HTML",
               "myst_line_comment": "a comment line (% ..., hidden from the page)",
               "myst_target": "a target line ((name)=)", "myst_block_break": "a block break "
               "(+++)", **{f"h{n}": f"a heading ({'#' * n})" for n in range(1, 7)}}


def blocks(text: str) -> list[str]:
    """The blocks of markdown `text` as the site's build reads them, in order: paragraph,
    h2, bullet_list, list_item, code_block, myst_line_comment, ... (a heading by its level,
    however it is written: `## Title`, or Title underlined)."""
    return [token.tag if token.type == "heading_open" else token.type.removesuffix("_open")
            for token in MARKDOWN.parse(text) if token.block and token.nesting >= 0
            and token.type != "inline"]


def blocks_changed(unit: Unit) -> str | None:
    """A block of the translation that is not the English's (a heading at another level or
    added, a paragraph indented into a code block, a comment line that hides it, a target, a
    rule), or one it drops: the page, and its outline, would differ from the English's."""
    english, translated = blocks(unit.en), blocks(unit.text)
    if english == translated:
        return None
    tag, i, j, k, m = next(op for op in difflib.SequenceMatcher(
        None, english, translated, autojunk=False).get_opcodes() if op[0] != "equal")
    ours, theirs = (BLOCK_NAMES.get(b[0], b[0]) if b else None
                    for b in (translated[k:m], english[i:j]))
    what = (f"adds {ours}, which the English has not" if theirs is None else
            f"drops the English's {theirs.removeprefix('a ')}" if ours is None else
            f"has {ours} where the English has {theirs}")
    return (f"its translation {what}: keep the English's blocks (paragraphs, headings at their "
            f"levels, lists, code), each as it is written")


#: Inline math that is one symbol ($n$, $V$, $\epsilon_{ls}$): a translation may name one the
#: English's sentence leaves implicit; anything more is a formula it must not add.
SYMBOL = re.compile(r"\$\\?[A-Za-z]+(?:_\{?\w+\}?)?\$")
#: A number of the prose, as written (4.5, 29,000, 2017), wherever it stands (float16, x1.4),
#: with the word for its scale after it, if any (4.5 million, 450 万).
PROSE_NUMBER = re.compile(r"(?<![\d.,])(\d+(?:[.,]\d+)*)(?:\s?(thousand|million|billion|"
                          r"trillion)\b|\s?(百万|万亿|千|万|亿))?")
SCALE = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12,
         "千": 10 ** 3, "万": 10 ** 4, "百万": 10 ** 6, "亿": 10 ** 8, "万亿": 10 ** 12}
ENGLISH_SCALE = re.compile(r"\b(thousand|million|billion|trillion)\b")
# A number written as a value (not a version, 2.6.0, or an identifier): thousands separated by
# commas, a decimal point.
VALUE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


# A single digit may be written as a word: "two heads" is 两个头, "8 heads" may be 八个头.
DIGIT_WORDS_EN = ("zero|none|nothing|no", "one|once|first|single|a", "two|twice|second|both|pair",
                  "three|third|thrice", "four|fourth|quarter", "five|fifth", "six|sixth",
                  "seven|seventh", "eight|eighth", "nine|ninth")
DIGIT_WORDS_ZH = ("零〇", "一", "二两双", "三", "四", "五", "六", "七", "八", "九")


def numbers_changed(unit: Unit) -> str | None:
    """A number that the translation's prose lacks or adds beside the English's. Numbers are
    compared by their value, so that a translation may write 4.5 million as 450 万 and 8,000
    as 8000, but not 6,000 as 6.000 or 300 as 30. A single digit may be a word in one language
    and a numeral in the other: it is missed only where neither form of it is there."""
    english, translated = prose_numbers(unit.en), prose_numbers(unit.text)
    english_prose, translated_prose = kept_and_prose(unit.en)[1], kept_and_prose(unit.text)[1]
    # a scale word may stand after the last of several numbers: "1.2 to 2.5 million"
    scales = set(ENGLISH_SCALE.findall(english_prose))
    forms = {key: {key, *(number_key(written, scale) for scale in scales
                          if VALUE.fullmatch(written))} for key, written in english.items()}
    if lacking := [written for key, written in english.items()
                   if not forms[key] & translated.keys()
                   and not said_as_word(key, translated_prose, DIGIT_WORDS_ZH)]:
        return (f"its translation lacks the number {lacking[0]} the English has: a number "
                f"stays as the English writes it (4.5 million may become 450 万)")
    if extra := [written for key, written in translated.items()
                 if key not in set().union(*forms.values())
                 and not said_as_word(key, english_prose, DIGIT_WORDS_EN)]:
        return (f"its translation has the number {extra[0]}, which the English has not: keep "
                f"the English's numbers, and only those")
    return None


def prose_numbers(text: str) -> dict[str, str]:
    """The numbers of a unit's prose: {their value (number_key): as written}."""
    return {number_key(m[1], m[2] or m[3]): m[0]
            for m in PROSE_NUMBER.finditer(kept_and_prose(text)[1])}


def said_as_word(key: str, prose: str, words: tuple[str, ...]) -> bool:
    """Whether a single digit (`key`) is written in `prose` as a word of `words`."""
    if len(key) != 1:
        return False
    forms = words[int(key)]
    return bool(re.search(rf"\b(?:{forms})\b", prose, re.IGNORECASE) if words is DIGIT_WORDS_EN
                else re.search(f"[{forms}]", prose))


def number_key(written: str, scale: str | None) -> str:
    """A number's value, as plain digits (6,000 and 6000 alike; 4.5 million and 450 万 alike),
    or, for a number not written as a value (2.6.0), the number as written."""
    if not VALUE.fullmatch(written):
        return written
    value = Decimal(written.replace(",", "")) * SCALE.get(scale, 1)
    return format(value.normalize(), "f")


#: What a number counts, by its English noun and the Chinese one ("8 heads", 8 个头): in both
#: languages the number stands before it, the Chinese with a measure word (个, 块) or none.
COUNTED = {"token": "词元", "position": "位置", "step": "步", "GPU": "GPU|块", "checkpoint": "检查点",
           "hour": "小时", "minute": "分钟", "second": "秒", "day": "天", "parameter": "参数",
           "sentence": "句子|句", "pair": "句对|对", "subword": "子词", "piece": "片段", "word": "词",
           "head": "头", "layer": "层", "dimension": "维", "bit": "位", "time": "倍",
           "language": "语言", "epoch": "轮", "core": "核", "process": "进程", "thread": "线程",
           "file": "文件", "column": "列", "row": "行", "line": "行", "cycle": "周期"}
MEASURE = "(?:个|块|张|条|次|名|种|项|组)?"
#: What a number names, in English and in Chinese ("Chapters 6 and 7", 第 6、7 章), {n} being
#: the number or, after a plural, the list of them.
NAMED = {"Chapter": (r"\bChapter(s?) {n}", r"第\s*{n}\s*章"),
         "Table": (r"\bTable(s?) {n}", r"表\s*{n}"), "Figure": (r"\bFigure(s?) {n}", r"图\s*{n}"),
         "Exercise": (r"\bExercise(s?) {n}", r"练习\s*{n}"), "§": (r"§()\s*{n}", r"§\s*{n}"),
         "heading": (r"^#+ (){n}\. ", r"^#+ {n}\. ")}
ONE = r"\d+(?:,\d{3})*(?:\.\d+)?(?:\s?(?:thousand|million|billion|百万|万亿|千|万|亿))?"
LIST_EN = rf"((?<![\d.,]){ONE}(?:(?:, |,? and |,? or | to |–){ONE})*)"     # 5, 6 and 8
LIST_ZH = rf"((?<![\d.,]){ONE}(?:\s*{MEASURE}\s*(?:、|，|和|或|到|至|–|-)\s*{ONE})*)"  # 5、6 和 8
NOUNS = sorted(COUNTED, key=len, reverse=True)                  # "pairs" before "pair"
NOUNS_ZH = sorted({z for zh in COUNTED.values() for z in zh.split("|")}, key=len, reverse=True)
COUNT_EN = re.compile(rf"{LIST_EN}[ -]({'|'.join(NOUNS)})(?:e?s)?\b", re.I)
COUNT_ZH = re.compile(rf"{LIST_ZH}\s*{MEASURE}\s*({'|'.join(NOUNS_ZH)})")


def numbers_with_names(text: str, english: bool) -> dict[tuple[str, str], str]:
    """What each number of a unit's prose counts or names: {(its value, the English noun of
    COUNTED or the name of NAMED): the words as written}."""
    found = {}
    for match in (COUNT_EN if english else COUNT_ZH).finditer(text):
        nouns = [noun for noun in NOUNS if match[2].lower() == noun.lower()
                 or match[2] in COUNTED[noun].split("|")]
        found |= {(value, noun): match[0] for value in listed_values(match[1]) for noun in nouns}
    for name, (en, zh) in NAMED.items():
        pattern = en.format(n=LIST_EN) if english else zh.format(n=LIST_ZH)
        for match in re.finditer(pattern, text, re.M | (re.I if english else 0)):
            values = listed_values(match[match.lastindex])
            if english and not match[1]:          # "Chapter 3, 5 heads": one chapter
                values = values[:1]
            found |= {(value, name): match[0] for value in values}
    return found


def listed_values(written: str) -> list[str]:
    """The values (number_key) of a list of numbers ("5 and 10", "1.2 to 2.5 million"), the
    last number's scale word standing for those before it that have none."""
    numbers = [(m[1], m[2] or m[3]) for m in PROSE_NUMBER.finditer(written)]
    scale = numbers[-1][1] if numbers else None
    return [number_key(number, own or scale) for number, own in numbers]


def numbers_moved(unit: Unit) -> str | None:
    """A number the translation puts with another noun or name than the English does: 300
    sentences, of which 200 ... written 200 个句子，其中 300 个. Each number of the English may
    stay, and the set of numbers is the same (numbers_changed), but what they count has moved."""
    english = numbers_with_names(kept_and_prose(unit.en)[1], english=True)
    translated = numbers_with_names(kept_and_prose(unit.text)[1], english=False)
    values = set(prose_numbers(unit.en)) | {value for value, _ in english}
    for (value, name), written in english.items():
        if (value, name) in translated:
            continue
        moved = next((words for (other, there), words in translated.items() if there == name
                      and other != value and other in values and (other, name) not in english),
                     None)
        if moved:
            return (f"its translation writes {moved!r} where the English writes {written!r}: "
                    f"keep each number with what it counts or names")
    return None


def order_changed(unit: Unit) -> str | None:
    """Code, math, link targets or numbers that the translation puts in another order than the
    English (`True` allows and `False` masks, or chapter 6 trains and chapter 8 scores, written
    the other way round), unless its header accepts that order: Chinese may well reorder them,
    but a swap can reverse what a sentence says, so each reordering is written down,
    `=== cell ID (order 2 1 3) ===`: the English's pieces (ordered_pieces), numbered from 1, in
    the order the translation puts them (pieces_order)."""
    english, translated = ordered_pieces(unit)
    now = pieces_order(english, translated)
    if now is None:
        return None                                # lacking a piece: said before this
    accepted = unit.order or tuple(range(1, len(english) + 1))
    if sorted(accepted) != list(range(1, len(english) + 1)):
        return (f"its header's order does not number its {len(english)} pieces of code, "
                f"math, links and numbers, each once, from 1: write the header "
                f"'{header(unit.key, now)}'")
    if now == accepted:
        return None
    at = next(i for i, (a, b) in enumerate(zip(now, accepted)) if a != b)
    said = "its header's order" if unit.order else "the English"
    return (f"its translation puts {piece_named(english[now[at] - 1])} before "
            f"{piece_named(english[accepted[at] - 1])}, the other way round from {said}: put "
            f"them back, or, if the Chinese means the same, accept its order with the header "
            f"'{header(unit.key, now)}'")


#: How ordered_pieces writes a number among a unit's pieces: by its value (number_key).
NUMBER_PIECE = "#"


def ordered_pieces(unit: Unit) -> tuple[list[str], list[str]]:
    """The pieces whose order order_changed compares, of the English and of the translation:
    the kept pieces (each kind in the order of the text, as kept_pieces lists them), then the
    numbers of the prose that both write as numerals, by value (8,000 and 8000 alike), as often
    as both write them."""
    numbers = [[NUMBER_PIECE + number_key(m[1], m[2] or m[3])
                for m in PROSE_NUMBER.finditer(kept_and_prose(text)[1])]
               for text in (unit.en, unit.text)]
    both = Counter(numbers[0]) & Counter(numbers[1])
    english, taken = [], Counter()
    for number in numbers[0]:
        if taken[number] < both[number]:
            english.append(number)
            taken[number] += 1
    return kept_pieces(unit.en) + english, kept_pieces(unit.text) + numbers[1]


def piece_named(piece: str) -> str:
    """A piece of ordered_pieces, as a message names it."""
    return (f"the number {piece.removeprefix(NUMBER_PIECE)}" if piece.startswith(NUMBER_PIECE)
            else short(piece))


def pieces_order(english: list[str], translated: list[str]) -> tuple[int, ...] | None:
    """Where the translation puts the English's pieces: for each piece of `translated` in turn,
    its place in `english` (from 1; a piece's second use is the English's second use of it),
    leaving out the uses the English has not (a symbol named again); None if it lacks one."""
    places = {}
    for i, piece in enumerate(english, 1):
        places.setdefault(piece, []).append(i)
    seen = Counter()
    order = []
    for piece in translated:
        if seen[piece] < len(places.get(piece, ())):
            order.append(places[piece][seen[piece]])
        seen[piece] += 1
    return tuple(order) if len(order) == len(english) else None


def open_block(unit: Unit) -> str | None:
    """A code block the translation opens and never closes, which would show the rest of the
    page as code."""
    fences = [m[1] for line in unit.text.split("\n") if (m := FENCE.match(line))]
    if len(fences) % 2:
        fence = fences[-1]
        return (f"its translation opens a code block ({fence}) that it never closes: add the "
                f"closing {fence} line, or remove the opening one")
    return None


def open_math(unit: Unit) -> str | None:
    """A `$` the translation opens and never closes (outside code, not escaped), which would
    show the rest of the paragraph as a formula, or the formula as text."""
    def outside_code(text: str) -> str:
        return re.sub(r"```.*?```|`[^`\n]*`", " ", text, flags=re.S).replace("\\$", "  ")
    text = outside_code(unit.text)
    if not text.count("$") % 2 or outside_code(unit.en).count("$") % 2:
        return None
    line = next((line for line in text.split("\n") if line.count("$") % 2), text)
    at = line.rindex("$")                  # paired from the left, the last one is left open
    return (f"its translation opens math ($) that it never closes, at "
            f"{short(line[max(0, at - 20):at + 30])}: add the closing $, or remove the opening "
            f"one")


#: A list item's bullet, at the start of its line: a star that opens no emphasis.
BULLET = re.compile(r"(?m)^[ \t]*[*+-][ \t]+")


def open_emphasis(unit: Unit) -> str | None:
    """Bold (**) or italic (*) that the translation opens and never closes, where the English
    closes its own (outside code and math, list bullets and escaped stars aside): the page
    would show the stars, or the rest of the paragraph in bold."""
    def left_open(text: str) -> tuple[str, str] | None:
        """The mark left open and the paragraph it is in (emphasis ends with its paragraph)."""
        prose = kept_and_prose(text)[1].replace("\\*", " ")
        for paragraph in re.split(r"\n[ \t]*\n", re.sub(BULLET, " ", prose)):
            runs = [len(m) for m in re.findall(r"\*+", paragraph)]
            if sum(n >= 2 for n in runs) % 2:
                return "**", paragraph
            if sum(n % 2 for n in runs) % 2:
                return "*", paragraph
        return None
    if left_open(unit.en) or not (found := left_open(unit.text)):
        return None
    mark, paragraph = found
    return (f"its translation opens {'bold' if mark == '**' else 'italic'} ({mark}) that it "
            f"never closes, in the paragraph {short(paragraph.strip())}: close it as the English "
            f"does, or remove the opening mark")


def unpublishable(unit: Unit) -> str | None:
    """What in a unit's translation would break its page, which the build therefore publishes
    in English: markup that would (markup_added), or blocks that are not the English's
    (blocks_changed: a paragraph hidden as a comment or shown as code, a heading added)."""
    return markup_added(unit) or blocks_changed(unit)


def markup_added(unit: Unit) -> str | None:
    """What in a translation, a page's or a table cell's, would break the page: a code block
    it never closes (the rest of the page would show as code), or a link (other than to a
    glossary term, which a translation may link where its wording names the term) or a
    directive that the English has not (the build would fail on it)."""
    if broken := open_block(unit):
        return broken
    added = [p for p in Counter(kept_pieces(unit.text)) - Counter(kept_pieces(unit.en))
             if p.startswith(("](", "{", "<", "[^")) and "glossary.md#" not in p]
    if links := [p for p in added if p.startswith("](")]:
        return (f"its translation links to {links[0][2:-1]}, which the English does not: keep "
                f"the English's links (only their text is translated)")
    if added:
        what = ("raw HTML" if added[0].startswith("<") else "the footnote"
                if added[0].startswith("[^") else "the substitution"
                if added[0].startswith("{{") else "the role")
        return (f"its translation adds {what} {added[0]}, which the English has not: keep the "
                f"English's roles and HTML as they are (only text is translated)")
    directives = Counter(DIRECTIVE.findall(unit.text)) - Counter(DIRECTIVE.findall(unit.en))
    if directives:
        return (f"its translation adds a {{{next(iter(directives))}}} directive block the "
                f"English has not: keep the English's blocks as they are")
    return None


def unseen_difference(quoted: str, now: str) -> str:
    """When the quoted English differs from the English now only in characters one cannot see
    (a no-break space, a zero-width space, trailing spaces), a note naming the first; else ""."""
    def seen(text):
        return "\n".join(" ".join(line.replace("\u00a0", " ").split()) for line in
                         "".join(c for c in text if unicodedata.category(c) != "Cf").split("\n"))
    if seen(quoted) != seen(now):
        return ""
    odd = next((c for c in quoted + now if unicodedata.category(c) == "Cf" or c == "\u00a0"),
               None)
    return (f" (only in characters one cannot see: U+{ord(odd):04X})" if odd else
            " (only in spaces at the ends of lines, or doubled)")


def _check_blocks(blocks: list[str], units: list[Unit], name, report: Report) -> None:
    """A page's blocks against its units, aligned in order: a block changed in place is its
    unit gone stale (with the difference), a new block is missing, a unit whose block is gone
    is an orphan."""
    matcher = difflib.SequenceMatcher(None, [u.en for u in units], blocks, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs = list(zip(units[i1:i2], blocks[j1:j2])) if op in ("equal", "replace") else []
        for unit, block in pairs:
            _compare(unit, "block", block, name, report)
        for block in blocks[j1 + len(pairs):j2]:
            _compare(None, "block", block, name, report)
        report.orphans += [f"{name}:{u.line}: block translates English that is no longer "
                           f"there: {short(u.en)}" for u in units[i1 + len(pairs):i2]]


def short(text: str, n: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= n else flat[:n] + "...")


def translated_notebook(nb: dict, source: Path, lang: str) -> dict:
    """The chapter `nb` (as JSON) in `lang`: each markdown cell replaced by its unit's
    translation (English where there is none yet, which `check` reports), the cells of each
    table output by theirs (translated_table); code cells and their other outputs as they are,
    but for the exercises (exercise_language)."""
    where = translation_file(source, lang)
    units = {u.key: u.text for u in fit_units(where, lang)}
    out = copy.deepcopy(nb)
    table_text = table_units(lang)
    for cell in out["cells"]:
        text = units.get(f"cell {cell.get('id')}")
        if cell["cell_type"] == "markdown" and text:
            cell["source"] = text
        if cell["cell_type"] == "code":
            exercise_language(cell, lang)
            for output in (o for o in cell.get("outputs", []) if table_of(o) is not None):
                text = translated_table(table_of(output), table_text)
                kept_as_lines = isinstance(output["data"]["text/markdown"], list)
                output["data"]["text/markdown"] = text.splitlines(True) if kept_as_lines else text
    out["metadata"]["language"] = languages.ALL[lang].SPHINX["language"]
    return out


def exercise_language(cell: dict, lang: str) -> None:
    """An exercise's code cell in `lang`: the checker that the exercises' setup cell makes
    speaks `lang`, and each check's output shows its line in `lang`, which the output carries
    in its metadata (annotated.exercises.show)."""
    if "exercise-setup" in cell.get("metadata", {}).get("tags", []):
        text = "".join(cell["source"])
        cell["source"] = text.replace('checker("en")', f'checker("{lang}")')
    for output in cell.get("outputs", []):
        said = output.get("metadata", {}).get("exercise", {})
        if lang in said and "text/plain" in output.get("data", {}):
            output["data"]["text/plain"] = said[lang]


def page_text(source: Path, lang: str) -> str:
    """A markdown page of the book in `lang`: as written for English, else translated_page."""
    if lang == languages.ENGLISH:
        return read_page(source)
    return translated_page(source, lang)


def fit_units(where: Path, lang: str) -> list[Unit]:
    """The units of the translation file `where` (none if there is none) that can be
    published: one that is unpublishable is left out, and its English published instead."""
    if not where.exists():
        return []
    return [u for u in read_units(where, lang) if unpublishable(u) is None]


def translated_page(source: Path, lang: str) -> str:
    """A markdown page in `lang`: each translatable block replaced by its translation."""
    where = translation_file(source, lang)
    units = {u.en: u.text for u in fit_units(where, lang) if u.key == "block" and u.text}
    return "\n\n".join(units.get(block, block) if translatable(block) else block
                       for block in page_blocks(read_page(source))) + "\n"


def sources() -> list[Path]:
    """Every English page that has a translation: the chapters, then the book's pages."""
    return (sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb")) + sorted(CHAPTERS.glob("appendix_*.ipynb"))
            + sorted(CHAPTERS.glob("solutions/[0-9][0-9]_*.ipynb"))
            + sorted(p for p in BOOK.glob("*.md")) + [BOOK / "api" / "index.md"])


def orphan_files(lang: str) -> list[str]:
    """The files of book/<lang>/ that translate no English page (a page renamed or removed, a
    copy left behind), beside the table cells and the term list, each one line."""
    ours = {translation_file(source, lang) for source in sources()}
    misnamed = [f"{p.relative_to(ROOT)}: the translation of its page is read from "
                f"{want.name}, which is missing; rename it so" for want in sorted(ours)
                if not want.exists() for p in sorted(want.parent.glob(f"{want.stem}.*"))]
    ours |= {BOOK / lang / TABLES, BOOK / lang / "terms.md"}
    return misnamed + [f"{p.relative_to(ROOT)}: translates no English page (a page renamed or "
                       f"removed?); delete it, or rename it after its page"
                       for p in sorted((BOOK / lang).glob("*.md")) if p not in ours]


def add_missing(source: Path, lang: str) -> int:
    """Append a unit with empty translation for each missing piece of English (for a
    translator to fill in); return how many."""
    where = translation_file(source, lang)
    units = read_units(where, lang) if os.path.lexists(where) else []
    have = {u.key for u in units if u.key != "block"} | {u.en for u in units if u.key == "block"}
    new = [Unit(key, text, "", 0) for key, text in source_units(source)
           if (text if key == "block" else key) not in have]
    if new:
        write_units(where, units + new, lang)
    return len(new)


def table_of(output: dict) -> str | None:
    """The markdown of a table output (text/markdown with a table rule row), else None."""
    text = output.get("data", {}).get("text/markdown")
    text = "".join(text) if isinstance(text, list) else text
    if text and any(TABLE_RULE.match(line.strip()) for line in text.split("\n")):
        return text
    return None


def table_pieces(text: str) -> list[str]:
    """What a table output holds to translate: each cell of its rows, header included, and
    each other line, that needs a unit (needs_unit)."""
    pieces = []
    for line in text.split("\n"):
        if TABLE_RULE.match(line.strip()):
            continue
        pieces += row_cells(line) if line.startswith("|") else [line.strip()]
    return [piece for piece in pieces if needs_unit(piece)]


def row_cells(line: str) -> list[str]:
    """The cells of a table row '| a | b |', stripped."""
    return [cell.strip() for cell in line.strip()[1:-1].split("|")]


def needs_unit(piece: str) -> bool:
    """True for a table cell with a word of two or more Latin letters outside inline code."""
    return bool(WORD.search(re.sub(r"`[^`]*`", " ", piece)))


def cell_key(piece: str) -> str:
    """The English a table cell's unit quotes: the cell with each number written #."""
    return NUMBER.sub("#", piece)


def table_units(lang: str) -> dict[str, str]:
    """English (cell_key) -> translation of book/<lang>/tables.md's units that have one fit to
    publish (table_cell_problem)."""
    where = BOOK / lang / TABLES
    return {u.en: u.text for u in read_units(where, lang) if u.text
            and table_cell_problem(u) is None} if where.exists() else {}


def translated_piece(piece: str, units: dict[str, str]) -> str:
    """A table cell in the units' language, its numbers put back at the translation's #s; as
    it is when it has no unit, or one whose #s are not the cell's numbers (check_tables)."""
    numbers, text = NUMBER.findall(piece), units.get(cell_key(piece))
    if not needs_unit(piece) or not text or text.count("#") != len(numbers):
        return piece
    numbers.reverse()
    return re.sub("#", lambda _: numbers.pop(), text)


def translated_table(text: str, units: dict[str, str]) -> str:
    """A table output's markdown with each cell and other line translated (translated_piece);
    its rule row and its rows' layout as they are."""
    lines = []
    for line in text.split("\n"):
        if line.startswith("|") and not TABLE_RULE.match(line.strip()):
            cells = [translated_piece(cell, units) for cell in row_cells(line)]
            line = "| " + " | ".join(cells) + " |" if cells != row_cells(line) else line
        elif line.strip() and not TABLE_RULE.match(line.strip()):
            line = line.replace(line.strip(), translated_piece(line.strip(), units))
        lines.append(line)
    return "\n".join(lines)


def book_table_pieces() -> list[tuple[str, str]]:
    """(where, cell) of every table cell of the chapters that needs a unit, where naming the
    chapter, the table's caption number (from the caption cell that follows it) and its cell."""
    found = []
    for source in (s for s in sources() if s.suffix == ".ipynb"):
        cells = read_notebook(source).cells
        for i, cell in enumerate(cells):
            tables = [t for o in cell.get("outputs", []) if (t := table_of(o)) is not None]
            after = next((c.source for c in cells[i + 1:] if c.cell_type == "markdown"), "")
            caption = CAPTION.match(after)
            where = (f"{source.relative_to(ROOT)}, {caption.group(1) if caption else 'a table'}"
                     f" (cell {cell.get('id')})")
            found += [(where, piece) for text in tables for piece in table_pieces(text)]
    return found


def check_tables(lang: str) -> Report:
    """The chapters' table cells against book/<lang>/tables.md: a cell with no unit is missing,
    a unit whose #s are not its English's is stale, a unit no table shows is an orphan."""
    where = BOOK / lang / TABLES
    units = read_units(where, lang) if os.path.lexists(where) else []
    name, report, seen = where.relative_to(ROOT), Report([], [], []), set()
    by_en = {u.en: u for u in units}
    for place, piece in book_table_pieces():
        key = cell_key(piece)
        if key in seen:
            continue
        seen.add(key)
        unit = by_en.get(key)
        if unit is None or not unit.text.strip():
            report.missing.append(f"{name}: no translation of the table cell {short(key)}: "
                                  f"{place}")
        elif unit.text.count("#") != key.count("#"):
            report.stale.append(f"{name}:{unit.line}: the translation of {short(key)} writes "
                                f"{unit.text.count('#')} '#', its English {key.count('#')}: "
                                f"write one # for each number of the cell")
        elif problem := table_cell_problem(unit):
            report.missing.append(f"{name}:{unit.line}: the table cell {short(key)}: {problem}")
    report.orphans += [f"{name}:{u.line}: a table cell no chapter shows any more: {short(u.en)}"
                       for u in units if u.en not in seen]
    return report


def table_cell_problem(unit: Unit) -> str | None:
    """What makes a table cell's translation unfit to publish: what would break its page
    (markup_added), or a number the cell has not. A cell's numbers are its #s, and one
    written out would stand in every table that shows the cell."""
    if problem := markup_added(unit):
        return problem
    added = [n for n in NUMBER.findall(unit.text)             # x1.4 in the cell, ×1.4 here
             if not re.search(rf"(?<![\d.]){re.escape(n)}(?![\d.])", unit.en)]
    if added:
        return (f"its translation has the number {added[0]}, which the cell has not: write # "
                f"where the cell's numbers go, and no other number")
    return None


def add_missing_cells(lang: str) -> int:
    """Append a unit with empty translation to book/<lang>/tables.md for each table cell that
    has none (for a translator to fill in); return how many."""
    where = BOOK / lang / TABLES
    units = read_units(where, lang) if os.path.lexists(where) else []
    have, new = {u.en for u in units}, []
    for _, piece in book_table_pieces():
        if cell_key(piece) not in have:
            have.add(cell_key(piece))
            new.append(Unit("block", cell_key(piece), "", 0))
    if new:
        write_units(where, units + new, lang)
    return len(new)
