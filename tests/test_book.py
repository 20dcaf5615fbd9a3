"""The chapters' website (`python -m book build`): built from the committed notebooks into a
temporary folder, then every page opened in headless Chromium over http on 127.0.0.1.

Per page (every page at the site's top, and a sample of the API reference's pages and of its
highlighted source) the browser test asserts: no console error, no request that leaves the
site, no math left as raw `$...$` or unrendered `\\(...\\)`, none in the <title> or the
navigation either, no MathJax error, no equation wider than the column (at 1280 pixels), every
image loaded and described by its alt text (not a file name), every internal link (and its
#fragment) found; chapters also have rendered math, a folded figure cell, download links (the
notebook and the project's zip) and a 'next' link to the next chapter. A click on a figure
opens it larger, and Escape closes it. It saves a screenshot of each page's top in
build/screenshots/ (ignored by git), and of a figure opened, and is skipped when no Chromium or
chromedriver is here.

Without a browser: the figures' captions (numbered 1, 2, 3... in each chapter, one for each
figure), the staged notebooks (figures captioned, listings linked to the API reference), the
project's zip (`git ls-files`, or a note outside a git checkout) and the reading time.
"""
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest
from conftest import says, stop_at_import

from annotated.base.errors import DataError
from book import languages, publish, stage

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,900"]

