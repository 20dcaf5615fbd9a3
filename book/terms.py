"""The book's terms, the entries of its glossary (book/glossary.md), and where the chapters
define, use and link them, in every language.

A term is *defined* where the book first writes it in bold (`**query**`): in the first chapter,
in reading order, with a bold use of it; its glossary entry names that chapter. A chapter
*links* a term with a markdown link to its entry, `[query](../book/glossary.md#glossary-query)`,
which works in Jupyter and on GitHub and which the site leads to the glossary page
(stage.link_book_pages). A *use* is one of the term's forms in a chapter's prose: not in code,
inline code, math, headings, the bold lead-in of a paragraph or a caption's number, and not
inside another link. A term's forms are the words its entry writes in bold (in a translation,
the words before the parenthesis), its abbreviation or other name in parentheses, their simple
plurals, and the extra forms of FORMS; where two terms overlap ("attention" in "self-attention"),
the longer one is the use.

The rule the chapters keep: the first use of each term in every chapter links to its entry,
but for the bold use that defines it, and a chapter links a term once, with the term's own
words. `python -m book terms` lists every break of it, in every language (problems()).
"""
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from annotated.base.errors import DataError
from book import i18n, languages

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
GLOSSARY = BOOK / "glossary.md"
#: A chapter's link to a glossary entry, as the chapters write it.
LINK = re.compile(r"\[([^\[\]]*)\]\(\.\./book/glossary\.md#(glossary-[\w-]+)\)")
#: Forms of a term that its bold words and their plurals do not give, by language: regular
#: expressions, each matched as a whole word.
MORE = {
    "en": {
        "glossary-query-key-value": [r"query", r"queries"],
        "glossary-encoder-decoder-attention": [r"cross-attention"],
        "glossary-n-gram": [r"\d-grams?"],
        "glossary-saturation": [r"saturat(?:es?|ed|ing)"],
        "glossary-resuming": [r"resumes?", r"resumed"],
        "glossary-overfitting": [r"overfits?"],
        "glossary-hypothesis": [r"hypotheses"],
        "glossary-logits": [r"logit"],
        "glossary-log-probability": [r"log-probabilities"],
        "glossary-perplexity": [r"perplexities"],
        "glossary-all-reduce": [r"all-reduces"],
        "glossary-mask": [r"masked"],
        "glossary-label-smoothing": [r"label-smoothed"],
        "glossary-bpe": [r"byte-pair"],
        "glossary-atomic-write": [r"atomically"],
    },
    "zh": {
        "glossary-query-key-value": [r"查询"],
        "glossary-head": [r"注意力头"],
    },
}
#: The only forms that count, for a term whose words the book also uses in their everyday sense
#: ("one step at a time"; 一步).
ONLY = {
    "en": {
        "glossary-step": [r"(?<=training )steps?", r"(?<=optimi[sz]er )steps?", r"(?<=Adam )steps?",
                          r"(?<=\d )steps?", r"(?<=\d warmup )steps?"],
    },
    "zh": {
        "glossary-step": [r"(?<=训练)步", r"(?<=优化器)步", r"(?<=\d)步(?![长骤])", r"(?<=\d )步(?![长骤])"],
    },
}
#: Phrases in which a term's words mean something else, by language ("lie in memory" is not the
#: encoder's memory; 开头 is no head).
OTHER = {
    "en": [r"in memory", r"allocating memory", r"memory (?:use|traffic)", r"of memory",
           r"the memory for", r"(?<=dropout )masks?"],
    "zh": [r"开头", r"过头", r"从头", r"回头", r"头绪", r"多头", r"箭头", r"第 ?[\d,]+ ?步", r"超参数", r"(?<=\0 )参数",
           r"(?<=\0 的)参数", r"参数(?= \0)", r"(?<=dropout )掩码", r"(?<=dropout 的)掩码",
           r"(?<![^\s\0。：；！？])假设"],
}


@dataclass(frozen=True)
class Term:
    label: str                 # its glossary entry's label: "glossary-query-key-value"
    name: str                  # the words its entry writes in bold, in one language
    forms: tuple[str, ...]     # regular expressions of its forms in prose
    chapter: str | None        # the chapter its entry names ("3", "A"), or None


@dataclass(frozen=True)
class Use:
    term: Term
    chapter: str               # "1" ... "9", "A"
    cell: str                  # the markdown cell's id
    start: int                 # where the words start in the cell's text
    words: str                 # the words as written
    how: str                   # "prose", "bold" or "link"


def chapter_label(path: Path) -> str:
    return "A" if path.name.startswith("appendix_") else str(int(path.name[:2]))


def chapter_paths() -> list[Path]:
    """The chapters and the appendix, in reading order."""
    chapters = ROOT / "chapters"
    return sorted(chapters.glob("[0-9][0-9]_*.ipynb")) + sorted(chapters.glob("appendix_*.ipynb"))


