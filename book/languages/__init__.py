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

ENGLISH = "en"
#: Every language, English first: its name (the edition's folder) -> its module.
ALL = {name: importlib.import_module(f"{__name__}.{name}")
       for name in sorted((m.name for m in pkgutil.iter_modules(__path__)),
                          key=lambda name: (name != ENGLISH, name))}
#: The translations: every language but English.
TRANSLATIONS = {name: words for name, words in ALL.items() if name != ENGLISH}


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