# The page's prose as a reader sees it: code, scripts and rendered math removed.
VISIBLE_PROSE_JS = """
const body = document.body.cloneNode(true);
body.querySelectorAll('pre, code, script, style, mjx-container, .MathJax').forEach(e => e.remove());
return body.innerText;
"""
# Resolves once MathJax has typeset the page and every image has loaded or failed.
SETTLED_JS = """
const done = arguments[arguments.length - 1];
const images = [...document.images].map(img => {
  img.scrollIntoView();
  return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
});
const math = window.MathJax && MathJax.startup ? MathJax.startup.promise : null;
Promise.all([...images, math]).then(() => done(true), () => done(false));
"""
PAGE_FACTS_JS = """
return {
  broken_images: [...document.images].filter(i => !(i.naturalWidth > 0)).map(i => i.src),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  math_errors: document.querySelectorAll('mjx-merror').length,
  rendered_math: document.querySelectorAll('mjx-container').length,
  wide_math: [...document.querySelectorAll('mjx-container[display="true"]')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).length,
  wide_output: [...document.querySelectorAll(
      '.cell_output .output pre, .pst-scrollable-table-container')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.slice(0, 60)),
  next: (document.querySelector('a.right-next') || {}).href || null,
  folded_cells: document.querySelectorAll('details.hide.above-input').length,
  title: document.title,
  navigation: (() => {
    const nav = document.querySelector('.bd-sidebar-primary');
    if (!nav) return '';
    const copy = nav.cloneNode(true);
    copy.querySelectorAll('mjx-container, script').forEach(e => e.remove());
    return copy.textContent;
  })(),
  alts: [...document.images].map(i => [i.getAttribute('src'), i.getAttribute('alt')]),
  figure_links: document.querySelectorAll('a.figure-link > img').length,
};
"""
# A sample of the API reference and of its highlighted source (all are built; a few are opened).
API_PAGES = ["api/index.html", "api/annotated.multihead.html",
             "api/annotated.inference.search.html", "api/reference_numpy.attention.html",
             "_modules/annotated/multihead.html"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built by the documented command into a temporary folder."""
    out = tmp_path_factory.mktemp("book") / "site"
    subprocess.run([sys.executable, "-m", "book", "build", "--out", str(out)], cwd=ROOT,
                   check=True)
    return out


def pages(site: Path) -> list[Path]:
    """The site's pages (its _static/ folder holds theme templates that are not pages)."""
    return sorted(site.glob("*.html"))


@pytest.mark.slow
def test_site_has_every_chapter_and_its_notebook(site):
    names = {p.name for p in pages(site)}
    assert {"index.html", "search.html"} | {f"{c}.html" for c in CHAPTERS} <= names
    assert len(CHAPTERS) == 9
    for chapter in CHAPTERS:
        copy = site / "notebooks" / f"{chapter}.ipynb"
        assert copy.read_bytes() == (ROOT / "chapters" / f"{chapter}.ipynb").read_bytes()
    for page in API_PAGES:
        assert (site / page).is_file(), f"{page} is missing"
    assert "api/index.html" in (site / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def git_checkout() -> bool:
    """Whether the project is a git checkout (a clone; not a copy of its files, which the
    build offers no zip of)."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True)
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == ROOT


GIT_CHECKOUT = git_checkout()


def test_the_site_offers_the_project_as_a_zip_of_its_tracked_files(site):
    """The zip holds every tracked file (as the working tree has it), and each chapter links
    it beside its notebook; a copy of the project that is no git checkout has no zip."""
    import zipfile
    from book.project import PROJECT_ZIP
    if not GIT_CHECKOUT:
        assert not (site / PROJECT_ZIP).exists()
        return
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                             text=True, check=True).stdout.split("\0")
    present = sorted(name for name in tracked if name and (ROOT / name).is_file())
    with zipfile.ZipFile(site / PROJECT_ZIP) as archive:
        names = archive.namelist()
        assert names == [f"annotated-transformer/{name}" for name in present]
        assert archive.read("annotated-transformer/chapters/01_scaled_dot_product_attention"
                            ".ipynb") == (ROOT / "chapters" / f"{CHAPTERS[0]}.ipynb").read_bytes()
    for chapter in CHAPTERS:
        page = (site / f"{chapter}.html").read_text(encoding="utf-8")
        assert f'<a href="{PROJECT_ZIP}" download>' in page


def test_outside_a_git_checkout_the_zip_is_skipped_with_a_note(tmp_path, monkeypatch, capsys):
    from book import project
    monkeypatch.setattr(project, "ROOT", tmp_path)
    assert project.project_zip(tmp_path / "project.zip") is None
    assert not (tmp_path / "project.zip").exists()
    says(capsys.readouterr().err.strip(), "git checkout")


def test_reading_time_counts_prose_code_shown_source_output_and_figures():
    from book.stage import READERS, reading
    figure = {"output_type": "display_data", "data": {"image/png": "", "text/plain": ""}}
    listing = {"output_type": "display_data",
               "data": {"text/markdown": ["`annotated/x.py`\n", "```python\n", "a\n", "```"]}}
    table = {"output_type": "display_data", "data": {"text/markdown": ["| a |\n", "|---|\n"]}}
    printed = {"output_type": "stream", "name": "stdout", "text": ["counted\n"] * 50}
    result = {"output_type": "execute_result", "data": {"text/plain": ["1\n", "2"]}}
    nb = {"cells": [{"cell_type": "markdown", "source": ["word " * 300 + "注意力"]},
                    {"cell_type": "code", "source": ["x = 1\n"] * 8, "outputs": [listing, printed]},
                    {"cell_type": "code", "source": ["t"], "outputs": [table, result]},
                    {"cell_type": "code", "source": ["draw()"], "outputs": [figure, figure]}]}
    (low, high), counts = reading(nb)
    assert counts == "303 words, 14 lines of code, 54 lines of output, 2 figures"
    quick, slow = READERS
    assert low == 300 / quick.words + 3 / quick.hanzi + 14 / quick.code + 54 / quick.printed \
        + 2 * quick.figure
    assert high == 300 / slow.words + 3 / slow.hanzi + 14 / slow.code + 54 / slow.printed \
        + 2 * slow.figure
    assert low < high


def chapter_notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


CHAPTER_PATHS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")) + \
    sorted((ROOT / "chapters").glob("appendix_*.ipynb"))


@pytest.mark.parametrize("path", CHAPTER_PATHS, ids=lambda p: p.stem[:2])
def test_figure_captions_are_numbered_in_order_one_per_figure(path):
    """Each caption `**Figure C.K.**` follows its figure, numbered 1, 2, 3... in the chapter."""
    from book.figures import caption_problems, chapter_label
    assert caption_problems(chapter_notebook(path), chapter_label(path)) == []


@pytest.mark.parametrize("path", CHAPTER_PATHS, ids=lambda p: p.stem[:2])
def test_table_captions_are_numbered_in_order_each_under_its_table(path):
    """Each caption `**Table C.K.**` is a paragraph right under its table: a table in the same
    markdown cell, or the output of the code cell just above, which prints or shows it;
    numbered 1, 2, 3... in the chapter."""
    from book.figures import chapter_label
    cells, label = chapter_notebook(path)["cells"], chapter_label(path)
    found = [(i, m) for i, c in enumerate(cells) if c["cell_type"] == "markdown"
             for m in re.finditer(r"^\*\*Table (\w+\.\d+)\.\*\* \S", "".join(c["source"]), re.M)]
    assert [m.group(1) for _, m in found] == [f"{label}.{k}" for k in range(1, len(found) + 1)]
    for i, m in found:
        before = "".join(cells[i]["source"])[:m.start()].rstrip()
        if before:                                   # under a table of the same cell
            assert before.splitlines()[-1].startswith("|"), f"Table {m.group(1)}: no table above"
        else:                                        # under the output of the cell above
            assert cells[i - 1]["cell_type"] == "code" and cells[i - 1].get("outputs"), \
                f"Table {m.group(1)}: the cell above prints nothing"


def test_every_figure_has_a_caption():
    from book.figures import figures
    missing = [f"{path.name}, cell {f['cell']}" for path in CHAPTER_PATHS
               for f in figures(chapter_notebook(path)) if f["caption"] is None]
    assert not missing, f"{len(missing)} figures without a caption: " + "; ".join(missing)


def image(n: int = 0) -> dict:
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": f"iVBO{n}", "text/plain": ["<Figure>"]}}


def stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": [text]}


def test_staging_captions_each_figure_and_keeps_the_rest_of_the_caption_cell():
    from book.figures import caption_problems, figures, stage_figures
    first = "**Figure 3.1.** The weights of $\\sqrt{d_k}$ heads, in `code`."
    second = "**Figure 3.2.** The second panel."
    nb = {"cells": [
        cell("markdown", source="# Chapter 3 · Title"),
        {**cell("code", outputs=[stream("a\n"), image(1), stream("b\n"), image(2)]), "id": "two"},
        cell("markdown", source=f"{first}\n\n{second}\n\nMore prose, kept."),
        {**cell("code", outputs=[image(3)]), "id": "bare"},
        cell("markdown", source="Prose that is no caption.")]}
    assert caption_problems(nb, "3") == []
    assert [f["number"] for f in figures(nb)] == ["3.1", "3.2", None]
    stage_figures(nb, "3")
    shown = [(c.get("id"), [o["output_type"][:6] for o in c.get("outputs", [])],
              c["metadata"].get("tags"), c["metadata"].get("mystnb")) for c in nb["cells"]]
    assert shown[1:6] == [
        ("two", ["stream"], None, None),
        ("two-1", ["displa"], ["remove-input"],
         {"image": {"alt": "Figure 3.1. The weights of √d_k heads, in code."},
          "figure": {"caption": first, "name": "figure-3-1"}}),
        ("two-2", ["stream"], ["remove-input"], None),
        ("two-3", ["displa"], ["remove-input"],
         {"image": {"alt": "Figure 3.2. The second panel."},
          "figure": {"caption": second, "name": "figure-3-2"}}),
        ("c1markdown", [], None, None)]
    assert nb["cells"][5]["source"] == "More prose, kept."
    assert shown[6] == ("bare", ["displa"], None, {"image": {"alt": "Figure from chapter 3"}})
    assert all(c["source"] for c in nb["cells"])            # myst-nb skips an empty cell


@pytest.mark.parametrize("second, after, names", [
    ("**Figure 2.3.** Two.", [], ("cell 4", "'Figure 2.3'", "'Figure 2.2'")),
    ("**Figure 2.2.** Two.", ["Prose."], ("cell 5", "'Figure 2.2'", "no figure")),
    ("**Figure 1.2.** Two.", [], ("cell 4", "'Figure 1.2'", "'Figure 2.2'"))])
def test_a_caption_out_of_order_or_without_a_figure_is_named(second, after, names):
    from book.figures import caption_problems
    nb = {"cells": [cell("markdown", source="# T"), cell("code", outputs=[image()]),
                    cell("markdown", source="**Figure 2.1.** One."),
                    cell("code", outputs=[image(1)]),
                    *[cell("markdown", source=text) for text in after],
                    cell("markdown", source=second)]}
    problems = caption_problems(nb, "2")
    says(next((p for p in problems if p.startswith(names[0])), problems), *names)


def test_math_is_plain_text_in_alt_texts_and_titles():
    from book.figures import plain_text
    assert plain_text("**Figure 2.1.** Why $-\\infty$, with $\\sqrt{d_k}$ [here](x.md).") == (
        "Figure 2.1. Why −∞, with √d_k here.")


def test_a_chapters_links_to_the_books_pages_lead_to_them_on_the_site():
    nb = {"cells": [{"cell_type": "markdown", "source": "[MFU](../book/glossary.md#glossary-mfu), "
                     "[models](../book/start.md), [code](../annotated/model.py)"},
                    {"cell_type": "code", "source": "'[x](../book/glossary.md)'", "outputs": []}]}
    stage.link_book_pages(nb)
    assert nb["cells"][0]["source"] == ("[MFU](glossary.md#glossary-mfu), [models](start.md), "
                                        "[code](../annotated/model.py)")
    assert nb["cells"][1]["source"] == "'[x](../book/glossary.md)'"      # code stays as it is


def test_a_listing_links_its_module_page_and_its_source():
    from book import languages
    from book.stage import link_listings
    listing = {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": [
        "`annotated/multihead.py`\n", "```python\n", "@decorated\n", "class MultiHeadAttention:\n",
        "    pass\n", "```"]}}
    private = {"output_type": "display_data", "metadata": {}, "data": {"text/markdown":
               "`annotated/inference/search.py`\n```python\nclass _NextToken:\n```"}}
    table = {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": "| a |"}}
    nb = {"cells": [cell("code", outputs=[listing, private, table])]}
    link_listings(nb, {"annotated.multihead", "annotated.inference.search"},
                  languages.ALL[languages.ENGLISH].WORDS)
    text = [o["data"]["text/markdown"] for o in nb["cells"][0]["outputs"]]
    assert text[0].startswith(
        '<a class="listing-api" href="api/annotated.multihead.html#annotated.multihead.'
        'MultiHeadAttention" title="annotated.multihead in the API reference"><code>annotated/'
        'multihead.py</code></a> <a class="listing-source" href="_modules/annotated/multihead.'
        'html#MultiHeadAttention">(highlighted source)</a>\n```python\n@decorated\n')
    assert 'href="api/annotated.inference.search.html"' in text[1]      # no private anchor
    assert text[2] == "| a |"


@pytest.mark.slow
def test_every_listing_of_a_chapter_links_the_api_reference(site):
    from book.stage import LISTING
    for path in CHAPTER_PATHS:
        shown = sum(bool(LISTING.fullmatch("".join(o["data"]["text/markdown"]).split("\n")[0]))
                    for c in chapter_notebook(path)["cells"] for o in c.get("outputs", [])
                    if "text/markdown" in o.get("data", {}))
        page = (site / f"{path.stem}.html").read_text(encoding="utf-8")
        assert page.count('class="listing-api"') == shown, path.name


@pytest.fixture
def fake_sphinx(monkeypatch):
    """book.build with Sphinx replaced by a stand-in that writes `pages` (or fails): the
    output folder's handling without a real build, of the English edition alone."""
    from book import build as book_build
    from book import project, run_sphinx
    site = {"pages": ["index.html", "01.html"], "code": 0, "interrupt": None}

    def build_main(args):
        out = Path(args[-1])
        out.mkdir(parents=True, exist_ok=True)
        for name in site["pages"]:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(f"<html>{name}</html>")
        if site["interrupt"]:              # Ctrl-C, caught as Sphinx does (or broader)
            try:
                signal.raise_signal(signal.SIGINT)
            except site["interrupt"]:
                return 2
        return site["code"]
    monkeypatch.setattr(run_sphinx, "build_main", build_main)
    monkeypatch.setattr(project, "project_zip", lambda dest, leave_out: None)   # tested apart
    monkeypatch.setattr(languages, "TRANSLATIONS", {})      # one edition: the real build's
    # second edition is checked on the real site below
    return book_build, site


def test_a_damaged_translation_file_stops_the_build_before_any_work(tmp_path, fake_sphinx,
                                                                   monkeypatch):
    """A conflict marker in a Chinese page is named in seconds, not after the English edition
    has been built."""
    from book import i18n, run_sphinx
    build, site = fake_sphinx
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    shutil.copy(i18n.BOOK / "slips.md", book / "slips.md")
    zh = (i18n.BOOK / "zh" / "slips.md").read_text(encoding="utf-8")
    damaged = zh.replace("--- zh ---\n", "--- zh ---\n<<<<<<< HEAD\n", 1)
    (book / "zh" / "slips.md").write_text(damaged, encoding="utf-8")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "sources", lambda: [book / "slips.md"])
    monkeypatch.setattr(languages, "TRANSLATIONS", {"zh": languages.ALL["zh"]})
    calls = []
    monkeypatch.setattr(run_sphinx, "build_main", lambda args: calls.append(args) or 0)
    with pytest.raises(DataError) as refused:
        build.build(tmp_path / "site")
    says(refused, "slips.md:", "conflict marker", "keep one")
    assert not calls and not (tmp_path / "site").exists()


def slips_page_alone(tmp_path, monkeypatch, en: str | None = None, zh: str | None = None):
    """A book of one page, the Common slips page, in tmp_path/book (its English and its
    translation as given, or as they are), which book.i18n reads instead of the real one."""
    from book import i18n
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    for where, text in ((book / "slips.md", en), (book / "zh" / "slips.md", zh)):
        source = i18n.BOOK / where.relative_to(book)
        where.write_text(text if text is not None else source.read_text(encoding="utf-8"),
                         encoding="utf-8")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    monkeypatch.setattr(i18n, "sources", lambda: [book / "slips.md"])
    return book


@pytest.mark.parametrize("added, named", [("```{bogusdirective}\nhello\n```\n",
                                             "bogusdirective"),
                                            ("% ", "comment line")])
def test_a_unit_unfit_to_publish_is_noted_before_the_build_and_left_in_english(
        tmp_path, monkeypatch, capsys, added, named):
    """A directive the translation adds would fail the build on a temporary file's line; a
    comment line would hide the paragraph it starts."""
    from book import build, i18n
    zh = (i18n.BOOK / "zh" / "slips.md").read_text(encoding="utf-8")
    slips_page_alone(tmp_path, monkeypatch, zh=zh.replace("--- zh ---\n",
                                                          "--- zh ---\n" + added, 1))
    build.check_edition("zh")
    says(capsys.readouterr().err, "note", "book/zh/slips.md:", named, "published in English")
    unit = i18n.read_units(i18n.BOOK / "zh" / "slips.md", "zh")[0]      # the one changed
    page = i18n.translated_page(i18n.BOOK / "slips.md", "zh")
    assert unit.text.startswith(added) and unit.text not in page and unit.en in page


def test_translations_whose_english_changed_are_noted_before_the_build(tmp_path, monkeypatch,
                                                                       capsys):
    """They are published as they are: the build says so, and where to see the changes."""
    from book import build, i18n
    english = (i18n.BOOK / "slips.md").read_text(encoding="utf-8")
    unit = next(u for u in i18n.read_units(i18n.BOOK / "zh" / "slips.md", "zh")
                if len(u.en.split()) > 10)
    slips_page_alone(tmp_path, monkeypatch, en=english.replace(unit.en, unit.en + " Changed."))
    build.check_edition("zh")
    says(capsys.readouterr().err, "note", "book/zh/slips.md:", "changed since",
         "published as they are", "python -m book translations")


def test_a_missing_translation_file_is_noted_before_the_build(tmp_path, fake_sphinx,
                                                              monkeypatch, capsys):
    """A Chinese page deleted (or not yet begun): its chapter is published in English in the
    Chinese edition, and the build says so first, naming the file and the commands."""
    from book import i18n, run_sphinx
    build, site = fake_sphinx
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    for name in ("slips.md", "glossary.md"):
        shutil.copy(i18n.BOOK / name, book / name)
    shutil.copy(i18n.BOOK / "zh" / "slips.md", book / "zh" / "slips.md")
    monkeypatch.setattr(i18n, "BOOK", book)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    monkeypatch.setattr(i18n, "sources", lambda: [book / "slips.md", book / "glossary.md"])
    monkeypatch.setattr(languages, "TRANSLATIONS", {"zh": languages.ALL["zh"]})
    monkeypatch.setattr(run_sphinx, "build_main", lambda args: 1)     # stop at the first render
    with pytest.raises(DataError):
        build.build(tmp_path / "site")
    says(capsys.readouterr().err.splitlines()[0], "note", "zh edition", "zh/glossary.md",
         "in English", "python -m book translations", "--add-missing")


def test_a_rebuild_replaces_only_what_the_last_build_wrote(tmp_path, fake_sphinx):
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "CNAME").write_text("book.example.org\n")
    site["pages"] = ["index.html", "_static/new.css"]              # 01.html is gone now
    build.build(out)
    assert (out / ".git" / "HEAD").is_file() and (out / "CNAME").is_file()
    assert (out / "_static" / "new.css").is_file() and not (out / "01.html").exists()
    assert "01.html" not in (out / publish.MANIFEST).read_text()


