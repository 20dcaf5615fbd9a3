"""One convention for every command of the project (`python -m annotated.train`, `.translate`,
`.evaluate`, `.checkpoint`, the results scripts and the benchmarks):

- `main(argv=None)`, so tests and notebooks call a command the way a shell does;
- argparse reports a wrong argument (exit code 2); numbers are checked by `at_least` and
  `positive` (never NaN or infinite), paths go through `path` (a leading ~ is the home folder);
- `@command` turns a user's error (a bad setting, a missing, damaged, unreadable or unwritable
  file, no network, not enough memory) into ONE line, `error: ...`, naming the file and the
  fix, with exit code 1 and no traceback. Ctrl-C is one line, `interrupted` (exit code 130);
  a reader that stops reading the output early (`| head -1`) ends the command quietly (exit
  code 141, as a pipe's writer killed by SIGPIPE). Anything else is a bug and keeps its
  traceback.
"""
import argparse
import functools
import math
import os
import sys
from pathlib import Path

import torch

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


def out_of_memory(error: BaseException) -> bool:
    """True for the errors torch raises when an allocation fails, on a GPU or a CPU."""
    return isinstance(error, (torch.OutOfMemoryError, MemoryError)) or (
        isinstance(error, RuntimeError) and any(
            words in str(error) for words in ("not enough memory", "can't allocate memory")))


def command(main):
    """Decorate a command's main(argv=None) with the convention above."""
    @functools.wraps(main)
    def run(argv=None):
        try:
            return main(argv)
        except USER_ERRORS as e:
            if isinstance(e, BrokenPipeError):
                _quiet_broken_pipe()
            _fail(describe(e))
        except KeyboardInterrupt:
            _fail("interrupted", 130, prefix="")
        except MemoryError as e:                   # our own estimate, or Python's
            _fail(f"out of memory: {e}" if str(e) else "out of memory")
        except RuntimeError as e:
            if not out_of_memory(e):
                raise
            _fail("out of memory: " + str(e).split("\n")[0].split("] ")[-1][:200] + "; lower "
                  "max_tokens (or use accum_steps) or the model's size (d_model, d_ff, N)")
    return run


def _fail(message: str, code: int = 1, prefix: str = "error: "):
    try:
        print(prefix + message, file=sys.stderr, flush=True)
    except (OSError, AttributeError):          # stderr closed too: the exit code says it
        pass
    sys.exit(code)


def _quiet_broken_pipe():
    """The reader of stdout went away (`| head -1`): not an error of ours. Point stdout at
    /dev/null so that Python's exit does not complain while flushing it, and exit as a
    writer killed by SIGPIPE would."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
    sys.exit(141)


def _number(text: str, kind):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'a whole number' if kind is int else 'a number'}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def at_least(low, kind=int, high=None):
    """An argparse type: a finite number of this kind, >= low (and <= high if given)."""
    def parse(text):
        value = _number(text, kind)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high:,}, got {text}")
        return value
    return parse


def positive(text: str) -> float:
    """An argparse type: a finite number > 0 (a duration, a rate)."""
    value = _number(text, float)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def path(text: str) -> Path:
    """An argparse type: a path, with a leading ~ expanded to the home folder as a shell would."""
    return Path(text).expanduser()
