"""Sphinx settings for the chapters' website (used by book/build.py through `-c book`).

The notebooks are rendered with their committed outputs (myst-nb, never executed); MathJax is
served from the site itself (sphinx-mathjax-offline), so that no page asks the network for
anything.
"""
project = "The Annotated Transformer, checked"
author = "The Annotated Transformer authors"

extensions = ["myst_nb", "sphinx.ext.mathjax", "sphinx-mathjax-offline"]
nb_execution_mode = "off"                 # the committed outputs are the book
nb_render_markdown_format = "myst"        # markdown outputs hold tables and math
myst_enable_extensions = ["dollarmath", "amsmath"]
exclude_patterns = ["_build"]

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


def setup(app):
    """MathJax on every page: chapter 2's title, in every page's navigation, holds math."""
    app.set_html_assets_policy("always")
