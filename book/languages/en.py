"""English, the language the book is written in: its edition is the site's top folder."""

SPHINX = {"language": "en"}
#: The language's name in itself, and the title of a link to a page in it: every other
#: edition's language switch shows them.
NAME, READ_IN = "English", "Read this page in English"
FIGURE = "Figure"
WORDS = {
    "notebook": "Download this chapter as a Jupyter notebook ({name})",
    "project": ", or {link}the whole project ({zip}, {mb:.1f} MB)</a> to run it offline",
    "minutes": "About {low:.0f} to {high:.0f} minutes to read ({counts}).",
    "figure": "Figure from chapter {label}",
    "source": "(highlighted source)",
    "api_title": "{module} in the API reference",
    "reference": "Reference",
    "solutions": "Solutions",
    "show_solution": "Show the solution",
    "solutions_mark": "**Solutions.**",
    "solutions_page": ("**Solutions.** Worked solutions to every exercise of this chapter are on "
                       "the page [Solutions]({page}), each folded until you open it."),
    "total": ("Reading all {n} chapters takes a careful first reader about {low:.0f} to "
              "{high:.0f} hours: {words[0]:g} to {words[1]:g} words of prose, {code[0]:g} to "
              "{code[1]:g} lines of code or {printed[0]:g} to {printed[1]:g} lines of printed "
              "output a minute, and {figure[0]:g} to {figure[1]:g} minutes a figure. Each chapter "
              "gives its own estimate under its title; doing the exercises takes longer."),
}


def counts(words: int, hanzi: int, code: int, printed: int, figures: int) -> str:
    words += hanzi                              # an English page: a Chinese character is a word
    return (f"{words:,} words, {code:,} lines of code, {printed:,} lines of output, "
            f"{figures:,} figure{'' if figures == 1 else 's'}")


#: The words the page scripts write (book/static/book.js, explorer.js), `{name}` a value the
#: script fills in; the build hands them to the pages as window.BOOK_WORDS.
SCRIPTS = {
    "close": "Click anywhere or press Escape to close.",
    "open": "Open this figure at full size",
    "missing": ("The weights are missing: this page needs the file _static/explorer-data.js, "
                "which the book's build writes."),
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention (masked)",
    "cross": "Encoder-decoder attention",
    "head": "Head {h}",
    "of": "{i} of {n}",
    "all_heads": "all heads of the layer",
    "which_all": "all {heads} heads",
    "which_one": "head {head} of {heads}",
    "axis_encoder": "English pieces",
    "axis_decoder": "decoder positions (the translation, after a start token)",
    "axis_decoder_keys": "the same positions",
    "axis_cross": "the German piece being written",
    "caption": ("{name}, layer {layer} of {layers}, {which}. Rows: {rows}; columns: {keys}. "
                "Hover over a row, or focus its label, to list its largest weights."),
    "table": ("{name}, layer {layer}, head {head}: one row per query, one column per key; a "
              "dash is a masked key (weight 0)."),
    "corner": "query \\ key",
    "row": "Row {i}, “{token}”",
    "predicts": " (this position predicts “{next}”)",
    "fed": " (the piece this position writes; it is fed “{fed}”)",
    "hover": "{text}: the keys it attends to most, with their weights.",
    "sentence": "Sentence {n} (English)",
    "translation": "The model's translation (German)",
    "label": "{label}: ",
}