@cache
def terms(lang: str = languages.ENGLISH) -> tuple[Term, ...]:
    """Every glossary entry, as a term in `lang`."""
    text = i18n.page_text(GLOSSARY, lang)
    if lang == languages.ENGLISH:              # (a translation file is checked as it is read)
        i18n.source_units(GLOSSARY)            # a git conflict marker left in it, named
    found = []
    for label, bold, body in re.findall(
            r"^\((glossary-[\w-]+)\)=\n\*\*(.+?)\.\*\*(.*?)(?=^\(glossary-|^#|\Z)", text,
            re.S | re.M):
        said = re.search(r"\{doc\}`[^`<]*?(\d+|[A-Z])\s*<(?:\d\d_|appendix_)", body)
        found.append(Term(label, bold, forms(bold, label, lang), said and said.group(1)))
    if not found:
        raise DataError(f"{GLOSSARY.relative_to(BOOK.parent)} holds no glossary entry "
                        f"((glossary-LABEL)= then a bold term), in {lang} (emptied?): restore "
                        f"it from git (git checkout -- {GLOSSARY.relative_to(BOOK.parent)})")
    return tuple(found)


def forms(bold: str, label: str, lang: str) -> tuple[str, ...]:
    """The forms of a term whose entry writes `bold` in bold (see the module's docstring)."""
    name, _, other = bold.partition("（" if "（" in bold else " (")
    names = [name.strip()]
    aliases = re.split(r"，\s*", other.rstrip("）")) if "（" in bold else [other.rstrip(")")]
    for alias in aliases if other else []:
        alias = re.sub(r"^(又称|即)\s*", "", alias).strip()
        names.append(alias)
    if lang == languages.ENGLISH and "," in bold and " (" not in bold:
        names = []                                 # "Query, key, value": MORE gives them
    if lang == languages.ENGLISH:              # a common noun's capital is the sentence's
        names = [n[0].lower() + n[1:] if re.match(r"[A-Z][a-z]", n) else n for n in names]
    words = names + [plural(name) for name in names if lang == languages.ENGLISH
                     and re.search(r"([a-z]|[A-Z]{2})(?<!s)$", name)]
    found = [r"[-\s]".join(map(re.escape, re.split(r"[- ]", word))) for word in words]
    return tuple(ONLY.get(lang, {}).get(label) or found + MORE.get(lang, {}).get(label, []))


def plural(word: str) -> str:
    """`word` in the plural: query, queries; FLOP, FLOPs (hypothesis is in MORE)."""
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if re.search(r"(x|sh|tch)$", word) else "s")


