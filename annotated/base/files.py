"""Files, the way every command of the project reads and writes them.

- `read_lines`: UTF-8 text, plain or gzip (recognised by content), one line at a time; only
  "\n" ends a line, so a stray "\r" cannot misalign a parallel corpus; a byte-order mark at
  the start is not text and is dropped. A file that is not UTF-8, a broken gzip, another
  compression or a line of over a MiB is a DataError naming the file and the line.
- `atomic_open`: a write goes to a temporary file beside the target and is renamed over it only
  when complete, so a crash never leaves half a file under the real name; a replaced file keeps
  its permissions, and a full disk says so and keeps the old file. A symbolic link is written
  through (its target is replaced, the link stays); a device, a named pipe, or the file stdout
  already goes to, is written to as it is, never replaced. Temporary files that a killed
  process left behind are removed by the next write into the same folder
  (`remove_stale_temporaries`); `clear_temporaries` also names those of other machines.
- `write_files`: several files written all or nothing, on `all_or_nothing`, which replaces a
  set of files (the book's site too): the old ones moved aside, the new ones moved in, and on
  any failure or stop everything put back; `scratch_folder`: a temporary folder that no stop
  leaves behind.
- `check_output`: before any work, refuse to write over a file the command reads (stdin
  included), or where it cannot write.
- `sha256_file`, `text_sha256`, `download`: checksums and verified downloads.
- `expand`, `resolved`: paths as a user writes them (~), as one line on error.
"""
import errno
import fcntl
import gzip
import hashlib
import io
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

from annotated.base.errors import DataError, DownloadError
from annotated.base.signals import signals_held, stops_unwind

MAX_LINE = 1 << 20      # bytes; a longer "line" is not a sentence (a binary file, /dev/zero)
# The first bytes of compressed formats this project does not read, and the tool that reads them.
COMPRESSED = {b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2", b"PK\x03\x04": "zip",
              b"\x28\xb5\x2f\xfd": "zstd"}
# ... and with gzip: every compressor whose data a file may hold, by its first bytes.
COMPRESSORS = {b"\x1f\x8b": "gzip", **COMPRESSED}


class _Rejoined(io.RawIOBase):
    """The bytes `head`, then the rest of the open file `f`: a pipe read once from its start,
    though its first bytes were already taken to recognise gzip."""

    def __init__(self, head: bytes, f):
        super().__init__()
        self.head, self.f = head, f

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.head[:len(buffer)] if self.head else self.f.read1(len(buffer))
        self.head = self.head[len(data):]
        buffer[:len(data)] = data
        return len(data)


def read_lines(source, name: str = "stdin"):
    """Yield the lines of UTF-8 text, plain or gzip (recognised by content), without the line
    end: of a file (`source` a path) or of an open binary stream such as sys.stdin.buffer
    (`name` names it in errors). Only "\\n" ends a line: a stray "\\r" or U+2028 inside a
    sentence must not split it and misalign a parallel corpus. Each byte is read once, so a
    pipe (`<(cat f)`, /dev/stdin) loses nothing."""
    if hasattr(source, "read"):
        yield from _read(name, source)
        return
    if Path(source).is_dir():
        raise DataError(f"{source} is a folder, not a text file of one sentence a line: give "
                        f"a file in it")
    with open(source, "rb") as raw:
        yield from _read(Path(source), raw)


def _read(path, raw):
    """read_lines of the open binary stream `raw`, named `path` in errors."""
    start = raw.tell() if raw.seekable() else None
    head = raw.read(6)
    if not head:               # empty; a terminal's Ctrl-D ends its input once, not for ever
        return
    for magic, tool in COMPRESSED.items():
        if head.startswith(magic):
            if tool == "zip" and start is not None and _is_checkpoint(raw, start):
                raise DataError(f"{path} is a PyTorch checkpoint, not text one sentence a line: "
                                f"give the text file here")
            raise DataError(f"{path} is {tool}-compressed; this reads plain or gzip text: "
                            f"decompress it first")
    if start is not None:
        raw.seek(start)
        stream = raw
    else:
        stream = io.BufferedReader(_Rejoined(head, raw))
    gzipped = head[:2] == b"\x1f\x8b"
    yield from _lines(path, gzip.GzipFile(fileobj=stream) if gzipped else stream, gzipped)


