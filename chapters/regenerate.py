"""Re-execute chapters in full mode, rewriting their committed outputs and figures.

    python chapters/regenerate.py [01 05 A S02 ...]      # all notebooks, or those given (A: the
                                                         # appendix, S02: chapter 2's solutions)
    python chapters/regenerate.py --listings [07 08]     # only the source listings
    python chapters/regenerate.py --cells 08:7,8         # only these cells of one chapter

Full mode means ANNOTATED_FULL=1, which this script sets (tests run the chapters in quick mode,
the default). Full mode reads the real Multi30k from the data location, ANNOTATED_DATA_DIR
(a relative path is taken from the current folder; a location without it is refused before
any chapter runs); chapters 6 and 9 then train their small models (a few minutes each on a
CPU). Chapters 7 and 8 translate with the model that ships in
annotated/pretrained/, in both modes; chapter 7's sweeps over many sentences use more of them
in full mode. Chapters 3, 7 and 8 read results/, so run the results scripts first when they
change.

--listings is for a change to the package's code (or to the text of a results file) alone: it
runs the chapter in quick mode in a scratch copy and takes from it only the outputs of cells
that show the package's source (`show(...)`) or a section of a results file, which do not
depend on the mode, leaving every other committed output as it was. --cells does the same for
the cells given by index (counting from 0, markdown cells included), for an edit to cells whose
output does not depend on the mode (e.g. a figure drawn from a committed results file).

nbval re-runs the notebooks in quick mode and compares their outputs with these; cells whose
output depends on the mode carry the tag `nbval-ignore-output`.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The package first: while it loads, a stop waits and is then one line (command_starting).
from annotated.base.cli import ArgumentParser, command
from annotated.base.errors import DataError
from annotated.base.signals import stop_group
from annotated.configs import get
from annotated.data.corpus import cache_folder, corpus_files

import nbformat  # noqa: E402

CHAPTERS = Path(__file__).resolve().parent
# A cell whose only lines show the package's source or a section of a committed results file:
# its output does not depend on the mode.
LISTING = re.compile(r"^((show|display\(Markdown\(section)\([^\n]*\)\n?)+$")
#: Seconds a stopped notebook's process gets to shut its kernel down before it is killed.
GRACE = 10
# What full mode reads from ANNOTATED_DATA_DIR: Multi30k's English and German splits, in the
# folder itself or in its multi30k/ folder.
# The chapters that train on Multi30k in full mode.
READ_MULTI30K = ("06", "09")
MULTI30K = [f"{split}.{lang}.gz" for split in ("train", "val", "test_2016_flickr")
            for lang in ("en", "de")]


def parse_args(argv=None):
    parser = ArgumentParser(prog="python chapters/regenerate.py",
                            description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 01 06 (default: all)")
    parser.add_argument("--listings", action="store_true", help="only the source listings")
    parser.add_argument("--cells", type=cell_choice, metavar="CHAPTER:I,J,...",
                        help="only these cells (indices from 0) of one chapter, e.g. 08:7,8")
    args = parser.parse_args(argv)
    if args.cells and args.chapters:
        parser.error(f"--cells {args.cells[0]}:... names its one chapter itself; give no "
                     f"chapter numbers with it (here {' '.join(args.chapters)}), or run those "
                     f"separately")
    if args.cells and args.listings:
        parser.error("--cells and --listings each choose the cells to refresh; give one")
    if args.cells:
        args.chapters = [args.cells[0]]
    return args


def cell_choice(text: str) -> tuple[str, set[int]]:
    chapter, _, indices = text.partition(":")
    try:
        chosen = {int(i) for i in indices.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CHAPTER:I,J,... such as 08:7,8, got "
                                         f"{text!r}") from None
    if min(chosen) < 0:
        raise argparse.ArgumentTypeError(f"cell indices count from 0, got {min(chosen)} in "
                                         f"{text!r}")
    return chapter, chosen


def key(notebook: Path) -> str:
    """What the command line calls a notebook: a chapter's number (06), A for the appendix,
    S06 for the solutions to chapter 6's exercises."""
    if notebook.parent.name == "solutions":
        return "S" + notebook.name[:2]
    return "A" if notebook.name.startswith("appendix_") else notebook.name[:2]


def chosen_notebooks(numbers: list[str]) -> list[Path]:
    """The notebooks of the chapters `numbers` (all when empty; A is the appendix, S06 the
    solutions to chapter 6's exercises); an unknown number is refused."""
    notebooks = (sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
                 + sorted(CHAPTERS.glob("appendix_*.ipynb"))
                 + sorted(CHAPTERS.glob("solutions/[0-9][0-9]_*.ipynb")))
    unknown = sorted(set(numbers) - {key(p) for p in notebooks})
    if unknown:
        raise DataError(f"no chapter {', '.join(unknown)} in {CHAPTERS.name}/ (it has "
                        f"{', '.join(key(p) for p in notebooks)}); give chapter numbers such "
                        f"as 01 06, A for the appendix, or S06 for chapter 6's solutions")
    return [p for p in notebooks if not numbers or key(p) in numbers]


