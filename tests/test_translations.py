"""The Chinese edition is kept in step with the English: every piece of English prose has a
translation that quotes the English it translates, as it is now; a translated chapter has the
English chapter's code and outputs exactly; and a change to the English is reported as stale,
with the difference, until its translation is revisited."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter

import nbformat
import pytest
from conftest import says

from annotated.base.errors import DataError
from annotated.base.signals import Stopped, stops_unwind
from book import i18n
from book.chinese import (chinese_prose, chinese_texts, english_left_in, term_list,
                          variants_used)
from book.__main__ import main as book_main

SOURCES = i18n.sources()
CHAPTERS = [p for p in SOURCES if p.suffix == ".ipynb"]


def name(path) -> str:
    return path.relative_to(i18n.CHAPTERS).as_posix() if path.is_relative_to(i18n.CHAPTERS) \
        else path.name


@pytest.mark.parametrize("source", SOURCES, ids=name)
def test_every_english_piece_has_an_up_to_date_translation(source):
    report = i18n.check(source, "zh")
    assert report.ok(), "\n".join(report.missing + report.stale + report.orphans)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=name)
def test_a_translated_chapter_has_the_english_code_and_outputs_but_speaks_its_language(chapter):
    english = json.loads(chapter.read_text(encoding="utf-8"))
    chinese = i18n.translated_notebook(english, chapter, "zh")
    assert [c.get("id") for c in chinese["cells"]] == [c.get("id") for c in english["cells"]]
    for en, zh in zip(english["cells"], chinese["cells"]):
        if en["cell_type"] == "code":
            assert same_but_the_exercises_language(en, zh)
        else:
            assert re.search(r"[\u4e00-\u9fff]", "".join(zh["source"])), \
                f"{chapter.name}: cell {en.get('id')} is not translated"
    nbformat.validate(nbformat.from_dict(chinese))


def same_but_the_exercises_language(en: dict, zh: dict) -> bool:
    """A code cell of a translated chapter is the English cell, but for the exercises: the
    setup cell's checker speaks Chinese, and each check's output shows its Chinese line."""
    if "exercise-setup" in en["metadata"].get("tags", []):
        assert 'checker("en")' in "".join(en["source"])
        assert "".join(zh["source"]) == "".join(en["source"]).replace('checker("en")',
                                                                      'checker("zh")')
    else:
        assert zh["source"] == en["source"]
    for o_en, o_zh in zip(en["outputs"], zh["outputs"], strict=True):
        said = o_en.get("metadata", {}).get("exercise")
        if said:
            assert o_zh["data"]["text/plain"] == said["zh"] != said["en"]
            assert re.search(r"[\u4e00-\u9fff]", said["zh"])
        elif i18n.table_of(o_en) is not None:
            assert same_table_but_its_words(o_en, o_zh)
        else:
            assert o_zh == o_en
    return {k: v for k, v in zh.items() if k not in ("source", "outputs")} == \
        {k: v for k, v in en.items() if k not in ("source", "outputs")}


def same_table_but_its_words(en: dict, zh: dict) -> bool:
    """A table output of a translated chapter is the English output but for the words of its
    cells: the same rows, the same cells in each, and each cell without words as it is."""
    lines_en, lines_zh = i18n.table_of(en).split("\n"), i18n.table_of(zh).split("\n")
    assert len(lines_en) == len(lines_zh)
    for line_en, line_zh in zip(lines_en, lines_zh):
        if not line_en.startswith("|"):
            continue
        cells_en, cells_zh = i18n.row_cells(line_en), i18n.row_cells(line_zh)
        assert len(cells_en) == len(cells_zh), line_zh
        assert [c for c in cells_en if not i18n.needs_unit(c)] == \
            [z for c, z in zip(cells_en, cells_zh) if not i18n.needs_unit(c)]
    return {k: v for k, v in en.items() if k != "data"} == \
        {k: v for k, v in zh.items() if k != "data"} and \
        {k: v for k, v in en["data"].items() if k != "text/markdown"} == \
        {k: v for k, v in zh["data"].items() if k != "text/markdown"}


def test_every_unit_keeps_its_english_code_math_and_link_targets():
    assert i18n.kept_pieces("See [the query](../book/glossary.md#glossary-query-key-value).") == \
        ["](../book/glossary.md#glossary-query-key-value)"]
    slips = []
    for path in [i18n.translation_file(s, "zh") for s in SOURCES] + [i18n.BOOK / "zh" / i18n.TABLES]:
        for unit in i18n.read_units(path, "zh"):
            lacking = Counter(i18n.kept_pieces(unit.en)) - Counter(i18n.kept_pieces(unit.text))
            slips += [f"{path.name}:{unit.line}: {piece[:70]}" for piece in lacking]
    assert not slips, "\n".join(slips[:30])


@pytest.fixture
def copy_of_chapter_one(tmp_path, monkeypatch):
    """Chapter 1 and its translation in a scratch book, the module pointed at it."""
    chapters, book = tmp_path / "chapters", tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    chapters.mkdir()
    chapter = next(p for p in CHAPTERS if p.name.startswith("01_"))
    shutil.copy(chapter, chapters / chapter.name)
    shutil.copy(i18n.translation_file(chapter, "zh"), book / "zh" / f"{chapter.stem}.md")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    return chapters / chapter.name


def test_a_unit_moved_into_another_chapter_s_file_is_named_with_the_file_it_belongs_in(
        tmp_path, monkeypatch):
    chapters, book = tmp_path / "chapters", tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    chapters.mkdir()
    for chapter in (p for p in CHAPTERS if p.name.startswith(("01_", "02_"))):
        shutil.copy(chapter, chapters / chapter.name)
        shutil.copy(i18n.translation_file(chapter, "zh"), book / "zh" / f"{chapter.stem}.md")
    for name, value in (("BOOK", book), ("ROOT", tmp_path), ("CHAPTERS", chapters)):
        monkeypatch.setattr(i18n, name, value)
    first, second = sorted(chapters.glob("*.ipynb"))
    units = {p: i18n.read_units(i18n.translation_file(p, "zh"), "zh") for p in (first, second)}
    moved = next(u for u in units[second] if u.key.startswith("cell "))
    i18n.write_units(i18n.translation_file(first, "zh"), units[first] + [moved], "zh")
    orphans = i18n.check(first, "zh").orphans
    assert len(orphans) == 1
    says(orphans[0], moved.key, "is a cell of chapters/02_masking.ipynb",
         "move the unit to book/zh/02_masking.md")


def test_an_english_edit_makes_its_translation_stale_until_it_is_revisited(copy_of_chapter_one):
    path = copy_of_chapter_one
    assert i18n.check(path, "zh").ok()
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown" and "softmax" in c.source)
    cell.source = cell.source.replace("softmax", "soft-max", 1)
    nbformat.write(nb, path)
    report = i18n.check(path, "zh")
    assert len(report.stale) == 1 and not report.missing and not report.orphans
    assert f"cell {cell.id}" in report.stale[0]
    assert "-" in report.stale[0] and "+" in report.stale[0] and "soft-max" in report.stale[0]
    units = i18n.read_units(i18n.translation_file(path, "zh"), "zh")
    for unit in units:                          # the translator revisits the unit
        if unit.key == f"cell {cell.id}":
            unit.en = cell.source.strip("\n")
    i18n.write_units(i18n.translation_file(path, "zh"), units, "zh")
    assert i18n.check(path, "zh").ok()


def test_a_new_english_cell_is_missing_and_a_removed_one_orphaned(copy_of_chapter_one):
    path = copy_of_chapter_one
    nb = nbformat.read(path, as_version=4)
    gone = nb.cells.pop(2 if nb.cells[2].cell_type == "markdown" else 0)
    nb.cells.append(nbformat.v4.new_markdown_cell("A new paragraph."))
    nbformat.write(nb, path)
    report = i18n.check(path, "zh")
    assert len(report.missing) == 1 and "A new paragraph." in report.missing[0]
    assert len(report.orphans) == 1 and f"cell {gone.id}" in report.orphans[0]
    assert i18n.add_missing(path, "zh") == 1
    assert len(i18n.check(path, "zh").missing) == 1          # added, but still empty


def refused(path, text: str, *names: str) -> None:
    """Write `text` to the translation file `path`: reading it must raise one DataError that
    names each of `names`."""
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as error:
        i18n.read_units(path, "zh")
    says(error, *names)


def test_a_damaged_translation_file_is_one_line_naming_the_file_and_line(tmp_path):
    path = tmp_path / "broken.md"
    refused(path, "a stray line\n=== cell abc ===\n--- en ---\nHello\n--- zh ---\n你好\n",
            "broken.md:1", "unit header")
    refused(path, "=== block ===\nno en line\n", "broken.md:2", "'--- en ---'")


def test_the_translations_command_lists_nothing_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "book", "translations"], capture_output=True,
                          text=True, cwd=i18n.ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "every translation is up to date"


@pytest.mark.parametrize("content,names", [
    (lambda text: text[:5000], ("does not appear to be JSON",)),
    (lambda text: "{}", ("cells",))], ids=["cut short", "no cells"])
def test_a_damaged_chapter_is_one_line_for_the_translations_and_terms_checks(
        content, names, tmp_path):
    """Both checks read every chapter: a damaged one is named with how to restore it, as the
    build says, not a traceback from nbformat."""
    from book import terms
    chapter = tmp_path / "02_masking.ipynb"
    chapter.write_text(content((i18n.ROOT / "chapters" / "02_masking.ipynb").read_text()))
    for read in (i18n.source_units, lambda path: terms.cells(path, "en")):
        with pytest.raises(DataError) as error:
            read(chapter)
        says(error, "02_masking.ipynb", "not a readable notebook", *names, "restore it")


def notebook_of(tmp_path, *cells, minor=5):
    """A notebook file of markdown cells given as (id, text), id None for none."""
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    for cell_id, text in cells:
        cell = nbformat.v4.new_markdown_cell(text)
        cell.pop("id") if cell_id is None else cell.update(id=cell_id)
        nb.cells.append(cell)
    path = tmp_path / "01_chapter.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.mark.parametrize("cells,minor,names", [
    ([(None, "# A title"), (None, "Prose.")], 4, ("without ids", "4.4", "Jupyter")),
    ([("a1", "# A title"), ("a1", "Prose.")], 5, ("Non-unique cell id 'a1'", "an id of its own")),
    ([("odd id ===", "# A title")], 5, ("'odd id ==='", "letters, digits", "another id")),
    ([("a1", "# A title\n\n--- zh ---\nquoted")], 5, ("cell a1", "'--- zh ---'", "indent")),
    ([("a1", "# A title\n=== block ===")], 5, ("cell a1", "'=== block ==='", "indent"))],
    ids=["no ids", "an id twice", "an odd id", "a side's mark", "a unit header"])
def test_a_chapter_the_translation_files_cannot_name_is_refused_before_any_write(
        cells, minor, names, tmp_path):
    """--add-missing would write units that the next reading refuses: each cause is named
    first, with its fix."""
    with pytest.raises(DataError) as error:
        i18n.source_units(notebook_of(tmp_path, *cells, minor=minor))
    says(error, "01_chapter.ipynb", *names)


def test_a_terminal_that_cannot_write_chinese_is_told_how_to_read_the_report():
    done = subprocess.run([sys.executable, "-m", "book", "translations"], capture_output=True,
                          cwd=i18n.ROOT, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    says(done.stderr.decode(), "ascii", "cannot write Chinese", "escaped", "PYTHONIOENCODING")
    done = subprocess.run([sys.executable, "-m", "book", "translations"], capture_output=True,
                          cwd=i18n.ROOT, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert b"Chinese" not in done.stderr


def test_the_translations_command_names_a_terms_variant_and_english_prose(monkeypatch, capsys):
    from book import chinese
    monkeypatch.setattr(chinese, "chinese_texts", lambda: [
        ("book/zh/p.md", 3, chinese_prose("论文的基础模型有 6 层。")),
        ("book/zh/p.md", 7, chinese_prose("这个模型 learns quickly 而且很小。"))])
    monkeypatch.setattr(chinese, "renderings_unused", lambda texts: [])   # two lines, not a book
    with pytest.raises(SystemExit) as stopped:
        book_main(["translations"])
    assert stopped.value.code == 1
    variant, english, total = capsys.readouterr().out.strip().split("\n")
    says(variant, "book/zh/p.md:3", "基础模型", "write base 模型")
    says(english, "book/zh/p.md:7", "learns quickly", "translate")
    says(total, "2", "problem")


def test_a_page_paragraph_changed_in_place_is_stale_with_its_difference(tmp_path, monkeypatch):
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    page = book / "slips.md"
    shutil.copy(i18n.BOOK / "slips.md", page)
    shutil.copy(i18n.BOOK / "zh" / "slips.md", book / "zh" / "slips.md")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    assert i18n.check(page, "zh").ok()
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("## ", "## Slip: ", 1) + "\nA closing paragraph.\n",
                    encoding="utf-8")
    report = i18n.check(page, "zh")
    assert len(report.stale) == 1 and "+## Slip: " in report.stale[0]
    assert len(report.missing) == 1 and "A closing paragraph." in report.missing[0]
    assert not report.orphans


def test_a_quote_edited_in_the_chinese_page_is_stale_not_a_translation_that_lacks(
        tmp_path, monkeypatch):
    """A `$` deleted from the English a unit quotes: the quote is no longer the English, and
    that is what the check says, with the difference, not that the translation lacks math."""
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    shutil.copy(i18n.BOOK / "slips.md", book / "slips.md")
    zh = book / "zh" / "slips.md"
    text = (i18n.BOOK / "zh" / "slips.md").read_text(encoding="utf-8")
    zh.write_text(text.replace("numbers, so their variance is about $d_k$.",
                               "numbers, so their variance is about d_k$.", 1), encoding="utf-8")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    report = i18n.check(book / "slips.md", "zh")
    assert not report.missing and len(report.stale) == 1
    first, *difference = report.stale[0].split("\n")
    says(first, "book/zh/slips.md:26", "the English changed since it was translated")
    assert any(line.startswith("-numbers, so their variance is about d_k$.")
               for line in difference)


def test_each_language_module_holds_every_word_the_build_writes():
    """A language is its module in book/languages/ (and, for a translation, its pages in
    book/<name>/): each module has English's lines, each filled by what the build gives it,
    Sphinx's language code, and a caption word that CAPTION reads; each translation has its
    folder."""
    from book import languages
    from book.figures import CAPTION
    given = dict(name="01.ipynb", link="<a>", zip="x.zip", mb=1.0, low=9.0, high=11.0,
                 counts="9", label="3", n=9, words=(75, 90), hanzi=(130, 155), code=(7, 9),
                 printed=(10, 12), figure=(1.5, 2.0), page="solutions/01.ipynb",
                 module="annotated.attention")
    english = languages.ALL[languages.ENGLISH]
    for lang, words in languages.ALL.items():
        assert words.WORDS.keys() == english.WORDS.keys(), lang
        assert all(text.format(**given) for text in words.WORDS.values()), lang
        assert languages.of_sphinx(words.SPHINX["language"]) is words
        assert CAPTION.match(f"**{words.FIGURE} 3.1.** A caption."), lang
        assert "5" in words.counts(1, 2, 3, 4, 5), lang
        assert words.SCRIPTS.keys() == english.SCRIPTS.keys(), lang     # the page scripts'
        placeholders = [set(re.findall(r"\{(\w+)\}", words.SCRIPTS[k])) for k in english.SCRIPTS]
        assert placeholders == [set(re.findall(r"\{(\w+)\}", v)) for v in english.SCRIPTS.values()]
        assert words.NAME and words.READ_IN, lang
    assert languages.ENGLISH not in languages.TRANSLATIONS
    for lang in languages.TRANSLATIONS:
        assert (i18n.BOOK / lang).is_dir(), f"book/{lang}/ is missing"


UNITS = ("=== block ===\n--- en ---\nFirst.\n--- zh ---\n第一。\n\n"
         "=== block ===\n--- en ---\nSecond.\n--- zh ---\n第二。\n")


@pytest.mark.parametrize("marker", ["<<<<<<< HEAD", ">>>>>>> theirs", "||||||| base"])
def test_a_git_conflict_left_in_a_translation_is_refused_naming_its_line(marker, tmp_path):
    path = tmp_path / "start.md"
    refused(path, UNITS.replace("第一。\n", f"第一。\n{marker}\n第一句。\n"),
            "start.md:6", "conflict", marker, "python -m book translations")


def test_a_line_of_equals_signs_is_a_conflict_marker_even_alone(tmp_path):
    """A half-resolved merge leaves ======= alone, which Markdown would publish as a heading's
    underline: refused, with the heading's other spelling. A NUL byte is never text."""
    path = tmp_path / "start.md"
    refused(path, UNITS.replace("第一。\n", "旧译文。\n=======\n第一。\n"),
            "start.md:6", "conflict", "=======", "keep one", "#")
    refused(path, UNITS.replace("第一。", "第\0一。"),
            "start.md, line 5", "NUL bytes", "write it again")


