"""The book's terms and the names it gives, checked against the chapters and the code.

A glossary term is defined where the book first writes it in bold, and the glossary and the
start page name that chapter; every chapter links the first use of each term to its glossary
entry, in every language (book/terms.py finds the uses); and what the pages say of the
results files (tokenized BLEU against sacreBLEU, the shipped model against the search's winner)
is what the files show. (That every dotted `annotated.*` name is real is checked in
test_chapter_results.py.)
"""
import json
import re
import subprocess
import sys

import nbformat
import pytest

from book import languages, terms
from conftest import says

ROOT = terms.ROOT
CHAPTERS = terms.chapter_paths()
LINK = "../book/glossary.md#glossary-"


def page(name: str) -> str:
    return (ROOT / "book" / f"{name}.md").read_text(encoding="utf-8")


def uses(text: str, lang: str = languages.ENGLISH) -> list[tuple[str, str, str]]:
    """(label, words, how) of each use of a term in `text`."""
    return [(term.label, words, how) for term, _, words, how in terms.text_uses(text, lang)]


# rule 1 and 2: a term is defined where it is first in bold, and the pages name that chapter

def test_each_glossary_entry_names_the_chapter_that_first_writes_its_term_in_bold():
    assert terms.terms(), "no glossary entry read"
    assert not terms.misplaced(), "\n".join(terms.misplaced())


def test_a_bold_term_is_a_definition_but_a_bold_lead_in_is_not():
    assert uses("The **query** asks.") == [("glossary-query-key-value", "query", "bold")]
    assert uses("**Queries.** Each query asks.") == [("glossary-query-key-value", "query",
                                                      "prose")]


def test_the_start_pages_pointers_name_the_defining_chapter():
    defined = terms.defining_chapters()
    pointers = re.findall(r"\{ref\}`[^`<]*<(glossary-[\w-]+)>`\s+in\s+the\s+glossary;\s+chapter\s+(\d+)"
                          r"\s+defines it", page("start"))
    assert len(pointers) >= 3, "the start page's pointers were not found"
    wrong = [(label, said, defined.get(label)) for label, said in pointers
             if defined.get(label) != said]
    assert not wrong, f"(term, chapter the start page names, chapter that defines it): {wrong}"


def test_no_chapter_writes_a_term_in_bold_before_the_chapter_its_glossary_entry_names():
    order = [terms.chapter_label(path) for path in CHAPTERS]
    named = {term.label: term.chapter for term in terms.terms()}
    early = [f"{use.chapter}: **{use.words}**" for path in CHAPTERS for use in terms.uses(path)
             if use.how == "bold" and named[use.term.label] in order
             and order.index(use.chapter) < order.index(named[use.term.label])]
    assert not early, "bold before the defining chapter: " + ", ".join(early)


# rule 3: the first use of each term in every chapter links to its entry, in every language

@pytest.mark.parametrize("lang", list(languages.ALL))
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_links_the_first_use_of_each_term(path, lang):
    found = terms.unlinked(path, lang)
    assert not found, "\n".join(found)


def test_a_first_use_without_a_link_is_found_and_a_linked_one_is_not():
    assert uses("Each query") == [("glossary-query-key-value", "query", "prose")]
    linked = uses(f"Each [query]({LINK}query-key-value) and its queries")
    assert [how for _, _, how in linked] == ["link", "prose"]


def test_code_math_headings_and_other_links_are_not_uses():
    text = ("# Attention\n\n`attention(query)` and $softmax$ and ```\nquery\n``` and "
            "[the queries](https://example.com) and ![softmax](x.png)")
    assert uses(text) == []


def test_the_longer_term_is_the_use():
    assert uses("in multi-head attention") == [("glossary-multi-head-attention",
                                                "multi-head attention", "prose")]


def test_a_chapter_that_forgets_a_link_links_twice_or_links_a_phrase_is_reported(
        tmp_path, monkeypatch):
    chapter = tmp_path / "03_heads.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) for s in (
        "Each **head** has its own projection.",
        f"Every [head]({LINK}head) again, and [one softmax per row]({LINK}softmax).")]
    nbformat.write(nb, chapter)
    monkeypatch.setattr(terms, "defining_chapters", lambda lang="en": {"glossary-head": "3"})
    found = "\n".join(terms.unlinked(chapter))
    assert "'projection'" in found and "not linked" in found
    assert "links 'Head' again" in found
    assert "'one softmax per row'" in found and "not the term's own words" in found
    assert "03_heads.ipynb" in found


def test_the_terms_command_lists_nothing_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "book", "terms"], cwd=ROOT,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every term" in done.stdout


