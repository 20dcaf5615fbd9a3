"""The project's own commands as the results scripts run them and record them: the training
command (fresh, or resumed; under torchrun for several processes), checkpoint averaging (§6.1),
and the command line a results file names as the one that wrote it."""
import ctypes
import fcntl
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from annotated.base.errors import DataError, RunDirError
from annotated.base.signals import STOP_CODES, Stopped, StopTold, stops_unwind
from annotated.configs import merged
from annotated.store.checkpoint_file import checkpoints, header
from experiments.folders import ROOT, relative


def invocation(module: str, argv=None) -> str:
    """The command line a script was started with (argv: its arguments, by default those of
    this process), for the first line of its results file."""
    args = sys.argv[1:] if argv is None else argv
    return recorded(["python", "-m", module, *args])


def recorded(cmd: list[str]) -> str:
    """A command (its words) as the results files record it: the data location is each
    reader's own, so `--data-dir` is written with the README's placeholder, DIR."""
    words = list(cmd)
    for i, word in enumerate(words):
        if word == "--data-dir" and i + 1 < len(words):
            words[i + 1] = "DIR"
        elif word.startswith("--data-dir="):
            words[i] = "--data-dir=DIR"
    return shlex.join(words)


def train_command(preset: str, out: Path, *, max_minutes: float | None = None,
                  max_steps: int | None = None, overrides=(), data_dir=None,
                  nproc: int = 1) -> list[str]:
    """The command line of a fresh `python -m annotated.train` run in `out`; with nproc > 1,
    under torchrun with that many processes on this machine (one global batch, chapter 9)."""
    cmd = [*launcher(nproc), "-m", "annotated.train", "--config", preset, "--run-dir",
           relative(out)]
    if data_dir:
        cmd += ["--data-dir", str(data_dir)]
    if max_minutes is not None:
        cmd += ["--max-minutes", str(max_minutes)]
    if max_steps is not None:
        cmd += ["--max-steps", str(max_steps)]
    return cmd + merged(overrides)


def resume_command(out: Path, *, max_minutes: float | None = None, data_dir=None,
                   nproc: int = 1) -> list[str]:
    """The command line that continues the run in `out` (`--resume`), for max_minutes more if
    given."""
    cmd = [*launcher(nproc), "-m", "annotated.train", "--run-dir", relative(out), "--resume"]
    if max_minutes is not None:
        cmd += ["--max-minutes", str(max_minutes)]
    return cmd + (["--data-dir", str(data_dir)] if data_dir else [])


def launcher(nproc: int) -> list[str]:
    """How a training command starts: python, or torchrun with nproc processes."""
    return ["python"] if nproc == 1 else ["torchrun", "--standalone", f"--nproc_per_node={nproc}"]


def with_this_python(cmd: list[str]) -> list[str]:
    """A command as shown ("python -m ..." or "torchrun ...") made to run with this Python."""
    module = ["-m", "torch.distributed.run"] if cmd[0] == "torchrun" else []
    return [sys.executable, *module, *cmd[1:]]


def run_command(cmd: list[str]) -> str:
    """Run one of the project's commands (cmd: "python", "-m", ...) from the repository root
    with this Python; returns it as one string, as recorded. If it fails, it has already said
    why on stderr: the ChildProcessError only names it. If a stop ends it, its own line told
    what it saved (StopTold); a command killed instead is named in this script's line."""
    line = shlex.join(cmd)
    print(f"+ {line}", flush=True)
    process = subprocess.Popen(with_this_python(cmd), cwd=ROOT, start_new_session=True,
                               preexec_fn=ends_with(os.getpid()))
    try:
        code = process.wait()
    except KeyboardInterrupt as interrupted:      # Ctrl-C, SIGTERM, SIGHUP: it ends first
        stop([process], interrupted)
        if process.returncode in STOP_CODES:        # it said what it saved and how to go on
            raise StopTold(process.returncode) from None
        interrupted.add_note(f"`{line}` stopped too")
        raise
    if code != 0:
        raise ChildProcessError(f"`{line}` failed (exit code {code}); its error is above")
    return recorded(cmd)


def train(preset: str, out: Path, **options) -> tuple[float, str]:
    """Run train_command(preset, out, **options); returns (wall seconds, the command)."""
    start = time.time()
    cmd = run_command(train_command(preset, out, **options))
    return time.time() - start, cmd