def test_a_cell_translated_twice_is_refused_naming_both_units(tmp_path):
    """Two units for one cell (a merge, a paste) would pass the check and fail the build late,
    naming a temporary file: the translation file says it, with both lines."""
    path = tmp_path / "02_masking.md"
    unit = "=== cell 0f42a1df ===\n--- en ---\nFirst.\n--- zh ---\n{}\n"
    refused(path, unit.format("第一。") + "\n" + unit.format("第一句。"),
            "02_masking.md:7", "cell 0f42a1df", "twice", "line 1", "keep one")


def test_a_unit_without_its_separator_is_refused_not_merged_with_the_next(tmp_path):
    path = tmp_path / "start.md"
    refused(path, UNITS.replace("--- zh ---\n第一。", "第一。", 1),
            "start.md:1", "no '--- zh ---' line", "line 6")
    refused(path, UNITS.replace("--- zh ---\n第二。", "第二。"),
            "start.md:7", "no '--- zh ---' line", "end of the file")
    refused(path, UNITS.replace("\n=== block ===\n--- en ---\nSecond.", "\n--- en ---\nSecond."),
            "start.md:7", "second '--- en ---'", "=== block ===")    # the second header lost


def test_a_translation_not_in_utf8_is_one_line_naming_the_file_and_line(tmp_path):
    path = tmp_path / "start.md"
    path.write_bytes(UNITS.encode("utf-8").replace("第二。".encode("utf-8"),
                                                   "第二。".encode("gb18030")))
    with pytest.raises(DataError) as error:
        i18n.read_units(path, "zh")
    says(error, "start.md, line 11", "not UTF-8", "convert")


