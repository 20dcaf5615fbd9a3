"""Files, the way every command of the project reads and writes them.

- `read_lines`: UTF-8 text, plain or gzip (recognised by content), one line at a time; only
  "\n" ends a line, so a stray "\r" cannot misalign a parallel corpus; a byte-order mark at
  the start is not text and is dropped. A file that is not UTF-8, or a broken gzip, is a
  DataError naming the file and the line.
- `atomic_open`: a write goes to a temporary file beside the target and is renamed over it only
  when complete, so a crash never leaves half a file under the real name; the file gets the
  mode open() would give it, and a full disk says so and keeps the old file. A symbolic link is
  written through (its target is replaced, the link stays); a device or a named pipe is
  written to as it is, never replaced. Temporary files that a killed process left behind are
  removed by the next write to the same name (`remove_stale_temporaries`).
- `check_output`: before any work, refuse to write over a file the command reads, or where it
  cannot write.
- `sha256_file`, `download`: checksums and verified downloads.
"""
import errno
import gzip
import hashlib
import os
import re
import secrets
import socket
import urllib.error
import urllib.request
import zlib
from contextlib import contextmanager
from pathlib import Path


class DataError(ValueError):
    """A file the user gave that cannot be used as it is: the message names it and the fix."""


class DownloadError(DataError):
    """A download that could not reach its server."""


def read_lines(path):
    """Yield the lines of a UTF-8 text file, plain or gzip (recognised by content), without the
    line end. Only "\\n" ends a line: a stray "\\r" or U+2028 inside a sentence must not split it
    and misalign a parallel corpus."""
    path = Path(path)
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    number = 0
    try:
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
            for number, line in enumerate(f, start=1):
                try:
                    text = line.decode("utf-8").rstrip("\r\n")
                    yield text.removeprefix("\ufeff") if number == 1 else text
                except UnicodeDecodeError as e:
                    raise DataError(f"{path}, line {number}: not UTF-8 ({e.reason} at byte "
                                    f"{e.start}); convert the file to UTF-8") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise DataError(f"{path}, after line {number}: the gzip data is broken or cut short "
                        f"({e}); download or copy the file again") from None


def sha256_file(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# A temporary file's name: .TARGET.HOST.PID.RANDOM.tmp, so that a later write can tell the
# leftovers of a killed process (on this machine) from a live writer's file.
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"
_TEMPORARY = re.compile(
    r"\.(?P<target>.+)\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:              # another user's live process
        return True
    return True


def remove_stale_temporaries(folder, target: str | None = None) -> list[Path]:
    """Delete the temporary files of atomic_open in `folder` (only those for `target`, if
    given) whose writer, a process of this machine, is no longer running; returns them."""
    stale = []
    for p in Path(folder).glob(".*.tmp"):
        m = _TEMPORARY.fullmatch(p.name)
        if (m and (target is None or m["target"] == target) and m["host"] == _HOST
                and not _alive(int(m["pid"]))):
            p.unlink(missing_ok=True)
            stale.append(p)
    return stale


@contextmanager
def atomic_open(path, mode="wb"):
    """Write to a temporary file beside `path` and rename it to `path` only if the block ends
    without error: a crash or an exception never leaves a half-written file under that name.
    The file gets the mode open() would give it (0o666 less the umask); a full disk is an
    OSError that says so and names `path`, whose old content stays as it was. A symbolic link
    is written through; a device or a named pipe is written to directly (there is nothing to
    replace: /dev/null stays /dev/null, and a pipe's reader gets the text)."""
    path = Path(path)
    text = {} if "b" in mode else dict(encoding="utf-8", newline="\n")
    if path.is_symlink():
        path = path.resolve()                     # replace the target, keep the link
    if path.exists() and not path.is_file():      # a device, a pipe (check_output refuses folders)
        with open(path, mode, **text) as f:
            yield f
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, path.name)
    tmp = path.parent / f".{path.name}.{_HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)    # the umask applies
    try:
        with os.fdopen(fd, mode, **text) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        os.unlink(tmp)
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise OSError(e.errno, f"{os.strerror(e.errno).lower()} while writing {path}; the "
                                   f"file that was there, if any, is unchanged") from e
        raise


def check_output(path, reads=()) -> Path:
    """Refuse, before any work is done, to write `path` if it is one of the files the command
    reads (`reads`; None entries are skipped) or if it cannot be written: a DataError whose
    one line says why."""
    path = Path(path)
    for source in reads:
        if source is not None and path.exists() and Path(source).exists() \
                and os.path.samefile(path, source):
            raise DataError(f"refusing to write {path}: it is {source}, which this command reads")
    folder = path.parent
    if path.is_dir():
        raise DataError(f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        raise DataError(f"cannot write {path}: there is no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataError(f"cannot write {path}: the folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise DataError(f"cannot write {path}: the file is read-only")
    return path


def download(url: str, path: Path, sha256: str | None = None):
    """Save url at path atomically; with sha256 given, a mismatch raises and keeps nothing.
    Returns the sha256 of what was saved."""
    digest = hashlib.sha256()
    try:
        response = urllib.request.urlopen(url, timeout=60)
    except (urllib.error.URLError, TimeoutError) as e:
        raise DownloadError(f"cannot download {url} ({getattr(e, 'reason', e)}): this needs a "
                            f"network connection to that server") from None
    with response, atomic_open(path) as f:
        for block in iter(lambda: response.read(1 << 20), b""):
            digest.update(block)
            f.write(block)
        if sha256 is not None and digest.hexdigest() != sha256:
            raise DataError(f"checksum mismatch for {url}: expected sha256 {sha256}, got "
                             f"{digest.hexdigest()}; the download was discarded")
    return digest.hexdigest()
