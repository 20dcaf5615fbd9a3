"""Signals held back during a short phase that must not stop halfway."""
import signal
import threading
from contextlib import contextmanager


@contextmanager
def signals_held(signals=(signal.SIGINT, signal.SIGTERM)):
    """Hold Ctrl-C and SIGTERM back during a short phase that must not stop halfway: they are
    blocked (signal.pthread_sigmask) and, in the main thread, one that another thread receives
    is only recorded; either takes effect when the phase ends."""
    caught = []
    main = threading.current_thread() is threading.main_thread()
    kept = {s: signal.getsignal(s) for s in signals} if main else {}
    kept = {s: handler for s, handler in kept.items() if handler is not None}
    for s in kept:
        signal.signal(s, lambda number, frame: caught.append(number))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)   # a pending one is recorded now
        for s, handler in kept.items():
            signal.signal(s, handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)
