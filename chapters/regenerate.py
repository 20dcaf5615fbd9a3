"""Re-execute every chapter in full mode, rewriting its committed outputs and its figures.

    python chapters/regenerate.py [01 05 ...]     # all chapters, or those whose number is given

Full mode means ANNOTATED_FULL=1, which this script sets (tests run the chapters in quick mode,
the default). Full mode reads the real Multi30k from the data location, ANNOTATED_DATA_DIR
(a relative path is taken from the current folder); chapter 06 then trains its small model (a
few minutes on a CPU). Chapters 07 and 08 decode with the trained model
runs/multi30k/average.pt, which `python -m results.multi30k` writes (an hour of training);
without it, chapter 07 trains a stand-in (about ten minutes) and chapter 08 a tiny one, and
their model-dependent outputs change. Chapters 03 and 08 read results/, so run the results
scripts first when they change.

nbval re-runs the notebooks in quick mode and compares their outputs with these; cells whose
output depends on the mode carry the tag `nbval-ignore-output`.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parent


def main(argv=None):
    wanted = sys.argv[1:] if argv is None else argv
    notebooks = sorted(p for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb")
                       if not wanted or p.name[:2] in wanted)
    if not notebooks:
        sys.exit(f"error: no chapter matches {wanted} in {CHAPTERS}; give chapter numbers such "
                 f"as 01 06")
    env = dict(os.environ, ANNOTATED_FULL="1")
    env.setdefault("MPLBACKEND", "Agg")
    if env.get("ANNOTATED_DATA_DIR"):           # the kernels run in chapters/: make it absolute
        env["ANNOTATED_DATA_DIR"] = str(Path(env["ANNOTATED_DATA_DIR"]).expanduser().resolve())
    else:
        print("note: ANNOTATED_DATA_DIR is not set; chapters that read Multi30k will try to "
              "download it", flush=True)
    for nb in notebooks:
        start = time.time()
        print(f"running {nb.name} ...", flush=True)
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                        "--execute", "--inplace", "--ExecutePreprocessor.timeout=-1", str(nb)],
                       env=env, check=True)
        print(f"  done in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
