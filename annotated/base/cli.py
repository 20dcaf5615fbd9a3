"""One convention for every command of the project (`python -m annotated.train`, `.translate`,
`.evaluate`, `.checkpoint`, the results scripts and the benchmarks):

- `main(argv=None)`, so tests and notebooks call a command the way a shell does;
- argparse reports a wrong argument (exit code 2); numbers are checked by `number` with a
  setting's rule, e.g. `number(at_least(1))`, or `positive` (never NaN or infinite), paths go
  through `path` (a leading ~ is the home folder);
- `@command` turns a user's error (a bad setting, a missing, damaged, unreadable or unwritable
  file, no network, not enough memory) into ONE line, `error: ...`, naming the file and the
  fix, with exit code 1 and no traceback. Ctrl-C is one line, `interrupted` (exit code 130;
  a note added to the exception says what finished before the stop took effect);
  SIGTERM and SIGHUP (`kill`, `timeout`, a service manager, a closed terminal), and the other
  stops of base.signals.STOPS, stop a command as Ctrl-C does, unwinding it
  (base.signals.stops_unwind: temporary files removed, a half-done replacement put back),
  with one line, `interrupted by SIGTERM`, and the signal's own status (143, 129); a reader
  that stops reading the output early (`| head -1`) ends the command quietly (exit code 141,
  as a pipe's writer killed by SIGPIPE), unless its output only tells of progress
  (`output_optional`: training goes on). Anything else is a bug and keeps its traceback.

A module of the project that is not a command (`python -m experiments.scoring`, a library the
commands import) says so when it is run as one (`not_a_command`), instead of ending silently.
"""
import argparse
import errno
import functools
import math
import os
import re
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

from annotated.base.errors import USER_ERRORS, DataError
from annotated.base.files import WRITE_FIXES, expand
from annotated.base.signals import (PACKAGES, Stopped, StopTold, signals_held,
                                    stops_ignored_at_exit, stops_unwind)