@pytest.mark.parametrize("inside", ["zh", "_static", "new"])
def test_a_site_is_never_built_inside_a_site_this_command_built(tmp_path, fake_sphinx, inside):
    """A folder of the site (or a new one in it) is not empty or holds no list of its own:
    the line names the site to build into, not "empty it yourself", which would break it."""
    build, _ = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    (out / "zh").mkdir(exist_ok=True)
    (out / "zh" / "index.html").write_text("<p>zh</p>")
    (out / "_static").mkdir(exist_ok=True)
    (out / "_static" / "a.css").write_text("p {}")
    with pytest.raises(DataError) as error:
        publish.check_out(out / inside)
    says(error, f"inside {out}", f"--out {out}")
    assert "empty it" not in str(error.value) and not (out / "new").exists()


@pytest.mark.parametrize("inside", ["chapters", "book", "tests", "experiments", "figures"])
def test_a_site_is_never_built_among_the_project_s_sources(inside):
    """Built into chapters/, its notebook copies would be collected by the tests."""
    out = publish.SOURCES[0].parent / inside / "site"
    with pytest.raises(DataError) as error:
        publish.check_out(out)
    says(error, f"{inside}/", "--out", "build/site")
    assert not out.exists()


def test_a_full_disk_during_the_build_names_the_site_folder(tmp_path, monkeypatch, capsys):
    import errno
    import book.__main__ as book_command

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(book_command, "build", full)
    with pytest.raises(SystemExit) as exit_:
        book_command.main(["build", "--out", str(tmp_path / "site")])
    says(capsys.readouterr().err.strip(), "no space left", str(tmp_path / "site"), "unchanged",
         "--out")
    assert exit_.value.code == 1


def test_a_failed_build_leaves_the_site_that_was_there(tmp_path, fake_sphinx):
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    site["code"], site["pages"] = 1, ["index.html", "other.html"]
    with pytest.raises(DataError) as error:
        build.build(out)
    says(error, "unchanged")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]       # no temporary folder left


