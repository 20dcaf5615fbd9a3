"""Ctrl-C, SIGTERM, SIGHUP (and the other stops: SIGQUIT, SIGUSR1, SIGPWR, ...) stop every
command the same way: one line, the signal's own exit status, and nothing half-written: a
checkpoint being written is finished first, a translation being written is dropped with its
temporary file, the file that was there stays.

Each probe runs a command in a process of its own that sends itself the signal at a known
moment (its first fsync, the moment a file's bytes are all written, or its first import of
torch), so that the result does not depend on timing."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import says, stop_at_import

from annotated.base.signals import STOPS, signal_name
from annotated.store import checkpoint_file
from test_misuse import TINY_RUN, run

ROOT = Path(__file__).resolve().parent.parent

# A command's main(argv) run with SIGNUM sent to itself at its first fsync (a file's bytes are
# all written), as `kill` or `timeout` would send it; SIGTERM and SIGHUP as a terminal leaves them.
STOP_AT_FSYNC = """
import importlib, os, signal, sys
from annotated.base.signals import OTHER_STOPS
for number in OTHER_STOPS:
    signal.signal(number, signal.SIG_DFL)
signum, module, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def fsync(fd, real=os.fsync, sent=[]):
    if not sent:
        sent.append(os.kill(os.getpid(), signum))
    return real(fd)

os.fsync = fsync
importlib.import_module(module).main(argv)
"""


def stopped(signum, module, *argv) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", STOP_AT_FSYNC, str(int(signum)), module,
                           *map(str, argv)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    name = signal_name(signum)
    last = (done.stderr.splitlines() or [""])[-1]
    assert done.returncode == 128 + signum and last.startswith(f"interrupted by {name}"), \
        done.stderr
    assert "Traceback" not in done.stderr
    return done


def temporaries(folder) -> list[str]:
    return sorted(p.name for p in Path(folder).glob(".*.tmp"))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A copy-task run with two checkpoints."""
    folder = tmp_path_factory.mktemp("run")
    run(folder, "--config", "copy", "--max-steps", 2, *TINY_RUN[:-1], "ckpt_every=1")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                                    signal.SIGUSR1, signal.SIGXCPU, signal.SIGPWR,
                                    signal.SIGPROF])
def test_training_stopped_while_it_saves_finishes_the_checkpoint_and_resumes(tmp_path, signum):
    done = stopped(signum, "annotated.train", "--config", "copy", "--run-dir", tmp_path,
                   "--threads", 1, "--max-steps", 50, *TINY_RUN[:-1], "ckpt_every=5")
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000005.pt"]
    says(done.stdout.strip().splitlines()[-1], "step 5", "saved", "ckpt_0000005.pt",
         "before stopping")
    checkpoint_file.verify(tmp_path / "ckpt_0000005.pt")
    assert temporaries(tmp_path) == [] and (tmp_path / ".lock").read_text() == ""
    run(tmp_path, "--resume", "--max-steps", 6)          # the run goes on from there


@pytest.mark.parametrize("signum, command", [(signal.SIGTERM, "average"),
                                             (signal.SIGHUP, "half")])
def test_averaging_or_halving_stopped_while_it_writes_finishes_the_file(tiny_run, tmp_path,
                                                                        signum, command):
    found = checkpoint_file.checkpoints(tiny_run)
    inputs = ["--last", 2, tiny_run] if command == "average" else [found[-1]]
    done = stopped(signum, "annotated.checkpoint", command, "--out", tmp_path / "out.pt",
                   *inputs)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr       # the stop's one line
    says(done.stderr, f"interrupted by {signal.Signals(signum).name}", "out.pt",
         "written whole")
    checkpoint_file.verify(tmp_path / "out.pt")
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR2,
                                    signal.SIGALRM, signal.SIGTRAP, signal.SIGIO,
                                    signal.SIGRTMIN + 3])