from annotated.base.settings import POSITIVE


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with two rules more: a mistake in the command line is one line, and
    an option given twice is an error. argparse keeps the last of `--max-steps 2 --max-steps
    3` without a word; options meant to repeat (action="append", such as --system) still may.
    A stop while it parses (Ctrl-C, SIGTERM) takes effect once parsing ends:
    parse_intermixed_args changes the parser's actions and puts them back in a `finally`,
    which a stop in between breaks with a second traceback."""

    given: list[str] = []

    def error(self, message):
        """One line naming the mistake and where to read the usage (argparse prints its usage
        block first, which buries the mistake). A file whose name starts with - is read as an
        option: the line says so, and how to give it."""
        dashed = next((t for t in self.given if t.startswith("-") and t != "--"
                       and self._option_string_actions.get(t.split("=", 1)[0]) is None
                       and os.path.lexists(t)), None)
        if dashed is not None:
            message += (f"; {dashed!r} was read as an option: give a file whose name starts "
                        f"with - after --, as in -- {dashed}, or as ./{dashed}")
        elif value := self.dashed_value(message):
            option, token = value
            message += (f"; {token!r} was read as an option: give a value that starts with - "
                        f"as {option}={token}")
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def dashed_value(self, message: str) -> tuple[str, str] | None:
        """(option, value) where argparse found no value after an option because the value
        starts with - (`--run-dir -x`: "expected one argument"); else None."""
        found = re.match(r"argument (\S+): expected one argument", message)
        for option in found[1].split("/") if found else ():
            at = [i for i, t in enumerate(self.given) if t == option]
            if at and at[-1] + 1 < len(self.given) and self.given[at[-1] + 1].startswith("-"):
                return option, self.given[at[-1] + 1]
        return None

    def parse_intermixed_args(self, args=None, namespace=None):
        with signals_held():
            return super().parse_intermixed_args(args, namespace)

    def parse_known_args(self, args=None, namespace=None):
        given = sys.argv[1:] if args is None else [str(a) for a in args]
        self.given = given[:given.index("--")] if "--" in given else given
        once = {name: action for action in self._actions if isinstance(action, (
                    argparse._StoreAction, argparse._StoreConstAction))
                for name in action.option_strings}
        seen = {}
        for token in given:
            if token == "--":
                break
            name = token.split("=", 1)[0]
            if (action := once.get(name)) is not None:
                if action in seen:
                    self.error(f"{seen[action]} is given twice; give it once")
                seen[action] = name
        return super().parse_known_args(args, namespace)


def describe(error: BaseException, argv: list[str] = ()) -> str:
    """The one line a user sees for a user error; a file that is not there is named with the
    option that gave it (`argv`, the command's arguments)."""
    if isinstance(error, FileNotFoundError) and error.filename:
        option = option_giving(str(error.filename), argv)
        return f"{option and option + ' '}{error.filename}: no such file or folder; check the path"
    if isinstance(error, OSError) and error.filename and error.strerror:
        name = str(error.filename)
        name = name if len(name) <= 160 else f"{name[:70]}...{name[-70:]}"   # a path too long
        fix = WRITE_FIXES.get(error.errno)
        return f"{name}: {error.strerror}" + (f"; {fix}" if fix and fix not in error.strerror
                                               else "")
    if isinstance(error, OSError) and error.strerror == os.strerror(errno.ENOSPC):   # bare
        return ("no space left on the device being written (a full disk, or stdout sent to a "
                "full device); free some space or write elsewhere")
    if isinstance(error, OSError) and error.strerror and not error.filename:   # our own words
        return error.strerror
    return str(error) or type(error).__name__


def option_giving(value: str, argv: list[str]) -> str:
    """The option in `argv` that gave `value` (`--input` for `--input F` or `--input=F`), all
    of them where several gave it ("--out / --ref"), or "" for none."""
    found = []
    for word, after in zip(argv, [*argv[1:], None]):
        option, equals, given = word.partition("=")
        if word.startswith("--") and (given == value if equals else after == value):
            found.append(option)
    return " / ".join(dict.fromkeys(found))


def out_of_memory(error: RuntimeError) -> bool:
    """True for the errors torch raises when an allocation fails: a GPU's OutOfMemoryError, or
    a CPU's RuntimeError that says so. (A MemoryError, Python's or our own estimate's, is
    caught before.)"""
    return isinstance(error, torch.OutOfMemoryError) or any(
        words in str(error) for words in ("not enough memory", "can't allocate memory"))


def allocation_failed(error: RuntimeError) -> str:
    """The failed allocation of an out-of-memory error in a few words: the CPU allocator's
    message carries an assertion ("err == 0.") and a byte count; the GPU's is readable."""
    found = re.search(r"tried to allocate (\d+) bytes", str(error))
    if found and not isinstance(error, torch.OutOfMemoryError):
        return f"a block of {int(found[1]) / 2**30:,.2f} GiB could not be allocated"
    return first_line(error)


# What gloo and NCCL say when another process of the group has gone away.
PEER_LOST = ("Connection reset by peer", "Connection closed by peer", "Connection refused",
             "NCCL communicator was aborted", "Broken pipe")


def peer_lost(error: BaseException) -> bool:
    """True for the error a torchrun process gets when another process of its group ends."""
    return "RANK" in os.environ and isinstance(error, RuntimeError) and any(
        words in str(error) for words in PEER_LOST)


def with_notes(line: str, stop: KeyboardInterrupt) -> str:
    """The stop's one line, with what the command finished before it took effect (a note
    added to the exception: "out.pt was written whole")."""
    return "; ".join([line, *getattr(stop, "__notes__", [])])


def lost_how(error: BaseException) -> str:
    """What gloo or NCCL said of a lost peer, without the library's advice after it ("This is
    typically caused by ... GLHF!")."""
    return first_line(error).split(". This is typically")[0]


def first_line(error: BaseException) -> str:
    return str(error).strip().split("\n")[0].split("] ")[-1][:200]


def command(main):
    """Decorate a command's main(argv=None) with the convention above."""
    @functools.wraps(main)
    def run(argv=None):
        _fill_closed_streams()
        _running.append(main)                # a command may call another: the outermost ends
        try:
            with stops_unwind():
                return main(argv)
        except USER_ERRORS as e:
            if isinstance(e, BrokenPipeError):
                _quiet_broken_pipe()
            _fail(describe(e, sys.argv[1:] if argv is None else list(argv)))
        except StopTold as e:                      # its line is on stderr already
            sys.exit(e.code)
        except Stopped as e:
            _fail(with_notes(f"interrupted by {e}", e), 128 + e.signum, prefix="")
        except KeyboardInterrupt as e:
            _fail(with_notes("interrupted", e), 130, prefix="")
        except MemoryError as e:                   # our own estimate, or Python's
            _fail(f"out of memory: {e}" if str(e) else "out of memory")
        except RuntimeError as e:
            if peer_lost(e):
                _fail(f"another process of this torchrun job stopped ({lost_how(e)}); this "
                      f"one stops too. Read the other process's own error; one killed outright "
                      f"(kill -9, or the system out of memory) prints none, and torchrun's "
                      f"report names its signal. Then --resume continues from the last "
                      f"checkpoint, if the run saved one")
            if not out_of_memory(e):
                raise
            _fail(f"out of memory: {allocation_failed(e)}; lower max_tokens (or use "
                  f"accum_steps) or the model's size (d_model, d_ff, N, vocab_size)")
        finally:
            _running.pop()
            if not _running:
                stops_ignored_at_exit()
    return run


_running = []                            # the commands running in this process, outermost first


def not_a_command() -> None:
    """At exit (annotated/__init__.py registers it): if Python ran one of the project's modules
    as its program (`python -m NAME`) and it was no command, with no `if __name__ ==
    "__main__":` part, it did nothing; say so, with exit code 2. (When Python could not run
    NAME at all, it has said why.)"""
    program = sys.modules.get("__main__")
    spec = getattr(program, "__spec__", None)
    if spec is None or spec.name.split(".")[0] not in PACKAGES or not spec.origin:
        return
    try:
        if '__name__ == "__main__"' in Path(spec.origin).read_text(encoding="utf-8"):
            return
    except OSError:
        return
    name = spec.name.removesuffix(".__main__")
    say_error(f"error: {name} is not a command: it is a module that the commands import, and "
              f"running it does nothing. The commands (python -m annotated.train, "
              f"experiments.multi30k, book build, ...) are listed in docs/commands.md")
    sys.stdout and sys.stdout.flush()
    os._exit(2)                                # an exit handler cannot change the status else


def _fill_closed_streams():
    """Open /dev/null on a standard stream that was closed when the process started (`2>&-`):
    else the next file this process opens takes its number, and whatever writes to that stream
    (a library's warning on stderr) writes into that file. Python's sys.stdin/stdout/stderr stay
    None, so each command still sees that the stream is closed."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


class OptionalOutput:
    """A standard stream whose lines only tell of progress (training's): a write that fails (a
    reader gone away, `| head`; a full disk; a closed stream) points it at /dev/null, said once
    on the other stream, and the work goes on. Everything else is the stream's own."""

    def __init__(self, stream, name: str, work: str):
        self.name, self.work, self.stream = name, work, stream
        if stream is None:
            self.give_up("it is closed")

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except UnicodeEncodeError:               # a character its encoding lacks: escaped
            encoding = getattr(self.stream, "encoding", None) or "utf-8"
            return self.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except (OSError, ValueError) as e:       # ValueError: a stream closed meanwhile
            self.give_up(getattr(e, "strerror", None) or e)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError) as e:
            self.give_up(getattr(e, "strerror", None) or e)

    def give_up(self, why) -> None:
        """Point this stream, and its file descriptor (which Python flushes at exit), at
        /dev/null, and say so on the other stream."""
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, AttributeError, ValueError):
            pass
        self.stream = open(os.devnull, "w")
        other = sys.stderr if self.name == "stdout" else sys.stdout
        try:
            print(f"warning: {self.name} cannot be written ({why}); {self.work} goes on "
                  f"without its lines", file=other, flush=True)
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextmanager
def output_optional(work: str):
    """For the block, stdout and stderr are OptionalOutput: `work` (training) goes on when
    they cannot be written, where a command whose output is its result ends."""
    saved = sys.stdout, sys.stderr
    sys.stdout = OptionalOutput(sys.stdout, "stdout", work)
    sys.stderr = OptionalOutput(sys.stderr, "stderr", work)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def say_error(message: str) -> None:
    """Print one line on stderr; nothing if stderr is closed or broken (print(file=None)
    would write it to stdout, among the command's output)."""
    if sys.stderr is None:
        return
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _fail(message: str, code: int = 1, prefix: str = "error: "):
    say_error(prefix + message)                # stderr closed too: the exit code says it
    sys.exit(code)


