"""Build the website from the committed notebooks in chapters/, without running them: each
edition (English at the site's top, each translation of book/languages/ in a folder of its
own, zh/) is staged and rendered in a temporary folder beside the output folder, and the whole
site is published into it only when every edition has been built.

    stage.py       the chapters checked and staged as pages: download links, reading time,
                   figure cells folded, listings linked to the API reference
    solutions.py   the exercises' worked solutions, a page per chapter, each one folded (or,
                   with --without-solutions, a site for a course that has none)
    figures.py     each figure with its caption, as the figure's caption and its alt text
    project.py     the API reference's pages, and the zip of the project's tracked files
    run_sphinx.py  Sphinx (with book/conf.py), run so that a stop stays a stop
    publish.py     the site moved into the output folder all or nothing, replacing only the
                   files the last build wrote there (its list of them, .book-files)

A failed or interrupted build (Ctrl-C, SIGTERM, SIGHUP) leaves the output folder as it was,
and no temporary folder beside it.
"""
import json
import os
import re
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

from annotated.base.cli import say_error
from annotated.base.errors import DataError
from annotated.base.files import folder_claimed, scratch_folder
from annotated.base.signals import stops_unwind
from book import explorer, i18n, languages, project, publish, solutions, stage
from book.run_sphinx import run_sphinx

BOOK = Path(__file__).resolve().parent
DEFAULT_OUT = BOOK.parent / "build" / "site"


def render(edition: stage.Edition, tmp: Path) -> Path:
    """Stage and render the whole book in the edition's language into a folder of `tmp`;
    return the folder."""
    lang = edition.lang
    src = tmp / f"src-{lang}"
    site = tmp / ("site" if lang == languages.ENGLISH else f"site-{lang}")   # English: the top
    src.mkdir()
    project.stage_api(src, sorted(edition.modules), lang)
    times = [stage.stage_notebook(nb, src / nb.name, edition) for nb in stage.chapters()]
    total = (sum(low for low, _ in times), sum(high for _, high in times))
    for nb in stage.appendices():
        stage.stage_notebook(nb, src / nb.name, edition)
    for page in stage.pages():
        (src / page.name).write_text(i18n.page_text(page, lang), encoding="utf-8")
    if edition.solutions:
        solutions.stage(src, lang)
    stage.stage_index(src, total, edition)
    explorer.stage(src, lang)                   # the attention explorer's page
    args = ["-b", "html", "-q", "-W", "--keep-going", "-c", str(BOOK),
            "-d", str(tmp / f"doctrees-{lang}"), str(src), str(site)]
    for name, value in languages.ALL[lang].SPHINX.items():    # Sphinx's settings for `lang`
        args[:0] = ["-D", f"{name}={value}"]
    with staged_copies_named(origins(src, lang)):
        built = run_sphinx(args)
    if built != 0:
        raise DataError("Sphinx could not build the site (its messages are above); the "
                        "site that was there, if any, is unchanged")
    if (site / explorer.PAGE.replace(".md", ".html")).is_file():
        explorer.write_data(site)               # its weights, beside the page
    downloads(site / "notebooks", edition)
    return site


def origins(src: Path, lang: str) -> dict[str, str]:
    """{staged copy in `src`: the project's file it comes from}, for Sphinx's messages: a
    chapter's notebook, or a page (in a translation, its translation file)."""
    pages = {page: page if lang == languages.ENGLISH else i18n.translation_file(page, lang)
             for page in stage.pages()}
    found = {nb: nb for nb in stage.chapters() + stage.appendices()} | pages
    return {str(src / staged.name): str(own.relative_to(BOOK.parent))
            for staged, own in found.items()}


@contextmanager
def staged_copies_named(names: dict[str, str]):
    """For the block, a staged copy that Sphinx names on stderr (in a temporary folder gone
    after the build) is named by the project's file it comes from."""
    stream = sys.stderr

    class Named:
        def write(self, text: str) -> int:
            for staged, own in names.items():
                text = text.replace(staged, own)
            return stream.write(text)

        def __getattr__(self, name):
            return getattr(stream, name)
    sys.stderr = Named()
    try:
        yield
    finally:
        sys.stderr = stream