def average(run_dir: Path, n: int, out: Path | None = None) -> tuple[Path, str]:
    """Average the newest n checkpoints of a run (§6.1) into `out` (default
    run_dir/average.pt). An `out` that already averages exactly those checkpoints is used as
    it is; one that averages others is replaced only if they are all still there (it can be
    made again); one that cannot be made again (the user's own, from checkpoints rotation has
    deleted) never is."""
    out = out or run_dir / "average.pt"
    command = ["python", "-m", "annotated.checkpoint", "average", "--last", str(n),
               relative(run_dir), "--out", relative(out)]
    if out.exists():
        present = [p.name for p in checkpoints(run_dir)]
        try:
            sources = header(out).get("averaged_from")
        except Exception:
            sources = None
        if sources == present[-n:]:
            return out, recorded(command)
        if not sources or not set(sources) <= set(present):
            raise DataError(f"{out} exists and is not an average this script can make again "
                            f"(its checkpoints are not all in {run_dir}); move it away (it is "
                            f"left as it is), then run this again")
    return out, run_command(command)


def start(name: str, run: Path, cmd: list[str]) -> subprocess.Popen:
    """Start one training command in the run folder `run`, its output appended to
    RUNS_DIR/NAME.log after a line naming the call (the logs of earlier calls stay). A trainer
    still at work in `run` (left by an earlier call that was killed) is refused first, before
    the log is touched; the one started here ends with this process, however it ends."""
    check_no_trainer(run)
    print("+ " + " ".join(cmd), flush=True)
    run.parent.mkdir(parents=True, exist_ok=True)
    log = open(run.parent / f"{name}.log", "a")
    log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')}: {shlex.join(cmd)}\n")
    log.flush()
    return subprocess.Popen(with_this_python(cmd), cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=ends_with(os.getpid()))


def check_no_trainer(run: Path) -> None:
    """Refuse a run folder that a trainer is at work in: it holds the folder's lock
    (annotated.training.run_dir), which the kernel drops when it ends."""
    try:
        lock = open(run / ".lock")
    except OSError:                   # no lock, or none to read: no trainer at work there
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = lock.read().strip() or "unknown"
            raise RunDirError(f"{run} is in use by a training process (pid {pid}), perhaps "
                              f"started by an earlier call of this script that was killed; "
                              f"wait for it to end or stop it (kill {pid}), then run this "
                              f"again") from None
        fcntl.flock(lock, fcntl.LOCK_UN)


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
PR_SET_PDEATHSIG = 1                  # prctl(2)


def ends_with(parent: int):
    """A preexec_fn for a command this script starts: on Linux, the command gets SIGTERM
    when `parent` (this process) ends, however it ends (kill -9 included), so that no trainer
    outlives the script that started it and writes on into its log. Elsewhere None."""
    if _LIBC is None:
        return None

    def in_the_child():
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:            # the parent ended before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)
    return in_the_child


def wait_for(procs: dict, runs: dict):
    """Wait for every started training; one error naming the logs of those that failed.
    Ctrl-C, SIGTERM or SIGHUP while waiting stops them (SIGTERM, which a trainer takes as
    Ctrl-C) and waits for them to end; a second stop kills them."""
    with stops_unwind():
        try:
            failed = [name for name, p in procs.items() if p.wait() != 0]
        except KeyboardInterrupt as interrupted:
            stop(list(procs.values()), interrupted)
            raise
    if failed:
        raise ChildProcessError(f"training failed for {', '.join(failed)}; see "
                                f"{', '.join(str(runs[n].parent / f'{n}.log') for n in failed)}")


def stop(procs, interrupted: KeyboardInterrupt) -> None:
    """Pass the stop that `interrupted` this script on to the processes, once, and wait for
    them to end of it; kill them on a second stop. They run in sessions of their own, so a
    stop sent to the terminal's process group (Ctrl-C) reaches this script alone, and each
    command is told once, not once by the terminal and again by the script."""
    signum = interrupted.signum if isinstance(interrupted, Stopped) else signal.SIGINT
    try:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)
        for p in procs:
            p.wait()
    except KeyboardInterrupt:
        for p in procs:
            p.kill()
        raise