def translations_error(book, monkeypatch, capsys) -> str:
    """The one error line of `python -m book translations` on the book folder `book` (its
    slips.md and zh/slips.md), which must exit 1."""
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", book.parent)
    monkeypatch.setattr(i18n, "sources", lambda: [book / "slips.md"])
    with pytest.raises(SystemExit) as stopped:
        book_main(["translations"])
    assert stopped.value.code == 1
    return capsys.readouterr().err.strip()


def test_a_conflict_left_in_an_english_page_or_notebook_is_refused_before_any_build(
        tmp_path, monkeypatch, capsys):
    """The English is checked as its translations are (the build reads both before its work):
    a marker in a page names its line, one in a chapter's cell (markdown or code) its cell."""
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    shutil.copy(i18n.BOOK / "zh" / "slips.md", book / "zh" / "slips.md")
    text = (i18n.BOOK / "slips.md").read_text(encoding="utf-8").split("\n")
    (book / "slips.md").write_text("\n".join(text[:4] + ["<<<<<<< HEAD"] + text[4:]),
                                   encoding="utf-8")
    says(translations_error(book, monkeypatch, capsys), "slips.md:5", "conflict marker",
         "<<<<<<< HEAD")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Words.", id="a1"),
                nbformat.v4.new_code_cell("x = 1\n=======\nx = 2", id="b2")]
    nbformat.write(nb, tmp_path / "02_masking.ipynb")
    with pytest.raises(DataError) as error:
        i18n.source_units(tmp_path / "02_masking.ipynb")
    says(error, "02_masking.ipynb", "cell b2", "conflict marker", "=======")


def test_the_translations_command_says_a_conflict_in_one_line(tmp_path, monkeypatch, capsys):
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    shutil.copy(i18n.BOOK / "slips.md", book / "slips.md")
    text = (i18n.BOOK / "zh" / "slips.md").read_text(encoding="utf-8")
    first = text.index("--- zh ---\n") + len("--- zh ---\n")
    (book / "zh" / "slips.md").write_text(text[:first] + "<<<<<<< HEAD\n" + text[first:],
                                          encoding="utf-8")
    line = text[:first].count("\n") + 1
    says(translations_error(book, monkeypatch, capsys), f"slips.md:{line}", "conflict marker")


@pytest.mark.parametrize("damage,names", [
    (lambda unit: unit.en, ["is the English itself", "translate it"]),
    (lambda unit: unit.text + "\n\n```python", ["code block", "never closes", "```"])])
def test_a_unit_left_in_english_or_with_an_open_code_block_is_no_translation(
        damage, names, tmp_path, monkeypatch):
    """Either would publish a page that is not the translation: the English itself, or the rest
    of the page shown as code. The translations check names the unit's line."""
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    shutil.copy(i18n.BOOK / "slips.md", book / "slips.md")
    units = i18n.read_units(i18n.BOOK / "zh" / "slips.md", "zh")
    victim = next(u for u in units if len(u.en.split()) > 10)
    units[units.index(victim)] = i18n.Unit(victim.key, victim.en, damage(victim), victim.line)
    i18n.write_units(book / "zh" / "slips.md", units, "zh")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", book.parent)
    report = i18n.check(book / "slips.md", "zh")
    assert len(report.missing) == 1 and not report.stale, report
    says(report.missing[0], "slips.md:", *names)


def test_an_unclosed_code_fence_is_not_also_english_prose():
    """Its fence line (```python) is code: the open block is reported once, by the
    translations check, not again as English left in the Chinese."""
    from book import chinese
    text = chinese.chinese_prose("这是一句中文。\n```python\nx = 1")
    assert chinese.english_left_in([("book/zh/x.md", 1, text)]) == []


def test_a_formula_or_a_path_in_chinese_prose_is_not_english_and_a_long_word_is_cut():
    """Formulas and paths are quoted, not prose; English left in is named, and a pasted run of
    100,000 letters is named by its start, not printed whole."""
    from book import chinese
    text = chinese.chinese_prose("注意 sqrt(d_k) 和 x W^T + b，见 annotated/train.py。")
    assert chinese.english_left_in([("book/zh/x.md", 1, text)]) == []
    slips = chinese.english_left_in([("book/zh/x.md", 2, "中文 hello world 中文")])
    assert len(slips) == 1 and "hello world" in slips[0]
    slips = chinese.english_left_in([("book/zh/x.md", 3, "中文 " + "x" * 100_000)])
    assert len(slips) == 1 and "book/zh/x.md:3" in slips[0] and len(slips[0]) < 300


@pytest.mark.parametrize("line", [
    "设为 $-\\infty$，使其权重为零。The weights of blocked pairs are exactly zero, so nothing "
    "flows from them.本章展示这些[掩码](../book/glossary.md#glossary-mask)（mask）。",
    "见 [softmax](../book/glossary.md#glossary-softmax)。This is left in English prose for the "
    "reader here.[掩码](../book/glossary.md#glossary-mask)"])
def test_english_prose_beside_a_formula_or_a_link_is_still_english(line):
    """A formula or a link joins the English sentence next to it into one run of the
    characters a formula uses; the sentence must not be blanked with the formula."""
    from book import chinese
    slips = chinese.english_left_in([("book/zh/x.md", 1, chinese.chinese_prose(line))])
    assert len(slips) == 1 and "English in Chinese prose" in slips[0]


@pytest.mark.parametrize("kept,changed", [
    ("](../book/glossary.md#glossary-query)", "](../book/术语表.md#glossary-查询)"),
    ("`--input f`", "`--输入 f`"), ("$d_k$", "$d_模型$"),
    ("`True`", "`False`")])                        # one of two: `False` is there already
def test_a_translation_that_changes_code_math_or_a_link_target_is_named(kept, changed):
    """What a translator must keep as it is: a link's target, code, math."""
    english = ("See [the query](../book/glossary.md#glossary-query), run `--input f`, with $d_k$."
               " `True` attends, `False` does not, and `True` is the default.")
    right = ("见[查询](../book/glossary.md#glossary-query)，运行 `--input f`，取 $d_k$。"
             "`True` 表示关注，`False` 表示不关注，默认是 `True`。")
    assert i18n.translation_problem(i18n.Unit("cell c1", english, right, 7)) is None
    unit = i18n.Unit("cell c1", english, right.replace(kept, changed, 1), 7)
    says(i18n.translation_problem(unit), kept, "exactly as")


@pytest.mark.parametrize("added, names", [
    ("参见[这里](nowhere_page.md#nothing)。",
     ["nowhere_page.md#nothing", "keep the English's links"]),
    ("```{bogusdirective}\nhello\n```", ["{bogusdirective}", "keep the English's blocks"]),
    (":::{note}\n注意这里\n:::", ["{note}", "keep the English's blocks"]),
    ("~~~{raw} html\n<script>alert(1)</script>\n~~~", ["{raw}", "keep the English's blocks"]),
    ("<https://evil-autolink.example>", ["evil-autolink.example", "links to"]),
    ("[参考][e]\n\n[e]: https://evil-refstyle.example", ["evil-refstyle.example", "links to"]),
    ("[尖括号](<https://evil-angle.example/a b>)", ["evil-angle.example/a b", "links to"]),
    ("{doc}`/index`", ["{doc}`/index`", "adds the role"]),
    ("{download}`/etc/passwd`", ["{download}", "/etc/passwd", "adds the role"]),
    ("见注[^n1]。\n\n[^n1]: 脚注", ["the footnote [^n1]"]),
    ("<script>window.PWNED=1</script>", ["<script>", "raw HTML"]),
    ('<iframe srcdoc="x"></iframe>', ["<iframe>", "raw HTML"]),
    ("<style>body{display:none}</style>", ["<style>", "raw HTML"]),
    ("本章考察 {{ secret }} 论文。", ["{{ secret }}", "the substitution"])],
    ids=["link", "directive", "colon-fence", "tilde-fence", "autolink", "reference", "angle",
         "doc", "download", "footnote", "script", "iframe", "style", "substitution"])