def _is_checkpoint(raw, start: int) -> bool:
    """Whether the zip file open as `raw` is what torch.save writes (a data.pkl inside)."""
    raw.seek(start)
    try:
        return any(name.endswith("data.pkl") for name in zipfile.ZipFile(raw).namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _lines(path, f, gzipped):
    """read_lines' loop over the open (decompressing) stream `f`."""
    number = 0
    try:
        while line := f.readline(MAX_LINE + 1):
            number += 1
            if len(line) > MAX_LINE:
                raise DataError(f"{path}, line {number}: longer than {MAX_LINE:,} bytes, which "
                                f"is no sentence (a file without line breaks, or not text); "
                                f"give text with one sentence a line, splitting that line")
            try:
                text = line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                if gzipped and _damaged(f):
                    raise DataError(f"{path}, line {number}: the gzip data is broken (it fails "
                                    f"its checksum); download or copy the file again") from None
                raise DataError(_not_utf8(path, number, line, e, gzipped)) from None
            if "\0" in text:
                raise DataError(f"{path}, line {number}: holds NUL bytes, which text never "
                                f"does (a crash can leave them), so it is not a text file; "
                                f"copy or write it again")
            yield text.removeprefix("\ufeff") if number == 1 else text
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise DataError(f"{path}, after line {number}: the gzip data is broken or cut short "
                        f"({e}); download or copy the file again") from None


def compressed_by(head: bytes) -> str | None:
    """The compressor ("gzip", "zip", ...) whose data begins with the bytes `head`, or None."""
    return next((tool for magic, tool in COMPRESSORS.items() if head.startswith(magic)), None)


def _not_utf8(path, number: int, line: bytes, error: UnicodeDecodeError, gzipped: bool) -> str:
    """What to say of line `number` that is not UTF-8: a file compressed again inside its gzip
    (the inner data begins with a compressor's mark), UTF-16, or another encoding."""
    if number == 1 and gzipped and (tool := compressed_by(line)):
        return (f"{path}: what its gzip holds is {tool}-compressed again, not text; decompress "
                f"it twice (e.g. gunzip -c FILE | {'gunzip' if tool == 'gzip' else tool} -dc > "
                f"TEXT) and give the text")
    if number == 1 and line[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return (f"{path}, line 1: not UTF-8 (UTF-16: it begins with UTF-16's byte-order mark); "
                f"convert the file to UTF-8, e.g. with iconv -f utf-16 -t utf-8")
    return (f"{path}, line {number}: not UTF-8 ({error.reason} at byte {error.start}); convert "
            f"the file to UTF-8")


def _damaged(f) -> bool:
    """True if the rest of the gzip stream `f` fails its checks: bytes that are not UTF-8 in a
    damaged gzip file are the damage, not the file's encoding."""
    try:
        while f.read(1 << 20):
            pass
    except (EOFError, gzip.BadGzipFile, zlib.error):
        return True
    return False


def check_aligned(n_a: int, n_b: int, a, b) -> None:
    """Refuse two texts that must be line-aligned (a parallel corpus, translations and their
    references) but have different numbers of lines: a DataError naming both counts, or,
    where a file is not text one line a sentence at all, what it is instead."""
    if n_a == n_b:
        return
    for path in (a, b):
        if why := not_lines_of_text(path):
            raise DataError(f"{path} {why}")
    longer, n = (a, n_a) if n_a > n_b else (b, n_b)
    blank = (abs(n_a - n_b) == 1 and isinstance(longer, Path) and longer.is_file()
             and not list(read_lines(longer))[-1].strip())
    raise DataError(f"{a} has {n_a:,} lines but {b} has {n_b:,}: they must be line-aligned, "
                    f"one sentence a line, in the same order" + (
                        f"; the last line of {longer}, line {n:,}, is blank (an empty line at "
                        f"the end?): delete it" if blank else ""))


def not_lines_of_text(source) -> str | None:
    """Why `source` cannot be sentences one a line: NUL bytes, which text never holds (a crash
    leaves them), or a single line holding CRs (old Mac line ends); None if neither. `source`
    is the lines themselves, or a file's path, judged by its first MiB (anything else is no
    file)."""
    if not isinstance(source, list):
        try:
            with open(source, "rb") as f:
                head = f.read(1 << 20)
        except (OSError, TypeError):
            return None
        if head[:2] == b"\x1f\x8b":
            return None                              # gzip: its bytes say nothing of its lines
        source = head.decode("utf-8", "replace").removesuffix("\n").split("\n")
    for number, line in enumerate(source, start=1):
        if "\0" in line:
            return (f"holds NUL bytes (line {number:,}): it is not a text file; a crash can "
                    f"leave them: copy or write it again")
    if len(source) == 1 and "\r" in source[0].rstrip("\r"):
        return ("ends its lines with CR alone (old Mac line ends), so it reads as one line: "
                "convert them to LF line ends (e.g. with dos2unix -c mac)")
    return None


def expand(text) -> Path:
    """Path(text), a leading ~ or ~user expanded as a shell would; an unknown user is a
    DataError."""
    try:
        return Path(text).expanduser()
    except RuntimeError:                                   # ~nosuchuser
        raise DataError(f"cannot expand {str(text).split('/')[0]!r} in {text}: there is no "
                        f"such user") from None


def links_loop(path) -> bool:
    """Whether `path` is a link that leads back to itself, directly or through other links."""
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ELOOP
    return False


def resolved(path) -> Path:
    """expand(path), absolute, links resolved; a loop of links is a DataError."""
    try:
        return expand(path).resolve()
    except RuntimeError as e:                              # a symbolic link loop
        raise DataError(f"{path}: {e}; point it at a real folder") from None


def text_sha256(path) -> str:
    """The sha256 of a text file's lines, each ended by "\\n" (read_lines): the same
    sentences, gzipped another way or with Windows line ends, have the same one."""
    digest = hashlib.sha256()
    for line in read_lines(path):
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def sha256_file(path) -> str:
    """The sha256 of a file's bytes."""
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


def _writer_ended(pid: int, tmp: Path) -> bool:
    """Whether the process of this machine that wrote `tmp` has ended: no process has its id,
    or the one that has it started after the file was last written (it was given the id of
    the killed writer, as happens in a container)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:              # another user's live process
        pass
    started = _start_time(pid)
    try:
        return started is not None and started > tmp.stat().st_mtime + 1   # /proc/stat: 1 s
    except FileNotFoundError:
        return False


def _start_time(pid: int) -> float | None:
    """When the process `pid` started, in seconds since the epoch (Linux's /proc); None where
    that cannot be told."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])     # field 22, starttime
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def free_name(file: Path, suffix: str) -> Path:
    """FILE + suffix, or + suffix-2, -3, ...: the first name not taken."""
    n, name = 1, file.with_name(file.name + suffix)
    while os.path.lexists(name):
        n += 1
        name = file.with_name(f"{file.name}{suffix}-{n}")
    return name


def temporary_beside(path: Path) -> Path:
    """A new temporary file name beside `path`, which remove_stale_temporaries recognises once
    its writer is gone."""
    return path.parent / f".{path.name}.{_HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _temporaries(folder):
    """(path, host, pid) of each temporary file of atomic_open in `folder`."""
    for p in Path(folder).glob(".*.tmp"):
        if m := _TEMPORARY.fullmatch(p.name):
            yield p, m["host"], int(m["pid"])


def remove_stale_temporaries(folder) -> list[Path]:
    """Delete the temporary files of atomic_open in `folder` whose writer, a process of this
    machine, has ended (killed while it wrote); returns them. Every write does it in the folder
    it writes into, whatever file it writes."""
    stale = [p for p, host, pid in _temporaries(folder)
             if host == _HOST and _writer_ended(pid, p)]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def clear_temporaries(folder, say) -> None:
    """Before a command writes into `folder`: remove the temporary files that killed writes of
    this machine left there, saying so, and name those that another machine's processes wrote
    (a shared folder, an earlier container), whose writers this one cannot see."""
    for p in remove_stale_temporaries(folder):
        say(f"removed {p}, left by an interrupted write")
    for p, host, _ in _temporaries(folder):
        if host != _HOST:
            say(f"note: {p} is the temporary file of a write on {host} (another machine or "
                f"container); delete it unless that write is still going on")


def std_stream(path) -> int | None:
    """1 or 2 if `path` is the file (or pipe, or terminal) this process's stdout or stderr
    already writes to (`--out /dev/stdout`, or `> log.txt` and `--out log.txt`), else None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    for fd in (1, 2):
        try:
            if os.path.samestat(st, os.fstat(fd)):
                return fd
        except OSError:
            continue
    return None


def is_stdin(path) -> str | None:
    """"the file" or "the pipe" if `path` is this process's stdin and that is one (`< file`
    read through `--out file`, or `/dev/stdin`), where a write would go into what the command
    reads; None otherwise. A device (/dev/null, a terminal) keeps nothing a write could spoil."""
    try:
        st, here = os.fstat(0), os.stat(path)
    except (OSError, ValueError):
        return None
    if not os.path.samestat(st, here):
        return None
    return ("the file" if stat.S_ISREG(st.st_mode) else
            "the pipe" if stat.S_ISFIFO(st.st_mode) else None)


@contextmanager
def _named(path):
    """Re-raise an OSError of a write to `path` naming it (a device or a stream has no name in
    the error, and a full disk should say which file)."""
    try:
        yield
    except OSError as e:
        if e.filename or not e.strerror:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from e


@contextmanager
def atomic_open(path, mode="wb"):
    """Write to a temporary file beside `path` and rename it to `path` only if the block ends
    without error: a crash or an exception never leaves a half-written file under that name.
    A new file gets the mode open() would give it (0o666 less the umask); a replaced file keeps
    its mode (and, written by root, its owner), and one with other hard links is rewritten in
    place, after the complete text was written beside it, so that every name sees it. A full
    disk is an OSError that names `path`, whose old content stays as it was. A symbolic link
    is written through; a device, a named pipe or the file stdout or stderr already writes to
    (`/dev/stdout`, `>> log.txt`) is written to as it is, never replaced."""
    path = Path(path)
    text = {} if "b" in mode else dict(encoding="utf-8", newline="\n")
    fd = std_stream(path)
    if fd is not None:                   # through the open stream: `>>` still appends
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        with _named(path), os.fdopen(os.dup(fd), mode, **text) as f:
            yield f
        return
    if path.exists() and not path.is_file():    # a device, a pipe (check_output refuses folders)
        with _named(path), open(path, mode, **text) as f:
            yield f
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))       # replace the target, keep the link
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    old = path.stat() if path.exists() else None
    tmp = temporary_beside(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)    # the umask applies
    except OSError as e:                  # name the file asked for, not the temporary one
        raise OSError(e.errno, f"no file can be made in its folder {path.parent} "
                               f"({e.strerror}); {UNCHANGED}", str(path)) from None
    try:
        if old is not None:
            _keep_mode(fd, old)
        with os.fdopen(fd, mode, **text) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        with _naming(path):              # the file asked for, not the temporary one
            if old is not None and old.st_nlink > 1:
                _copy_into(tmp, path)
                os.unlink(tmp)
            else:
                os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno and (
                e.errno in (errno.ENOSPC, errno.EDQUOT) or not e.filename):
            fix = WRITE_FIXES.get(e.errno)
            raise OSError(e.errno, f"{os.strerror(e.errno).lower()}{_LIMITS.get(e.errno, '')} "
                                   f"while writing {path}; the file that was there, if any, is "
                                   f"unchanged" + (f"; {fix}" if fix else "")) from e
        raise


# What a write error owes to a limit of this process rather than to the file.
_LIMITS = {errno.EFBIG: " (over the limit on a file's size: see `ulimit -f`)"}


def _keep_mode(fd: int, old: os.stat_result) -> None:
    """Give the new file the permissions of the one it replaces (a private file stays private)
    and, when root writes it, its owner."""
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
        os.fchown(fd, old.st_uid, old.st_gid)


def _copy_into(source: Path, path: Path) -> None:
    """Overwrite `path` in place with the bytes of `source`: its other hard links see them."""
    with open(source, "rb") as src, open(path, "r+b") as dst:
        shutil.copyfileobj(src, dst)
        dst.truncate()
        dst.flush()
        os.fsync(dst.fileno())


# ------------------------------------------------------------- a set of files, all or nothing

class Moves:
    """The moves that replace a set of files, in order, with the folders made and removed on
    the way, so that `undo` can put everything back as it was. The old files wait where
    `move_aside` put them until `discard_aside`, once the whole set is in place. With
    `stop_arrived` (see signals_held), a stop that has arrived makes the next move give up."""

    def __init__(self, stop_arrived=None):
        self.stop_arrived = stop_arrived
        self.done = []            # ("moved", source, target), ("made", folder), ("removed", folder)
        self.aside = set()        # where the old files wait

    def move(self, source, target) -> None:
        """Move the file `source` to `target` (a rename, or across file systems a copy),
        making the folders missing above it."""
        if self.stop_arrived is not None and self.stop_arrived():
            raise KeyboardInterrupt("stopped while files were being replaced")
        source, target = Path(source), Path(target)
        missing = [folder for folder in target.parents if not os.path.lexists(folder)]
        for folder in reversed(missing):
            folder.mkdir()
            self.done.append(("made", folder))
        _rename(source, target)
        self.done.append(("moved", source, target))

    def move_aside(self, path, to) -> None:
        """Move the old file `path` to `to`, where it waits until the set is in place."""
        self.move(path, to)
        self.aside.add(Path(to))

    def remove_emptied(self, root) -> None:
        """Remove the folders below `root` that moving files aside has left empty."""
        moved = [p[0] for kind, *p in self.done if kind == "moved" and p[1] in self.aside]
        folders = {f for path in moved for f in path.parents
                   if f != root and f.is_relative_to(root)}
        for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
            if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                folder.rmdir()
                self.done.append(("removed", folder))

    def undo(self) -> None:
        """Put back what the moves changed, the last first. If that fails too, a DataError
        says where the old files wait."""
        while self.done:
            kind, *paths = self.done[-1]
            try:
                if kind == "moved":
                    _rename(paths[1], paths[0])
                elif kind == "made" and paths[0].is_dir() and not any(paths[0].iterdir()):
                    paths[0].rmdir()
                elif kind == "removed":
                    paths[0].mkdir(exist_ok=True)
            except OSError as e:
                waiting = [f"{p[1]} (was {p[0]})" for kind, *p in self.done
                           if kind == "moved" and p[1] in self.aside]
                raise DataError(f"putting back the files that were there failed ({e}); they wait "
                                f"where they were moved: {'; '.join(waiting[:3])}"
                                f"{'; ...' if len(waiting) > 3 else ''}: move them back") from None
            self.done.pop()

    def discard_aside(self) -> None:
        """Delete the old files moved aside, and the folders made for them."""
        for path in self.aside:
            path.unlink(missing_ok=True)
        for kind, *paths in reversed(self.done):
            if kind == "made" and paths[0].is_dir() and not any(paths[0].iterdir()):
                paths[0].rmdir()


def _rename(source: Path, target: Path) -> None:
    try:
        os.replace(source, target)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        shutil.move(source, target)                  # another file system: a copy


@contextmanager
def all_or_nothing(finish: bool = False):
    """Replace a set of files all or nothing, through the Moves it yields: if the block fails,
    every move is undone and the error goes on; once it has ended, the old files moved aside
    are deleted. Ctrl-C, SIGTERM and SIGHUP are held throughout (signals_held): one that
    arrives makes the next move give up, so that the replacement is undone, or with `finish`
    lets it finish; either way the signal takes effect after, and nothing is left behind."""
    with signals_held() as arrived:
        moves = Moves(None if finish else arrived)
        try:
            yield moves
        except BaseException:
            moves.undo()
            raise
        moves.discard_aside()


UNCHANGED = "no file was changed"


def write_files(files: dict) -> None:
    """Write several files all or nothing: {path: text or bytes}. Each is written and synced
    to a temporary file beside it first, with the permissions of the file it replaces (a
    symbolic link is written through); only when every one is complete are they moved into
    place (all_or_nothing, which finishes once begun). A failure, Ctrl-C, SIGTERM or SIGHUP
    before then leaves every file as it was, and no temporary file or folder made for them;
    the error names the file that could not be written."""
    with stops_unwind():
        targets = {_target(Path(path)): content for path, content in files.items()}
        created = _missing_folders(targets)
        staged = {}
        try:
            for path, content in targets.items():
                staged[path] = _stage(path, content)
            with all_or_nothing(finish=True) as moves:
                for path in [p for p in staged if p.exists()]:
                    with _naming(path):
                        moves.move_aside(path, temporary_beside(path))
                for path, tmp in staged.items():
                    with _naming(path):
                        moves.move(tmp, path)
        except BaseException:
            with signals_held():
                _discard(staged.values(), created)
            raise


def _target(path: Path) -> Path:
    """The file that writing `path` replaces: a symbolic link's target (the link stays)."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists() and not target.is_file():
        raise DataError(f"cannot write {path}: it is not a file (a folder, a device or a pipe "
                        f"is in its place); move it away or choose another output folder")
    if target.exists() and not target.stat().st_mode & 0o222:     # replacing it would not ask
        raise DataError(f"cannot write {path}: the file is read-only; make it writable (chmod "
                        f"u+w) if it may be replaced, or write to another file")
    return target


def _missing_folders(paths) -> list[Path]:
    """The folders that writing `paths` creates, deepest first."""
    missing = set()
    for path in paths:
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            missing.add(folder)
            folder = folder.parent
    return sorted(missing, key=lambda p: len(p.parts), reverse=True)


def _discard(temporaries, folders) -> None:
    """After a failure: remove the temporary files, then the folders made for them."""
    for tmp in temporaries:
        tmp.unlink(missing_ok=True)
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:              # not empty: something else is in it now
            pass


def _stage(path: Path, content) -> Path:
    """`content` written and synced to a temporary file beside `path` (its folder created if
    need be), with the permissions of the file it will replace; returns the temporary file."""
    binary = isinstance(content, bytes)
    with _naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        tmp = temporary_beside(path)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)     # the umask applies
    try:
        with os.fdopen(fd, "wb" if binary else "w",
                       **({} if binary else dict(encoding="utf-8", newline="\n"))) as f:
            with _naming(path):
                if path.exists():
                    os.fchmod(f.fileno(), stat.S_IMODE(path.stat().st_mode))
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


@contextmanager
def _naming(path: Path):
    """Re-raise an OSError naming `path`, the file asked for (not a temporary file), and
    saying that no file was changed."""
    try:
        yield
    except OSError as e:
        fix = WRITE_FIXES.get(e.errno)
        raise OSError(e.errno, f"{e.strerror or e}; {UNCHANGED}" + (f"; {fix}" if fix else ""),
                      str(path)) from e


# What to do when a file cannot be written, by the error's number.
WRITE_FIXES = {
    errno.EACCES: "make the file and its folder writable (chmod u+w) or write elsewhere",
    errno.EPERM: "the file or its folder may not be changed (read-only, or marked immutable "
                 "or append-only: lsattr shows an i or an a); make them writable (chmod u+w, "
                 "chattr -i -a) or write elsewhere",
    errno.EROFS: "the file system is mounted read-only; write elsewhere",
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "your disk quota is used up; free some space or write elsewhere",
    errno.ENAMETOOLONG: "a name in the path is longer than the file system allows; choose a "
                        "shorter path"}


@contextmanager
def folder_claimed(path, say):
    """For the length of the block, hold the folder that `path` is written into for this
    command alone (flock on the folder itself, which leaves no file behind): another command
    claiming it waits, said in one line, and checks its output only once this one has
    written, so that neither replaces a file the other's checks would have refused. A folder
    that cannot be opened is not held (its write fails and names it)."""
    try:
        fd = os.open(Path(os.path.abspath(path)).parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"note: another command is writing {path} or beside it, in "
                f"{Path(os.path.abspath(path)).parent}; waiting for it to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def scratch_folder(parent, prefix: str):
    """A new folder in `parent` (tempfile.mkdtemp), deleted with all it holds when the block
    ends, however it ends: made and deleted with Ctrl-C, SIGTERM and SIGHUP held, so that no
    stop leaves it behind."""
    folder = None
    try:
        with signals_held():
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        yield folder
    finally:
        with signals_held():
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)


def with_line_ends_of(path: Path, text: str) -> str:
    """`text` (lines ended by \n) with the line ends `path` has now: \r\n where every line of
    it ends so (a file saved on Windows), so that rewriting it changes only what changed."""
    try:
        raw = path.read_bytes()
    except OSError:                          # no file yet (or none to read): \n
        return text
    return text.replace("\n", "\r\n") if raw.count(b"\r\n") == raw.count(b"\n") > 0 else text


def check_output(path, reads=(), say=None) -> Path:
    """Refuse, before any work is done, to write `path` if it is one of the files the command
    reads (`reads`; None entries are skipped) or the file on stdin, or if it cannot be
    written: a DataError whose one line says why. stdout and stderr (`/dev/stdout`), devices
    and pipes are fine. With `say`, the temporary files of killed writes in its folder are
    removed or named (clear_temporaries)."""
    path = Path(path)
    for source in reads:
        if source is not None and path.exists() and Path(source).exists() \
                and os.path.samefile(path, source):
            also = "" if str(source) == str(path) else f" (as {source})"
            raise DataError(f"refusing to write {path}: this command reads it{also}; write the "
                            f"output to another file")
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise DataError(f"cannot write {path}: it is a link in a loop of links, which "
                                f"leads to no file") from None
    if path.exists() and stat.S_ISSOCK(os.stat(path).st_mode):
        raise DataError(f"cannot write {path}: it is a socket; give a file, a pipe or -")
    if on_stdin := is_stdin(path):
        raise DataError(f"refusing to write {path}: it is {on_stdin} on stdin, which this "
                        f"command reads; give another --out")
    if std_stream(path) is not None or (path.exists() and not path.is_file()
                                        and not path.is_dir()):
        return path
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    link = f" (a link to {target})" if target != path else ""
    if target.is_dir():
        raise DataError(f"cannot write {path}{link}: it is a folder; give the path of a file "
                        f"to write (one inside that folder, say)")
    if not target.parent.is_dir():
        raise DataError(f"cannot write {path}{link}: there is no folder {target.parent}")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise DataError(f"cannot write {path}{link}: the folder {target.parent} is not writable")
    if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        raise DataError(f"cannot write {path}{link}: the file is read-only; make it writable "
                        f"(chmod u+w) if it may be replaced, or write to another file")
    try:        # what the permissions do not tell (/proc, /sys, a full disk): make a file there
        with signals_held():
            handle, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                             dir=target.parent)
            os.close(handle)
            os.unlink(probe)
    except OSError as e:
        raise DataError(f"cannot write {path}{link}: no file can be made in its folder "
                        f"{target.parent} ({e.strerror}); give another --out") from None
    if say is not None:
        clear_temporaries(target.parent, say)
    return path