def downloads(folder: Path, edition: stage.Edition) -> None:
    """The notebooks in the edition's language, to download: the chapters, the appendix and,
    if the edition has them, the solutions (in folder/solutions/)."""
    notebooks = stage.chapters() + stage.appendices()
    notebooks += solutions.notebooks() if edition.solutions else []
    for nb in notebooks:
        dest = folder / nb.relative_to(stage.CHAPTERS)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if edition.lang == languages.ENGLISH:
            shutil.copy(nb, dest)
        else:
            translated = i18n.translated_notebook(stage.read_chapter(nb), nb, edition.lang)
            dest.write_text(json.dumps(translated, ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")


def scratch_prefix(out: Path) -> str:
    """The start of the name of the folder a build of `out` works in, beside it."""
    return f".book-{out.name}-"


def clear_killed_builds(out: Path) -> None:
    """Remove, naming each, the folders that builds of `out` killed outright (SIGKILL, a power
    cut) left beside it: while this build holds `out`, no other build of it works there.
    tempfile.mkdtemp's eight characters follow the prefix, so a build of another site whose
    name begins alike (site-2 beside site) keeps its folder."""
    mine = re.compile(re.escape(scratch_prefix(out)) + r"[a-z0-9_]{8}")
    for left in sorted(out.parent.iterdir()):
        if mine.fullmatch(left.name) and left.is_dir() and not left.is_symlink():
            shutil.rmtree(left, ignore_errors=True)
            say_error(f"note: removed {left}, which a build of {out} left when it was killed")


def build(out: Path = DEFAULT_OUT, with_solutions: bool = True) -> Path:
    """Render the book into `out` (see the module docstring) and return the path of its
    index.html; `with_solutions=False` builds the site for a course, without the exercises'
    solutions. SIGTERM and SIGHUP stop it as Ctrl-C does (annotated.base.signals)."""
    out = Path(out).expanduser().resolve()
    with stops_unwind(), folder_claimed(out, say_error):   # a second build waits its turn
        before = publish.check_out(out)
        for lang in languages.TRANSLATIONS:       # a damaged translation file, before the work
            check_edition(lang)
        out.parent.mkdir(parents=True, exist_ok=True)
        clear_killed_builds(out)
        with scratch_folder(out.parent, scratch_prefix(out)) as tmp:
            zip_size = project.project_zip(tmp / project.PROJECT_ZIP, leave_out=(
                (lambda name: False) if with_solutions else solutions.is_solution_file))
            edition = stage.Edition(languages.ENGLISH, frozenset(project.api_modules()),
                                    zip_size, with_solutions)
            site = render(edition, tmp)
            for lang in languages.TRANSLATIONS:
                translated = stage.Edition(lang, edition.modules, zip_size, with_solutions)
                os.replace(render(translated, tmp), site / lang)
            if zip_size is not None:
                os.replace(tmp / project.PROJECT_ZIP, site / project.PROJECT_ZIP)
            publish.publish(site, out, before)
    return out / "index.html"


def check_edition(lang: str) -> None:
    """Before any work: read every translation file of `lang` (a damaged one is a DataError
    naming its line) and note a missing file, a unit that would break its page, which the
    build publishes in English (i18n.unpublishable; a table cell's, table_cell_problem), and
    units whose English has changed since they were translated, which it publishes as they
    are."""
    missing, stale, files = [], [], [i18n.BOOK / lang / i18n.TABLES]
    for source in i18n.sources():
        if not (where := i18n.translation_file(source, lang)).exists():
            missing.append(where)
            continue
        files.append(where)
        stale += i18n.check(source, lang).stale
    for where in (f for f in files if f.exists()):
        unfit = i18n.table_cell_problem if where.name == i18n.TABLES else i18n.unpublishable
        for unit, problem in [(u, unfit(u)) for u in i18n.read_units(where, lang)]:
            if problem:
                say_error(f"note: {where.relative_to(i18n.ROOT)}:{unit.line}: {unit.key}: "
                          f"{problem}; published in English there (python -m book "
                          f"translations lists every such unit)")
    if stale:
        say_error(f"note: {stale[0].split(': ')[0]}" + (f" and {len(stale) - 1} more unit(s)"
                                                         if len(stale) > 1 else "")
                  + f" of the {lang} edition translate English that has changed since: they "
                  "are published as they are; python -m book translations shows each with "
                  "the difference")
    if missing:
        say_error(f"note: the {lang} edition has no {missing[0]}"
                  + (f" (nor {len(missing) - 1} more pages)" if len(missing) > 1 else "")
                  + ": published in English there; python -m book translations lists "
                  "what is missing, --add-missing starts the files")