def show(text: str) -> None:
    """Print a command's result on stdout; a full disk or another failed write names stdout
    (a reader that went away is BrokenPipeError, which @command ends quietly)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OSError(e.errno, e.strerror, "stdout") from None
    except UnicodeEncodeError:
        print(escaped_for_stdout(text), flush=True)


def escaped_for_stdout(text: str) -> str:
    """`text` as stdout can write it: a file name the locale could not decode (held as lone
    surrogates) as its UTF-8, and a character stdout's encoding lacks as an escape (\\xa7)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.encode(encoding, "backslashreplace").decode(encoding)


def shell_word(text: str) -> str:
    """`text` quoted as one word of a shell command printed on stdout: shlex's quoting, or,
    where stdout's encoding cannot write one of its characters (an ASCII terminal, a name with
    an umlaut), bash's $'...' quoting with those characters as their UTF-8 bytes in octal, so
    that the command pasted back still names the file."""
    if not unwritable_on_stdout(text):
        return shlex.quote(text)
    data = text.encode("utf-8", "surrogateescape")
    return "$'" + "".join(chr(b) if 32 <= b < 127 and chr(b) not in "\\'" else
                          f"\\{chr(b)}" if chr(b) in "\\'" else f"\\{b:03o}"
                          for b in data) + "'"


