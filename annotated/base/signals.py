"""The signals that ask a command to stop: Ctrl-C (SIGINT), SIGTERM (`kill`, `timeout`, a
service manager, a cancelled job) and SIGHUP (a closed terminal).

- `signals_held`: held back during a short phase that must not stop halfway (a checkpoint or
  a set of files being written); they take effect when it ends.
- `stops_unwind`: SIGTERM and SIGHUP raise `Stopped`, as Ctrl-C raises KeyboardInterrupt, so
  that a command they stop unwinds (its temporary files removed, a half-done replacement put
  back) instead of dying where it stands; every command runs inside it, and
  `annotated.base.cli.command` then exits with the signal's own status, 128 + its number.
- `quiet_interrupt_at_start`: Ctrl-C while a command is still starting (importing torch takes
  seconds, in each process of a torchrun job too) is the same one line, `interrupted`, not a
  traceback of the imports.
"""
import signal
import sys
import threading
from contextlib import contextmanager

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP as an exception (see stops_unwind): a KeyboardInterrupt, so that what
    cleans up after Ctrl-C cleans up after it too; `signum` is the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum, frame):
    raise Stopped(signum)


@contextmanager
def stops_unwind():
    """For the length of the block, in the main thread: SIGTERM and SIGHUP raise Stopped. A
    signal that has a handler of its own, or is ignored (SIGHUP under nohup), keeps it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) == signal.SIG_DFL]
    for s in taken:
        signal.signal(s, _raise_stopped)
    try:
        yield
    finally:
        for s in taken:
            signal.signal(s, signal.SIG_DFL)


@contextmanager
def signals_held(signals=STOPS):
    """Hold Ctrl-C, SIGTERM and SIGHUP back during a short phase that must not stop halfway:
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


def quiet_interrupt_at_start() -> None:
    """Make an uncaught KeyboardInterrupt print `interrupted` instead of its traceback, as
    `annotated.base.cli.command` does once the command runs; the process still ends by the
    signal. For a process that runs one of the project's commands only (annotated/__init__.py
    decides): a program that imports the package keeps Python's traceback."""
    previous = sys.excepthook

    def hook(kind, error, traceback):
        if issubclass(kind, KeyboardInterrupt):
            print("interrupted", file=sys.stderr, flush=True)
        else:
            previous(kind, error, traceback)
    sys.excepthook = hook
