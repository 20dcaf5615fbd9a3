"""The run folder: one training process at a time, its metrics log, and its checkpoints.

A run folder holds the run's checkpoints and `metrics.jsonl` (one JSON line per logged step or
validation, which `read_metrics` reads back). While a trainer uses it, it holds an exclusive
lock on `RUN/.lock` (flock): a second trainer started on the same folder is refused at once,
naming the process that has it. The kernel drops the lock when its process ends, however it
ends, so a lock left behind by a killed run is simply taken over (and said). Taking the lock is
also the first write into the folder: a folder that cannot be written is found before any
work, not after an hour of it.

A run folder holds one run: `check_one_run` refuses a folder whose checkpoints come from two
runs, and `rotate` keeps the newest `keep_last` checkpoints of the run, the newest one that
verifies and any the trainer names (its last good one), and never touches another run's.

Only rank 0 touches the folder; the other ranks of a torchrun job get a RunDir that does
nothing.
"""
import errno
import fcntl
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

from annotated.base.cli import say_error
from annotated.base.errors import CheckpointError, DataError, RunDirError
from annotated.base.files import atomic_open, clear_temporaries, links_loop
from annotated.store import checkpoint_file


class RunDir:
    def __init__(self, path, active: bool = True, say=print):
        self.path, self.active, self.say = Path(path), active, say
        self.metrics = self.path / "metrics.jsonl"
        self._lock = None
        self._made = False
        self._identity = None                 # (device, inode) of the folder it locked

    def open(self) -> "RunDir":
        """Create and lock the folder, and remove (or name) temporary files of an interrupted
        save."""
        if not self.active:
            return self
        self._check_kind()
        self._made = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:                  # named where it failed: a parent, not .lock
            raise RunDirError(f"cannot make the run folder {self.path}: {e.filename or self.path}"
                              f": {e.strerror}; choose another --run-dir") from None
        try:
            fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK, 0o666)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise OSError(errno.EINVAL, "not a file")
            lock = os.fdopen(fd, "r+", errors="replace")     # a pid, or whatever was left
        except OSError as e:
            why = {errno.ELOOP: "it is a link", errno.EISDIR: "it is a folder",
                   errno.EINVAL: "it is not a file"}.get(e.errno)
            fix = (f"{why}, and the lock must be the run folder's own file; move it away or"
                   if why else f"{e.strerror};")
            raise RunDirError(f"cannot write into the run folder {self.path}: "
                              f"{self.path / '.lock'}: {fix} choose another --run-dir") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = lock.read().strip() or "unknown"
            lock.close()
            raise RunDirError(f"{self.path} is in use by another training process (pid "
                              f"{owner}); wait for it to end or choose another --run-dir") from None
        if lock.read().strip():
            self.say(f"{self.path}: took over the lock of an earlier run that ended without "
                     f"releasing it")
        try:
            lock.seek(0)
            lock.truncate()
            lock.write(f"{os.getpid()}\n")
            lock.flush()
        except OSError as e:
            try:
                lock.close()                       # its flush fails again; the file is closed
            except OSError:
                pass
            raise RunDirError(f"cannot write into the run folder {self.path} "
                              f"({self.path / '.lock'}: {e.strerror}); choose another "
                              f"--run-dir") from None
        self._lock = lock
        found = os.stat(self.path)
        self._identity = found.st_dev, found.st_ino
        clear_temporaries(self.path, self.say)
        return self

    def check_still_there(self) -> None:
        """Refuse to write on once the folder was moved or deleted under the run (its path
        names nothing then, or another folder): the writes would start a second folder, with
        neither the first's checkpoints nor its lock."""
        if not self.active or self._identity is None:
            return
        try:
            found = os.stat(self.path)
            same = (found.st_dev, found.st_ino) == self._identity
        except OSError:
            same = False
        if same:
            return self._check_lock_is_ours()
        now = self._where_now()
        if now is None:
            raise RunDirError(f"the run folder {self.path} was moved or deleted while the run "
                              f"trained; if it was moved and holds checkpoints, continue there, "
                              f"with --run-dir NEW_PLACE --resume; otherwise start again")
        if checkpoint_file.checkpoints(now):
            raise RunDirError(f"the run folder {self.path} was moved to {now} while the run "
                              f"trained; its checkpoints went with it: continue there, with "
                              f"--run-dir {now} --resume")
        raise RunDirError(f"the run folder {self.path} was moved to {now} while the run trained, "
                          f"before any checkpoint was saved, so there is nothing to resume: "
                          f"start the run again")

    def _check_lock_is_ours(self) -> None:
        """Refuse to write on once the lock file was deleted or replaced: a second trainer may
        have made its own and be writing here too, and checkpoints of both would mix."""
        mine = os.fstat(self._lock.fileno())
        try:
            found = os.stat(self.path / ".lock")
            same = (found.st_dev, found.st_ino) == (mine.st_dev, mine.st_ino)
        except OSError:
            same = False
        if not same:
            raise RunDirError(f"the lock file {self.path / '.lock'} was deleted or replaced "
                              f"while the run trained, so another training process may be "
                              f"writing in {self.path} too; this run stops so that the two do "
                              f"not mix. If none is, continue with --resume, which locks the "
                              f"folder again")

    def _where_now(self) -> Path | None:
        """Where the folder is now, found through its open lock file (Linux's /proc), or None
        where that cannot be told (deleted, moved to another disk, no /proc)."""
        try:
            target = os.readlink(f"/proc/self/fd/{self._lock.fileno()}")
        except (OSError, AttributeError, ValueError):
            return None
        return None if target.endswith(" (deleted)") else Path(target).parent

    def _check_kind(self):
        """Refuse a run folder that is a file or a broken link, and a metrics log that is a
        link or not a file (the run would write into whatever it points at)."""
        if self.path.is_symlink() and not self.path.exists():
            if links_loop(self.path):
                raise RunDirError(f"the run folder {self.path} is a loop of links (it leads "
                                  f"back to itself); remove the link or choose another "
                                  f"--run-dir")
            raise RunDirError(f"the run folder {self.path} is a link to "
                              f"{os.path.realpath(self.path)}, which does not exist; create it "
                              f"or choose another --run-dir")
        if self.path.exists() and not self.path.is_dir():
            raise RunDirError(f"the run folder {self.path} is a file, not a folder; choose "
                              f"another --run-dir")
        _check_not_committed(self.path)
        if self.metrics.is_symlink() or (self.metrics.exists() and not self.metrics.is_file()):
            what = "a link" if self.metrics.is_symlink() else "not a file"
            raise RunDirError(f"{self.metrics} is {what}; a run's metrics log is its own file: "
                              f"move it away")
        if self.metrics.exists() and not os.access(self.metrics, os.W_OK):
            mounted = os.statvfs(self.metrics).f_flag & os.ST_RDONLY
            fix = "mount it writable" if mounted else "make it writable (chmod u+w)"
            raise RunDirError(f"{self.metrics} is read-only"
                              f"{' (its file system is mounted read-only)' if mounted else ''}: "
                              f"the run appends to it; {fix} or choose another --run-dir")

    def check_checkpoint_names(self, after: int, until: int):
        """Refuse, before training, an entry that is not a file (a folder, a pipe) under the
        name of a checkpoint this run may save, of a step in (after, until]: the save would
        fail there after all the work."""
        if not self.active:
            return
        for p in self.path.glob("ckpt_*.pt"):
            m = checkpoint_file.NAME.fullmatch(p.name)
            if m and after < int(m.group(1)) <= until and not p.is_file():
                what = "a folder" if p.is_dir() else "not a file"
                raise RunDirError(f"{p} is {what}, under the name of the checkpoint this run "
                                  f"may save at step {int(m.group(1)):,}; move it away or "
                                  f"choose another --run-dir")

    def check_room(self, checkpoint_bytes: int, keep_last: int) -> None:
        """Refuse, before training, a folder whose disk has no room for one checkpoint of
        about `checkpoint_bytes`; note one without room for the keep_last it will hold (and
        the one being written beside them)."""
        if not self.active:
            return
        free, mib = shutil.disk_usage(self.path).free, 2 ** 20
        if free < checkpoint_bytes:
            raise RunDirError(f"{self.path} has {free / mib:,.1f} MiB free, and each checkpoint "
                              f"of this run takes about {checkpoint_bytes / mib:,.1f} MiB: the "
                              f"first save would fail; free some space or choose another "
                              f"--run-dir")
        if free < (keep_last + 1) * checkpoint_bytes:
            self.say(f"note: {self.path} has room for {int(free // checkpoint_bytes)} "
                     f"checkpoint(s) of about {checkpoint_bytes / mib:,.1f} MiB, and the run "
                     f"keeps keep_last={keep_last} (and writes one beside them): a save will "
                     f"fail once the disk is full; free some space, or lower keep_last")

    def close(self):
        """Unlock the folder; one this run made and left with nothing but its lock (refused
        before its first file) is removed."""
        if self._lock is not None:
            try:
                self._lock.truncate(0)
                self._lock.close()                    # releases the flock
            except OSError:                           # a full disk: the kernel still releases it
                pass
            self._lock = None
            if self._made and self.path.is_dir() and \
                    [p.name for p in self.path.iterdir()] == [".lock"]:
                (self.path / ".lock").unlink()
                self.path.rmdir()

    def record(self, entry: dict):
        """Append one line to metrics.jsonl; a failed write (a full disk, a file size limit)
        is an OSError that names the file."""
        if self.active:
            self.check_still_there()
            try:
                with self.metrics.open("a") as f:
                    f.write(json.dumps(entry) + "\n")
            except OSError as e:
                raise OSError(e.errno, f"{e.strerror} (appending to the metrics log)",
                              str(self.metrics)) from None

    def rewind_metrics(self, step: int, fresh: bool = False):
        """Keep the metric lines up to `step` (a resumed run logs the later ones again). A last
        line cut short by a crash is dropped, and said; any other line that is not a metrics
        line (an edit) is refused, as read_metrics refuses it, and the log left as it is. A
        fresh run in a folder whose log holds lines of an earlier run (its checkpoints gone)
        keeps them under another name. A resumed run whose log is gone starts it again, and
        says that the steps before are not in it."""
        if self.active and not fresh and step and not os.path.lexists(self.metrics):
            self.say(f"{self.metrics} is missing: the log starts again after step "
                     f"{step:,}, and the steps before it are not in it")
        if not (self.active and self.metrics.exists()):
            return
        if fresh and self.metrics.stat().st_size:
            aside = self._free_name()
            os.replace(self.metrics, aside)
            self.say(f"{self.metrics} held the log of an earlier run, whose checkpoints are not "
                     f"here; kept as {aside.name}")
            return
        kept, lines = [], self.metrics.read_text(errors="replace").splitlines()
        for number, line in enumerate(lines, start=1):
            entry = metrics_entry(line)
            if entry is None and number < len(lines):
                raise not_a_metrics_line(self.metrics, number)
            if entry is None:
                self.say(f"{self.metrics}, line {number}: not a metrics line (cut short by a "
                         f"crash); dropped")
                continue
            if entry["step"] <= step:
                kept.append(line)
        with atomic_open(self.metrics, "w") as f:
            f.writelines(line + "\n" for line in kept)

    def _free_name(self) -> Path:
        """metrics.earlier-N.jsonl, the first N not taken."""
        n = 1
        while (self.path / f"metrics.earlier-{n}.jsonl").exists():
            n += 1
        return self.path / f"metrics.earlier-{n}.jsonl"