def not_text_to_replace(path) -> str | None:
    """What the existing file `path` holds that a text output must not replace: a checkpoint
    (or another zip archive), binary bytes, or a training run's metrics log; None for text, a
    missing or empty file, a stream or a device."""
    target = Path(os.path.realpath(path))
    if not target.is_file() or target.stat().st_size == 0 or std_stream(Path(path)) is not None:
        return None
    if target.name == "metrics.jsonl":
        return "is a training run's metrics log"
    with open(target, "rb") as f:
        head = f.read(4096)
        if head.startswith(b"PK\x03\x04"):
            return ("holds a PyTorch checkpoint" if _is_checkpoint(f, 0)
                    else "holds a zip archive")
    if head[:2] == b"\x1f\x8b":                        # gzip: text, as a .gz output is
        return None
    return "holds binary bytes, not text" if b"\0" in head else None


def download(url: str, path: Path, sha256: str | None = None):
    """Save url at path atomically; with sha256 given, a mismatch raises and keeps nothing.
    Returns the sha256 of what was saved."""
    digest = hashlib.sha256()
    try:
        response = urllib.request.urlopen(url, timeout=60)
    except urllib.error.HTTPError as e:          # the server answered: the file is not there
        raise DownloadError(f"cannot download {url}: the server answered {e.code} ({e.reason}); "
                            f"the file is not at that address (any more): check it") from None
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
