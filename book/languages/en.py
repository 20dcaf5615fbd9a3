"""English, the language the book is written in: its edition is the site's top folder."""

SPHINX = {"language": "en"}
FIGURE = "Figure"
WORDS = {
    "notebook": "Download this chapter as a Jupyter notebook ({name})",
    "project": ", or {link}the whole project ({zip}, {mb:.1f} MB)</a> to run it offline",
    "minutes": "About {low:.0f} to {high:.0f} minutes to read ({counts}).",
    "figure": "Figure from chapter {label}",
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


def counts(words: int, code: int, printed: int, figures: int) -> str:
    return (f"{words:,} words, {code:,} lines of code, {printed:,} lines of output, "
            f"{figures:,} figure{'' if figures == 1 else 's'}")