def check_cells(nb: Path, indices: set[int]) -> None:
    """Refuse --cells indices that `nb` does not have, or that are not code cells, before
    anything runs (refresh copies outputs of code cells only)."""
    cells = nbformat.read(nb, as_version=4).cells
    where = nb.relative_to(CHAPTERS.parent).as_posix()
    missing = sorted(i for i in indices if i >= len(cells))
    if missing:
        raise DataError(f"{where} has cells 0 to {len(cells) - 1}, not "
                        f"{', '.join(map(str, missing))}; give indices counted from 0, markdown "
                        f"cells included")
    other = sorted(i for i in indices if cells[i].cell_type != "code")
    if other:
        raise DataError(f"in {where}, " + ", ".join(f"cell {i} is a {cells[i].cell_type} cell"
                        for i in other)
                        + "; --cells takes code cells, the ones with outputs")


@command
def main(argv=None):
    args = parse_args(argv)
    notebooks = chosen_notebooks(args.chapters)
    if args.cells:
        check_cells(notebooks[0], args.cells[1])
    elif not args.listings:
        check_data_location([key(nb) for nb in notebooks if key(nb) in READ_MULTI30K])
    for nb in notebooks:
        start = time.time()
        print(f"running {nb.relative_to(CHAPTERS).as_posix()}"
              f"{' (listings)' if args.listings else ''} ...", flush=True)
        if args.cells:
            refresh(nb, lambda i, cell: i in args.cells[1])
        elif args.listings:
            refresh(nb, lambda i, cell: LISTING.match(cell.source.strip() + "\n"))
        else:
            run_full(nb)
        print(f"  done in {time.time() - start:.0f} s", flush=True)


def check_data_location(reading: list[str]) -> None:
    """Full mode reads Multi30k from ANNOTATED_DATA_DIR when it is set: refuse a location
    without it now, rather than when a chapter's kernel reaches it. Unset, the chapters that
    read it (`reading`) download it into the cache: done now, so that no network is one line
    before any chapter runs."""
    value = os.environ.get("ANNOTATED_DATA_DIR")
    if not value:
        if reading:
            print(f"note: ANNOTATED_DATA_DIR is not set; chapter(s) {', '.join(reading)} read "
                  f"Multi30k, from the cache or downloaded now", flush=True)
            try:
                corpus_files(get("multi30k"), None, cache_folder(), log=lambda *_: None)
            except FileNotFoundError as e:
                raise DataError(f"chapter(s) {', '.join(reading)} need Multi30k in full mode: "
                                f"{e}") from None
        return
    location = Path(value).expanduser().resolve()
    if not any(all((folder / name).is_file() for name in MULTI30K)
               for folder in (location, location / "multi30k")):
        found = "no such folder" if not location.is_dir() else "not all of them"
        raise DataError(f"ANNOTATED_DATA_DIR={value}: expected Multi30k's files "
                        f"({', '.join(MULTI30K[:2])}, ...) in {location} or in its multi30k/ "
                        f"folder, found {found}; point it at the folder that holds them, or "
                        f"unset it to download them")


def run_full(nb: Path):
    env = dict(os.environ, ANNOTATED_FULL="1", ANNOTATED_FIGURES=str(CHAPTERS.parent / "figures"))
    env.setdefault("MPLBACKEND", "Agg")
    if env.get("ANNOTATED_DATA_DIR"):           # the kernels run in chapters/: make it absolute
        env["ANNOTATED_DATA_DIR"] = str(Path(env["ANNOTATED_DATA_DIR"]).expanduser().resolve())
    done = executed([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                     "--execute", "--inplace", "--ExecutePreprocessor.timeout=-1", str(nb)],
                    env=env)
    if done.returncode != 0:
        raise DataError(f"{nb.relative_to(CHAPTERS.parent).as_posix()} failed in full mode (exit code "
                        f"{done.returncode}; its error is above), so it was not rewritten and "
                        f"no later chapter ran; fix the cause and run `python "
                        f"chapters/regenerate.py {key(nb)}` again")


def executed(args: list[str], **options) -> subprocess.CompletedProcess:
    """Run nbconvert in a process group of its own, so that a Ctrl-C at the terminal reaches
    this script alone; a stop (Ctrl-C, SIGTERM, SIGHUP) ends nbconvert and its kernel quietly
    (the notebook is written only when it has run to the end), then is this command's one
    line."""
    with subprocess.Popen(args, start_new_session=True, **options) as child:
        try:
            out, err = child.communicate()
        except KeyboardInterrupt:
            stop_group(child, GRACE)
            raise
    return subprocess.CompletedProcess(args, child.returncode, out, err)


def refresh(nb: Path, chosen):
    """Run a scratch copy in quick mode (its own process, which a stop ends with this one); copy
    the outputs of the code cells for which chosen(index, cell) is true into `nb`."""
    committed = nbformat.read(nb, as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "ANNOTATED_FULL"}
    env.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory(prefix="regenerate-") as tmp:
        done = executed([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                         "--execute", "--ExecutePreprocessor.timeout=-1", "--output-dir", tmp,
                         "--output", "scratch", str(nb)], env=env,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            raise DataError(f"{nb.relative_to(CHAPTERS.parent).as_posix()} failed in quick mode "
                            f"(exit code {done.returncode}; its error is above), so it was not "
                            f"rewritten; fix the cause and run this command again")
        scratch = nbformat.read(Path(tmp) / "scratch.ipynb", as_version=4)
    changed = 0
    for i, (old, new) in enumerate(zip(committed.cells, scratch.cells)):
        if old.cell_type == "code" and chosen(i, old) and old.outputs != new.outputs:
            old.outputs, changed = new.outputs, changed + 1
            old.execution_count = old.execution_count or new.execution_count
    nbformat.write(committed, nb)
    print(f"  {changed} cell(s) updated", flush=True)


if __name__ == "__main__":
    main()