def test_translating_stopped_while_it_writes_keeps_the_old_output(tiny_run, tmp_path, signum):
    (tmp_path / "in.txt").write_text("4 5 6\n7 8\n")
    (tmp_path / "out.txt").write_text("the old translations\n")
    stopped(signum, "annotated.translate", "--checkpoint",
            checkpoint_file.checkpoints(tiny_run)[-1], "--input", tmp_path / "in.txt", "--out",
            tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == "the old translations\n"
    assert temporaries(tmp_path) == []


# A process that sends itself signal N with its default action, then sleeps: it dies of the
# signal if that action ends it. Python itself ignores SIGPIPE and SIGXFSZ (a write then fails
# with an error a command reports).
DIES_OF = """
import os, signal, sys, time
number = int(sys.argv[1])
signal.signal(number, signal.SIG_DFL)
os.kill(os.getpid(), number)
time.sleep(2)
"""
# Signals a faulting instruction raises: a handler that returned would run it again.
FAULTS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT,
          signal.SIGSYS}
# Signals whose default action stops the process instead of ending it, or that no one can catch.
NOT_ENDINGS = {signal.SIGKILL, signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
               signal.SIGPIPE, signal.SIGXFSZ}


def test_every_signal_that_would_end_a_command_where_it_stands_is_a_stop():
    """`kill -s` may send any signal: each one whose default action would end a command with
    nothing said (SIGTRAP, SIGIO, the real-time ones, ...) is one the commands take as a
    stop, except the faults."""
    candidates = sorted(set(signal.valid_signals()) - FAULTS - NOT_ENDINGS)
    children = {n: subprocess.Popen([sys.executable, "-c", DIES_OF, str(int(n))])
                for n in candidates}
    ending = {n for n, child in children.items() if child.wait(timeout=60) == -n}
    assert {signal.SIGTERM, signal.SIGTRAP, signal.SIGRTMIN} <= ending       # the probe works
    assert sorted(map(signal_name, ending - set(STOPS))) == []


@pytest.mark.parametrize("signum, said", [(signal.SIGINT, "interrupted"),
                                           (signal.SIGTERM, "interrupted by SIGTERM"),
                                           (signal.SIGHUP, "interrupted by SIGHUP"),
                                           (signal.SIGUSR1, "interrupted by SIGUSR1")])
