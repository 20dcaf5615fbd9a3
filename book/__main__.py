"""`python -m book build [--out DIR]`: build the chapters' website (default build/site/)."""
import sys

# torch and Sphinx take seconds to import, before @command can turn Ctrl-C into its one line
try:
    import argparse
    import time

    from annotated.base.cli import command, path
    from book.build import DEFAULT_OUT, build
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m book", description=__doc__)
    parser.add_argument("command", choices=["build"], help="build the static site")
    parser.add_argument("--out", type=path, default=DEFAULT_OUT,
                        help=f"output folder: empty, missing, or a site built here before, whose "
                             f"files (those that build wrote, as it wrote them) are replaced "
                             f"(default {DEFAULT_OUT})")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    start = time.time()
    index = build(args.out)
    print(f"built {index} in {time.time() - start:.0f} s; open it in a browser "
          f"(it needs no network)")


if __name__ == "__main__":
    main()
