"""One convention for every command of the project (`python -m annotated.train`, `.translate`,
`.evaluate`, `.checkpoint`, the results scripts and the benchmarks):

- `main(argv=None)`, so tests and notebooks call a command the way a shell does;
- argparse reports a wrong argument (exit code 2);
- `@command` turns a user's error (a bad setting, a missing, damaged, unreadable or unwritable
  file, no network) into ONE line, `error: ...`, naming the file and the fix, with exit code 1
  and no traceback. Anything else is a bug and keeps its traceback.
"""
import argparse
import functools
import sys

from annotated.configs import ConfigError
from annotated.data.files import DataError
from annotated.training.checkpoint import CheckpointError, DeviceError
from annotated.training.loop import Diverged

USER_ERRORS = (ConfigError, DataError, CheckpointError, DeviceError, Diverged, OSError)


def describe(error: BaseException) -> str:
    """The one line a user sees for a user error."""
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return str(error) or type(error).__name__


def command(main):
    """Decorate a command's main(argv=None) with the convention above."""
    @functools.wraps(main)
    def run(argv=None):
        try:
            return main(argv)
        except USER_ERRORS as e:
            print(f"error: {describe(e)}", file=sys.stderr, flush=True)
            sys.exit(1)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(130)
    return run


def at_least(low, kind=int):
    """An argparse type: a number of this kind, >= low."""
    def parse(text):
        value = kind(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        return value
    return parse


def hidden_alias(parser, flag: str, dest: str, kind=None):
    """An older spelling of a flag, still accepted but not shown in --help."""
    parser.add_argument(flag, dest=dest, type=kind, help=argparse.SUPPRESS)
