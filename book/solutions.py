"""The worked solutions on the site: one page per chapter, each solution folded, or none at all.

The solutions notebooks (chapters/solutions/NN_name.ipynb) are staged as pages in the site's
solutions/ folder. Under each `## Exercise N.K · Title` heading, the solution that follows (the
markdown and code cells up to the next such heading) is folded in a <details> element that is
closed until the reader opens it. A chapter's paragraph that says where its solutions are
leads to that page (book.stage.solutions_paragraph).

`python -m book build --without-solutions` builds a site for a course instead: no solution page,
no solution notebook to download, the chapters' solutions paragraphs left out, and the
project's zip without the solutions' files.
"""
import json
import re
from pathlib import Path

from book import i18n, languages
from book.stage import CHAPTERS, read_chapter, tag_exercise_checks

FOLDER = "solutions"
#: An exercise's heading in a solutions notebook (annotated.exercises.notebook.HEADING's form).
HEADING = re.compile(r"^## .+$", re.M)


def notebooks() -> list[Path]:
    """The solutions notebooks, in the chapters' order."""
    return sorted((CHAPTERS / FOLDER).glob("[0-9][0-9]_*.ipynb"))


def is_solution_file(name: str) -> bool:
    """True for a file of the project (a path relative to its root) that holds solutions: the
    solutions notebooks and their translations."""
    return name.startswith(f"chapters/{FOLDER}/") or bool(
        re.fullmatch(rf"book/[^/]+/{FOLDER}_[^/]+\.md", name))


def folded(nb: dict, summary: str) -> dict:
    """The notebook with each exercise's solution in a <details> element, closed: opened after
    each `## ` heading, closed before the next one and at the end."""
    cells, open_ = [], False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown" or not HEADING.search("".join(cell["source"])):
            cells.append(cell)
            continue
        text, parts = "".join(cell["source"]), []
        position = 0
        for heading in HEADING.finditer(text):
            before = text[position:heading.start()]
            parts.append(before + ("\n\n</details>\n\n" if open_ else ""))
            parts.append(f"{heading.group(0)}\n\n<details class=\"solution\">\n"
                         f"<summary>{summary}</summary>\n\n")
            position, open_ = heading.end(), True
        parts.append(text[position:])
        cells.append({**cell, "source": "".join(parts).strip("\n")})
    if open_:
        cells.append({"cell_type": "markdown", "id": "solutions-end", "metadata": {},
                      "source": "</details>"})
    return {**nb, "cells": cells}


def stage(src: Path, lang: str) -> None:
    """Every solutions notebook as a page of `src`/solutions/, in `lang`, each solution
    folded."""
    (src / FOLDER).mkdir()
    for path in notebooks():
        nb = read_chapter(path)
        if lang != languages.ENGLISH:
            nb = i18n.translated_notebook(nb, path, lang)
        nb = folded(nb, languages.ALL[lang].WORDS["show_solution"])
        tag_exercise_checks(nb)
        (src / FOLDER / path.name).write_text(json.dumps(nb, ensure_ascii=False),
                                              encoding="utf-8")