def test_a_translation_that_adds_a_link_or_a_directive_is_named_and_published_in_english(
        added, names, tmp_path):
    """The build would fail on it (a page that does not exist, a directive Sphinx does not
    know), naming a temporary file; a glossary link the translation adds where its wording
    names the term is fine."""
    english = "Row A changes $h$; see [BLEU](../book/glossary.md#glossary-bleu)."
    right = ("A 行改变 $h$；见 [BLEU](../book/glossary.md#glossary-bleu) 与"
             "[验证集](../book/glossary.md#glossary-validation-set)。")
    assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    unit = i18n.Unit("block", english, right + "\n" + added, 3)
    says(i18n.translation_problem(unit), *names)
    where = tmp_path / "page.md"
    i18n.write_units(where, [unit], "zh")
    assert i18n.fit_units(where, "zh") == []           # its English is published instead


@pytest.mark.parametrize("translated, names", [
    ("Wu 等人的 31.02 高于我们的 39.58，训练了 8,000 步。", ["lacks the number 41.02"]),
    ("Wu 等人的 41.02 高于我们的 39.58，训练了 8,000 步，共 12 小时。",
     ["has the number 12", "keep the English's numbers"]),
    ("Wu 等人的 41.02 高于我们的 39.58，训练了 8,000 步 $x^2$。", ["'$x^2$'", "a formula"])],
    ids=["changed", "added", "formula"])
def test_a_number_or_a_formula_changed_or_added_in_a_translation_is_named(translated, names):
    """The numbers of the prose are compared by their digits (4.5 million may be 450 万); a
    formula the English has not is named; a symbol the sentence leaves implicit may be added."""
    english = "Wu et al.'s 41.02 is above our 39.58, trained for 8,000 steps."
    right = "Wu 等人的 41.02 高于我们的 39.58，训练了 8,000 步（$n$ 步）。"
    assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    assert i18n.translation_problem(i18n.Unit(
        "block", "4.5 million steps", "450 万步", 3)) is None
    says(i18n.translation_problem(i18n.Unit("block", english, translated, 3)), *names)


@pytest.mark.parametrize("english, translated, names", [
    ("The model has 8 heads.", "模型有 4 个头。", ["has the number 4", "lacks the number 8"]),
    ("Use 3 layers.", "用几层。", ["lacks the number 3"]),
    ("Use two layers.", "用 3 层。", ["has the number 3"])], ids=["changed", "lost", "added"])
def test_a_single_digit_changed_in_a_translation_is_named(english, translated, names):
    """A single digit may be a word in either language (two heads, 两个头; 8 heads, 八个头),
    but a digit in neither form is a changed number."""
    for same in ("模型有 8 个头。", "模型有八个头。"):
        assert i18n.translation_problem(i18n.Unit("block", "The model has 8 heads.", same, 3)) \
            is None
    assert i18n.translation_problem(i18n.Unit("block", "Two heads.", "2 个头。", 3)) is None
    problem = i18n.translation_problem(i18n.Unit("block", english, translated, 3))
    assert any(name in problem for name in names), problem


@pytest.mark.parametrize("english, translated, names", [
    ("We keep the first 300 sentences, of which 200 are written the other way round.",
     "我们保留前 200 个句子，其中 300 个是反过来写的。", ["'200 个句子'", "'300 sentences'"]),
    ("The base model has 6 layers. Each layer has 8 heads.", "base 模型有 8 层。每层有 6 个头。",
     ["'8 层'", "'6 layers'"]),
    ("Chapter 6 trains it on 8 GPUs.", "第 8 章在 6 块 GPU 上训练它。", ["'6 块 GPU'", "'8 GPUs'"]),
    ("Table 3 varies the model; Figure 2 draws it.", "表 2 改变模型；图 3 画出它。",
     ["'表 2'", "'Table 3'"])], ids=["sentences", "layers", "chapters", "table"])
def test_a_number_moved_to_what_another_number_counts_is_named(english, translated, names):
    """The set of numbers is the same, so no number is lacking or added; but what each counts
    or names has moved between sentences."""
    says(i18n.translation_problem(i18n.Unit("block", english, translated, 3)),
         *names, "keep each number with what it counts or names")


@pytest.mark.parametrize("english, translated", [
    ("We keep the first 300 sentences, of which 200 are written the other way round.",
     "其中 200 个是反过来写的：我们保留的前 300 个句子里。"),
    ("Chapters 6 and 7 print the mark.", "第 6、7 章打印这个记号。"),
    ("The last 5 and 10 checkpoints.", "最后 5 个和 10 个检查点。"),
    ("It has 65 million parameters and 8 heads.", "它有 8 个头、6500 万个参数。"),
    ("Chapter 3, 5 heads, and chapter 8.", "第 3 章、第 8 章和 5 个头。")],
    ids=["reordered", "list", "counts", "scale", "not-a-list"])
def test_numbers_kept_with_what_they_count_in_another_order_pass(english, translated):
    """Chinese may reorder them, its unit's header accepting the order (order_changed)."""
    order = i18n.pieces_order(*i18n.ordered_pieces(i18n.Unit("block", english, translated, 3)))
    assert i18n.translation_problem(i18n.Unit("block", english, translated, 3, order)) is None


ORDERED = ("A mask of `True` lets a query look at a key; `False` blocks it. Position $i$ may "
           "see position $i+1$ only in the encoder; see [masks](../book/glossary.md#glossary-mask)"
           " and [padding](../book/glossary.md#glossary-padding). Chapter 6 trains it; chapter 8 "
           "scores it.")
IN_ORDER = ("掩码中 `True` 让查询查看某个键，`False` 则屏蔽它。只有在编码器里，位置 $i$ 才能看到位置 "
            "$i+1$；见[掩码](../book/glossary.md#glossary-mask)和[填充](../book/glossary.md"
            "#glossary-padding)。第 6 章训练它；第 8 章为它评分。")


@pytest.mark.parametrize("swap, names", [
    (("`True`", "`False`"), ["'`False`' before '`True`'"]),
    (("$i$", "$i+1$"), ["'$i+1$' before '$i$'"]),
    (("glossary-mask)", "glossary-padding)"), ["glossary-padding)' before", "glossary-mask)'"]),
    (("第 6 章", "第 8 章"), ["the number 8 before the number 6"])],
    ids=["code", "math", "links", "numbers"])
def test_code_math_or_links_swapped_in_a_translation_are_named_with_the_header_to_accept(
        swap, names):
    """Chinese may put them in another order, but a swap can reverse what a sentence says (the
    numbers too: the two chapters' numbers are swapped, not moved to another noun): a
    reordering is written in the unit's header, and any other is named."""
    a, b = swap
    swapped = IN_ORDER.replace(a, "\0").replace(b, a).replace("\0", b)
    assert i18n.translation_problem(i18n.Unit("cell c1", ORDERED, IN_ORDER, 3)) is None
    says(i18n.translation_problem(i18n.Unit("cell c1", ORDERED, swapped, 3)),
         *names, "other way round", "=== cell c1 (order")
    order = i18n.pieces_order(*i18n.ordered_pieces(i18n.Unit("cell c1", ORDERED, swapped, 3)))
    assert i18n.translation_problem(i18n.Unit("cell c1", ORDERED, swapped, 3, order)) is None
    says(i18n.translation_problem(i18n.Unit("cell c1", ORDERED, IN_ORDER, 3, order)),
         "header's order", "=== cell c1 ===")


@pytest.mark.parametrize("written", ["1 2 3", "1-9", "0 1 2 3 4 5 6 7", "8-1", "1 1 2-7", "x"])
def test_a_header_order_that_numbers_the_pieces_wrongly_is_named_with_the_right_one(
        written, tmp_path):
    where = tmp_path / "page.md"
    where.write_text(f"=== cell c1 (order {written}) ===\n--- en ---\n{ORDERED}\n--- zh ---\n"
                     f"{IN_ORDER}\n", encoding="utf-8")
    if not i18n.HEADER.match(f"=== cell c1 (order {written}) ==="):
        with pytest.raises(DataError) as raised:
            i18n.read_units(where, "zh")
        says(str(raised.value), "page.md:1", "not a unit header")
        return
    unit, = i18n.read_units(where, "zh")
    says(i18n.translation_problem(unit), "8 pieces", "=== cell c1 ===")


def test_a_units_order_is_written_back_as_it_was_read(tmp_path):
    where = tmp_path / "page.md"
    text = (f"=== cell c1 (order 1-4 6 5 7 8) ===\n--- en ---\n{ORDERED}\n--- zh ---\n{IN_ORDER}\n\n"
            f"=== block ===\n--- en ---\nTwo.\n--- zh ---\n二。\n")
    where.write_text(text, encoding="utf-8")
    units = i18n.read_units(where, "zh")
    assert units[0].order == (1, 2, 3, 4, 6, 5, 7, 8) and units[1].order == ()
    i18n.write_units(where, units, "zh")
    assert where.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("translated, names", [
    ("填充是**补上的部分。它的分数设为负无穷。", ["bold (**)", "填充是"]),
    ("填充是**补上的部分**。它的分数*设为负无穷。", ["italic (*)", "填充是"]),
    ("* 填充是**补上的部分**。\n* 它的分数设为负无穷*。", ["italic (*)"])],
    ids=["bold", "italic", "after a bullet"])
