"""The Chinese edition reads as Chinese: each term in the one rendering the term list
(book/zh/terms.md) gives it, and no English prose left in Chinese sentences. Code, math, links,
names and identifiers may stay as they are; an English gloss in parentheses may follow a term
once per page, never in a heading. `python -m book translations` prints `problems()`.
"""
import ast
import re
import unicodedata

from annotated.base.errors import DataError
from annotated.base.settings import shown
from annotated.data.languages import FULL_WIDTH_LATIN
from book import i18n

CJK = re.compile(r"[\u3400-\u9fff]")
TERMS = i18n.BOOK / "zh" / "terms.md"
# What a Chinese sentence may quote as it is: code (a fence's line too, closed or not), math,
# link and reference targets, labels, directive options, HTML and its entities, addresses, the
# build's placeholders, quoted or italic examples written without Chinese (a German sentence, a
# paper's title), bold Latin names (a reference's authors) and the Latin text of a
# cross-reference (a citation). Each stops at its next opening mark, or after so many
# characters, so that unclosed ones cost time in proportion to the line, not to its square.
QUOTED = [r"```.*?```", r"^```[^\n]*$", r"\$\$.+?\$\$", r"`[^`\n]+`", r"\$[^$]+\$",
          r"^\([\w-]+\)=$", r"^:[\w-]+:.*$", r"<[A-Za-z/!][^<>\n]*>", r"\]\([^()\n]{0,2000}\)",
          r"https?://\S+", i18n.ENTITY.pattern, r"\{\{\s*\w+\s*\}\}",
          r"\{[\w\[\].]*(?:[:!][^{}]*)?\}",
          r"(?<![\w.-])[\w.-]*/[\w./-]+", r"(?<![\w-])[\w-]+(?:\.[\w-]+)+\b",
          r"(?<![\w-])--?[a-z][\w-]*",
          r"“[^“”\u3400-\u9fff]*”", r"\"[^\"\n\u3400-\u9fff]*\"", r"‘[^‘’\u3400-\u9fff]*’",
          r"\*\*[^*\n\u3400-\u9fff]+\*\*", r"\*[^*\n\u3400-\u9fff]+\*",
          r"(?<!\w)_[^_\n\u3400-\u9fff]+_(?!\w)"]
# A formula or a call written in plain text (a check message's `sqrt(d_k)`, `x W^T + b`): a
# run of these characters with an OPERATOR in it. (One pattern asking for the operator would
# take time growing with the square of a long run without one.)
FORMULA = re.compile(r"[\w.,'()\[\]=+*/^<>|·²√∞ -]+", re.ASCII)
OPERATOR = set("()[]=+*/^<>")
PROSE = re.compile(r"\b[a-z]{2,}(?: [a-z]{2,}){2}\b")
LATIN = r"(?<![\w\u0370-\u03ff]_)[A-Za-z\u00c0-\u024f][A-Za-z0-9_'\u00c0-\u024f-]*"
# Latin words a Chinese sentence may use besides names (capitalised) and the renderings the
# term list writes in Latin letters: a citation's "et al.", a surname's particles, names that
# begin in lowercase, and the names of the functions and settings a formula or a check
# message writes in plain text.
LATIN_WORDS = {"et", "al", "van", "den", "de", "arXiv", "macOS", "fairseq", "id",
               "log", "exp", "sqrt", "inf", "max", "min", "sin", "cos", "alpha", "lp"}


def chinese_prose(text: str) -> str:
    """`text` with everything QUOTED blanked out, line for line."""
    for pattern in QUOTED:
        text = re.sub(pattern, blank, text, flags=re.S | re.M)
    return text


def blank(found: re.Match) -> str:
    return re.sub(r"[^\n]", " ", found.group(0))


def blank_formula(found: re.Match) -> str:
    """A run of FORMULA's characters blanked out if it holds an OPERATOR, else kept; kept too
    if it holds three lowercase words in a row (English prose beside a link or a formula, which
    the run takes in with it)."""
    run = found.group()
    return blank(found) if OPERATOR.intersection(run) and not PROSE.search(run) else run


