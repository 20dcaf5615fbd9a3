"""The signals that ask a command to stop: Ctrl-C (SIGINT), SIGTERM (`kill`, `timeout`, a
service manager, a cancelled job), SIGHUP (a closed terminal), SIGQUIT (Ctrl-\\), SIGUSR1,
SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF and SIGXCPU (what a batch scheduler, `timeout -s`, a timer
or a CPU-time limit may send when time runs out), SIGPWR (a power failure, as a UPS daemon
or a container manager tells it), and SIGTRAP, SIGSTKFLT, SIGIO and the real-time signals
SIGRTMIN to SIGRTMAX (which nothing in the project uses, but `kill -s` may send): each of them
ends a process where it stands unless caught. The faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
SIGABRT, SIGSYS) are left as they are: a handler that returned would run the faulting
instruction again.

- `signals_held`: held back during a short phase that must not stop halfway (a checkpoint or
  a set of files being written); they take effect when it ends.
- `stops_unwind`: the others raise `Stopped`, as Ctrl-C raises KeyboardInterrupt, so
  that a command they stop unwinds (its temporary files removed, a half-done replacement put
  back) instead of dying where it stands; every command runs inside it, and
  `annotated.base.cli.command` then exits with the signal's own status, 128 + its number.
- `StopTold`: a stop a child command has already told (its status is one of STOP_CODES), which
  its parent ends of without a second line.
- `stops_while_blocked`: a stop during a wait inside a library (torch's rendezvous) ends the
  process at once, with the same one line, and a wait past its limit ends it with an error.
- `stop_group`: ends a child started in a process group of its own (a notebook and its
  kernel), politely first.
- `command_starting`: a stop while a command is still starting (importing torch takes
  seconds, in each process of a torchrun job too) waits for the imports, then is the same one
  line, not a traceback of the imports or a library left half-loaded.
"""
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT",
                                                "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM",
                                                "SIGPROF", "SIGXCPU", "SIGPWR", "SIGTRAP",
                                                "SIGSTKFLT", "SIGIO")
              if hasattr(signal, name)) + tuple(
    range(signal.SIGRTMIN, signal.SIGRTMAX + 1) if hasattr(signal, "SIGRTMIN") else ())
# The stops other than Ctrl-C, which Python leaves to end the process where it stands.
OTHER_STOPS = STOPS[1:]
# The project's packages, whose modules are its commands (`python -m book build`).
PACKAGES = ("annotated", "experiments", "benchmarks", "book")
# The project's folders whose scripts run by path (`python chapters/regenerate.py`).
SCRIPT_FOLDERS = ("chapters",)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def signal_name(signum: int) -> str:
    """The name of signal `signum`: SIGTERM, or SIGRTMIN+3 for a real-time one."""
    try:
        return signal.Signals(signum).name
    except ValueError:                      # only SIGRTMIN and SIGRTMAX themselves are named
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}"


class Stopped(KeyboardInterrupt):
    """A stop other than Ctrl-C as an exception (see stops_unwind): a KeyboardInterrupt, so
    that what cleans up after Ctrl-C cleans up after it too; `signum` is the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signal_name(signum))
        self.signum = signum


class StopTold(KeyboardInterrupt):
    """A stop that a command this one ran has already told on stderr, in its own one line,
    before it ended of it with status `code` (128 + the signal's number): this command ends
    with the same status and adds no second line."""

    def __init__(self, code: int):
        super().__init__(f"exit code {code}")
        self.code = code


#: The exit statuses with which a command of the project ends of a stop, its line told.
STOP_CODES = tuple(128 + s for s in STOPS)


def _raise_stopped(signum, frame):
    raise Stopped(signum)


def stops_ignored_at_exit() -> None:
    """After a command has run in a process that command_starting set up: its work is done and
    said. A stop now would only interrupt a library's exit handler, with a traceback (torchrun
    sends SIGTERM to every process of a job when one fails), so the process ignores it and
    ends as it was ending. In a process that merely calls a command (a test), nothing changes."""
    if not starting_a_command() or signal.getsignal(signal.SIGTERM) is not _raise_stopped:
        return
    for s in STOPS:
        signal.signal(s, signal.SIG_IGN)


@contextmanager
def stops_unwind():
    """For the length of the block, in the main thread: SIGTERM, SIGHUP and the other stops
    raise Stopped. A signal that has a handler of its own, or is ignored (SIGHUP under nohup),
    keeps it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [s for s in OTHER_STOPS if signal.getsignal(s) == signal.SIG_DFL]
    for s in taken:
        signal.signal(s, _raise_stopped)
    try:
        yield
    finally:
        for s in taken:
            signal.signal(s, signal.SIG_DFL)


@contextmanager
def signals_held(signals=STOPS):
    """Hold the stops (STOPS) back during a short phase that must not stop halfway:
    they are blocked (signal.pthread_sigmask) and, in the main thread, one that another thread
    receives is only recorded; either takes effect when the phase ends. Yields a function that
    says whether one has arrived meanwhile (an ignored signal does not count), for a phase
    that would rather give up early than finish."""
    caught = []
    main = threading.current_thread() is threading.main_thread()
    kept = {s: signal.getsignal(s) for s in signals} if main else {}
    kept = {s: handler for s, handler in kept.items() if handler is not None}
    live = {s for s in signals if kept.get(s, signal.getsignal(s)) != signal.SIG_IGN}
    for s in kept:
        signal.signal(s, lambda number, frame: caught.append(number))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)

    def arrived() -> bool:
        return bool(live & (set(caught) | signal.sigpending()))
    try:
        yield arrived
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)   # a pending one is recorded now
        for s, handler in kept.items():
            signal.signal(s, handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)