def test_bold_or_italic_left_open_in_a_translation_is_named(translated, names):
    """The page would show the stars, or the rest of the paragraph in bold; a list's bullet
    and an escaped star open nothing."""
    english = "* Padding is **what is added**.\n* Its score is *minus infinity*."
    for right in ("* 填充是**补上的部分**。\n* 它的分数是*负无穷*。",
                  "* 填充是**补上的部分**。\n* 它的分数是负无穷（\\*）。"):
        assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    says(i18n.translation_problem(i18n.Unit("block", english, translated, 3)), *names,
         "never closes")


@pytest.mark.parametrize("entity", ["&nbsp;", "&lt;", "&#8212;"])
def test_an_html_entity_the_english_has_not_is_named_not_taken_for_english(entity):
    from book.chinese import english_left_in
    english = "Padding fills any real position."
    translated = f"填充会补满{entity}任何真实位置。"
    says(i18n.translation_problem(i18n.Unit("block", english, translated, 3)),
         f"HTML entity {entity}", "the character itself")
    assert english_left_in([("book/zh/p.md", 3, chinese_prose(translated))]) == []


def test_a_formula_written_more_often_than_in_the_english_is_named():
    english = "The score is $-\\infty$ where masked, so its weight is zero."
    right = "被屏蔽处分数为 $-\\infty$，所以权重为零。"
    assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    says(i18n.translation_problem(i18n.Unit("block", english, right + "（$-\\infty$）", 3)),
         "infty", "fewer times")


@pytest.mark.parametrize("written", ["3", "30.0", "3OO", "30", "300 万", "3000"])
def test_a_number_written_at_another_size_is_named(written):
    """Numbers are compared by their value: the same digits at another size (a zero lost, a
    decimal point, a scale word added) are another number."""
    english = "Decoding stops at the input length + 300, for the first 6,000 sentences."
    right = "解码在输入长度 + 300 处停止，对前 6,000 句都是如此。"
    assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    says(i18n.translation_problem(i18n.Unit("block", english, right.replace("300", written), 3)),
         "lacks the number 300")
    for six in ("6", "60,00", "6.000", "6,000,000"):
        says(i18n.translation_problem(i18n.Unit("block", english, right.replace("6,000", six), 3)),
             "lacks the number 6,000")


@pytest.mark.parametrize("english, translated", [
    ("About 4.5 million steps.", "大约 450 万步。"), ("For 8,000 steps.", "共 8000 步。"),
    ("Between 1.2 and 2.5 million fewer.", "少 120 万到 250 万。"),
    ("At 9.5 TFLOPS (trillion operations a second).", "9.5 TFLOPS（每秒 9.5 万亿次运算）。"),
    ("0.02 million", "0.02 百万")], ids=["wan", "separator", "range", "trillion", "baiwan"])
def test_a_number_written_with_a_chinese_scale_is_the_same_number(english, translated):
    assert i18n.translation_problem(i18n.Unit("block", english, translated, 3)) is None


@pytest.mark.parametrize("hidden, names", [
    ("有两种情况。<!-- 隐藏的一句 -->", ["raw HTML", "<!-- -->"]),
    ("有\u202e两种情况。", ["invisible", "U+202E", "RIGHT-TO-LEFT OVERRIDE"]),
    ("有两种\u200b情况。", ["invisible", "U+200B", "ZERO WIDTH SPACE"])],
    ids=["comment", "bidi", "zero-width"])
def test_a_translation_that_hides_or_reorders_its_text_is_named(hidden, names):
    """An HTML comment shows nothing of what it holds; an invisible formatting character can
    hide a word from the checks, or reverse a line on the page."""
    english = "There are two cases."
    assert i18n.translation_problem(i18n.Unit("block", english, "有两种情况。", 3)) is None
    says(i18n.translation_problem(i18n.Unit("block", english, hidden, 3)), *names)


def test_a_variant_or_english_hidden_by_zero_width_or_full_width_letters_is_found():
    from book import chinese
    found = chinese.variants_used([("book/zh/p.md", 3, chinese_prose("补\u200b齐到一样长"))])
    says(" ".join(found), "book/zh/p.md:3", "补齐", "填充")
    left = chinese.english_left_in([("book/zh/p.md", 5, chinese_prose(
        "有两种情况：ｔｗｏ ｓｉｔｕａｔｉｏｎｓ ｎｅｅｄ ｌｅｓｓ。"))])
    says(" ".join(left), "book/zh/p.md:5", "English in Chinese prose", "situations")


def test_a_traditional_character_in_chinese_prose_is_named_with_the_term_it_spoils():
    """The Chinese edition is in Simplified characters; a Traditional one (註意力 for 注意力)
    is named with its file and line, and with the rendering it spoils where there is one."""
    from book import chinese
    found = chinese.characters_outside_simplified([
        ("book/zh/p.md", 3, chinese_prose("这是註意力。")),
        ("book/zh/p.md", 4, chinese_prose("把查詢分給每個頭。")),
        ("book/zh/p.md", 5, chinese_prose("多头注意力把查询分给每个头。"))])
    assert len(found) == 2, found
    says(found[0], "book/zh/p.md:3", "註", "Traditional", "注意力", "Attention")
    says(found[1], "book/zh/p.md:4", "詢", "給", "個", "頭", "Simplified")


def test_japanese_or_korean_in_chinese_prose_is_named():
    """Kana and Hangul are no Chinese: a unit translated into (or left in) Japanese or Korean
    is named with its file and line, as English left in is."""
    from book import chinese
    found = chinese.other_languages([
        ("book/zh/p.md", 3, chinese_prose("このモジュールはとても短いです：")),
        ("book/zh/p.md", 4, chinese_prose("마스크는 어텐션 점수 `(batch, h)`에 브로드캐스트된다.")),
        ("book/zh/p.md", 5, chinese_prose("这个模块很短："))])
    assert len(found) == 2, found
    says(found[0], "book/zh/p.md:3", "Japanese", "こ", "translate it into Chinese")
    says(found[1], "book/zh/p.md:4", "Korean", "마")
    assert chinese.other_languages(chinese_texts()) == []


def test_chinese_prose_holds_no_traditional_characters():
    from book import chinese
    slips = chinese.characters_outside_simplified(chinese_texts())
    assert not slips, "\n".join(slips[:40])


def test_a_heading_moved_to_another_level_is_named():
    english = "## One convention\n\nMasks hold `True` where attention may look."
    right = "## 统一约定\n\n掩码在注意力可以看的位置为 `True`。"
    assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    for changed, names in ((right.replace("## ", "# "), ["heading (#)", "heading (##)"]),
                           (right.replace("## ", ""), ["paragraph", "heading (##)"])):
        says(i18n.translation_problem(i18n.Unit("block", english, changed, 3)), *names,
             "headings at their levels")


ONE_PARAGRAPH = ("Scores grow with $\\sqrt{d_k}$.", "分数随 $\\sqrt{d_k}$ 增长。")


@pytest.mark.parametrize("changed, names", [
    ("% 分数随 $\\sqrt{d_k}$ 增长。", ["comment line", "hidden from the page", "paragraph"]),
    ("    分数随 $\\sqrt{d_k}$ 增长。", ["code block", "indented", "paragraph"]),
    ("小标题\n=====\n\n分数随 $\\sqrt{d_k}$ 增长。", ["adds a heading (#)"]),
    ("小标题\n-----\n\n分数随 $\\sqrt{d_k}$ 增长。", ["adds a heading (##)"]),
    ("(my-label)=\n分数随 $\\sqrt{d_k}$ 增长。", ["adds a target line"]),
    ("---\n\n分数随 $\\sqrt{d_k}$ 增长。", ["adds a horizontal rule"]),
    ("+++\n\n分数随 $\\sqrt{d_k}$ 增长。", ["adds a block break"]),
    ("> 分数随 $\\sqrt{d_k}$ 增长。", ["quote", "paragraph"]),
    ("- 分数随 $\\sqrt{d_k}$ 增长。", ["bulleted list", "paragraph"])])
def test_a_block_the_english_has_not_is_named_and_its_unit_published_in_english(changed,
                                                                                names):
    """Markdown's block syntax changes what a page shows though every word, formula and link
    is kept: a comment line or an indent hides a paragraph or shows it as code, an underline
    makes a heading. The check names the block; the build publishes the English instead."""
    english, right = ONE_PARAGRAPH
    assert i18n.translation_problem(i18n.Unit("block", english, right, 3)) is None
    unit = i18n.Unit("block", english, changed, 3)
    says(i18n.translation_problem(unit), *names, "keep the English's blocks")
    assert i18n.unpublishable(unit)                     # fit_units leaves it out


def test_a_table_cell_is_no_block_and_its_hash_no_heading():
    """A table cell's unit is one cell's text: "# (# to #)" is numbers, not a heading."""
    unit = i18n.Unit("block", "# (# to #)", "#（# 至 #）", 3)
    assert i18n.table_cell_problem(unit) is None