def require_stdout(what: str) -> None:
    """Refuse to run a command whose output is `what` (printed on stdout) when stdout is
    closed: the work would be done for nothing."""
    if sys.stdout is None:
        raise OSError(f"stdout is closed: there is nowhere to print {what}")


def unwritable_on_stdout(text: str) -> str | None:
    """A character of `text` that stdout's encoding (PYTHONIOENCODING, the locale: ascii,
    latin-1) cannot write, or None."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    for c in set(text):
        try:
            c.encode(encoding)
        except UnicodeEncodeError:
            return c
        except LookupError:                        # an encoding Python does not know
            return None
    return None


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


def number(rule, kind=int):
    """An argparse type: a finite number of this kind that keeps `rule`, one of the rules that
    settings keep (annotated.base.settings: at_least(1), between(1, 1024), POSITIVE)."""
    test, allowed = rule

    def parse(text):
        value = _number(text, kind)
        if not test(value):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
        return value
    return parse


positive = number(POSITIVE, float)      # a duration, a rate


def path(text: str) -> Path:
    """An argparse type: a path, with a leading ~ expanded to the home folder as a shell would."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty one")
    try:
        return expand(text)
    except DataError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def folder(text: str) -> Path:
    """An argparse type: a folder that is there (not a file, not a missing path)."""
    found = path(text)
    if not found.is_dir():
        what = "a file, not a folder" if found.exists() else "not there: no such folder"
        raise argparse.ArgumentTypeError(f"{found} is {what}")
    return found


def out_file(text: str) -> Path:
    """An argparse type: a file to write. A name ending in / names a folder (pathlib would
    drop the slash and write a file of that name)."""
    if text.endswith("/"):
        raise argparse.ArgumentTypeError(f"expected a file name, got {text}, a folder's")
    return path(text)
