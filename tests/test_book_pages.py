"""The book's own pages (book/start.md, glossary.md, slips.md, references.md, index.md): what
they state about the code, and their links, checked against the code and the chapters.

The model tables of "Start here" give every model's settings and parameter count: each row is
rebuilt from its preset with the vocabulary size the page gives (on PyTorch's meta device, so
even the big model costs no memory) and counted; the shipped model's row is also compared with
the shipped checkpoint. The commands the page quotes are the README's, character for
character. Every cross-reference ({ref} roles, [text](#label) links, {doc} roles) names a
label or a page that exists, and every chapter a glossary entry or a slip names exists, its
link going to the chapter of that number.
"""
import json
import re
from pathlib import Path

import pytest
import torch

from annotated.configs import Config, apply_overrides, get
from annotated.model import EncoderDecoder, count_parameters

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
PAGES = ["index", "start", "glossary", "slips", "references"]
CHAPTERS = {int(p.name[:2]): p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")}
#: A column of the size table: the Config fields it gives.
COLUMNS = {"$N$": ("N",), "$d_\\text{model}$": ("d_model",), "$h$": ("h",),
           "$d_k = d_v$": ("d_k", "d_v"), "$d_{ff}$": ("d_ff",), "$P_\\text{drop}$": ("P_drop",),
           "$V$": ("vocab_size",)}
NUMBER_WORDS = {"five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def page(name: str) -> str:
    return (BOOK / f"{name}.md").read_text(encoding="utf-8")


def tables(text: str) -> list[list[dict]]:
    """Every markdown table of `text`, as a list of rows, each {header: cell}."""
    found, lines = [], text.splitlines()
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and re.fullmatch(r"\|( *-+ *\|)+", lines[i + 1].strip()) \
                and not (i and lines[i - 1].startswith("|")):
            header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            rows = []
            for line in lines[i + 2:]:
                if not line.startswith("|"):
                    break
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                assert len(cells) == len(header), f"a row of {len(cells)} cells: {line}"
                rows.append(dict(zip(header, cells)))
            found.append(rows)
    return found


def model_rows() -> list[dict]:
    """The rows of Start here's two model tables (sizes; settings), joined by model."""
    sizes = next(t for t in tables(page("start")) if "parameters" in t[0])
    settings = next(t for t in tables(page("start")) if list(t[0]) == ["model", "settings"])
    assert [r["model"] for r in sizes] == [r["model"] for r in settings]
    return [{**size, "settings": setting["settings"]} for size, setting in zip(sizes, settings)]


def config_of(settings: str) -> Config:
    """The Config a row's settings (`--config NAME key=value ...`) make."""
    words = settings.strip("`").split()
    assert words[:1] == ["--config"], f"settings should start with --config: {settings}"
    return apply_overrides(get(words[1]), words[2:])


def number(cell: str):
    return float(cell) if "." in cell else int(cell.replace(",", ""))


def parameters(config: Config, vocab: int) -> int:
    with torch.device("meta"):                 # shapes only: no memory, even for big
        return count_parameters(EncoderDecoder(config, vocab))


@pytest.mark.parametrize("row", model_rows(), ids=lambda r: r["model"])
def test_each_model_row_gives_its_presets_settings_and_parameter_count(row):
    config = config_of(row["settings"])
    for column, names in COLUMNS.items():
        for name in names:
            assert number(row[column]) == getattr(config, name), \
                f"{row['model']}: {column} is {row[column]}, the settings give {name} = " \
                f"{getattr(config, name)}"
    counted = parameters(config, config.vocab_size)
    assert counted == config.parameter_count(), "the model and Config.parameter_count disagree"
    assert number(row["parameters"]) == counted, \
        f"{row['model']}: the page says {row['parameters']} parameters, the code counts {counted:,}"


def test_the_shipped_models_row_is_the_shipped_checkpoint():
    from annotated.pretrained import MULTI30K_EN_DE
    from annotated.store.checkpoint_file import load_model
    (row,) = [r for r in model_rows() if r["model"] == "the shipped model"]
    model, config, tokenizer = load_model(MULTI30K_EN_DE)
    settings = config_of(row["settings"])
    for name in ("N", "d_model", "h", "d_k", "d_v", "d_ff", "P_drop", "vocab_size",
                 "positional", "dataset"):
        assert getattr(settings, name) == getattr(config, name), name
    assert tokenizer.vocab_size == number(row["$V$"])
    assert sum(p.numel() for p in model.parameters()) == number(row["parameters"])


def test_start_here_counts_its_models():
    said = re.search(r"The book uses (\w+) models", page("start")).group(1)
    assert NUMBER_WORDS[said] == len(model_rows())


def test_start_here_quotes_the_readmes_commands_exactly():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    blocks = re.findall(r"```bash\n(.*?)```", page("start"), re.S)
    quoted = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert len(quoted) >= 5
    for line in quoted:
        assert line in readme, f"not a line of the README: {line}"


def labels() -> dict[str, str]:
    """Every MyST label `(name)=` of the book's pages, with the page that defines it."""
    found = {}
    for name in PAGES:
        for label in re.findall(r"^\(([\w-]+)\)=$", page(name), re.M):
            assert label not in found, f"label {label} defined twice ({found[label]}, {name})"
            found[label] = name
    return found


def references(text: str) -> list[str]:
    """The targets of the {ref} roles and of the [text](#label) links in `text`."""
    roles = [m.group(2) or m.group(1)
             for m in re.finditer(r"\{ref\}`(?:([^`<]+?)|[^`]*<([^`>]+)>)`", text)]
    return roles + re.findall(r"\]\(#([\w-]+)\)", text)


def documents(text: str) -> list[tuple[str, str]]:
    """(link text, target) of every {doc} role in `text`."""
    return [(m.group(1) or "", m.group(2) or m.group(3))
            for m in re.finditer(r"\{doc\}`(?:([^`<]*?)\s*<([^`>]+)>|([^`<]+))`", text)]


@pytest.mark.parametrize("name", PAGES)
def test_every_link_target_in_the_book_pages_exists(name):
    text, known = page(name), labels()
    targets = references(text)
    missing = [t for t in targets if t not in known]
    assert not missing, f"{name}.md links labels that no page defines: {missing}"
    docs = (set(CHAPTERS.values()) | {p.stem for p in BOOK.glob("*.md")}
            | {p.stem for p in (ROOT / "chapters").glob("appendix_*.ipynb")})
    missing = [target for _, target in documents(text) if target.lstrip("/") not in docs]
    assert not missing, f"{name}.md links pages that do not exist: {missing}"


@pytest.mark.parametrize("name", ["glossary", "slips"])
def test_each_chapter_named_in_the_glossary_and_the_slips_exists(name):
    text = page(name)
    named = [int(n) for m in re.finditer(r"[Cc]hapters? (\d+(?:(?:, | and | to )\d+)*)", text)
             for n in re.findall(r"\d+", m.group(1))]
    assert named, f"{name}.md names no chapter"
    assert set(named) <= set(CHAPTERS), \
        f"{name}.md names chapters {sorted(set(named) - set(CHAPTERS))}, which do not exist"
    for link_text, target in documents(text):
        said = re.search(r"[Cc]hapter (\d+)", link_text)
        if target[:2].isdigit():
            assert said and CHAPTERS.get(int(said.group(1))) == target, \
                f"{name}.md: a link '{link_text}' goes to {target}"


def glossary_entries() -> list[tuple[str, str, str]]:
    """(label, term, text) of every glossary entry."""
    return re.findall(r"^\((glossary-[\w-]+)\)=\n\*\*(.+?)\.\*\*(.*?)(?=^\(glossary-|^## |\Z)",
                      page("glossary"), re.S | re.M)


def slug(term: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", term.split(" (")[0].lower()).strip("-")


def test_each_glossary_entry_has_its_terms_label_and_names_its_chapter():
    entries = glossary_entries()
    assert len(entries) == len(re.findall(r"^\(glossary-", page("glossary"), re.M))
    for label, term, text in entries:
        assert label == f"glossary-{slug(term)}", f"{term}: label {label}"
        assert re.search(r"\{doc\}`Chapter \d+ <", text), f"{term}: names no chapter"


def test_the_glossarys_alphabetical_list_links_every_entry_once():
    text = page("glossary")
    listed = [t for t in references(text.split("\n## ")[0]) if t.startswith("glossary-")]
    assert sorted(listed) == sorted(label for label, _, _ in glossary_entries())
    names = re.findall(r"\{ref\}`([^`<]+?) <glossary-", text.split("\n## ")[0])
    assert names == sorted(names, key=str.lower), "the list is not in alphabetical order"


def test_each_reference_label_is_its_first_authors_surname_and_year():
    entries = re.findall(r"^\((ref-[\w-]+)\)=\n\*\*(.+?)\.\*\* (.+?)(?=\n\n|\Z)",
                         page("references"), re.S | re.M)
    assert len(entries) == len(re.findall(r"^\(ref-", page("references"), re.M))
    for label, heading, _ in entries:
        surname = re.sub(r"[^a-z]", "", heading.split()[0].lower()
                         .translate(str.maketrans("åäöüéèçłńš", "aaoueeclns")))
        year = re.search(r"\((\d{4})\)", heading).group(1)
        assert label == f"ref-{surname}{year}", f"{heading}: label {label}"
    cited = {t for name in PAGES for t in references(page(name)) if t.startswith("ref-")}
    assert cited <= {label for label, _, _ in entries}


def test_the_index_opens_with_start_here_and_lists_every_page_once():
    """Start here first, then the chapters, then what follows them; every page of the book
    (its markdown pages and the appendix notebooks) in exactly one toctree."""
    from book.stage import appendices, pages
    text = page("index")
    assert text.startswith("# The Annotated Transformer, checked\n")
    toctrees = re.findall(r"```\{toctree\}\n(.*?)```", text, re.S)
    entries = [[line for line in t.splitlines() if line and not line.startswith(":")]
               for t in toctrees]
    assert entries[:2] == [["start"], ["0*"]]
    chapters = "```{toctree}\n:caption: Chapters\n:maxdepth: 1\n:glob:\n\n0*\n```"
    assert f"<!-- reading time -->\n\n{chapters}" in text     # build.py fills in the marker
    listed = [e for t in entries for e in t]
    expected = {p.stem for p in pages()} | {p.stem for p in appendices()} | {"explorer"}
    assert sorted(e for e in listed if e != "0*") == sorted(expected)


def test_the_slips_page_covers_every_slip_with_its_section_and_chapter():
    sections = re.split(r"^\(slip-[\w-]+\)=\n## ", page("slips"), flags=re.M)[1:]
    assert len(sections) == 8
    for section in sections:
        title = section.splitlines()[0]
        assert "**What goes wrong.**" in section and "**The correct form**" in section, title
        assert re.search(r"§\d", section), f"{title}: no section of the paper"
        assert re.search(r"\*\*(Shown|Explained) in\*\* \{doc\}`chapter \d+ <", section), title


def test_chapter_notebooks_are_what_the_pages_link():
    """A guard for the link tests above: the chapters are nine notebooks, read as JSON."""
    assert sorted(CHAPTERS) == list(range(1, 10))
    for stem in CHAPTERS.values():
        json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text(encoding="utf-8"))
