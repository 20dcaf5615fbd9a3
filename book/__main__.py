"""`python -m book build [--out DIR]`: build the chapters' website (default build/site/)."""
import argparse
import time
from pathlib import Path

from book.build import DEFAULT_OUT, build


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m book", description=__doc__)
    parser.add_argument("command", choices=["build"], help="build the static site")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder, replaced if it exists (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    start = time.time()
    index = build(args.out)
    print(f"built {index} in {time.time() - start:.0f} s; open it in a browser "
          f"(it needs no network)")


if __name__ == "__main__":
    main()
