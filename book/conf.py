"""Sphinx settings for the chapters' website (used by book/build.py through `-c book`).

The notebooks are rendered with their committed outputs (myst-nb, never executed); MathJax is
served from the site itself (sphinx-mathjax-offline), so that no page asks the network for
anything. The API reference (api/, staged by book/project.py) is autodoc's reading of the
package's docstrings, with viewcode's highlighted source of every module (_modules/). Each
edition's language is its module in book/languages/: the build passes its SPHINX settings
(`-D language=zh_CN ...`), and what else Sphinx needs for it is that module's sphinx_setup.

Three hooks below: the docstrings, written as plain text, are escaped so that reStructuredText
reads them as written (a `*` or a trailing `_` is no markup); each figure of a chapter links its
image file, which book.js opens larger in the page; and a page's <title>, which MathJax never
reaches, shows a title's math as plain text (chapter 2's `$-\\infty$` becomes "−∞").
"""
import json
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx.util.osutil import relative_uri

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))             # autodoc reads this checkout's package

from book import languages  # noqa: E402
from book.figures import plain_math  # noqa: E402  (the same plain text as the figures' alt)
from book.i18n import MYST_EXTENSIONS  # noqa: E402  (the translations check reads as we do)

project = "The Annotated Transformer, checked"
author = project                          # the footer's "By ..." names the project

extensions = ["myst_nb", "sphinx.ext.mathjax", "sphinx-mathjax-offline",
              "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
nb_execution_mode = "off"                 # the committed outputs are the book
nb_render_markdown_format = "myst"        # markdown outputs hold tables and math
myst_enable_extensions = MYST_EXTENSIONS
exclude_patterns = ["_build"]

default_role = "literal"                  # `name` in a docstring is code, as in the chapters
autodoc_member_order = "bysource"         # the order the source file reads in
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_typehints = "signature"
autodoc_inherit_docstrings = False        # torch's own docstrings are not this package's
add_module_names = False                  # the page already names the module
python_display_short_literal_types = True

html_theme = "sphinx_book_theme"
html_title = project
html_favicon = "favicon.svg"              # else browsers ask for a missing /favicon.ico
html_context = {"default_mode": "auto"}   # the reader's light or dark preference
html_static_path = ["static"]
html_css_files = ["book.css"]
html_js_files = ["book.js"]
html_use_index = False                    # no index entries: its page would be empty
html_copy_source = False                  # each chapter links its committed notebook instead
html_show_sourcelink = False
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": True,
}

def plain_title(title: str) -> str:
    """`title` (HTML) with its math (`\\(...\\)` or `$...$`) as plain text."""
    return re.sub(r"\\\((.*?)\\\)|\$([^$]+)\$", lambda m: plain_math(m[1] or m[2]), title)


def escape_docstring(app, what, name, obj, options, lines):
    """Read a plain-text docstring as written: in its paragraphs `*`, `|`, `\\` and a trailing
    `_` are no markup, and its indented lines (formulas, examples) are shown as they are
    laid out, as a literal block."""
    escaped, literal = [], False
    for line in lines:
        indented = line[:1].isspace() and bool(line.strip())
        if indented and not literal:          # a literal block starts: a '::' paragraph first
            literal = True
            escaped += ["", "::", ""]
        elif literal and line.strip() and not indented:
            literal = False
            escaped.append("")
        if not literal:
            line = re.sub(r"(\w)_(?=\W|$)", r"\1\\_", re.sub(r"([*|\\])", r"\\\1", line))
        escaped.append(line)
    lines[:] = escaped


def link_figures(app, doctree, docname):
    """Wrap each image of a chapter's outputs in a link to its file (book.js opens it in the
    page; without JavaScript the link opens the file)."""
    if app.builder.format != "html":
        return
    for image in list(doctree.findall(nodes.image)):
        if isinstance(image.parent, nodes.reference) or image["uri"] not in app.env.images:
            continue
        target = "_images/" + app.env.images[image["uri"]][1]
        link = nodes.reference("", "", internal=True, classes=["figure-link"],
                               refuri=relative_uri(app.builder.get_target_uri(docname), target))
        image.replace_self(link)
        link.append(image)


def plain_page_title(app, pagename, templatename, context, doctree):
    if context.get("title"):
        context["title"] = plain_title(context["title"])


def language_setup(app, config):
    """What this edition's language module in book/languages/ gives every page: the words of
    the page scripts (window.BOOK_WORDS, before the scripts that read it), and whatever else
    Sphinx needs for the language (sphinx_setup)."""
    words = languages.of_sphinx(config.language)
    name = next(key for key, module in languages.ALL.items() if module is words)
    app.add_js_file(None, priority=200, body="window.BOOK_WORDS = " + json.dumps(
        languages.script_words(name), ensure_ascii=False) + ";")
    if hasattr(words, "sphinx_setup"):
        words.sphinx_setup(app)


def setup(app):
    """MathJax on every page: chapter 2's title, in every page's navigation, holds math."""
    app.set_html_assets_policy("always")
    app.connect("config-inited", language_setup)
    app.connect("autodoc-process-docstring", escape_docstring)
    app.connect("doctree-resolved", link_figures)
    app.connect("html-page-context", plain_page_title)