def test_a_code_block_left_open_is_named_by_the_fence_it_opens_with():
    unit = i18n.Unit("block", "Masks hold `True`.", "~~~python\n掩码为 `True`。", 3)
    says(i18n.translation_problem(unit), "(~~~)", "closing ~~~ line")


def test_a_unit_for_a_code_cell_is_named_as_one(tmp_path, monkeypatch):
    (tmp_path / "book" / "zh").mkdir(parents=True)
    (tmp_path / "chapters").mkdir()
    shutil.copy(i18n.CHAPTERS / "02_masking.ipynb", tmp_path / "chapters")
    code = next(c["id"] for c in json.loads((i18n.CHAPTERS / "02_masking.ipynb").read_text(
        encoding="utf-8"))["cells"] if c["cell_type"] == "code")
    (tmp_path / "book" / "zh" / "02_masking.md").write_text(
        (i18n.BOOK / "zh" / "02_masking.md").read_text(encoding="utf-8")
        + f"\n=== cell {code} ===\n--- en ---\nshow(x)\n--- zh ---\n显示(x)\n", encoding="utf-8")
    for name, value in (("BOOK", tmp_path / "book"), ("CHAPTERS", tmp_path / "chapters"),
                        ("ROOT", tmp_path)):
        monkeypatch.setattr(i18n, name, value)
    report = i18n.check(tmp_path / "chapters" / "02_masking.ipynb", "zh")
    assert not report.missing and not report.stale and len(report.orphans) == 1
    says(report.orphans[0], f"cell {code}", "code cell", "not translated", "remove this unit")


def test_a_code_block_left_open_is_named_before_what_it_hides():
    """The open block swallows the rest of the unit, code included: name the block, not the
    `True` it hid."""
    english = "Masks hold `True` where a query may attend."
    unit = i18n.Unit("block", english, "```python\n掩码在查询可以关注的位置为 `True`。", 3)
    says(i18n.translation_problem(unit), "never closes")


def test_math_left_open_is_named_with_where_it_opens():
    """An unclosed $ shows the rest of the paragraph as a formula: name the $, not the formula
    it breaks; a $ in code or escaped is no math."""
    english = "Why divide by $\\sqrt{d_k}$? It costs `$5`, or \\$5."
    unit = i18n.Unit("math", english, "为什么要除以 $\\sqrt{d_k}？它要 `$5`，或 \\$5。", 3)
    says(i18n.translation_problem(unit), "opens math ($)", "never closes", "sqrt{d_k}",
         "closing $")
    closed = i18n.Unit("math", english, "为什么要除以 $\\sqrt{d_k}$？它要 `$5`，或 \\$5。", 3)
    assert i18n.translation_problem(closed) is None


def test_a_missing_term_list_says_to_restore_it(tmp_path, monkeypatch):
    from book import chinese
    monkeypatch.setattr(chinese, "TERMS", tmp_path / "zh" / "terms.md")
    monkeypatch.setattr(chinese.i18n, "ROOT", tmp_path)
    with pytest.raises(DataError) as error:
        chinese.term_list()
    says(str(error.value), "terms.md", "missing", "git checkout -- zh/terms.md")


def test_a_mistyped_cell_id_in_a_units_header_is_named_not_missing_and_orphaned(tmp_path,
                                                                               monkeypatch):
    book, chapters = tmp_path / "book", tmp_path / "chapters"
    (book / "zh").mkdir(parents=True)
    chapters.mkdir()
    source = i18n.CHAPTERS / "02_masking.ipynb"
    shutil.copy(source, chapters / source.name)
    text = (i18n.BOOK / "zh" / "02_masking.md").read_text(encoding="utf-8")
    cell = re.search(r"=== cell (\w+) ===", text).group(1)
    (book / "zh" / "02_masking.md").write_text(
        text.replace(f"=== cell {cell} ===", f"=== cell {cell.upper()}x ===", 1), encoding="utf-8")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    report = i18n.check(chapters / source.name, "zh")
    assert not report.missing and not report.orphans, report
    says(report.stale[0], f"cell {cell.upper()}x", f"=== cell {cell} ===")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_english_page_not_in_utf8_is_one_line_naming_the_file_and_line(lang, tmp_path,
                                                                        monkeypatch, capsys):
    """As the translations check and the build (page_text) read it."""
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    shutil.copy(i18n.BOOK / "zh" / "slips.md", book / "zh" / "slips.md")
    text = (i18n.BOOK / "slips.md").read_text(encoding="utf-8")
    (book / "slips.md").write_bytes(text.encode("utf-8") + "\nCaf\u00e9.\n".encode("latin-1"))
    line = text.count("\n") + 2
    with pytest.raises(DataError) as error:
        i18n.page_text(book / "slips.md", lang)
    says(error, f"slips.md, line {line}", "not UTF-8", "convert")
    says(translations_error(book, monkeypatch, capsys), f"slips.md, line {line}", "not UTF-8")


@pytest.fixture
def copy_of_chapter_eight(tmp_path, monkeypatch):
    """Chapter 8 alone in a scratch book, with a table translation file of three units: a
    cell's words, a cell with numbers, a German sentence kept as it is; the module pointed at
    it."""
    chapters, book = tmp_path / "chapters", tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    chapters.mkdir()
    chapter = next(p for p in CHAPTERS if p.name.startswith("08_"))
    shutil.copy(chapter, chapters / chapter.name)
    german = next(cell for _, cell in i18n.book_table_pieces() if cell.startswith("Ein Mann"))
    i18n.write_units(book / "zh" / i18n.TABLES, [
        i18n.Unit("block", "the shipped model", "随附模型", 0),
        i18n.Unit("block", "# x # = # million", "# × # = # 百万", 0),
        i18n.Unit("block", german, german, 0)], "zh")
    for name, value in (("BOOK", book), ("ROOT", tmp_path), ("CHAPTERS", chapters)):
        monkeypatch.setattr(i18n, name, value)
    return chapters / chapter.name, german


def table_output(nb: dict, caption: str) -> str:
    """The markdown of the table output that the caption cell `caption` follows."""
    cells = nb["cells"]
    at = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
              and "".join(c["source"]).startswith(f"**{caption}.**"))
    code = next(c for c in reversed(cells[:at]) if c["cell_type"] == "code")
    return next(t for o in code["outputs"] if (t := i18n.table_of(o)) is not None)


def test_a_table_cell_with_a_unit_is_translated_and_data_kept_stays(copy_of_chapter_eight):
    path, german = copy_of_chapter_eight
    english = json.loads(path.read_text(encoding="utf-8"))
    chinese = i18n.translated_notebook(english, path, "zh")
    en, zh = table_output(english, "Table 8.3"), table_output(chinese, "Table 8.3")
    product = next(c for c in re.findall(r"[^|]+", en) if "million" in c).strip()
    assert "| 随附模型 |" in zh and "the shipped model" not in zh
    assert "{} × {} = {} 百万".format(*i18n.NUMBER.findall(product)) in zh
    assert "| system |" in zh                            # no unit yet: as it is
    assert [re.findall(r"\d[\d,.]*", line) for line in en.split("\n")] == \
        [re.findall(r"\d[\d,.]*", line) for line in zh.split("\n")]
    assert german in table_output(chinese, "Table 8.4")
    assert "随附模型" in table_output(chinese, "Table 8.4").split("\n")[0]
    assert same_table_but_its_words({"data": {"text/markdown": en}},
                                    {"data": {"text/markdown": zh}})


def test_a_table_cell_without_a_unit_is_missing_and_a_unit_no_table_shows_orphaned(
        copy_of_chapter_eight):
    path, german = copy_of_chapter_eight
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if "examples_table" in c.source)
    output = cell.outputs[0]
    output.data["text/markdown"] = output.data["text/markdown"].replace(german, "Ein Satz.")
    nbformat.write(nb, path)
    report = i18n.check_tables("zh")
    says(next(m for m in report.missing if "'system'" in m), "book/zh/tables.md",
         "chapters/08_results.ipynb", "Table 8.3", "cell 53e9fee3")
    says(next(m for m in report.missing if "Ein Satz." in m), "Table 8.4")
    assert not [m for m in report.missing if "'the shipped model'" in m or "'# x # = #" in m]
    assert len(report.orphans) == 1
    says(report.orphans[0], "book/zh/tables.md:", "no chapter shows", german[:20])
    before = i18n.read_units(i18n.BOOK / "zh" / i18n.TABLES, "zh")
    assert i18n.add_missing_cells("zh") == len(report.missing)
    after = i18n.read_units(i18n.BOOK / "zh" / i18n.TABLES, "zh")
    assert [u.text for u in after[:len(before)]] == [u.text for u in before]
    assert {u.en for u in after[len(before):]} >= {"system", "Ein Satz."}
    assert not [u for u in after[len(before):] if u.text]       # for a translator to fill
    assert len(i18n.check_tables("zh").missing) == len(report.missing)
    assert i18n.add_missing_cells("zh") == 0


