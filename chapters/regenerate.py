"""Re-execute chapters in full mode, rewriting their committed outputs and figures.

    python chapters/regenerate.py [01 05 ...]            # all chapters, or those given
    python chapters/regenerate.py --listings [07 08]     # only the source listings
    python chapters/regenerate.py --cells 08:7,8         # only these cells of one chapter

Full mode means ANNOTATED_FULL=1, which this script sets (tests run the chapters in quick mode,
the default). Full mode reads the real Multi30k from the data location, ANNOTATED_DATA_DIR
(a relative path is taken from the current folder); chapters 6 and 9 then train their small
models (a few minutes each on a CPU). Chapters 7 and 8 translate with the model that ships in
annotated/pretrained/, in both modes; chapter 7's sweeps over many sentences use more of them
in full mode. Chapters 3, 7 and 8 read results/, so run the results scripts first when they
change.

--listings is for a change to the package's code (or to the text of a results file) alone: it
runs the chapter in quick mode in a scratch copy and takes from it only the outputs of cells
that show the package's source (`show(...)`) or a section of a results file, which do not
depend on the mode, leaving every other committed output as it was. --cells does the same for the cells given
by index (counting from 0, markdown cells included), for an edit to cells whose output
does not depend on the mode (e.g. a figure drawn from a committed results file).

nbval re-runs the notebooks in quick mode and compares their outputs with these; cells whose
output depends on the mode carry the tag `nbval-ignore-output`.
"""
import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CHAPTERS = Path(__file__).resolve().parent
# A cell whose only lines show the package's source or a section of a committed results file:
# its output does not depend on the mode.
LISTING = re.compile(r"^((show|display\(Markdown\(section)\([^\n]*\)\n?)+$")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python chapters/regenerate.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 01 06 (default: all)")
    parser.add_argument("--listings", action="store_true", help="only the source listings")
    parser.add_argument("--cells", type=cell_choice, metavar="CHAPTER:I,J,...",
                        help="only these cells (indices from 0) of one chapter, e.g. 08:7,8")
    args = parser.parse_args(argv)
    if args.cells:
        args.chapters = [args.cells[0]]
    return args


def cell_choice(text: str) -> tuple[str, set[int]]:
    chapter, _, indices = text.partition(":")
    try:
        return chapter, {int(i) for i in indices.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CHAPTER:I,J,... such as 08:7,8, got "
                                         f"{text!r}") from None


def main(argv=None):
    args = parse_args(argv)
    notebooks = sorted(p for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb")
                       if not args.chapters or p.name[:2] in args.chapters)
    if not notebooks:
        sys.exit(f"error: no chapter matches {args.chapters} in {CHAPTERS}; give chapter numbers "
                 f"such as 01 06")
    for nb in notebooks:
        start = time.time()
        print(f"running {nb.name}{' (listings)' if args.listings else ''} ...", flush=True)
        if args.cells:
            refresh(nb, lambda i, cell: i in args.cells[1])
        elif args.listings:
            refresh(nb, lambda i, cell: LISTING.match(cell.source.strip() + "\n"))
        else:
            run_full(nb)
        print(f"  done in {time.time() - start:.0f} s", flush=True)


def run_full(nb: Path):
    env = dict(os.environ, ANNOTATED_FULL="1")
    env.setdefault("MPLBACKEND", "Agg")
    if env.get("ANNOTATED_DATA_DIR"):           # the kernels run in chapters/: make it absolute
        env["ANNOTATED_DATA_DIR"] = str(Path(env["ANNOTATED_DATA_DIR"]).expanduser().resolve())
    else:
        print("note: ANNOTATED_DATA_DIR is not set; chapters that read Multi30k will try to "
              "download it", flush=True)
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                    "--execute", "--inplace", "--ExecutePreprocessor.timeout=-1", str(nb)],
                   env=env, check=True)


def refresh(nb: Path, chosen):
    """Run a scratch copy in quick mode; copy the outputs of the code cells for which
    chosen(index, cell) is true into `nb`."""
    committed = nbformat.read(nb, as_version=4)
    scratch = nbformat.read(nb, as_version=4)
    os.environ.pop("ANNOTATED_FULL", None)
    os.environ.setdefault("MPLBACKEND", "Agg")
    NotebookClient(scratch, timeout=None,
                   resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    changed = 0
    for i, (old, new) in enumerate(zip(committed.cells, scratch.cells)):
        if old.cell_type == "code" and chosen(i, old) and old.outputs != new.outputs:
            old.outputs, changed = new.outputs, changed + 1
            old.execution_count = old.execution_count or new.execution_count
    nbformat.write(committed, nb)
    print(f"  {changed} cell(s) updated", flush=True)


if __name__ == "__main__":
    main()
