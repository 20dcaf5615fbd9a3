"""Sphinx, run so that a stop stays a stop. Sphinx catches KeyboardInterrupt, reports it as its
own error and returns a failed build: Ctrl-C would then end the command as a failed build,
not as an interrupted one. While it runs, Ctrl-C (and SIGTERM and SIGHUP, where they raise,
see annotated.base.signals.stops_unwind) raise CtrlC instead, which it lets through; once it
has returned, the signal is delivered again, to the handler it had.

Some of Sphinx catches every exception (autodoc, while it imports a module, reports one as a
warning and goes on). So after a stop its logging is silenced, and CtrlC is raised again every
tenth of a second (SIGALRM) until Sphinx has let one through."""
import logging
import signal
import threading

from sphinx.cmd.build import build_main

from annotated.base.signals import STOPS


class CtrlC(BaseException):
    """A stop while Sphinx runs: not a KeyboardInterrupt, which Sphinx would catch."""


def run_sphinx(args: list[str]) -> int | None:
    """Sphinx's build_main(args) and its exit code; a stop while it runs ends it (its own
    exception, KeyboardInterrupt or Stopped, raised here), whatever Sphinx catches."""
    if threading.current_thread() is not threading.main_thread():
        return build_main(args)
    kept = {s: handler for s in STOPS if callable(handler := signal.getsignal(s))}
    arrived = []

    def on_stop(signum, frame):
        if signum != signal.SIGALRM:
            arrived.append(signum)
        logging.disable(logging.CRITICAL)              # a stop is not Sphinx's warning
        signal.setitimer(signal.ITIMER_REAL, 0.1)      # again, should Sphinx swallow this one
        raise CtrlC
    alarm = signal.signal(signal.SIGALRM, on_stop)
    for s in kept:
        signal.signal(s, on_stop)
    code = None
    try:
        code = build_main(args)
    except CtrlC:
        pass
    finally:
        while True:                          # an alarm may land here too: stop it, then leave
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
                break
            except CtrlC:
                pass
        signal.signal(signal.SIGALRM, alarm)
        logging.disable(logging.NOTSET)
        for s, handler in kept.items():
            signal.signal(s, handler)
    for signum in arrived[:1]:               # caught by Sphinx, or by us: a stop all the same
        signal.raise_signal(signum)
    return code