def test_a_table_unit_that_drops_a_number_is_stale_and_leaves_its_cell_as_it_is(
        copy_of_chapter_eight):
    path, _ = copy_of_chapter_eight
    where = i18n.BOOK / "zh" / i18n.TABLES
    units = i18n.read_units(where, "zh")
    units[1].text = "# × # 百万"
    i18n.write_units(where, units, "zh")
    stale = i18n.check_tables("zh").stale
    assert len(stale) == 1
    says(stale[0], f"tables.md:{units[1].line}", "million", "#")
    english = json.loads(path.read_text(encoding="utf-8"))
    chinese = i18n.translated_notebook(english, path, "zh")
    assert "million" in table_output(chinese, "Table 8.3")


@pytest.mark.parametrize("added, names", [
    ("，共 65 个", ("the number 65", "write #")),
    ("<b>粗</b>", ("raw HTML", "<b>")),
    ("[见此](https://example.com)", ("links to https://example.com",))])
def test_a_table_unit_that_adds_a_number_a_link_or_html_is_named_and_not_published(
        copy_of_chapter_eight, added, names):
    """A table cell's unit is checked as a page's is: a number the cell has not, a link or
    raw HTML is named with the line; the build publishes the cell in English."""
    path, _ = copy_of_chapter_eight
    where = i18n.BOOK / "zh" / i18n.TABLES
    units = i18n.read_units(where, "zh")
    units[0].text = "随附模型" + added
    i18n.write_units(where, units, "zh")
    missing = i18n.check_tables("zh").missing
    says(next(m for m in missing if "'the shipped model'" in m),
         f"tables.md:{units[0].line}", *names)
    chinese = i18n.translated_notebook(json.loads(path.read_text(encoding="utf-8")), path, "zh")
    assert added not in table_output(chinese, "Table 8.3")
    assert "the shipped model" in table_output(chinese, "Table 8.3")


def test_adding_missing_units_writes_a_translation_file_whole_or_not_at_all(
        copy_of_chapter_one, monkeypatch):
    path = copy_of_chapter_one
    where = i18n.translation_file(path, "zh")
    before = where.read_bytes()
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("A new paragraph."))
    nbformat.write(nb, path)
    real = os.fsync

    def stopped(fd):                 # SIGTERM while the new file is written beside the old
        os.kill(os.getpid(), signal.SIGTERM)
        real(fd)
    monkeypatch.setattr(os, "fsync", stopped)
    with stops_unwind(), pytest.raises(Stopped):
        i18n.add_missing(path, "zh")
    assert where.read_bytes() == before
    assert sorted(p.name for p in where.parent.iterdir()) == [where.name]


def test_adding_missing_units_keeps_a_windows_files_line_ends(copy_of_chapter_one):
    """A translation file saved with CRLF line ends stays so: only the new unit is new."""
    path = copy_of_chapter_one
    where = i18n.translation_file(path, "zh")
    crlf = where.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    where.write_bytes(crlf)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("A new paragraph."))
    nbformat.write(nb, path)
    assert i18n.add_missing(path, "zh") == 1
    after = where.read_bytes()
    assert after.startswith(crlf) and after.count(b"\n") == after.count(b"\r\n")
    assert b"A new paragraph." in after


def test_spaces_after_separator_lines_are_no_matter_to_the_prose_checks(tmp_path):
    """An editor that leaves spaces after '--- en ---' or '--- zh ---': the file reads as
    before, for the units and for the checks of its Chinese prose alike."""
    from book.chinese import chinese_of_units
    source = i18n.BOOK / "zh" / "02_masking.md"
    spaced = tmp_path / source.name
    spaced.write_text("\n".join(line + "   " if line in (i18n.EN, "--- zh ---") else line
                                for line in source.read_text(encoding="utf-8").split("\n")),
                      encoding="utf-8")
    assert chinese_of_units(spaced) == chinese_of_units(source)
    assert [u.text for u in i18n.read_units(spaced, "zh")] == \
        [u.text for u in i18n.read_units(source, "zh")]


# ---- the Chinese reads as Chinese: one rendering per term, no English prose ----


def test_the_term_list_gives_each_term_one_rendering_the_glossarys():
    terms = term_list()
    english = [en.lower() for en, _, _ in terms]
    assert len(set(english)) == len(english), "a term is listed twice"
    for en, zh, variants in terms:
        assert zh and not any(v.search(zh) for v in variants), f"{en}: {zh} is its own variant"
    glossary = "\n\n".join(u.text for u in i18n.read_units(i18n.BOOK / "zh" / "glossary.md", "zh"))
    taught = re.findall(r"^\(glossary-[\w-]+\)=\n\*\*([^（*]+?)(?:（[^）]*）)?[.。]\*\*", glossary, re.M)
    assert len(taught) > 90
    renderings = {zh for _, zh, _ in terms}
    assert not [t for t in taught if t not in renderings], "glossary terms missing from terms.md"


def test_chinese_text_uses_the_term_lists_one_rendering():
    slips = variants_used(chinese_texts())
    assert not slips, f"{len(slips)} variant(s):\n" + "\n".join(slips[:40])


def test_chinese_prose_holds_no_english_prose():
    slips = english_left_in(chinese_texts())
    assert not slips, f"{len(slips)} line(s):\n" + "\n".join(slips[:60])


def test_the_chinese_checks_catch_what_a_reader_found_and_pass_code_and_names():
    found = [("p.md", 1, chinese_prose(text)) for text in (
        "Big 就是把 base 模型加宽。", "论文的基础模型有 6 层。", "下载本章的 notebook。",
        "## 常见错误（common slip）", "注意力（attention）很有用。注意力（attention）又来了。",
        "这个模型 learns quickly 而且很小。")]
    variants, english = variants_used(found), english_left_in(found)
    assert any("'Big'" in v and "big 模型" in v for v in variants)
    assert any("基础模型" in v and "base 模型" in v for v in variants)
    assert any("notebook" in v and "笔记本" in v for v in variants)
    assert any("heading" in e and "common slip" in e for e in english)
    assert any("already given" in e and "attention" in e for e in english)
    assert any("learns quickly" in e for e in english)
    fine = [("p.md", 1, chinese_prose(text)) for text in (
        "调用 `notebook.run()`，见 $\\mathrm{softmax}(x)$。",
        "用 PyTorch 和 sacreBLEU 在 Multi30k 上训练。", "“Ein Mann mit einem Hut” 是一条译文。",
        "[注意力](../book/glossary.md#glossary-attention)", "设 d_model = 512，dropout 为 0.1。")]
    assert variants_used(fine) == [] and english_left_in(fine) == []


def test_a_translation_file_that_is_a_pipe_is_refused_without_waiting(tmp_path):
    path = tmp_path / "start.md"
    os.mkfifo(path)
    with pytest.raises(DataError) as error:
        i18n.read_units(path, "zh")
    says(error, "start.md", "not a regular file", "git checkout")


def test_a_translation_file_that_translates_no_page_is_listed(tmp_path, monkeypatch):
    """A copy left behind (02_masking_old.md) would otherwise sit there unchecked."""
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    monkeypatch.setattr(i18n, "BOOK", tmp_path / "book")
    monkeypatch.setattr(i18n, "sources", lambda: [i18n.CHAPTERS / "02_masking.ipynb"])
    (tmp_path / "book" / "zh").mkdir(parents=True)
    for name in ("02_masking.md", "02_masking_old.md", "tables.md", "terms.md"):
        (tmp_path / "book" / "zh" / name).write_text("")
    found = i18n.orphan_files("zh")
    assert len(found) == 1
    says(found[0], "book/zh/02_masking_old.md", "no English page", "delete it")
    zh = tmp_path / "book" / "zh"
    (zh / "02_masking.md").rename(zh / "02_masking.txt")
    (zh / "02_masking_old.md").unlink()
    found = i18n.orphan_files("zh")                   # its page's name with another ending
    assert len(found) == 1
    says(found[0], "book/zh/02_masking.txt", "02_masking.md", "missing", "rename it")


@pytest.mark.parametrize("argv, option", [(["translations", "--out", "x"], "--out"),
                                          (["terms", "--add-missing"], "--add-missing"),
                                          (["build", "--add-missing"], "--add-missing")])
def test_an_option_given_to_the_wrong_book_command_is_refused(argv, option, capsys):
    from book.__main__ import parse_args
    with pytest.raises(SystemExit) as stopped:
        parse_args(argv)
    assert stopped.value.code == 2
    says(capsys.readouterr().err.strip().splitlines()[-1], option, argv[0], "goes with")


def test_a_translation_file_that_is_a_link_is_refused_and_never_written_through(tmp_path):
    """A dangling link would make --add-missing write a file outside the project."""
    path = tmp_path / "start.md"
    path.symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(DataError) as error:
        i18n.read_units(path, "zh")
    says(error, "start.md", "a link", "git checkout")
    assert not (tmp_path / "elsewhere.md").exists()


@pytest.mark.parametrize("header, code", [("=== bl\u200bock ===", "U+200B"),
                                          ("=== block\u00a0===", "U+00A0")])