# rule 6: what the pages say of the results files is what the files show

def pairs(tree) -> list[tuple[float, float]]:
    """(tokenized BLEU, sacreBLEU) of every result in `tree` that gives both."""
    if isinstance(tree, list):
        return [p for item in tree for p in pairs(item)]
    if not isinstance(tree, dict):
        return []
    here = [(tree["paper_bleu"], tree["bleu"])] if {"paper_bleu", "bleu"} <= set(tree) else []
    return here + [p for value in tree.values() for p in pairs(value)]


def test_the_glossary_says_which_way_tokenized_bleu_differs_as_the_results_show():
    found = [p for path in sorted((ROOT / "results").glob("multi30k*.json"))
             for p in pairs(json.loads(path.read_text(encoding="utf-8")))]
    assert found, "no result gives both tokenized BLEU and sacreBLEU"
    signs = {tokenized > sacre for tokenized, sacre in found if tokenized != sacre}
    entry = page("glossary").split("(glossary-tokenized-bleu)=")[1].split("\n\n")[0]
    said = " ".join(entry.split())
    if signs == {True, False}:
        assert "either way" in said and not re.search(r"(higher|lower) than sacreBLEU", said)
    else:
        assert f"{'higher' if True in signs else 'lower'} than sacreBLEU" in said


def test_the_start_page_says_whether_the_shipped_model_won_the_search():
    sweep = json.loads((ROOT / "results" / "multi30k_sweep.json").read_text(encoding="utf-8"))
    winner = sweep["candidates"][sweep["best"]["candidate"]]
    row = next(line for line in page("start").splitlines()
               if line.startswith("| the shipped model |") and "search" in line)
    if "lowercase=true" in winner["overrides"]:
        assert "best cased model" in row and "winner was trained on lowercased" in row, row
    else:
        assert "best model" in row, row


def unlinked_in_chinese(chapter, lines, tmp_path, monkeypatch) -> list[str]:
    """terms.unlinked of `chapter` in Chinese, its translation file's lines replaced."""
    from book import i18n
    page = i18n.translation_file(chapter, "zh")
    (tmp_path / "zh").mkdir()
    (tmp_path / "zh" / page.name).write_text("".join(lines), encoding="utf-8")
    glossary = i18n.translation_file(terms.GLOSSARY, "zh")      # the Chinese terms' forms
    (tmp_path / "zh" / glossary.name).write_bytes(glossary.read_bytes())
    monkeypatch.setattr(i18n, "BOOK", tmp_path)
    terms.uses.cache_clear()
    terms.terms.cache_clear()
    try:
        return terms.unlinked(chapter, "zh")
    finally:
        terms.uses.cache_clear()
        terms.terms.cache_clear()


def test_a_translations_unlinked_term_is_named_by_the_file_and_line_to_edit(tmp_path,
                                                                            monkeypatch):
    """In the Chinese edition the fix is made in book/zh/NAME.md: the report names that file
    and the line of the use, not the notebook's cell."""
    from book import i18n
    chapter = CHAPTERS[0]
    page = i18n.translation_file(chapter, "zh")
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if "](../book/glossary.md#glossary-" in line
                  and i > next(j for j, x in enumerate(lines, 1) if x.startswith("--- zh")))
    link = re.search(r"\[([^\]]+)\]\(\.\./book/glossary\.md#glossary-[\w-]+\)", lines[number - 1])
    lines[number - 1] = lines[number - 1].replace(link[0], link[1], 1)
    found = unlinked_in_chinese(chapter, lines, tmp_path, monkeypatch)
    assert found and found[0].startswith(f"{tmp_path / 'zh' / page.name}:{number}: "), found
    assert "not linked" in found[0]


def test_a_translation_that_loses_a_definitions_bold_is_told_to_bold_it(tmp_path, monkeypatch):
    """The chapter the English defines a term in writes it in bold in every language; a
    translation without it is told so, not that a use lacks its link."""
    from book import i18n
    defined = terms.defining_chapters()
    chapter = CHAPTERS[0]
    text = i18n.translation_file(chapter, "zh").read_text(encoding="utf-8")
    label, bold = next((u.term.label, u.words) for u in terms.uses(chapter, "zh")
                       if u.how == "bold" and defined.get(u.term.label) == u.chapter)
    lines = re.sub(rf"\*\*{re.escape(bold)}\*\*", bold, text).splitlines(keepends=True)
    found = [line for line in unlinked_in_chinese(chapter, lines, tmp_path, monkeypatch)
             if f"'{bold}'" in line or bold in line.split(":", 2)[-1]]
    says(found[0] if found else "", "nowhere in bold", "defines it")
