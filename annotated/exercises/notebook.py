"""Where the exercises sit in a notebook: read from the cells, as the book writes them.

A chapter lists its exercises under `## Exercises`, one heading each:

    ### Exercise 2.1 · The causal mask *(coding)*

with the kind in italics: *(coding)*, *(predict, then run)* or *(derive)*. A coding exercise's
code cell defines the function and calls `check("2.1", causal_mask)`. A solutions notebook
(chapters/solutions/) has one `## Exercise 2.1 · The causal mask` section per exercise.
The grader, the website and the tests read the notebooks through these functions.
"""
import ast
import io
import json
import re
import tokenize
import unicodedata
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat

KINDS = ("coding", "predict, then run", "derive")
HEADING = re.compile(r"^(#{2,3}) Exercise (\d+)\.(\d+) · (.+?)(?: \*\((.+?)\)\*)?\s*$",
                     re.M)
# a call of check(...) wherever it stands: a line of its own, a lambda, a thread's target
CHECK = re.compile(r"""(?<![\w.])check\(\s*["']([^"'\n]*)["']\s*,\s*(?:([A-Za-z_]\w*)\s*\)|\S)""")


@dataclass(frozen=True)
class Listed:
    id: str           # "2.1"
    title: str        # "The causal mask"
    kind: str | None  # one of KINDS in a chapter; None in a solutions notebook
    cell: int         # the index of the markdown cell that holds the heading


class NotANotebook(ValueError):
    """Why a file is not a notebook this book reads: `key` names the message (in
    annotated.exercises.messages, in every language), `detail` fills it in, and `types`
    names the kinds of JSON value it speaks of (keys of the messages' "json_types")."""

    def __init__(self, key: str, detail: str = "", **types: str):
        super().__init__(key, detail)
        self.key, self.detail, self.types = key, detail, types


def read(path) -> nbformat.NotebookNode:
    """A notebook file, read and validated by nbformat (which raises if it is not a notebook),
    without nbformat's warning about cells that have no id: older tools write none, and a
    student's notebook is graded all the same. A file that is empty, not JSON, not a notebook,
    or a notebook of a format before 4 is a NotANotebook saying so."""
    with open(path, encoding="utf-8-sig") as f:        # a byte-order mark some editors add
        text = f.read()
    if not text.strip():
        raise NotANotebook("empty_file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if python_script(path, text):
            raise NotANotebook("python_script") from None
        raise NotANotebook("not_json", str(e.lineno)) from None
    except RecursionError:                             # nested deeper than any notebook
        raise NotANotebook("not_json", "1") from None
    version = data.get("nbformat") if isinstance(data, dict) else None
    if isinstance(version, int) and version < 4:
        raise NotANotebook("old_nbformat", str(version))
    lacking = [key for key in ("cells", "nbformat") if not isinstance(data, dict)
               or key not in data]
    if lacking:
        raise NotANotebook("no_cells", ", ".join(f"'{key}'" for key in lacking))
    if version != 4:
        raise NotANotebook("other_nbformat", repr(version))
    if wrong := wrong_shape(data):
        where, found, expected = wrong
        raise NotANotebook("wrong_type", where, found=found, expected=expected)
    with warnings.catch_warnings():           # cells without ids, or sharing one: graded
        warnings.simplefilter("ignore")
        try:
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
        except Exception as e:                # nbformat raises whatever its checks met
            why = getattr(e, "message", None) or str(e) or type(e).__name__
            raise NotANotebook("invalid", " ".join(str(why).split())[:120]) from None
    return nb


def json_type(value) -> str:
    """The kind of JSON value `value` was read from: object, list, string, ..."""
    return ("boolean" if isinstance(value, bool) else "number" if isinstance(value, (int, float))
            else {dict: "object", list: "list", str: "string"}.get(type(value), "null"))


def wrong_shape(data: dict) -> tuple[str, str, str] | None:
    """(where, found, expected) for the first value of a notebook's JSON whose kind is not a
    notebook's, where nbformat's own checks would fail inside their code: the cells a list of
    objects, each with a string cell_type and a text source, the metadata an object."""
    places = [("metadata", data.get("metadata", {}), "object"), ("cells", data["cells"], "list")]
    for i, cell in enumerate(data["cells"] if isinstance(data["cells"], list) else []):
        places.append((f"cells[{i}]", cell, "object"))
        if isinstance(cell, dict):
            source = cell.get("source", "")
            places += [(f"cells[{i}].cell_type", cell.get("cell_type", ""), "string"),
                       (f"cells[{i}].source", source, "text")]
            places += [(f"cells[{i}].source[{j}]", line, "string")       # a list of lines
                       for j, line in enumerate(source if isinstance(source, list) else [])]
    for where, value, expected in places:
        if json_type(value) != expected and not (expected == "text" and
                                                 json_type(value) in ("string", "list")):
            return where, json_type(value), expected
    return None


def python_script(path, text: str) -> bool:
    """Whether a file that is not JSON is a Python script: named .py, or Python code that
    defines or imports something (a notebook exported as a script, jupytext's # %% form)."""
    if Path(path).suffix == ".py":
        return True
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))
               for node in tree.body)