def chinese_of_units(path) -> list[tuple[int, str]]:
    """(line, prose) of the Chinese of a translation file: the text after each '--- zh ---'.
    A table cell's unit whose Chinese is its English is data or a name kept as it is (a test
    sentence, its German, a citation): it holds no Chinese prose."""
    lines, out = i18n.marks_trimmed(path.read_text(encoding="utf-8").split("\n"), "zh"), []
    english, unit = [], []
    for number, line in enumerate(lines + ["=== block ==="], 1):
        if i18n.HEADER.match(line):
            chinese = "\n".join(text for _, text in unit)
            kept = path.name == i18n.TABLES and chinese.strip() == "\n".join(english).strip()
            prose = chinese_prose(chinese).split("\n")
            out += [] if kept else [(n, p) for (n, _), p in zip(unit, prose)]
            english, unit = None, None
        elif line == i18n.EN:
            english = []
        elif line == i18n.TARGET.format(lang="zh"):
            unit = []
        elif unit is not None:
            unit.append((number, line))
        elif english is not None:
            english.append(line)
    return out


def chinese_of_code(path) -> list[tuple[int, str]]:
    """(line, prose) of each string of a Python module that holds Chinese, its docstrings
    aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
            and isinstance(node.body[0], ast.Expr)}
    return [(n.lineno, chinese_prose(n.value)) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and CJK.search(n.value)
            and id(n) not in docs]


def chinese_texts() -> list[tuple[str, int, str]]:
    """Every piece of Chinese a reader meets, as (file, line, prose): the pages and chapters,
    the README, the words the build and the page scripts write, the check messages."""
    found = [(path, chinese_of_units(path)) for path in sorted((i18n.BOOK / "zh").glob("*.md"))
             if path != TERMS]
    readme = i18n.ROOT / "README.zh-CN.md"
    found.append((readme, list(enumerate(chinese_prose(readme.read_text(encoding="utf-8"))
                                         .split("\n"), 1))))
    exercises = i18n.ROOT / "annotated" / "exercises"
    found += [(path, chinese_of_code(path)) for path in
              [i18n.BOOK / "languages" / "zh.py", exercises / "messages.py",
               *sorted(exercises.glob("ch[0-9]*.py"))]]
    return [(path.relative_to(i18n.ROOT).as_posix(), n, text) for path, lines in found
            for n, text in lines]


# A repeated group that holds a repetition, `(.*)*`, `(a+)+`: a regular expression that can
# take exponential time to fail.
NESTED_REPEAT = re.compile(r"\([^()]*[*+}][^()]*\)[*+{]")


def term_list() -> list[tuple[str, str, list[re.Pattern]]]:
    """(English, rendering, variants) of each row of book/zh/terms.md; a row that is not one
    of three cells, or a git conflict marker, is a DataError naming its line."""
    rows, wheres, seen = [], [], {}
    if not TERMS.is_file():
        raise DataError(f"{TERMS} is missing: it is the project's term list; restore it from "
                        f"git (git checkout -- {TERMS.relative_to(i18n.ROOT)})")
    for number, line in enumerate(TERMS.read_text(encoding="utf-8").split("\n"), 1):
        where = f"{TERMS.relative_to(i18n.ROOT)}:{number}"
        if i18n.CONFLICT.match(line):
            raise i18n.conflict_marker(where, line)
        if not line.startswith("| ") or line.startswith(("| English", "|---")):
            continue
        cells = line.split(" | ")
        if len(cells) != 3 or not line.rstrip().endswith("|"):
            raise DataError(f"{where}: {line[:60]!r} is not a row of three cells: write "
                            f"'| English | 中文 | `variants` |' (the last cell may be empty)")
        en, zh, variants = cells[0].strip("| "), cells[1].strip(), cells[2].rstrip(" |")
        check_row(where, en, zh, variants, seen)
        for v in variants.split("·"):
            if NESTED_REPEAT.search(v):
                raise DataError(f"{where}: the variant {v.strip()} repeats a group that itself "
                                f"repeats, which can take the check minutes on one line; "
                                f"write it without the nested repetition (`(ab)+`, not `(a+b)+`)")
        try:
            patterns = [re.compile(v.strip()[1:-1], re.ASCII)
                        for v in variants.split("·") if v.strip()]
        except re.error as e:
            raise DataError(f"{where}: the variant `{e.pattern}` is not a regular expression "
                            f"({e.msg}); escape the character with a backslash") from None
        for variant in patterns:
            if shortest_match(variant) == 0:
                raise DataError(f"{where}: the variant `{variant.pattern}` can match no "
                                f"character at all (a lookahead, or every part optional), so "
                                f"it is found in text that holds no variant; write the "
                                f"characters it must find")
            if variant.search(zh):
                raise DataError(f"{where}: the variant `{variant.pattern}` matches the "
                                f"rendering {zh} itself, so every right use of {en} "
                                f"would be called a variant; take it out of the third cell")
        rows.append((en, zh, patterns))
        wheres.append(where)
    for where, (en, _, patterns) in zip(wheres, rows):
        for variant in patterns:
            matched = sorted(((not variant.fullmatch(z), e, z) for e, z, _ in rows
                              if e != en and variant.search(z)))    # a whole rendering first
            if matched:
                _, term, rendering = matched[0]
                raise DataError(f"{where}: the variant `{variant.pattern}` of {en} matches "
                                f"{rendering}, the rendering of {term}, so every right use of "
                                f"{term} would be called a variant; take it out of the third "
                                f"cell")
    if not rows:
        raise DataError(f"{TERMS.relative_to(i18n.ROOT)} holds no term (emptied?): it is the "
                        f"project's term list; restore it from git (git checkout -- "
                        f"{TERMS.relative_to(i18n.ROOT)})")
    return rows


def shortest_match(pattern: re.Pattern) -> int | None:
    """The fewest characters `pattern` can match (Python's own parser of regular expressions
    tells; None where this Python's has not that name)."""
    parser = getattr(re, "_parser", None)
    return parser.parse(pattern.pattern, pattern.flags).getwidth()[0] if parser else None


def check_row(where: str, en: str, zh: str, variants: str, seen: dict) -> None:
    """Refuse a term-list row that gives no rendering, a term given before (two renderings),
    or a variant that is not one non-empty `...` (the cell's ' · ' then reads as a variant)."""
    if not zh:
        raise DataError(f"{where}: {en} has no rendering: write its Chinese in the second "
                        f"cell")
    if en.lower() in seen:
        raise DataError(f"{seen[en.lower()]}: {en} is listed twice (again on line "
                        f"{where.rsplit(':', 1)[1]}): each term has one rendering; keep one of "
                        f"the two rows")
    seen[en.lower()] = where
    bad = next((v.strip() for v in variants.split("·") if v.strip() and not re.fullmatch(
        r"`[^`]+`", v.strip())), None)
    if bad is not None:
        raise DataError(f"{where}: the variant {bad!r} is not one word or pattern in backticks: "
                        f"write each as `...`, separated by ' · ', or leave the cell empty")


def english_glosses(texts):
    """Each text with its English glosses in parentheses taken out, and a slip for each gloss
    that is not the first of its term on its page, or that sits in a heading."""
    seen, slips, out = set(), [], []
    gloss = re.compile(r"（([A-Za-z][^（）()\u3400-\u9fff]*(?:，[^（）()]+)?)）")
    for where, n, text in texts:
        for found in gloss.finditer(text):
            term = (where, re.match(r"[A-Za-z][A-Za-z '-]*", found.group(1)).group(0).lower())
            if text.lstrip().startswith("#"):
                slips.append(f"{where}:{n}: English in a heading: {found.group(0)}")
            elif term in seen and where.endswith(".md") and re.search(r"[a-z]{2}", found.group(1)):
                slips.append(f"{where}:{n}: the English {found.group(0)} was already given "
                             "on this page: leave it out")
            seen.add(term)
        out.append((where, n, gloss.sub(blank, text)))
    return out, slips


def as_read(texts) -> list:
    """The texts as a reader reads them: invisible formatting characters (Unicode's Cf: a
    zero-width space inside a word) taken out, full-width Latin letters folded. A variant or
    an English sentence hidden that way is still found."""
    return [(where, n, "".join(c for c in text if unicodedata.category(c) != "Cf")
             .translate(FULL_WIDTH_LATIN)) for where, n, text in texts]


def variants_used(texts) -> list[str]:
    """A line for each variant of the term list found in `texts` (file, line, prose)."""
    texts, _ = english_glosses(as_read(texts))
    terms = term_list()
    return [f"{where}:{n}: '{found.group(0)}' for {en}: write {zh}"
            for where, n, text in texts for en, zh, variants in terms
            for variant in variants for found in variant.finditer(text)]


def english_left_in(texts) -> list[str]:
    """A line for each line of `texts` that holds English prose. A Latin word in Chinese prose
    is a name (capitalised, or a rendering the term list writes in Latin letters), an
    identifier (with a digit or an underscore), a variable (one letter), or an English gloss in
    parentheses, once per page and not in a heading; anything else is English left in."""
    texts, slips = english_glosses(as_read(texts))
    allowed = LATIN_WORDS | {word for _, zh, _ in term_list() for word in re.findall(LATIN, zh)}
    for where, n, text in texts:
        words = [w for w in re.findall(LATIN, FORMULA.sub(blank_formula, text))
                 if w[0].islower() and len(w) > 1 and not re.search(r"[\d_]", w)
                 and w not in allowed]
        if words:
            slips.append(f"{where}:{n}: English in Chinese prose: "
                         f"{shown(' '.join(words), 100, quote=False)}; translate "
                         f"it (code, names and identifiers may stay as they are)")
    return slips


def renderings_unused(texts) -> list[str]:
    """A line for each rendering of the term list that no Chinese text writes (its glosses and
    spaces aside: 托普利茨（Toeplitz）矩阵 writes 托普利茨矩阵): a list that disagrees with the book."""
    prose, _ = english_glosses(texts)
    written = re.sub(r"\s", "", "\n".join(text for _, _, text in prose))
    lines = TERMS.read_text(encoding="utf-8").split("\n")
    return [f"{TERMS.relative_to(i18n.ROOT)}:"
            f"{next((n for n, line in enumerate(lines, 1) if line.startswith(f'| {en} |')), 1)}: "
            f"the rendering {zh} of {en} is written on no page of the Chinese edition: give the "
            f"rendering the pages use, or write this one in them"
            for en, zh, _ in term_list() if re.sub(r"\s", "", zh) not in written]


def characters_outside_simplified(texts) -> list[str]:
    """A line for each line of `texts` with Chinese characters outside GB2312, the set of
    Simplified Chinese in common use: most often Traditional forms (註 for 注, 層 for 层), which a
    Simplified edition does not write. Where the characters around one spell a rendering of
    the term list but for it (of three characters or more: shorter ones match by chance), that
    rendering is named."""
    texts, _ = english_glosses(as_read(texts))
    renderings = [(en, zh) for en, zh, _ in term_list() if len(CJK.findall(zh)) > 2]
    slips = []
    for where, n, text in texts:
        found = [i for i, c in enumerate(text)
                 if CJK.match(c) and c.encode("gb2312", "replace") == b"?"]
        if not found:
            continue
        meant = {f"{zh} for {en}" for i in found for en, zh in renderings for j in range(len(zh))
                 if i >= j and text[i - j:i - j + len(zh)] == zh[:j] + text[i] + zh[j + 1:]}
        chars = list(dict.fromkeys(text[i] for i in found))
        slips.append(f"{where}:{n}: {', '.join(chars)} {'is' if len(chars) == 1 else 'are'} not "
                     f"in Simplified Chinese's common set (GB2312), most likely Traditional: "
                     f"write the Simplified form"
                     + (f" ({'; '.join(sorted(meant))})" if meant else ""))
    return slips


# The scripts of other languages written with Chinese characters or beside them, which a
# Chinese sentence never holds: the start of a character's Unicode name -> the language.
OTHER_SCRIPTS = {"HIRAGANA": "Japanese", "KATAKANA": "Japanese",
                 "HALFWIDTH KATAKANA": "Japanese", "HANGUL": "Korean"}


def other_languages(texts) -> list[str]:
    """A line for each line of `texts` that holds Japanese kana or Korean Hangul: a unit
    translated into, or left in, another language than Chinese."""
    texts, _ = english_glosses(as_read(texts))
    slips = []
    for where, n, text in texts:
        found = next(((language, c) for c in text for script, language in OTHER_SCRIPTS.items()
                      if unicodedata.name(c, "").startswith(script + " ")), None)
        if found:
            language, c = found
            slips.append(f"{where}:{n}: {language} in Chinese prose ({c} in "
                         f"{shown(text.strip(), 40, quote=False)}): translate it into Chinese")
    return slips


def problems() -> list[str]:
    """A line for each variant of a term, each line of English, Japanese or Korean and each
    Traditional character in the Chinese a reader meets (file, line, what to write instead), and for each
    rendering of the term list that no page writes."""
    texts = chinese_texts()
    return (variants_used(texts) + english_left_in(texts) + other_languages(texts)
            + characters_outside_simplified(texts) + renderings_unused(texts))