def test_the_folder_a_killed_build_left_is_removed_by_the_next_build_of_that_site(
        tmp_path, fake_sphinx, capsys):
    """SIGKILL leaves the build's working folder beside the site; the next build of the same
    site removes it and says so, and leaves another site's folder (site-2) alone."""
    build, _ = fake_sphinx
    killed = tmp_path / ".book-site-k1ll3d_x"
    other = tmp_path / ".book-site-2-abcdefgh"
    for folder in (killed, other):
        (folder / "html").mkdir(parents=True)
    build.build(tmp_path / "site")
    assert not killed.exists() and other.is_dir()
    says(capsys.readouterr().err.strip().splitlines()[0], "removed", str(killed), "killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".book-site-2-abcdefgh", "site"]


@pytest.mark.parametrize("case", ["not a site", "a file in the way", "would overwrite",
                                  "a project folder", "a place no folder can be made"])
def test_an_output_folder_that_is_not_a_site_built_here_is_refused(tmp_path, fake_sphinx,
                                                                   case):
    build, site = fake_sphinx
    out = tmp_path / "site"
    out.mkdir()
    if case == "not a site":
        (out / "notes.txt").write_text("mine\n")
        (out / ".buildinfo").write_text("an earlier Sphinx site, or a copy of one\n")
        names = (str(out), "no site built by this command")
    elif case == "a file in the way":
        out.rmdir()
        out.write_text("a file\n")
        out = out / "site"
        names = (str(tmp_path / "site"), "a file", "--out")
    elif case == "a project folder":
        (out / ".git").mkdir()
        (out / "README.md").write_text("mine\n")
        names = (str(out), "no site built by this command", "another --out")
    elif case == "a place no folder can be made":
        out = Path("/proc/annotated-site")               # a folder in /proc: none, even for root
        names = ("/proc", "annotated-site", "another --out")
    else:
        build.build(out)
        (out / "CNAME").write_text("mine\n")
        site["pages"] = ["index.html", "CNAME"]
        names = ("would overwrite", "CNAME")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(DataError) as error:
        build.build(out)
    says(error, *names)
    assert case != "a project folder" or "empty it" not in str(error.value)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_notebook_that_is_not_json_is_one_line(tmp_path, fake_sphinx, monkeypatch):
    build, _ = fake_sphinx
    broken = tmp_path / "chapters" / "01_broken.ipynb"
    broken.parent.mkdir()
    broken.write_text('{"cells": [')
    monkeypatch.setattr(stage, "CHAPTERS", broken.parent)
    monkeypatch.setattr(stage, "ROOT", tmp_path)
    with pytest.raises(DataError) as error:
        build.build(tmp_path / "site")
    says(error, "01_broken.ipynb", "readable notebook")


def tree(folder: Path) -> dict:
    """Every file and folder below `folder` (links as their target), with the files' bytes."""
    return {p: (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def entry(path: Path, name: str) -> str:
    """A manifest line for `name` with the sha256 of the file at `path`."""
    return f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {name}"


# A manifest that names something a build did not write: what it says, and the refusal's words.
# Each line carries the real sha256 of the file it names, so the hash alone would not save it.
FOREIGN_MANIFESTS = {
    "a plain list of names": (lambda out, v: ["notes.txt", "../victims/outside.txt",
                                              str(v / "abs.txt")],
                              "is not a list this command wrote"),
    "a path up and out": (lambda out, v: [entry(v / "outside.txt", "../victims/outside.txt")],
                          "goes up out of the folder"),
    "an absolute path": (lambda out, v: [entry(v / "abs.txt", str(v / "abs.txt"))],
                         "is an absolute path"),
    "a path through a link": (lambda out, v: [entry(v / "outside.txt", "link/outside.txt")],
                              "link/outside.txt, a file of the site the last build wrote, is now "
                              "a link that leads outside the folder"),
    "a folder": (lambda out, v: [entry(out / "zzz_mydir" / "f.txt", "zzz_mydir")],
                 "zzz_mydir, a file of the site the last build wrote, is now a folder"),
    "the folder itself": (lambda out, v: [entry(out / "notes.txt", ".")],
                          "'.' is not a plain relative path"),
    "an empty line": (lambda out, v: [""], "expected '<sha256>  <path>', found ''"),
    "a name without its sha256": (lambda out, v: ["notes.txt"], "found 'notes.txt'"),
}


@pytest.mark.parametrize("case", FOREIGN_MANIFESTS)
def test_a_manifest_naming_what_the_build_did_not_write_is_refused_before_any_change(
        tmp_path, fake_sphinx, case):
    build, site = fake_sphinx
    out, victims = tmp_path / "site", tmp_path / "victims"
    build.build(out)
    victims.mkdir()
    (victims / "outside.txt").write_text("v\n")
    (victims / "abs.txt").write_text("v\n")
    (out / "notes.txt").write_text("notes\n")
    (out / "zzz_mydir").mkdir()
    (out / "zzz_mydir" / "f.txt").write_text("k\n")
    (out / "link").symlink_to(victims)
    lines, words = FOREIGN_MANIFESTS[case]
    manifest = (out / publish.MANIFEST).read_text().splitlines()
    if case == "a plain list of names":
        manifest = []
    (out / publish.MANIFEST).write_text("\n".join(manifest + lines(out, victims)) + "\n")
    site["pages"] = ["other.html"]                 # a rebuild would remove every old page
    before = tree(tmp_path)
    with pytest.raises(DataError, match=re.escape(words)) as refused:
        build.build(out)
    assert str(out) in str(refused.value) and "\n" not in str(refused.value)
    assert tree(tmp_path) == before


def test_a_rebuild_deletes_only_listed_files_still_as_it_wrote_them(tmp_path, fake_sphinx):
    build, site = fake_sphinx
    out = tmp_path / "site"
    site["pages"] = ["index.html", "01.html", "sub/old.html"]
    build.build(out)
    assert (out / publish.MANIFEST).read_text().splitlines()[0] == publish.MANIFEST_HEADER
    (out / "CNAME").write_text("book.example\n")               # not listed: stays
    site["pages"] = ["index.html"]
    build.build(out)
    assert (out / "CNAME").read_text() == "book.example\n"
    assert (out / "index.html").read_text() == "<html>index.html</html>"
    assert not (out / "01.html").exists() and not (out / "sub").exists()
    listed = [line.split("  ", 1)[1]
              for line in (out / publish.MANIFEST).read_text().splitlines()[1:]]
    assert [name for name in listed if not name.startswith("notebooks/")] == ["index.html"]
    assert not [p for p in out.iterdir() if p.name.startswith(".book-old-")]


@pytest.mark.parametrize("edited", ["index.html", "01.html"])
def test_a_page_edited_since_the_last_build_is_refused_before_any_work(tmp_path, fake_sphinx,
                                                                      edited):
    """An edit to a page the last build wrote, whether the new site writes it again or not,
    is refused before the build starts: a rebuild would lose it."""
    build, site = fake_sphinx
    out = tmp_path / "site"
    site["pages"] = ["index.html", "01.html"]
    build.build(out)
    (out / edited).write_text("edited by hand\n")
    site["pages"] = ["index.html"]
    before = tree(tmp_path)
    with pytest.raises(DataError) as refused:
        build.build(out)
    says(refused, str(out / edited), "changed since", "move it out", "build again")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("failure, stop, names", [
    (OSError(28, "No space left on device", "02.html"), DataError,
     ("02.html", "No space left", "site", "back")),
    (KeyboardInterrupt, KeyboardInterrupt, None)])
def test_a_rebuild_that_fails_half_way_puts_the_old_site_back(tmp_path, fake_sphinx,
                                                             monkeypatch, failure, stop, names):
    build, site = fake_sphinx
    out = tmp_path / "site"
    site["pages"] = ["index.html", "01.html", "_static/a.css"]
    build.build(out)
    (out / "CNAME").write_text("book.example.org\n")
    site["pages"] = ["index.html", "02.html", "_static/b/c.css"]
    before = tree(tmp_path)
    moves = []

    def failing(move):
        """`move`, failing on the second file of the new site (in the build's temporary
        folder, .book-*/site/) that it moves."""
        def wrapped(src, dst, *args, **kwargs):
            parts = Path(src).relative_to(tmp_path).parts
            if len(parts) > 2 and parts[0].startswith(".book-") and parts[1] == "site":
                moves.append(src)
                if len(moves) == 2:
                    raise failure
            return move(src, dst, *args, **kwargs)
        return wrapped
    monkeypatch.setattr(build.os, "replace", failing(os.replace))
    monkeypatch.setattr(build.shutil, "move", failing(shutil.move))
    with pytest.raises(stop) as stopped:
        build.build(out)
    monkeypatch.undo()
    if names:
        says(stopped, *names)
    assert len(moves) == 2
    assert tree(tmp_path) == before                # no aside or temporary folder left either


@pytest.mark.parametrize("caught", [KeyboardInterrupt, BaseException])
def test_ctrl_c_in_sphinx_is_interrupted_and_leaves_the_site(tmp_path, fake_sphinx, capsys,
                                                             caught, ctrl_c):
    """Sphinx catches KeyboardInterrupt (and reports a failed build): Ctrl-C must still end
    the command as one, whatever Sphinx catches."""
    from book.__main__ import main
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    before = tree(tmp_path)
    site["interrupt"], site["pages"] = caught, ["index.html", "other.html"]
    with pytest.raises(SystemExit) as stopped:
        main(["build", "--out", str(out)])
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines()[-1] == "interrupted"
    assert tree(tmp_path) == before


# `python -m book build --out OUT PAGE...` in a process of its own, with Sphinx replaced by a
# stand-in that writes the PAGEs, which sends itself SIGNUM (as `kill` or `timeout` would) at a
# set moment: while Sphinx runs, while a part of Sphinx that catches every exception runs (as
# autodoc does while it imports a module: it logs a warning and goes on), or as the swap moves
# the first old file aside.
STOPPED_BUILD = """
import logging, os, signal, sys, time
from pathlib import Path
for number in (signal.SIGTERM, signal.SIGHUP):           # as a terminal leaves them
    signal.signal(number, signal.SIG_DFL)
from book import languages, project, run_sphinx
from book.__main__ import main
out, signum, moment, pages = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]

def build_main(args):
    for name in pages:
        (Path(args[-1]) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(args[-1]) / name).write_text(f"<html>{name}</html>")
    if moment == "sphinx":
        os.kill(os.getpid(), signum)
    if moment == "swallowed":
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)
        except BaseException as error:
            logging.getLogger("sphinx.ext.autodoc").warning("failed to import: %r", error)
        time.sleep(120)                                    # and Sphinx goes on
    return 0

def replace(source, target, real=os.replace, sent=[]):
    last = str(target) == os.path.join(out, ".book-files")        # the last move: the manifest
    if (moment == "swap" and ".book-old-" in str(target) or moment == "published" and last) \
            and not sent:
        print("sent at the swap", flush=True)
        sent.append(signum)
        os.kill(os.getpid(), signum)
    return real(source, target)

run_sphinx.build_main, os.replace = build_main, replace
project.project_zip = lambda dest, leave_out: None
languages.TRANSLATIONS = {}
main(["build", "--out", out])
"""


@pytest.mark.parametrize("signum, moment", [(signal.SIGTERM, "sphinx"), (signal.SIGTERM, "swap"),
                                            (signal.SIGHUP, "swap"), (signal.SIGHUP, "swallowed"),
                                            (signal.SIGTERM, "published")])
def test_sigterm_or_sighup_leaves_the_old_site_and_no_temporary_folder(tmp_path, fake_sphinx,
                                                                     moment, signum):
    """A build stopped by SIGTERM or SIGHUP (from `timeout`, a service manager, a closed
    terminal), even while its swap moves the old files aside, or while a part of Sphinx that
    swallows it runs: it ends at once as interrupted, with the signal's own exit status and no
    other line; the old site is there as it was, and no temporary folder is left beside the
    output folder or inside it. A stop during the last move lands once the new site is
    published whole, and the line says so."""
    build, site = fake_sphinx
    out = tmp_path / "site"
    site["pages"] = ["index.html", "01.html", "_static/a.css"]
    build.build(out)
    (out / "CNAME").write_text("book.example.org\n")
    before = tree(tmp_path)
    done = subprocess.run([sys.executable, "-c", STOPPED_BUILD, str(out), str(int(signum)),
                           moment, "index.html", "02.html", "_static/b/c.css"],
                          cwd=ROOT, capture_output=True, text=True, timeout=100)
    name = signal.Signals(signum).name
    note = {"swap": f"; the site in {out} is as it was",
            "published": f"; the new site was published whole in {out} before the stop took "
                         f"effect"}.get(moment, "")
    assert (done.returncode, done.stderr.splitlines()) == (
        128 + signum, [f"interrupted by {name}{note}"]), done.stderr
    assert ("sent at the swap" in done.stdout) == (moment in ("swap", "published"))
    if moment == "published":
        assert (out / "02.html").exists() and not (out / "01.html").exists()
        assert not [p for p in tmp_path.rglob(".book-*") if p.name != ".book-files"]
    else:
        assert tree(tmp_path) == before


def test_a_second_build_into_the_same_folder_waits_for_the_first(tmp_path, fake_sphinx,
                                                                 capsys):
    """Two builds of one site (one through a link to it): the second waits, saying so, and then
    publishes over the first's files, which it does not take for a reader's edits."""
    import fcntl
    import threading
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    held = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)   # the first build, still writing
    fcntl.flock(held, fcntl.LOCK_EX)
    threading.Timer(1.0, os.close, [held]).start()
    (tmp_path / "link").symlink_to(out)
    build.build(tmp_path / "link")
    says(capsys.readouterr().err, "another command is writing", str(out), "waiting")
    assert (out / "index.html").exists()


def test_the_old_files_of_a_killed_swap_are_named_before_any_change(tmp_path, fake_sphinx):
    """A build killed outright (SIGKILL) while it swapped leaves the old files in a folder of
    the output folder: the next build names it and what to do, instead of publishing it."""
    build, site = fake_sphinx
    out = tmp_path / "site"
    build.build(out)
    (out / ".book-old-1a2b3c4d").mkdir()
    (out / ".book-old-1a2b3c4d" / "01.html").write_text("<html>old</html>")
    before = tree(tmp_path)
    with pytest.raises(DataError) as refused:
        build.build(out)
    message = str(refused.value)
    assert str(out / ".book-old-1a2b3c4d") in message and "move them back" in message
    assert tree(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("module", ["torch", "sphinx.cmd.build"])
def test_ctrl_c_while_the_build_command_imports_is_interrupted(tmp_path, module):
    """Ctrl-C before @command is in place (the imports take seconds): the same one line."""
    script = f"""
import runpy, sys
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt
sys.meta_path.insert(0, CtrlC())
sys.argv = ["book", "build", "--out", {str(tmp_path / "site")!r}]
runpy.run_module("book", run_name="__main__", alter_sys=True)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True)
    assert (done.returncode, done.stderr) == (130, "interrupted\n")
    assert not (tmp_path / "site").exists()


@pytest.mark.slow
@pytest.mark.parametrize("signum, said", [(signal.SIGINT, "interrupted"),
                                           (signal.SIGTERM, "interrupted by SIGTERM")])
@pytest.mark.parametrize("module", ["numpy", "sphinx"])
def test_a_stop_while_the_book_command_imports_is_one_line_never_swallowed(tmp_path, signum,
                                                                          said, module):
    """A real signal as numpy's import begins (inside torch's, where a library that catches
    too much could swallow a Ctrl-C and go on) or Sphinx's: the imports finish, then the stop
    is the one line, with the signal's status; nothing is checked or built."""
    done = subprocess.run([sys.executable, "-m", "book", "translations"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env=stop_at_import(tmp_path, module, signum))
    assert (done.returncode, done.stderr, done.stdout) == (128 + signum, said + "\n", "")


@pytest.mark.parametrize("check", ["translations", "terms"])
def test_a_check_with_stdout_closed_says_so(check):
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m book {check} >&-"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    says(done.stderr.strip(), "stdout is closed", check)


def cell(kind: str, **fields) -> dict:
    base = {"cell_type": kind, "id": f"c{len(fields)}{kind}", "metadata": {}, "source": "x"}
    if kind == "code":
        base.update(execution_count=1, outputs=[])
    return {**base, **fields}


TITLE = cell("markdown", source="# Chapter 1 · A title\n\nProse.")
FIGURE = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBO"}}
# Damaged chapters: the notebook, and the words of the one-line refusal.
DAMAGED_NOTEBOOKS = {
    "a JSON list": ([], "expected a notebook (a JSON object), found a JSON list"),
    "an empty object": ({}, "expected a Jupyter notebook of nbformat 4"),
    "no cells": ({"cells": []}, "found no cells"),
    "a code cell first": ({"cells": [cell("code")]}, "found a code cell"),
    "a code cell without outputs": ({"cells": [TITLE, {k: v for k, v in cell("code").items()
                                                        if k != "outputs"}]},
                                    "'outputs' is a required property (at cells/1)"),
    "a figure without data": ({"cells": [TITLE, cell("code", outputs=[
        {k: v for k, v in FIGURE.items() if k != "data"}])]},
        "'data' is a required property (at cells/1/outputs/0)"),
    "a stream without text": ({"cells": [TITLE, cell("code", outputs=[
        {"output_type": "stream", "name": "stdout"}])]},
        "'text' is a required property (at cells/1/outputs/0)"),
}


@pytest.mark.parametrize("case", DAMAGED_NOTEBOOKS)
def test_a_damaged_notebook_is_one_line_naming_it(tmp_path, fake_sphinx, monkeypatch, case):
    build, _ = fake_sphinx
    nb, words = DAMAGED_NOTEBOOKS[case]
    if isinstance(nb, dict) and "cells" in nb:
        nb = {**nb, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    damaged = tmp_path / "chapters" / "01_damaged.ipynb"
    damaged.parent.mkdir()
    damaged.write_text(json.dumps(nb))
    monkeypatch.setattr(stage, "CHAPTERS", damaged.parent)
    monkeypatch.setattr(stage, "ROOT", tmp_path)
    with pytest.raises(DataError) as refused:
        build.build(tmp_path / "site")
    message = str(refused.value)
    assert message.startswith(f"{damaged} is not a chapter the site can show: ")
    assert words in message and "git checkout -- chapters/01_damaged.ipynb" in message
    assert "\n" not in message and not (tmp_path / "site").exists()


def test_a_sound_notebook_passes_the_check_and_outputs_without_data_are_no_figures():
    from book.stage import draws_only, notebook_problem, reading
    nb = {"cells": [TITLE, cell("code", outputs=[FIGURE])], "metadata": {}, "nbformat": 4,
          "nbformat_minor": 5}
    assert notebook_problem(nb) is None and draws_only(nb["cells"][1])
    bare = cell("code", outputs=[{"output_type": "display_data"}])
    assert not draws_only(bare)
    assert reading({"cells": [bare]})[1] == ("0 words, 1 lines of code, 0 lines of output, "
                                             "0 figures")


def test_every_chapter_page_and_the_index_give_a_reading_time(site):
    for chapter in CHAPTERS:
        page = (site / f"{chapter}.html").read_text(encoding="utf-8")
        assert re.search(r'class="reading-time">About \d+ to \d+ minutes to read \([\d,]+ words',
                         page)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert re.search(rf"Reading all {len(CHAPTERS)} chapters takes a careful first reader about "
                     rf"\d+ to \d+ hours", index)


def test_site_names_no_network_resource(site):
    """No page or stylesheet points a script, style, font or image at another host."""
    remote = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//""")
    for path in sorted(p for p in site.rglob("*.html") if "_static" not in p.parts) + \
            sorted(site.rglob("*.css")):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"<a\s[^>]*>", "", text)     # plain links to read elsewhere are allowed
        assert not remote.search(text), f"{path.relative_to(site)} loads {remote.search(text)[0]}"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    """The site served over http on 127.0.0.1; yields its base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium driven through the system's chromedriver (nothing is downloaded)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("no headless browser: install Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver) to check the site's pages")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.set_script_timeout(60)
    driver.get("about:blank")
    driver.get_log("browser"), driver.get_log("performance")     # the start page's own
    yield driver
    driver.quit()


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for since the last call (Chrome's performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


@functools.lru_cache(maxsize=None)
def fetch(url: str) -> tuple[int, str]:
    """HTTP status and text of a page of the local site."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def check_link(url: str) -> str | None:
    """None if an internal link resolves (and its #fragment exists), else the problem."""
    target, fragment = urldefrag(url)
    status, text = fetch(target)
    if status != 200:
        return f"{url}: HTTP {status}"
    if fragment and target.endswith(".html") and f'id="{fragment}"' not in text:
        return f"{url}: no element with id {fragment!r}"
    return None


def visit(driver, url: str) -> dict:
    """Open one page, wait until it settles, and return what the assertions need."""
    driver.get_log("browser"), driver.get_log("performance")     # drop the previous page's
    driver.get(url)
    assert driver.execute_async_script(SETTLED_JS), f"{url}: MathJax or an image failed"
    facts = driver.execute_script(PAGE_FACTS_JS)
    facts["prose"] = driver.execute_script(VISIBLE_PROSE_JS)
    facts["errors"] = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    facts["requests"] = requested_urls(driver)
    driver.execute_script("window.scrollTo(0, 0)")
    return facts


def page_problems(name: str, facts: dict, server: str) -> list[str]:
    """What is wrong with one visited page, one line each."""
    problems = [f"console error: {e}" for e in facts["errors"]]
    problems += [f"requested {u}" for u in facts["requests"]
                 if not u.startswith((server, "data:", "blob:", "about:"))]
    problems += [f"image not loaded: {u}" for u in facts["broken_images"]]
    raw = re.findall(r"\$\$?[^$\s][^$]*\$|\\\(|\\\[", facts["prose"])
    problems += [f"math not rendered: {r[:60]!r}" for r in raw]
    if facts["math_errors"] or facts["wide_math"]:
        problems.append(f"{facts['math_errors']} MathJax errors, "
                        f"{facts['wide_math']} equations wider than the column")
    problems += [f"printed output or a table wider than the column: {text!r}"
                 for text in facts["wide_output"]]
    problems += [f"broken link {problem}" for link in set(facts["links"])
                 if link.startswith(server) and (problem := check_link(link))]
    problems += [f"raw math in the {where}: {text.strip()[:80]!r}"
                 for where, text in [("<title>", facts["title"]),
                                     ("navigation", facts["navigation"])]
                 if re.search(r"\$|\\\(|\\\[", text)]
    problems += [f"image {src} has {'no alt text' if not alt else f'the alt text {alt!r}'}"
                 for src, alt in facts["alts"] if not alt or not alt.strip()
                 or re.fullmatch(r"\S*[0-9a-f]{16,}\S*|\S+\.(png|svg|jpe?g|gif)", alt.strip())]
    folder, _, stem = name.removesuffix(".html").rpartition("/")     # zh/01_... : zh edition
    if stem in CHAPTERS and folder in ("", *languages.TRANSLATIONS):          # a chapter's page
        folder = f"{folder}/" if folder else ""
        from book.project import PROJECT_ZIP
        following = CHAPTERS.index(stem) + 1
        expected = (f"{folder}{CHAPTERS[following]}.html" if following < len(CHAPTERS)
                    else None)
        next_page = facts["next"] and urlsplit(facts["next"]).path.lstrip("/")
        # the last chapter's 'next' leads past the chapters (the appendix, the API reference)
        wrong_next = (next_page != expected if expected
                      else next_page in {f"{folder}{c}.html" for c in CHAPTERS})
        problems += [message for failed, message in [
            (facts["rendered_math"] == 0, "no math rendered"),
            (facts["folded_cells"] == 0, "no figure cell folded"),
            (server + f"{folder}notebooks/{stem}.ipynb" not in facts["links"],
             "no download link"),
            ((server + PROJECT_ZIP in facts["links"]) != GIT_CHECKOUT,
             "no link to the project's zip" if GIT_CHECKOUT else "a link to a zip not built"),
            (facts["figure_links"] < len(facts["alts"]), "a figure that is no link to its file"),
            (wrong_next, f"'next' goes to {next_page}, not "
                         f"{expected or 'a page after the chapters'}")] if failed]
    return [f"{name}: {problem}" for problem in problems]


@pytest.mark.slow
def test_every_page_in_a_browser(site, server, browser):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for name in [path.name for path in pages(site)] + API_PAGES:
        facts = visit(browser, server + name)
        browser.save_screenshot(str(SCREENSHOTS / f"{name[:-5].replace('/', '_')}.png"))
        problems += page_problems(name, facts, server)
        if name == "index.html":
            first = urlsplit(facts["next"] or "").path.lstrip("/")
            assert first == "start.html", f"index: 'next' goes to {first}"
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_every_chinese_page_in_a_browser_and_the_language_switch_both_ways(site, server,
                                                                           browser):
    """The Chinese edition (zh/): every page opens clean, is marked as Chinese, and its switch
    leads to the same page in English, whose switch leads back; the glyphs come from a CJK
    font on this machine (the screenshots in build/screenshots/ are looked at by a person)."""
    from selenium.webdriver.common.by import By
    fonts = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout
    assert fonts.strip(), "no CJK font here: apt-get install fonts-wqy-microhei"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for path in sorted((site / "zh").glob("*.html")):
        name = f"zh/{path.name}"
        facts = visit(browser, server + name)
        browser.save_screenshot(str(SCREENSHOTS / f"zh_{path.stem}.png"))
        problems += page_problems(name, facts, server)
        lang = browser.execute_script("return document.documentElement.lang")
        switch = browser.find_element(By.CSS_SELECTOR, "a.language-switch")
        problems += [f"{name}: {p}" for failed, p in [
            (not lang.startswith("zh"), f"marked as {lang!r}"),
            (switch.get_attribute("href") != server + path.name,
             f"the switch leads to {switch.get_attribute('href')}")] if failed]
    assert not problems, "\n".join(problems)
    assert {p.name for p in (site / "zh").glob("*.html")} == {p.name for p in pages(site)}
    visit(browser, server + "01_scaled_dot_product_attention.html")
    browser.find_element(By.CSS_SELECTOR, "a.language-switch").click()
    assert browser.current_url == server + "zh/01_scaled_dot_product_attention.html"
    assert "缩放点积注意力" in browser.title
    browser.find_element(By.CSS_SELECTOR, "a.language-switch").click()
    assert browser.current_url == server + "01_scaled_dot_product_attention.html"


@pytest.mark.slow
def test_the_chinese_search_finds_chinese_words(site, server, browser):
    """Sphinx's search of the Chinese edition (its index split into words by jieba) finds the
    chapter of a Chinese term."""
    from selenium.webdriver.support.ui import WebDriverWait
    browser.get(server + "zh/search.html?q=" + urllib.parse.quote("掩码"))     # masks
    found = WebDriverWait(browser, 60).until(lambda d: d.execute_script(   # all shown: the
        "const done = document.querySelector('#search-results .search-summary');"  # summary
        "if (!done || !done.innerText.trim()) return null;"                # is written last
        "return Array.from(document.querySelectorAll('#search-results li a'),"
        "                  a => a.getAttribute('href'));"))
    assert any("02_masking" in href for href in found), found


# The first figure of the page: its width on the page, where it links, and its top on screen.
FIRST_FIGURE_JS = """
const img = document.querySelector('a.figure-link > img');
img.scrollIntoView({block: 'center'});
const caption = img.closest('figure')?.querySelector('figcaption .caption-text');
return {width: img.getBoundingClientRect().width, href: img.parentElement.href,
        caption: caption ? caption.textContent.trim() : ''};
"""
# The figure opened at full size, once its image has loaded (null if none is open).
OPENED_JS = """
const done = arguments[arguments.length - 1];
const view = document.querySelector('.figure-view');
if (!view) { done(null); return; }
const img = view.querySelector('img');
const report = () => done({src: img.src, width: img.getBoundingClientRect().width,
                           caption: view.innerText, focused: document.activeElement === view});
img.complete ? report() : (img.onload = img.onerror = report);
"""


@pytest.mark.slow
def test_a_click_on_a_figure_opens_it_larger_and_escape_closes_it(site, server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    visit(browser, server + f"{CHAPTERS[0]}.html")
    figure = browser.execute_script(FIRST_FIGURE_JS)
    browser.save_screenshot(str(SCREENSHOTS / "figure-in-page.png"))
    browser.find_element(By.CSS_SELECTOR, "a.figure-link > img").click()
    opened = browser.execute_async_script(OPENED_JS)
    browser.save_screenshot(str(SCREENSHOTS / "figure-opened.png"))
    assert opened, "a click on the figure opened nothing"
    assert opened["src"] == figure["href"] and opened["focused"]
    assert opened["width"] > figure["width"] * 1.1, (opened, figure)
    assert opened["caption"].startswith(figure["caption"][:12]), (opened, figure)
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert browser.execute_async_script(OPENED_JS) is None, "Escape left the figure open"
    assert browser.current_url == server + f"{CHAPTERS[0]}.html"


# ---- the exercises' worked solutions: folded on the site, or left out of it ----

def test_each_solution_is_folded_under_its_heading_until_the_end():
    from book.solutions import folded
    nb = {"cells": [cell("markdown", source="# Solutions"),
                    cell("markdown", source="## Exercise 2.1 · One\n\nWhy."),
                    cell("code", source="x = 1", outputs=[]),
                    cell("markdown", source="More.\n\n## Exercise 2.2 · Two\n\nBecause."),
                    cell("code", source="y = 2", outputs=[])]}
    out = folded(nb, "Show it")
    text = "\n".join("".join(c["source"]) for c in out["cells"])
    assert text.count('<details class="solution">') == 2 and text.count("</details>") == 2
    assert text.index("## Exercise 2.1") < text.index("<details") < text.index("Why.")
    assert text.index("More.") < text.index("</details>") < text.index("## Exercise 2.2")
    assert out["cells"][-1]["source"] == "</details>" and "<summary>Show it</summary>" in text


@pytest.mark.parametrize("lang", list(languages.ALL))
def test_a_chapters_solutions_paragraph_leads_to_its_page_or_is_left_out(lang):
    words = languages.ALL[lang].WORDS
    chapter = ROOT / "chapters" / "02_masking.ipynb"
    nb = {"cells": [cell("markdown", source=f"Intro.\n\n{words['solutions_mark']} The notebook "
                                              f"`x`.\n\nAfter.")]}
    stage.solutions_paragraph(nb, chapter, stage.Edition(lang, solutions=True))
    text = nb["cells"][0]["source"]
    assert "solutions/02_masking.ipynb" in text and "Intro." in text and "After." in text
    assert "`x`" not in text
    nb = {"cells": [cell("markdown", source=f"{words['solutions_mark']} The notebook `x`.")]}
    stage.solutions_paragraph(nb, chapter, stage.Edition(lang, solutions=False))
    assert nb["cells"][0]["source"] == ""


def test_every_chapter_has_a_solutions_paragraph_in_every_language():
    for path in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"):
        for lang in languages.ALL:
            nb = chapter_notebook(path)
            if lang != languages.ENGLISH:
                from book import i18n
                nb = i18n.translated_notebook(nb, path, lang)
            prose = "\n".join("".join(c["source"]) for c in nb["cells"])
            assert languages.ALL[lang].WORDS["solutions_mark"] in prose, (path.name, lang)


def readable(path: Path) -> str:
    """A file's text as a reader of it sees it: a notebook's cells and outputs, else the file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return text
    cells = json.loads(text)["cells"]
    return "\n".join("".join(c["source"]) + "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for o in c.get("outputs", [])) for c in cells)


def solution_phrases() -> set[str]:
    """Lines of the worked solutions (code and prose, in every language) that no other file of
    the project holds: if one shows up in a site, the site shows a solution."""
    from book import i18n, solutions
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                            text=True).stdout.split()
    others = [ROOT / n for n in listed if not solutions.is_solution_file(n)
              and (ROOT / n).suffix in (".py", ".md", ".ipynb", ".txt", ".js", ".css")]
    elsewhere = "\n".join(readable(p) for p in others if p.is_file())
    found = set()
    for path in solutions.notebooks():
        texts = [readable(path)] + [u.text for lang in languages.TRANSLATIONS
                                    for u in i18n.read_units(i18n.translation_file(path, lang),
                                                             lang)]
        for text in texts:
            found |= {line.strip() for line in text.split("\n")
                      if len(line.strip()) >= 30 and line.strip() not in elsewhere}
    return found


@pytest.fixture(scope="module")
def course_site(tmp_path_factory):
    """The site a course builds for its students: `--without-solutions`."""
    out = tmp_path_factory.mktemp("course") / "site"
    subprocess.run([sys.executable, "-m", "book", "build", "--out", str(out),
                    "--without-solutions"], cwd=ROOT, check=True)
    return out


@pytest.mark.slow
def test_a_site_without_solutions_holds_no_solution_anywhere(course_site):
    import zipfile
    phrases = solution_phrases()
    assert len(phrases) > 100
    assert not list(course_site.rglob("solutions")), "a solutions folder"
    shown = []
    for path in course_site.rglob("*"):
        if path.suffix in (".html", ".js", ".ipynb", ".txt", ".json"):
            text = path.read_text(encoding="utf-8", errors="replace")
            shown += [f"{path.relative_to(course_site)}: {p[:60]}" for p in phrases if p in text]
    if (course_site / "annotated-transformer.zip").is_file():
        with zipfile.ZipFile(course_site / "annotated-transformer.zip") as archive:
            names = archive.namelist()
            from book.solutions import is_solution_file
            inside = [n.split("/", 1)[1] for n in names]          # below the zip's one folder
            assert not [n for n in inside if is_solution_file(n)], "solutions in the zip"
            for name in names:
                if name.endswith((".ipynb", ".md", ".py")):
                    text = archive.read(name).decode("utf-8", errors="replace")
                    shown += [f"zip {name}: {p[:60]}" for p in phrases if p in text]
    assert not shown, "\n".join(shown[:20])
    chapter = (course_site / "02_masking.html").read_text(encoding="utf-8")
    assert "Exercise 2.1" in chapter and "not attempted yet" in chapter
    assert 'href="solutions/' not in chapter and 'class="solution"' not in chapter


@pytest.mark.slow
def test_a_fold_on_a_chinese_page_says_in_chinese_whether_it_hides_code_or_output(site):
    """myst-nb words a fold's prompt in English (source, output): the Chinese pages' folds
    say 代码 or 输出, and an output's fold never says 代码."""
    from book.languages import zh
    seen = []
    for page in sorted((site / "zh").glob("0*.html")):
        text = page.read_text(encoding="utf-8")
        prompts = re.findall(r'<details class="admonition hide ([\w-]+)">\s*<summary[^>]*>\s*'
                             r'<p class="collapsed admonition-title">([^<]*)</p>', text)
        for where, prompt in prompts:
            assert prompt in {"显示" + word for word in zh.FOLDED.values()}, (page.name, prompt)
            assert where != "below-input" or prompt == "显示输出", (page.name, where, prompt)
            seen.append(prompt)
    assert {"显示代码", "显示输出"} <= set(seen), seen


@pytest.mark.slow
def test_the_full_site_has_every_solution_folded_in_both_languages(site):
    from annotated.exercises.notebook import listed
    for lang in languages.ALL:
        folder = site if lang == languages.ENGLISH else site / lang
        assert sorted(p.stem for p in (folder / "solutions").glob("*.html")) == CHAPTERS
        summary = languages.ALL[lang].WORDS["show_solution"]
        for chapter in CHAPTERS:
            text = (folder / "solutions" / f"{chapter}.html").read_text(encoding="utf-8")
            asked = listed(chapter_notebook(ROOT / "chapters" / f"{chapter}.ipynb"))
            assert text.count('<details class="solution">') == len(asked), (lang, chapter)
            assert text.count(f"<summary>{summary}</summary>") == len(asked), (lang, chapter)
            page = (folder / f"{chapter}.html").read_text(encoding="utf-8")
            assert f'href="solutions/{chapter}.html"' in page, (lang, chapter)
        assert (folder / "notebooks" / "solutions" / "02_masking.ipynb").is_file()


@pytest.mark.slow
def test_exercises_and_closed_solutions_in_a_browser_in_both_languages(site, server, browser):
    """Each chapter's exercises show their checks; each solutions page opens clean, with every
    solution closed until its toggle is clicked, in English and in Chinese."""
    from selenium.webdriver.common.by import By
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for lang in languages.ALL:
        folder = "" if lang == languages.ENGLISH else f"{lang}/"
        facts = visit(browser, server + f"{folder}02_masking.html")
        checks = browser.find_elements(By.CSS_SELECTOR, ".tag_exercise-check .cell_output")
        problems += [f"{folder}02_masking.html: {len(checks)} checks shown"] if len(checks) != 3 \
            else []
        for name in [f"{folder}solutions/{c}.html" for c in CHAPTERS]:
            facts = visit(browser, server + name)
            browser.save_screenshot(str(SCREENSHOTS / f"{name[:-5].replace('/', '_')}.png"))
            problems += page_problems(name, facts, server)
            toggles = browser.find_elements(By.CSS_SELECTOR, "details.solution")
            shut = [t for t in toggles if not t.get_attribute("open")]
            problems += [f"{name}: {len(toggles) - len(shut)} of {len(toggles)} solutions open"
                         ] if len(shut) != len(toggles) or not toggles else []
        body = toggles[0].find_elements(By.CSS_SELECTOR, ":scope > :not(summary)")
        assert body and not any(b.is_displayed() for b in body)
        browser.execute_script("arguments[0].scrollIntoView()", toggles[0])
        toggles[0].find_element(By.CSS_SELECTOR, "summary").click()
        assert toggles[0].get_attribute("open") is not None
        assert any(b.is_displayed() for b in body)
    assert not problems, "\n".join(problems)


def test_sphinx_messages_name_the_projects_files_not_their_staged_copies(tmp_path, capsys):
    """A broken link in book/start.md is reported by Sphinx at its copy in the build's
    temporary folder, gone once the build fails: the message names the file to edit."""
    from book import build
    for lang, own in (("en", "book/start.md"), ("zh", "book/zh/start.md")):
        src = tmp_path / f"src-{lang}"
        with build.staged_copies_named(build.origins(src, lang)):
            print(f"{src}/start.md:17: WARNING: target not found", file=sys.stderr)
            print(f"{src}/02_masking.ipynb:5: WARNING: x", file=sys.stderr)
        first, second = capsys.readouterr().err.splitlines()
        assert first.startswith(f"{own}:17: WARNING") and str(tmp_path) not in first
        assert second.startswith("chapters/02_masking.ipynb:5: WARNING")