def source(cell) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def listed(nb: dict) -> list[Listed]:
    """The exercises a notebook (as JSON) lists under their headings, in order."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        for match in HEADING.finditer(source(cell)):
            found.append(Listed(f"{match[2]}.{match[3]}", match[4].strip(), match[5], i))
    return found


PROJECT = Path(__file__).resolve().parents[2]        # the folder that holds annotated/
#: The book's chapters, in a clone of the project (an installed package may have none).
CHAPTER_FOLDER = PROJECT / "chapters"


def kind_in_the_book(exercise_id: str) -> str | None:
    """The kind (KINDS) of the exercise `exercise_id` as its chapter lists it, or None when
    the chapter is not here or lists no such exercise."""
    chapter = next(CHAPTER_FOLDER.glob(f"{exercise_id.split('.')[0].zfill(2)}_*.ipynb"), None)
    try:
        found = listed(json.loads(chapter.read_text(encoding="utf-8"))) if chapter else []
    except (OSError, ValueError):
        return None
    return next((e.kind for e in found if e.id == exercise_id), None)


def mentions_check(nb: dict) -> bool:
    """Whether the notebook's code names `check` or `checker` at all: a check called in a
    loop, or under another name, is found only when the notebook runs."""
    return any(cell["cell_type"] == "code" and re.search(r"\bcheck(er)?\b", source(cell))
               for cell in nb["cells"])


def typed(exercise_id: str) -> str:
    """The exercise number as meant, however it was typed: full-width digits and dots (a
    Chinese input method), or a comma or an ideographic full stop for the dot."""
    normal = unicodedata.normalize("NFKC", exercise_id).strip()
    return normal.translate(str.maketrans({",": ".", "\u3002": ".", "\u3001": "."}))


def checks(nb: dict) -> dict[str, str]:
    """{exercise id: the name of the function checked, None for an expression such as a lambda}
    for every `check(...)` call of the notebook's code cells, ids the book has not included;
    one written in a comment or a string is no call."""
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = source(cell)
        names = name_offsets(text)
        found.update((typed(m[1]), m[2]) for m in CHECK.finditer(text)
                     if names is None or m.start() in names)
    return found


def name_offsets(text: str) -> set[int] | None:
    """Where each name of Python code `text` starts (offsets into it), so not in a comment or a
    string; IPython's lines (%magic, !shell) left out. None for text that Python cannot split
    into tokens: then every match counts."""
    lines = [" " * len(line) if line.lstrip().startswith(("%", "!")) else line
             for line in text.splitlines(keepends=True)]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return {starts[token.start[0] - 1] + token.start[1] for token in tokens
            if token.type == tokenize.NAME}