def _check_not_committed(folder: Path):
    """Refuse a run folder that holds files committed to a git repository, or is made in a
    folder that does (results/, the package, the repository's top): the run's checkpoints and
    logs would land among them. Outside a repository, or without git, nothing is checked."""
    absolute = Path(os.path.abspath(folder))
    existing = next(p for p in (absolute, *absolute.parents) if p.exists())
    try:
        top, files = (subprocess.run(["git", "-C", str(existing), *args], capture_output=True,
                                     text=True, timeout=30, check=True).stdout
                      for args in (["rev-parse", "--show-toplevel"], ["ls-files", "--full-name"]))
    except (OSError, subprocess.SubprocessError):
        return
    top = Path(top.strip()).resolve()
    here = Path(os.path.realpath(absolute))
    if not here.is_relative_to(top):
        return
    inside = [p for p in (here, *here.parents) if p.is_relative_to(top) and p != top] or [top]
    for name in files.splitlines():
        tracked = top / name
        if tracked.is_relative_to(here) or tracked.parent in inside:
            raise RunDirError(f"the run folder {folder} would hold its checkpoints and logs "
                              f"among files committed to the repository {top} (such as "
                              f"{tracked.relative_to(top)}); choose another --run-dir, such as "
                              f"runs/NAME")


def read_metrics(run_dir, split: str | None = None) -> list[dict]:
    """The lines of a run's metrics.jsonl (those of `split`, "train" or "valid", if given);
    a folder without one, or a line the trainer did not write, is a DataError naming it."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file() and any(Path(run_dir).glob("ckpt_*.pt")):
        raise DataError(f"no {path}, though {run_dir} holds checkpoints: the run stopped "
                        f"before it logged its first metrics; continue it (python -m "
                        f"annotated.train --run-dir {run_dir} --resume), then try again")
    if not path.is_file():
        raise DataError(f"no {path}: {run_dir} was not written by python -m annotated.train; "
                        f"give the folder of a training run")
    lines = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if (entry := metrics_entry(line)) is None:
            raise not_a_metrics_line(path, number)
        lines.append(entry)
    return [entry for entry in lines if split is None or entry.get("split") == split]


def metrics_entry(line: str) -> dict | None:
    """One line of metrics.jsonl as the trainer writes it (an object with an integer step,
    every number finite: the trainer stops a run before a loss that is not), or None."""
    try:
        entry = json.loads(line, parse_constant=not_a_number)
    except (ValueError, RecursionError):          # not JSON, or nested past Python's depth
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("step"), int) else None


def not_a_number(constant: str):
    raise ValueError(f"{constant} is not a number the trainer writes")


def not_a_metrics_line(path: Path, number: int) -> DataError:
    return DataError(f"{path}, line {number}: not a metrics line as the trainer writes them; "
                     f"restore or delete the line")


# ---------------------------------------------------------------------------- its checkpoints

def _run_id_or_none(path: Path) -> str | None:
    """run_id_of, or None for a file that cannot be read (so rotation leaves it alone)."""
    try:
        return checkpoint_file.run_id_of(path)
    except Exception:
        return None


def check_one_run(run_dir) -> None:
    """Refuse a run folder whose checkpoints come from more than one run (a checkpoint of
    another run copied in): continuing would mix the two runs, and rotation would delete the
    folder's own checkpoints for the other run's. Files that cannot be read are left to the
    checks that load them. A checkpoint whose name says another step than it holds (renamed)
    is refused too: the run would resume from the wrong one, or rotate the wrong one away."""
    runs, renamed = {}, []
    for p in checkpoint_file.checkpoints(run_dir):
        try:
            head = checkpoint_file.header(p)
        except Exception:                          # damaged: load() says so, naming it
            continue
        runs.setdefault(head.get("run_id"), []).append(p)
        renamed += [p] if head.get("step") != checkpoint_file.step_in_name(p) else []
    if len(runs) > 1:
        described = "; ".join(
            f"run {run_id}: "
            + (paths[0].name if len(paths) == 1 else
               f"{len(paths)} files, {paths[0].name} to {paths[-1].name}")
            for run_id, paths in runs.items())
        raise CheckpointError(f"{run_dir} holds checkpoints of {len(runs)} different runs "
                              f"({described}); a run folder holds one run: move the other "
                              f"run's checkpoints into a folder of their own, then give this "
                              f"command again")
    if renamed:
        raise CheckpointError(misnamed(renamed[0], run_dir))


def in_use_by(run_dir) -> str | None:
    """The pid of the training process that holds the run folder's lock now, or None: read
    without taking the lock (a second process may be starting the run)."""
    try:
        with open(Path(run_dir) / ".lock", "r", errors="replace") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return lock.read().strip() or "unknown"
            return None
    except OSError:                                      # no lock file: no run there yet
        return None


def misnamed(p, run_dir) -> str | None:
    """What is wrong with checkpoint `p` if its name says another step than it holds (it was
    renamed); None if its name is right."""
    head = checkpoint_file.header(p)
    step = head.get("step")
    if step == checkpoint_file.step_in_name(p):
        return None
    if "averaged_from" in head or "halved_from" in head:
        kind = "an average" if "averaged_from" in head else "float16 weights (a halved file)"
        return (f"{p} holds {kind}, not a training checkpoint: move it out of {run_dir} (or "
                f"rename it, e.g. average.pt)")
    own = Path(p).with_name(checkpoint_file.checkpoint_name(step))
    if own.exists():
        return (f"{p} holds step {step:,}, which {own.name} beside it holds too (a copy, or a "
                f"renamed file); move it out of {run_dir}")
    return (f"{p} holds step {step:,}, not the step its name says: was it renamed? Give it its "
            f"own name, {own.name}, or move it out of {run_dir}")


def rotate(run_dir, keep_last: int, keep=(), run_id: str | None = None) -> list[Path]:
    """Delete all but the newest `keep_last` checkpoints of a run; returns the deleted ones.
    With `run_id`, only that run's checkpoints are counted and deleted: a checkpoint of another
    run is never touched. Never deleted either: the files in `keep` (e.g. the trainer's last
    good checkpoint), and the newest checkpoint that verifies, even when damaged newer ones
    have pushed it out of the last keep_last."""
    found = checkpoint_file.checkpoints(run_dir)
    if run_id is not None:
        found = [p for p in found if _run_id_or_none(p) == run_id]
    old = found[:-keep_last] if keep_last > 0 else []
    spared = {Path(p).resolve() for p in keep}
    if old and (intact := checkpoint_file.newest_intact(run_dir)) is not None:
        spared.add(intact.resolve())
    old = [p for p in old if p.resolve() not in spared]
    deleted = []
    for p in old:
        try:
            p.unlink()
            deleted.append(p)
        except FileNotFoundError:              # gone already (the folder moved, or a user)
            continue
        except OSError as e:                   # an old file kept is no reason to stop training
            say_error(f"note: could not delete the old checkpoint {p} ({e.strerror}); "
                      f"training goes on")
    return deleted
