"""The run folder: one training process at a time, and its metrics log.

A run folder holds the run's checkpoints and `metrics.jsonl` (one JSON line per logged step or
validation). While a trainer uses it, it holds an exclusive lock on `RUN/.lock` (flock): a
second trainer started on the same folder is refused at once, naming the process that has it.
The kernel drops the lock when its process ends, however it ends, so a lock left behind by a
killed run is simply taken over (and said). Taking the lock is also the first write into the
folder: a folder that cannot be written is found before any work, not after an hour of it.

Only rank 0 touches the folder; the other ranks of a torchrun job get a RunDir that does
nothing.
"""
import errno
import fcntl
import json
import os
import stat
from pathlib import Path

from annotated.data.files import atomic_open, remove_stale_temporaries


class RunDirError(OSError):
    """A run folder that cannot be used: locked by another trainer, or not writable."""


class RunDir:
    def __init__(self, path, active: bool = True, say=print):
        self.path, self.active, self.say = Path(path), active, say
        self.metrics = self.path / "metrics.jsonl"
        self._lock = None

    def open(self) -> "RunDir":
        """Create and lock the folder, and remove temporary files of an interrupted save."""
        if not self.active:
            return self
        self._check_kind()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK, 0o666)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise OSError(errno.EINVAL, "it is not a file; the lock is the folder's own "
                                            "file: remove it")
            lock = os.fdopen(fd, "r+")
        except OSError as e:
            why = ("it is a link; the lock is the folder's own file: remove it"
                   if e.errno == errno.ELOOP else e.strerror)
            raise RunDirError(f"cannot write into the run folder {self.path} "
                              f"({self.path / '.lock'}: {why}); choose another --run-dir") \
                from None
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
            lock.close()
            raise RunDirError(f"cannot write into the run folder {self.path} "
                              f"({self.path / '.lock'}: {e.strerror}); choose another "
                              f"--run-dir") from None
        self._lock = lock
        for stale in remove_stale_temporaries(self.path):
            self.say(f"removed {stale.name}, left by an interrupted write")
        return self

    def _check_kind(self):
        """Refuse a run folder that is a file or a broken link, and a metrics log that is a
        link or not a file (the run would write into whatever it points at)."""
        if self.path.is_symlink() and not self.path.exists():
            raise RunDirError(f"the run folder {self.path} is a link to "
                              f"{os.path.realpath(self.path)}, which does not exist; create it "
                              f"or choose another --run-dir")
        if self.path.exists() and not self.path.is_dir():
            raise RunDirError(f"the run folder {self.path} is a file, not a folder; choose "
                              f"another --run-dir")
        if self.metrics.is_symlink() or (self.metrics.exists() and not self.metrics.is_file()):
            what = "a link" if self.metrics.is_symlink() else "not a file"
            raise RunDirError(f"{self.metrics} is {what}; a run's metrics log is its own file: "
                              f"move it away")

    def close(self):
        if self._lock is not None:
            self._lock.truncate(0)
            self._lock.close()                        # releases the flock
            self._lock = None

    def record(self, entry: dict):
        """Append one line to metrics.jsonl; a failed write (a full disk, a file size limit)
        is an OSError that names the file."""
        if self.active:
            try:
                with self.metrics.open("a") as f:
                    f.write(json.dumps(entry) + "\n")
            except OSError as e:
                raise OSError(e.errno, f"{e.strerror} (appending to the metrics log)",
                              str(self.metrics)) from None

    def rewind_metrics(self, step: int, fresh: bool = False):
        """Keep the metric lines up to `step` (a resumed run logs the later ones again). A last
        line cut short by a crash is dropped, and said. A fresh run in a folder whose log holds
        lines of an earlier run (its checkpoints gone) keeps them under another name."""
        if not (self.active and self.metrics.exists()):
            return
        if fresh and self.metrics.stat().st_size:
            aside = self._free_name()
            os.replace(self.metrics, aside)
            self.say(f"{self.metrics} held the log of an earlier run, whose checkpoints are not "
                     f"here; kept as {aside.name}")
            return
        kept = []
        for number, line in enumerate(self.metrics.read_text(errors="replace").splitlines(),
                                      start=1):
            try:
                entry = json.loads(line)
                logged = entry["step"] if isinstance(entry, dict) else None
            except (json.JSONDecodeError, KeyError):
                logged = None
            if not isinstance(logged, int):
                self.say(f"{self.metrics}, line {number}: not a metrics line (cut short by a "
                         f"crash, or edited); dropped")
                continue
            if logged <= step:
                kept.append(line)
        with atomic_open(self.metrics, "w") as f:
            f.writelines(line + "\n" for line in kept)

    def _free_name(self) -> Path:
        """metrics.earlier-N.jsonl, the first N not taken."""
        n = 1
        while (self.path / f"metrics.earlier-{n}.jsonl").exists():
            n += 1
        return self.path / f"metrics.earlier-{n}.jsonl"
