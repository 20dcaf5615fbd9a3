"""The languages of the site, one module each: en.py for English, the language the book is
written in (its edition is the site's top folder), and one module per translation, named as
its folders: the edition in the site's zh/ folder, built from the translated pages in book/zh/
(see book/i18n.py). Adding a language is adding its module here, beside zh.py, and its
translated pages in book/<name>/ (`python -m book translations --add-missing` starts them).

A language module holds what the build writes in that language:

    SPHINX   Sphinx's settings for the edition: its language code (the pages' lang attribute,
             the search's word splitter) and myst-nb's words
    NAME, READ_IN  the language's name in itself and "Read this page in ...", which every
             other edition's language switch shows
    FIGURE   the word a figure's caption begins with: `**Figure 3.1.** ...`
    WORDS    the lines the build adds to the pages (download links, reading times, the
             solutions' toggles and the paragraph that leads to them, ...)
    counts   the counts behind a chapter's reading time, in words of the language
    SCRIPTS  the words the page scripts write (book/static/*.js), handed to every page of the
             edition as window.BOOK_WORDS (script_words)

and, if Sphinx needs more for the language than its settings, `sphinx_setup(app)`, which
book/conf.py calls.
"""
import importlib
import pkgutil
import string
import traceback

from annotated.base.errors import DataError

ENGLISH = "en"
#: What a language module must hold (see above).
PARTS = ("SPHINX", "NAME", "READ_IN", "FIGURE", "WORDS", "counts", "SCRIPTS")
#: The fields the build fills in beyond those the English words use (stage: a page of
#: Chinese counts its characters apart).
MORE_FIELDS = {("WORDS", "total"): {"hanzi"}}


def _imported(name: str):
    """The module of language `name`, or the one line that says why it cannot be used (a
    syntax error while it is being translated, a part missing), which check() raises when a
    command starts: never a traceback at import."""
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1].lineno if e.__traceback__ else None
        line = getattr(e, "lineno", None) or where
        return (f"book/languages/{name}.py{f', line {line}' if line else ''}: "
                f"{type(e).__name__}: {getattr(e, 'msg', None) or e}; mend it, or git "
                f"checkout -- book/languages/{name}.py")
    if missing := [part for part in PARTS if not hasattr(module, part)]:
        return (f"book/languages/{name}.py has no {missing[0]}, which every language module "
                f"holds (see book/languages/en.py)")
    return module


_FOUND = {name: _imported(name) for name in sorted(
    (m.name for m in pkgutil.iter_modules(__path__)), key=lambda name: (name != ENGLISH, name))}
#: Every language, English first: its name (the edition's folder) -> its module.
ALL = {name: module for name, module in _FOUND.items() if not isinstance(module, str)}
#: The translations: every language but English.
TRANSLATIONS = {name: words for name, words in ALL.items() if name != ENGLISH}


def check() -> None:
    """Refuse a language module that the build would fail on half-way: one that does not
    import, lacks a part, or whose WORDS and SCRIPTS lack a key of the English ones, or fill
    in a field ({name}) that the build and the scripts do not give. A DataError naming the
    file, the key and the fix."""
    for name, module in _FOUND.items():
        if isinstance(module, str):
            raise DataError(module)
        for part in ("WORDS", "SCRIPTS"):
            if problem := _words_problem(part, getattr(ALL[ENGLISH], part),
                                         getattr(module, part)):
                raise DataError(f"book/languages/{name}.py: {part} {problem}; compare it with "
                                f"book/languages/en.py")


def _words_problem(part: str, english: dict, words: dict) -> str | None:
    """What keeps a translation's `words` from standing in for the `english` ones, or None."""
    if missing := [key for key in english if key not in words]:
        return f"lacks the key {missing[0]!r}"
    if unknown := [key for key in words if key not in english]:
        return f"has the key {unknown[0]!r}, which the English has not (a typo?)"
    for key, text in words.items():
        given = _fields(english[key]) | MORE_FIELDS.get((part, key), set())
        try:
            used = _fields(text)
        except ValueError as e:
            return (f"[{key!r}] is no format string ({e}): write a brace that is text as {{{{ "
                    f"or }}}}")
        if unknown := sorted(used - given):
            return (f"[{key!r}] fills in {{{unknown[0]}}}, which is not given: it may use "
                    f"{', '.join(f'{{{f}}}' for f in sorted(given)) or 'no field'}")
    return None


def _fields(text: str) -> set[str]:
    """The names of the fields `text` fills in with str.format: {mb:.1f} -> mb, {w[0]} -> w."""
    return {field.split(".")[0].split("[")[0] for _, field, _, _ in
            string.Formatter().parse(text) if field is not None}


def of_sphinx(code: str):
    """The module of the language whose Sphinx code (SPHINX["language"]) is `code`."""
    return next(words for words in ALL.values() if words.SPHINX["language"] == code)


def folder(name: str) -> str:
    """Where an edition sits in the site: English at the top, a translation in its folder."""
    return "" if name == ENGLISH else f"{name}/"


def script_words(name: str) -> dict:
    """What the page scripts of the edition in `name` read as window.BOOK_WORDS: its language,
    its words, and every edition (language, folder, name, link title) for the switch."""
    return {"lang": name, "words": ALL[name].SCRIPTS,
            "editions": [{"lang": other, "folder": folder(other), "name": words.NAME,
                          "read_in": words.READ_IN} for other, words in ALL.items()]}