def test_a_unit_header_holding_an_invisible_character_is_named_at_its_line(tmp_path, header,
                                                                           code):
    """It would not read as a header, and the unit before it would swallow the next one."""
    refused(tmp_path / "start.md", UNITS.replace("\n=== block ===", "\n" + header),
            "start.md:7", "header", code, "delete it")


def test_english_that_changed_only_in_unseen_characters_says_which(copy_of_chapter_one):
    """A no-break space for a space leaves the diff's lines looking the same: the report
    names the character."""
    path = copy_of_chapter_one
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown" and "softmax" in c.source)
    cell.source = cell.source.replace(" softmax", "\u00a0softmax", 1)
    nbformat.write(nb, path)
    stale = i18n.check(path, "zh").stale
    assert len(stale) == 1
    says(stale[0].split("\n")[0], f"cell {cell.id}", "cannot see", "U+00A0")


def test_spaces_after_a_header_or_a_separator_do_not_change_the_units(tmp_path):
    path = tmp_path / "start.md"
    path.write_text(UNITS.replace("=== block ===\n", "=== block ===  \n")
                    .replace("--- zh ---\n", "--- zh --- \n"), encoding="utf-8")
    plain = tmp_path / "plain.md"
    plain.write_text(UNITS, encoding="utf-8")
    assert i18n.read_units(path, "zh") == i18n.read_units(plain, "zh")


def test_a_file_whose_lines_end_in_a_carriage_return_alone_says_so(tmp_path):
    refused(tmp_path / "start.md", UNITS.replace("\n", "\r"), "start.md:1",
            "carriage return", "\\n line endings")


def test_a_misspelled_unit_header_is_named_at_its_line(tmp_path):
    refused(tmp_path / "start.md", UNITS.replace("\n=== block ===", "\n=== blok"),
            "start.md:7", "'=== blok'", "not a unit header", "=== block ===")


@pytest.mark.parametrize("edit, names", [
    ("| Mask | 掩码", ["not a row of three cells", "| English | 中文 |"]),
    ("<<<<<<< HEAD\n| Mask | 掩码 |  |\n=======\n| Mask | 遮罩 |  |\n>>>>>>> x",
     ["conflict marker", "keep one"]),
    ("| Mask | 掩码 | `掩码` |", ["`掩码`", "rendering 掩码 itself", "third cell"]),
    ("| Mask | 掩码 | `解码器` |", ["`解码器` of Mask", "rendering of Decoder", "third cell"]),
    ("| Mask | 掩码 | `遮(罩` |", ["`遮(罩`", "not a regular expression", "backslash"]),
    ("| Mask |  |  |", ["Mask has no rendering", "second cell"]),
    ("| Mask | 掩码 | `` · `遮罩` |", ["'``'", "in backticks", "' · '"]),
    ("| Mask | 掩码 |  |\n| mask | 遮罩 |  |", ["listed twice", "one rendering"]),
    ("| Mask | 掩码 | `(.*)*X` |", ["`(.*)*X`", "repeats a group", "nested"]),
    ("| Mask | 掩码 | `(?=遮)` |", ["`(?=遮)`", "no character at all", "characters it must"]),
    ("| Mask | 掩码 | `遮?` |", ["`遮?`", "no character at all"])])
def test_a_broken_row_of_the_term_list_is_one_line_naming_it(edit, names, tmp_path,
                                                             monkeypatch):
    from annotated.base.errors import DataError
    from book import chinese
    text = chinese.TERMS.read_text(encoding="utf-8")
    assert "| Mask | 掩码 |  |" in text
    (tmp_path / "terms.md").write_text(text.replace("| Mask | 掩码 |  |", edit), encoding="utf-8")
    monkeypatch.setattr(chinese, "TERMS", tmp_path / "terms.md")
    monkeypatch.setattr(chinese.i18n, "ROOT", tmp_path)
    with pytest.raises(DataError) as refused:
        chinese.term_list()
    line = text.split("| Mask | 掩码 |  |")[0].count("\n") + 1
    says(str(refused.value), f"terms.md:{line}", *names)


def test_a_rendering_that_no_page_writes_is_named_with_its_line(tmp_path, monkeypatch):
    """Head rendered 脑袋 in the term list while every page writes 头: the list disagrees with
    the book. A rendering split by an English gloss (托普利茨（Toeplitz）矩阵) is written."""
    from book import chinese
    text = chinese.TERMS.read_text(encoding="utf-8")
    assert "| Head | 头 |  |" in text
    (tmp_path / "terms.md").write_text(text.replace("| Head | 头 |  |", "| Head | 脑袋 |  |"),
                                       encoding="utf-8")
    texts = chinese.chinese_texts()                      # the book's pages, as they are
    monkeypatch.setattr(chinese, "TERMS", tmp_path / "terms.md")
    monkeypatch.setattr(chinese.i18n, "ROOT", tmp_path)
    line = text.split("| Head | 头 |  |")[0].count("\n") + 1
    found = chinese.renderings_unused(texts)
    assert len(found) == 1, found
    says(found[0], f"terms.md:{line}", "脑袋", "Head", "no page")


def test_an_emptied_term_list_or_glossary_is_one_line_not_one_per_use(tmp_path, monkeypatch):
    """Emptied, each would make every use of a term a finding (hundreds of lines)."""
    from annotated.base.errors import DataError
    from book import chinese, terms
    (tmp_path / "terms.md").write_text("", encoding="utf-8")
    monkeypatch.setattr(chinese, "TERMS", tmp_path / "terms.md")
    monkeypatch.setattr(chinese.i18n, "ROOT", tmp_path)
    with pytest.raises(DataError) as refused:
        chinese.term_list()
    says(str(refused.value), "terms.md", "holds no term", "git checkout")
    (tmp_path / "glossary.md").write_text("# Glossary\n", encoding="utf-8")
    monkeypatch.setattr(terms, "GLOSSARY", tmp_path / "glossary.md")
    monkeypatch.setattr(terms, "BOOK", tmp_path / "book")
    with pytest.raises(DataError) as refused:
        terms.terms.__wrapped__()
    says(str(refused.value), "glossary.md", "no glossary entry", "git checkout")


@pytest.mark.parametrize("edit, names", [
    (lambda words: words.WORDS.pop("reference"), ["WORDS", "lacks the key 'reference'"]),
    (lambda words: words.WORDS.update(api_title="{modul} 参考"), ["'api_title'", "{modul}",
                                                                  "{module}"]),
    (lambda words: words.SCRIPTS.update(head="头 {h"), ["'head'", "no format string", "{{"]),
    (lambda words: words.SCRIPTS.update(heda="头"), ["'heda'", "typo"])],
    ids=["key missing", "field mistyped", "lone brace", "key unknown"])
def test_a_language_module_the_build_would_fail_on_is_one_line_before_any_work(
        edit, names, monkeypatch, capsys):
    """A word missing or a field mistyped in a translation's words: the build stopped half-way
    with a KeyError. Every command of the book checks the modules first."""
    import types
    from book import languages
    chinese = types.SimpleNamespace(**{part: getattr(languages.ALL["zh"], part)
                                       for part in languages.PARTS})
    chinese.WORDS, chinese.SCRIPTS = dict(chinese.WORDS), dict(chinese.SCRIPTS)
    edit(chinese)
    monkeypatch.setitem(languages._FOUND, "zh", chinese)
    with pytest.raises(SystemExit):
        book_main(["translations"])
    says(capsys.readouterr().err.strip(), "book/languages/zh.py", *names, "book/languages/en.py")


def test_a_language_module_that_does_not_import_is_named_with_its_line(monkeypatch):
    from book import languages

    def broken(name):
        raise SyntaxError("invalid syntax", ("zh.py", 18, 5, "x"))
    monkeypatch.setattr(languages.importlib, "import_module", broken)
    says(languages._imported("zh"), "book/languages/zh.py, line 18", "SyntaxError",
         "git checkout -- book/languages/zh.py")


@pytest.mark.parametrize("added", ["![图](https://example.com/track.png)",
                                   '<a href="https://example.com">这里</a>',
                                   "<img src='https://example.com/x.png'>"],
                         ids=["markdown image", "html link", "html image"])
def test_a_translation_that_adds_a_link_or_an_image_is_not_published(added):
    """Only the English's links and images are published: a remote image added in a
    translation would load from another site on every reader's visit."""
    english = "Masks hold `True` where a query may attend, and `False` elsewhere."
    unit = i18n.Unit("image", english, f"掩码在查询可以关注的位置为 `True`，其他位置为 `False`。{added}", 3)
    says(i18n.translation_problem(unit), "links to", "example.com", "keep the English's links")


def test_a_formula_or_a_code_block_a_translation_adds_is_named():
    english = "Masks hold `True` where a query may attend."
    for added in ("$$x^2$$", "```python\nprint(1)\n```"):
        unit = i18n.Unit("math", english, f"掩码在查询可以关注的位置为 `True`。\n\n{added}", 3)
        says(i18n.translation_problem(unit), "formula or a code block", "the English has not")
