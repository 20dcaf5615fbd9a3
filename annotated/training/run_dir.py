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
import fcntl
import json
import os
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
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            lock = open(self.path / ".lock", "a+")
        except OSError as e:
            raise RunDirError(f"cannot write into the run folder {self.path} ({e.strerror}); "
                              f"choose another --run-dir") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            owner = lock.read().strip() or "unknown"
            lock.close()
            raise RunDirError(f"{self.path} is in use by another training process (pid "
                              f"{owner}); wait for it to end or choose another --run-dir") from None
        lock.seek(0)
        if lock.read().strip():
            self.say(f"{self.path}: took over the lock of an earlier run that ended without "
                     f"releasing it")
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        self._lock = lock
        for stale in remove_stale_temporaries(self.path):
            self.say(f"removed {stale.name}, left by an interrupted write")
        return self

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

    def rewind_metrics(self, step: int):
        """Keep the metric lines up to `step` (a resumed run logs the later ones again). A last
        line cut short by a crash is dropped, and said."""
        if not (self.active and self.metrics.exists()):
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