@pytest.mark.parametrize("module", ["torch", "numpy"])
def test_a_stop_while_a_command_is_still_starting_is_one_line(tmp_path, signum, said, module):
    """Importing torch takes seconds, in each process of a torchrun job too: a stop then (here
    sent as torch's import begins, or numpy's inside it, where a library that catches too
    much could swallow it and stay half-loaded) waits for the imports and is one line, not a
    traceback of the imports, nor nothing at all."""
    done = subprocess.run([sys.executable, "-m", "annotated.train", "--config", "copy"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=stop_at_import(tmp_path, module, signum))
    assert (done.returncode, done.stderr) == (-signum, said + "\n")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("ending", ["done", "refused"])
def test_a_stop_after_a_command_has_ended_lets_it_exit_quietly(tmp_path, signum, ending):
    """torchrun sends SIGTERM to every process of a job when one fails, often as the others are
    already exiting, in a library's exit handler (torch registers some). The command has done
    its work and said so: the process ends as it was ending, with its own status and no
    traceback of the handler."""
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, os, signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "for number in (signal.SIGTERM, signal.SIGHUP):\n"
        "    signal.signal(number, signal.SIG_DFL)\n"
        "def handler():\n"
        f"    os.kill(os.getpid(), {int(signum)})\n"
        "    time.sleep(0.2)\n"
        "    print('the exit handler finished', file=sys.stderr)\n"
        "atexit.register(handler)\n")
    (tmp_path / "ref.txt").write_text("A dog runs.\n")
    (tmp_path / "hyp.txt").write_text("A dog runs.\n")
    hyp = "hyp.txt" if ending == "done" else "missing.txt"
    done = subprocess.run([sys.executable, "-m", "annotated.evaluate", "--hyp", hyp, "--ref",
                           "ref.txt"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert done.returncode == (0 if ending == "done" else 1), done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == "the exit handler finished"


# A script that runs a command as the experiments do, then receives a stop once the command is
# ready: SIGTERM to itself alone (as `kill PID` sends it), or Ctrl-C to its whole process group
# (as a terminal sends it). The command takes longer to end of its stop than a moment.
RUN_THEN_STOP = """
import os, signal, sys, threading, time
from pathlib import Path
from annotated.base.cli import command
from experiments.commands import run_command
ready = Path(sys.argv[1])
TELLS, GROUP = sys.argv[2] == "tells", sys.argv[3] == "group"
CHILD = f'''
import signal, sys, time
from pathlib import Path
def ending(signum, frame):
    print("interrupted by " + signal.Signals(signum).name + "; the child's own line",
          file=sys.stderr, flush=True)
    time.sleep(4)
    print("the command ended of its stop", flush=True)
    sys.exit(128 + signum if {TELLS} else 1)
signal.signal(signal.SIGTERM, ending)
signal.signal(signal.SIGINT, ending)
Path({str(ready)!r}).touch()
time.sleep(120)
'''

def stop_when_ready():
    while not ready.exists():
        time.sleep(0.05)
    if GROUP:
        os.killpg(0, signal.SIGINT)
    else:
        os.kill(os.getpid(), signal.SIGTERM)

@command
def main(argv=None):
    threading.Thread(target=stop_when_ready, daemon=True).start()
    child = ready.with_name("child.py")
    child.write_text(CHILD)
    run_command(["python", str(child)])

main()
"""


@pytest.mark.parametrize("child, to", [("tells", "alone"), ("fails", "alone"),
                                       ("tells", "group")])
def test_an_experiment_stopped_lets_the_command_it_runs_end_and_says_so_once(child, to,
                                                                            tmp_path):
    """A stop of the script, sent to it alone or to its whole process group: the command it
    runs is told once (not once by the terminal and again by the script) and given the time
    to end of it (not killed). A command that ends of its stop (status 128 + the signal) has
    told it in its one line, and the script adds none; otherwise the script's one line names
    it."""
    done = subprocess.run([sys.executable, "-c", RUN_THEN_STOP, str(tmp_path / "ready"), child,
                           to], cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, start_new_session=True)
    name, signum = ("SIGINT", signal.SIGINT) if to == "group" else ("SIGTERM", signal.SIGTERM)
    assert done.returncode == 128 + signum, done.stderr
    assert "the command ended of its stop" in done.stdout, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    if child == "tells":
        assert lines == [f"interrupted by {name}; the child's own line"], done.stderr
    else:
        says(lines[-1], "interrupted by SIGTERM", "child.py", "stopped too")


def test_a_stop_while_the_arguments_are_parsed_is_the_stop_alone(monkeypatch):
    """parse_intermixed_args (which the commands use) changes the parser's actions and puts
    them back in a `finally`; a stop in between made that `finally` fail with a second
    traceback. The stop now takes effect once parsing ends: a KeyboardInterrupt, nothing
    else."""
    import argparse
    from annotated.base.cli import ArgumentParser
    real = argparse.HelpFormatter._format_usage

    def stopped_here(self, *args, **kwargs):      # a stop as the usage line is formatted
        signal.raise_signal(signal.SIGINT)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(argparse.HelpFormatter, "_format_usage", stopped_here)
    parser = ArgumentParser(prog="python -m annotated.train")
    parser.add_argument("--max-steps", type=int)
    parser.add_argument("overrides", nargs="*")
    with pytest.raises(KeyboardInterrupt) as stop:
        parser.parse_intermixed_args(["N=1", "--max-steps", "3", "h=2"])
    assert stop.value.__context__ is None
