"""The figures of a chapter and their captions. A figure's caption is a paragraph of the
markdown cell right after the cell that draws it that begins `**Figure C.K.** ` (C the
chapter's number, or a letter for an appendix; K from 1), with the word for a figure in one of
the languages of book/languages/. Staged for the site, each figure stands in a cell of its own
with its caption as the figure's caption and as the image's alt text (its math and markup as
plain text)."""
import json
import re
from pathlib import Path

from book import languages

#: A figure's caption: a paragraph that begins `**Figure C.K.** ` in one of the languages.
CAPTION = re.compile(r"\*\*(?:%s) (([1-9]\d*|[A-Z])\.([1-9]\d*))\.\*\*\s+\S"
                     % "|".join(re.escape(words.FIGURE) for words in languages.ALL.values()))


def is_figure(output: dict) -> bool:
    """True for an output that shows an image."""
    return (output.get("output_type") in ("display_data", "execute_result")
            and any(m.startswith("image/") for m in output.get("data", {})))


def paragraphs(cell: dict | None) -> list[str]:
    """The paragraphs of a markdown cell (none for any other cell, or for no cell)."""
    if not cell or cell.get("cell_type") != "markdown":
        return []
    return [p.strip() for p in re.split(r"\n[ \t]*\n", "".join(cell["source"])) if p.strip()]


def figures(nb: dict) -> list[dict]:
    """Every figure of a chapter, in order: the cell and the output that show it, and its
    caption, or None. The captions of a cell's figures are the caption paragraphs (see
    CAPTION) of the markdown cell right after it, in order, one per figure."""
    found, cells = [], nb["cells"]
    for i, cell in enumerate(cells):
        shown = [j for j, o in enumerate(cell.get("outputs", [])) if is_figure(o)]
        after = cells[i + 1] if i + 1 < len(cells) else None
        captions = [p for p in paragraphs(after) if CAPTION.match(p)]
        for k, j in enumerate(shown):
            caption = captions[k] if k < len(captions) else None
            found.append({"cell": i, "output": j, "caption": caption,
                          "number": CAPTION.match(caption).group(1) if caption else None})
    return found


def chapter_label(path: Path) -> str:
    """The chapter's number as its figures are numbered: '3' for 03_*.ipynb, 'A' for the
    appendix."""
    return "A" if path.name.startswith("appendix_") else str(int(path.name[:2]))


def caption_problems(nb: dict, label: str) -> list[str]:
    """What is wrong with a chapter's figure captions, one line each: numbers not 1, 2, 3...
    in order, or a caption that follows no figure (or one more than its cell draws). A figure
    without a caption is no problem here (see figures())."""
    cells = nb["cells"]
    written = [(i, CAPTION.match(p).group(1)) for i, c in enumerate(cells)
               for p in paragraphs(c) if CAPTION.match(p)]
    problems = [f"cell {i}: caption 'Figure {number}' where 'Figure {label}.{k}' comes next"
                for k, (i, number) in enumerate(written, start=1) if number != f"{label}.{k}"]
    attached = {f["number"] for f in figures(nb) if f["caption"]}
    problems += [f"cell {i}: caption 'Figure {number}' follows no figure of its own (each "
                 f"caption goes in the markdown cell right after the cell that draws it)"
                 for i, number in written if number not in attached]
    return problems


#: LaTeX as plain text, where MathJax does not reach: an image's alt text, a page's <title>.
#: Any other command loses its backslash.
LATEX_TEXT = {r"\infty": "∞", r"\sqrt": "√", r"\cdot": "·", r"\times": "×", r"\le": "≤",
              r"\leq": "≤", r"\ge": "≥", r"\geq": "≥", r"\ne": "≠", r"\neq": "≠",
              r"\approx": "≈", r"\to": "→", r"\rightarrow": "→", r"\in": "∈", r"\sum": "Σ",
              r"\alpha": "α", r"\beta": "β", r"\epsilon": "ε", r"\varepsilon": "ε",
              r"\mathrm": "", r"\text": "", r"\operatorname": "", r"\mathbf": "",
              r"\left": "", r"\right": "", r"\,": " ", r"\;": " ", r"\!": ""}


def plain_math(latex: str) -> str:
    """LaTeX math as plain text: `-\\infty` is '−∞', `\\sqrt{d_k}` is '√d_k'."""
    text = re.sub(r"\\[A-Za-z]+|\\[,;!]", lambda m: LATEX_TEXT.get(m[0], m[0][1:]), latex)
    return text.replace("{", "").replace("}", "").replace("-", "−")


def plain_text(markdown: str) -> str:
    """Markdown (a caption) as plain text, for an image's alt text: math by plain_math, links
    as their text, no emphasis or code marks."""
    text = re.sub(r"\$\$?(.+?)\$\$?", lambda m: plain_math(m[1]), markdown, flags=re.S)
    text = re.sub(r"\[([^\[\]]*)\]\([^()]*\)", r"\1", text)
    return " ".join(re.sub(r"[*`]", "", text).split())


def stage_figures(nb: dict, label: str,
                  generic: str = languages.ALL[languages.ENGLISH].WORDS["figure"]) -> None:
    """In a staged chapter: each figure in a cell of its own (the cell's other outputs, before
    and after it, in cells of their own; the code shows once, in the first), with its caption
    as the figure's caption and as the image's alt text, and the caption paragraphs taken out
    of the markdown cell after it. A figure without a caption gets a generic alt text."""
    found = figures(nb)
    used = {}                                  # the caption cell: the captions taken from it
    for figure in found:
        if figure["caption"]:
            used.setdefault(figure["cell"] + 1, []).append(figure["caption"])
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if i in used:
            text = "".join(cell["source"])
            for caption in used[i]:
                text = text.replace(caption, "", 1)
            if not text.strip():
                continue
            cell = {**cell, "source": re.sub(r"\n{3,}", "\n\n", text).strip("\n")}
        mine = {f["output"]: f for f in found if f["cell"] == i}
        if not mine:
            cells.append(cell)
            continue
        pieces, pending = [], []
        for j, output in enumerate(cell["outputs"]):
            if j in mine:
                pieces += [(pending, None)] if pending else []
                pieces.append(([output], mine[j]))
                pending = []
            else:
                pending.append(output)
        pieces += [(pending, None)] if pending else []
        for k, (outputs, figure) in enumerate(pieces):
            piece = json.loads(json.dumps({**cell, "outputs": outputs}))
            if k:                       # myst-nb skips a cell with no source: a comment
                piece.update(source="# continued", id=f"{cell.get('id', i)}-{k}")
                piece["metadata"]["tags"] = ["remove-input"]
            if figure:
                options = piece["metadata"].setdefault("mystnb", {})
                caption = figure["caption"]
                options["image"] = {"alt": plain_text(caption) if caption
                                    else generic.format(label=label)}
                if caption:
                    options["figure"] = {"caption": caption, "name":
                                         "figure-" + figure["number"].replace(".", "-")}
            cells.append(piece)
    nb["cells"] = cells
