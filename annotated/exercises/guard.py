"""What a graded notebook must not change for the notebooks graded after it: the code every
kernel runs.

A notebook's code may write anywhere it can. Written into the project's code (annotated/,
reference_numpy/, or a module beside them, which the kernels import first), or into one of
Python's start-up files (a *.pth file or sitecustomize.py in a site-packages folder, which
Python runs as it starts), it would run in every kernel after it, and could pass or fail the
classmates graded later. `Installation` keeps those files as they were before grading; after
each notebook, `restore` puts back what changed, moves aside what was added (as
NAME.found-while-grading, which Python neither imports nor runs), and names what changed
elsewhere in Python's installation, which is too large to keep a copy of.
"""
import os
import site
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from annotated.base.files import free_name, write_files
from annotated.exercises.notebook import PROJECT

# The project's packages, kept whole (every file, caches aside).
PACKAGES = (PROJECT / "annotated", PROJECT / "reference_numpy")
# Start-up files Python runs from any folder on its path, and what it imports from the
# project's folder before anything else (the kernels have it first on PYTHONPATH).
START_UP = ("sitecustomize.py", "usercustomize.py")
FOUND = ".found-while-grading"


@dataclass
class Restored:
    """What `Installation.restore` did: files put back, files moved aside (added, with where
    they went), and files of Python's installation that changed and could not be put back."""
    put_back: list = field(default_factory=list)
    moved: list = field(default_factory=list)
    moved_to: list = field(default_factory=list)
    changed: list = field(default_factory=list)


def site_folders() -> list[Path]:
    """The folders Python's start-up reads *.pth files from (site-packages, the user's)."""
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    return [Path(f) for f in dict.fromkeys(folders) if os.path.isdir(f)]


def guarded_files() -> list[Path]:
    """The files a notebook must not change: every file of the project's packages (not their
    caches), the modules beside them, and each start-up file on Python's path."""
    found = []
    for package in PACKAGES:
        for top, folders, names in os.walk(package):
            folders[:] = sorted(d for d in folders if d != "__pycache__")
            found += [Path(top, n) for n in sorted(names)]
    found += sorted(p for p in PROJECT.iterdir() if p.suffix in (".py", ".pth"))
    for folder in site_folders():
        found += sorted(p for p in folder.iterdir() if p.suffix == ".pth")
    for folder in dict.fromkeys(map(Path, filter(None, sys.path))):
        found += [folder / name for name in START_UP if (folder / name).is_file()]
    return [f for f in dict.fromkeys(found) if f.is_file() or f.is_symlink()]


class Installation:
    """The guarded files as they were before grading (their bytes and inode change times),
    and the time each notebook started, to find what changed elsewhere in site-packages."""

    def __init__(self):
        self.files = {file: self.state(file) for file in guarded_files()}
        self.since = time.time_ns()

    @staticmethod
    def state(file: Path) -> tuple[bytes | None, int]:
        """The file's bytes (None for a link, or one that cannot be read) and change time."""
        try:
            return (None if file.is_symlink() else file.read_bytes()), file.lstat().st_ctime_ns
        except OSError:
            return None, 0

    def restore(self) -> Restored:
        """Put back each guarded file that changed or went, move aside the ones added, and
        name the other files of site-packages changed since the notebook started (and any
        guarded file that could not be put back)."""
        done = Restored()
        for file, (data, ctime) in self.files.items():
            if data is None or not self.differs(file, data, ctime):
                continue
            try:
                if file.is_symlink():            # written through, it would change another
                    file.unlink()
                write_files({file: data})
                done.put_back.append(file)
            except OSError:
                done.changed.append(file)
            self.files[file] = self.state(file)
        for file in [f for f in guarded_files() if f not in self.files]:
            aside = free_name(file, FOUND)
            try:
                os.replace(file, aside)
                done.moved.append(file)
                done.moved_to.append(aside)
            except OSError:
                done.changed.append(file)
        done.changed += [f for f in self.changed_elsewhere() if f not in done.moved_to]
        for package in PACKAGES:                 # caches the notebook's code may have written
            self.clear_new_caches(package)
        self.since = time.time_ns()
        return done

    @staticmethod
    def differs(file: Path, data: bytes, ctime: int) -> bool:
        """Whether `file` no longer holds `data`: gone, a link now, or other bytes (read only
        when its change time moved)."""
        try:
            if file.is_symlink() or not file.is_file():
                return True
            return file.lstat().st_ctime_ns != ctime and file.read_bytes() != data
        except OSError:
            return True

    def changed_elsewhere(self) -> list[Path]:
        """The files of site-packages (not caches) changed since `since`."""
        found = []
        for folder in site_folders():
            for top, folders, names in os.walk(folder):
                folders[:] = [d for d in folders if d != "__pycache__"]
                found += [Path(top, n) for n in names if not n.endswith(".pyc") and
                          Path(top, n) not in self.files and self.newer(Path(top, n))]
        return sorted(found)

    def newer(self, file: Path) -> bool:
        try:
            return file.lstat().st_ctime_ns >= self.since
        except OSError:
            return False

    def clear_new_caches(self, package: Path) -> None:
        """Remove the compiled modules written under `package` since `since`: Python compiles
        them again from the sources, which are put back; one the notebook wrote itself could
        stand for other code."""
        for top, _, names in os.walk(package):
            for cache in [Path(top, n) for n in names if Path(top).name == "__pycache__"]:
                if self.newer(cache):
                    try:
                        cache.unlink()
                    except OSError:              # a read-only install: nothing was written
                        pass