def cells(path: Path, lang: str) -> list[tuple[str, str]]:
    """A chapter's markdown cells in `lang`: (id, text)."""
    nb = i18n.read_notebook(path)
    if lang != languages.ENGLISH:
        nb = i18n.translated_notebook(nb, path, lang)
    return [(c["id"], "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"]


#: What is not prose, blanked out before the terms are looked for: code, math, roles, HTML,
#: headings and images.
NOT_PROSE = re.compile(r"```.*?```|\$\$.*?\$\$|`[^`]*`|\{\w+\}`[^`]*`|\$[^$]*\$|<[^<>]*>"
                       r"|^#[^\n]*|!\[[^\[\]]*\]\([^()]*\)", re.S | re.M)
BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
#: A bold lead-in that reads like a heading: bold words that open a paragraph or an item of a
#: list and end with a full stop or a colon (`**Mixed precision.** ...`).
LEAD = re.compile(r"(?:\A|(?<=\n\n)|(?<=\n)(?=[ \t]*(?:[*-]|\d+\.) ))[ \t]*(?:(?:[*-]|\d+\.) +)?"
                  r"\*\*[^*]+?[.:?。：？]\*\*")
ANY_LINK = re.compile(r"\[([^\[\]]*)\]\(([^()]{0,2000})\)")


def blank(text: str, pattern: re.Pattern) -> str:
    """`text` with what `pattern` matches replaced by NUL characters, so that offsets stay."""
    return pattern.sub(lambda m: "\0" * len(m[0]), text)


@cache
def finder(lang: str) -> re.Pattern:
    """One pattern for every form of every term and every phrase of OTHER, longest first,
    each a named group: t<term's index>_<k>, or o_<k> for a phrase of OTHER."""
    alternatives = [(form, f"t{i}") for i, term in enumerate(terms(lang)) for form in term.forms]
    alternatives += [(phrase, "o") for phrase in OTHER.get(lang, [])]
    alternatives.sort(key=lambda a: -len(a[0]))
    groups = "|".join(f"(?P<{name}_{k}>{first_letter(form)})"
                      for k, (form, name) in enumerate(alternatives))
    edge = r"\w-" if lang == languages.ENGLISH else r"A-Za-z0-9_-"
    return re.compile(rf"(?<![{edge}])(?:{groups})(?![{edge}])")


def first_letter(form: str) -> str:
    """A form whose first letter may be a capital (at the start of a sentence)."""
    if re.match(r"[A-Za-z]", form):
        return f"[{form[0].lower()}{form[0].upper()}]{form[1:]}"
    return form


@cache
def uses(path: Path, lang: str = languages.ENGLISH) -> list[Use]:
    """Every use and every link of a term in a chapter, in order."""
    return [Use(term, chapter_label(path), cell, start, words, how)
            for cell, text in cells(path, lang)
            for term, start, words, how in text_uses(text, lang)]


def text_uses(text: str, lang: str) -> list[tuple[Term, int, str, str]]:
    """Every use and every link of a term in one markdown text, in order: (term, where it
    starts, the words as written, "prose", "bold" or "link")."""
    by_label = {term.label: term for term in terms(lang)}
    prose = blank(blank(text, NOT_PROSE), LEAD)
    found = [(by_label.get(m[2], Term(m[2], "?", (), None)), link.start(), m[1], "link")
             for link in ANY_LINK.finditer(prose) if (m := LINK.fullmatch(link[0]))]
    prose = blank(prose, ANY_LINK)
    bold = [m.span() for m in BOLD.finditer(prose)]
    for m in finder(lang).finditer(prose):
        if m.lastgroup.startswith("t"):
            term = terms(lang)[int(m.lastgroup[1:].split("_")[0])]
            how = "bold" if any(a < m.start() < b for a, b in bold) else "prose"
            found.append((term, m.start(), m[0], how))
    return sorted(found, key=lambda use: use[1])


@cache
def defining_chapters(lang: str = languages.ENGLISH) -> dict[str, str]:
    """Each term's defining chapter: the first, in reading order, to write it in bold."""
    found = {}
    for path in chapter_paths():
        for use in uses(path, lang):
            if use.how == "bold":
                found.setdefault(use.term.label, use.chapter)
    return found


def unlinked(path: Path, lang: str = languages.ENGLISH) -> list[str]:
    """What breaks the chapters' rule in one chapter (see the module's docstring), a line
    each: a first use not linked, a second link, a link whose words are not the term's."""
    defined, seen, found = defining_chapters(languages.ENGLISH), set(), []
    unbolded = ({label for label, chapter in defined.items() if chapter == chapter_label(path)}
                - {use.term.label for use in uses(path, lang) if use.how == "bold"})
    for use in uses(path, lang):
        term, problem = use.term, None
        defines = use.how == "bold" and defined.get(term.label) == use.chapter
        if term.label in unbolded - seen:           # a translation that lost the definition
            problem = (f"{term.name!r} ('{use.words}') is nowhere in bold, and this chapter "
                       f"defines it: write its defining use in bold, as the English does")
        elif use.how == "link":
            if term.name == "?":
                problem = f"a link to {term.label}, which the glossary lacks"
            elif term.label in seen:
                problem = f"links {term.name!r} again ('{use.words}'); link it once"
            elif not re.fullmatch("|".join(first_letter(re.sub(r"\(\?<[=!][^)]*\)", "", f))
                                           for f in term.forms), use.words):
                problem = (f"the link '{use.words}' to {term.label} is not the term's own "
                           f"words; link only the term")
        elif term.label not in seen and not defines:
            problem = (f"first use of {term.name!r} ('{use.words}') is not linked to its "
                       f"glossary entry")
        if problem:
            found.append(f"{place(path, lang, use)}: {problem}")
        seen.add(term.label)
    return found


def place(path: Path, lang: str, use: Use) -> str:
    """Where to edit a use: the chapter and its cell, in English; in a translation, the
    translation file and its line (book/zh/NAME.md:LINE), where the fix is made."""
    if lang == languages.ENGLISH:
        return f"{path.name}, cell {use.cell}"
    file = i18n.translation_file(path, lang)
    unit = next((u for u in i18n.read_units(file, lang) if u.key == f"cell {use.cell}"), None)
    if unit is None:                                # untranslated: the English cell is shown
        return f"{path.name} ({lang}: no translation yet), cell {use.cell}"
    lines = file.read_text(encoding="utf-8").splitlines()
    separator = lines.index(i18n.TARGET.format(lang=lang), unit.line)   # 0-based
    before = dict(cells(path, lang))[use.cell][:use.start]
    return f"{file}:{separator + 2 + before.count(chr(10))}"


def misplaced() -> list[str]:
    """Each glossary entry whose chapter is not the one that defines its term, a line each."""
    defined, found = defining_chapters(), []
    for term in terms():
        where = defined.get(term.label)
        if where is None:
            found.append(f"{GLOSSARY.name}: no chapter writes {term.name!r} in bold; write it "
                         f"in bold where a chapter explains it")
        elif where != term.chapter:
            found.append(f"{GLOSSARY.name}: {term.name!r} names chapter {term.chapter}, but "
                         f"chapter {where} defines it (its first bold use); name chapter {where}")
    return found


def problems() -> list[str]:
    """Every break of the book's rules for its terms, in every language, a line each."""
    return misplaced() + [line for lang in languages.ALL for path in chapter_paths()
                          for line in unlinked(path, lang)]