@contextmanager
def stops_while_blocked(limit_s: float, overdue: Callable[[], str]):
    """Around a call that waits inside a library without coming back to Python (torch's
    rendezvous waits for its peers in C++, up to half an hour). Python runs a signal's handler
    only when the call returns, so a stop would wait as long. Here a watcher thread learns of
    the signal from signal.set_wakeup_fd, prints the stop's one line, `interrupted` or
    `interrupted by SIGTERM`, and ends the process with the signal's status; after `limit_s`
    seconds it ends it with the error line overdue() and status 1. Only for a wait before the
    command has written anything: the process ends where it stands. (On Windows, where
    select() takes no pipe, the wait is torch's own.)"""
    if threading.current_thread() is not threading.main_thread() or sys.platform == "win32":
        yield
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write)
    ending, over = threading.Lock(), threading.Event()

    def end(line: str, status: int):
        with ending:
            if not over.is_set():     # (once the call has returned, Python's handler acts)
                print(line, file=sys.stderr, flush=True)
                os._exit(status)

    def watch():
        deadline = time.monotonic() + limit_s
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([read], [], [], left)[0]:
                break
            got = os.read(read, 64)
            if not got:                                  # the wait is over: the pipe closed
                return
            if stops := [s for s in got if s in STOPS]:
                end("interrupted" if stops[0] == signal.SIGINT
                    else f"interrupted by {signal_name(stops[0])}", 128 + stops[0])
        end(f"error: {overdue()}", 1)
    watcher = threading.Thread(target=watch, daemon=True, name="stops_while_blocked")
    watcher.start()
    try:
        yield
    finally:
        with ending:
            over.set()
            signal.set_wakeup_fd(previous)
            os.close(write)
        watcher.join()
        os.close(read)


def stop_group(process: subprocess.Popen, grace: float) -> None:
    """End the process group that `process` leads (started with start_new_session=True, so
    that a Ctrl-C at the terminal reaches only its parent): SIGTERM first, which lets a notebook
    shut its kernel down, then SIGKILL after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.communicate(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def starting_a_command() -> bool:
    """Whether this process is starting one of the project's commands, and annotated/__init__
    should import inside command_starting: `python -m annotated.train` imports the package
    while sys.argv[0] is still "-m"; `python -m book` runs book/__main__.py, which imports
    annotated; `python chapters/regenerate.py` runs a script of the project by its path. A
    program that merely imports the package (a test, a notebook) is none of these."""
    program = sys.modules.get("__main__")
    spec = getattr(program, "__spec__", None)
    if sys.argv[:1] == ["-m"] or (spec is not None and spec.name.split(".")[0] in PACKAGES):
        return True
    script = getattr(program, "__file__", None)
    return (spec is None and script is not None and os.path.dirname(os.path.abspath(script))
            in [os.path.join(ROOT, folder) for folder in SCRIPT_FOLDERS])


@contextmanager
def command_starting():
    """Around the imports of a process that runs one of the project's commands
    (annotated/__init__.py decides: a program that imports the package keeps Python's ways).
    Importing torch and numpy takes seconds, in each process of a torchrun job too, and a
    Ctrl-C that lands inside a library's import can leave it half-loaded or be swallowed by it:
    so the stops (STOPS) are held until the imports are done (signals_held). From then on the
    stops other than Ctrl-C raise Stopped, and a stop that nothing catches (one held here,
    or one before the command runs) prints one line, `interrupted` or `interrupted by
    SIGTERM`, as annotated.base.cli.command does, and ends the process by its signal.
    Two things that make the imports fail are one line too: a working folder deleted under
    the shell (torch's libraries then fail to load, with a fatal error) and too little memory
    to load them (a limit such as `ulimit -v`)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        sys.exit("error: the working folder no longer exists (deleted or moved while the shell "
                 "was in it); cd to an existing folder and run the command again")
    for s in OTHER_STOPS:
        if signal.getsignal(s) == signal.SIG_DFL:
            signal.signal(s, _raise_stopped)
    previous = sys.excepthook

    def hook(kind, error, traceback):
        if not issubclass(kind, KeyboardInterrupt):
            return previous(kind, error, traceback)
        stopped = isinstance(error, Stopped)
        print(f"interrupted by {error}" if stopped else "interrupted", file=sys.stderr,
              flush=True)
        signum = error.signum if stopped else signal.SIGINT     # end by the signal, as an
        signal.signal(signum, signal.SIG_DFL)                  # uncaught Ctrl-C would (130)
        signal.raise_signal(signum)
    sys.excepthook = hook
    try:
        with signals_held():
            yield
    except MemoryError:
        sys.exit("error: too little memory to load torch and the project (a limit such as "
                 "`ulimit -v`, or a full machine); raise the limit or free memory, and run the "
                 "command again")
