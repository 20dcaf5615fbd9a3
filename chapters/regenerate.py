"""Re-execute every chapter in full mode, rewriting its committed outputs and its figures.

    python chapters/regenerate.py [01 05 ...]     # all chapters, or those whose number is given

Full mode means ANNOTATED_QUICK is unset. Chapter 06 then trains its small model (a few
minutes on a CPU). Chapters 07 and 08 decode with the trained model runs/multi30k/average.pt,
which `python -m results.multi30k` writes (an hour of training); without it, chapter 07 trains
a stand-in (about ten minutes) and chapter 08 a tiny one, and their model-dependent outputs
change. Chapters 03 and 08 read results/, so run the results scripts first when they change.
The data location comes from ANNOTATED_DATA_DIR (or a download, with internet).

CI re-runs the notebooks in quick mode with nbval instead; cells whose output depends on the
mode are marked so in the notebooks.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parent


def main():
    wanted = sys.argv[1:]
    notebooks = sorted(p for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb")
                       if not wanted or p.name[:2] in wanted)
    if not notebooks:
        sys.exit(f"no chapter matches {wanted} in {CHAPTERS}")
    env = {k: v for k, v in os.environ.items() if k != "ANNOTATED_QUICK"}
    env.setdefault("MPLBACKEND", "Agg")
    for nb in notebooks:
        start = time.time()
        print(f"running {nb.name} ...", flush=True)
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                        "--execute", "--inplace", "--ExecutePreprocessor.timeout=-1", str(nb)],
                       env=env, check=True)
        print(f"  done in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
