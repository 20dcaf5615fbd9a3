"""Grade students' notebooks: run each one, and every check it calls, and print a table.

    python -m annotated.exercises grade NOTEBOOK... [--json] [--timeout S] [--cell-timeout S]

Each notebook runs in a process of its own (annotated.exercises.run_notebook): in a fresh
kernel, in an empty scratch folder (a file it writes by a relative name lands there, never among
the submissions), in the chapters' quick form, with no network. A cell that raises is
noted and the run goes on; a cell that runs past --cell-timeout seconds is interrupted and the
run goes on; a notebook that is still running after --timeout seconds is stopped (the checks
before the cell it stopped in count, as they do when its code stops it otherwise). The table
has one row a notebook: how many of its exercises passed (every coding exercise of each
chapter whose checks it calls), each exercise's status (passed, failed, not attempted, not run:
its check never ran, or was deleted), and a note on anything that went wrong.
The student's code may write anywhere it can: whatever it changes in the folders that hold
the submissions, and in their subfolders, is put back, and named in its row, with the files it
added there; a second grader of the same folders is refused while the first runs. What it
writes into the code the notebooks after it run (the project's packages, Python's start-up
files) is undone too, and named (annotated.exercises.guard).
A file that is not a notebook, a kernel that dies (the checks before it count; the note names
the cell) or a notebook that runs out of time gets a one-line note in its row; the other
notebooks are graded all the same. --json prints the
rows as JSON instead, with each check's line in every language, for a course's gradebook.

The exit code is 0 when every notebook was graded, 1 when one could not be (its row says why),
and 2 for a wrong argument.
"""
import fcntl
import json
import os
import stat
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

from annotated.base.cli import (ArgumentParser, command, number, path, require_stdout, say_error,
                                show, unwritable_on_stdout)
from annotated.base.errors import DataError
from annotated.base.files import compressed_by, free_name, links_loop, write_files
from annotated.base.settings import between
from annotated.base.signals import signals_held, stop_group
from annotated.exercises import exercises, graded_ids, not_an_exercise
from annotated.exercises.guard import FOUND, Installation, Restored
from annotated.exercises.messages import MESSAGES
from annotated.exercises.notebook import PROJECT, NotANotebook, checks, mentions_check, read

MARKS = {"passed": "✓", "failed": "✗", "not attempted": "·", "not run": "?"}
#: Seconds a stopped notebook's process gets to shut its kernel down before it is killed.
GRACE = 10
#: The longest --timeout or --cell-timeout, in seconds: a week (the clock's limit is far above).
A_WEEK = 7 * 24 * 3600
#: The largest file read as a notebook: a chapter with its outputs is a few MB.
MAX_BYTES = 100 * 2 ** 20
#: The most bytes kept of the files in the submissions' folders, to put back what a notebook
#: changes; files past it are watched, and named if changed, but cannot be put back.
KEPT_BYTES = 1024 * 2 ** 20
#: The most files watched in the submissions' folders and their subfolders.
MAX_FILES = 20_000


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m annotated.exercises",
                            description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="run students' notebooks and grade their exercises")
    grade.add_argument("notebooks", nargs="+", type=path, metavar="NOTEBOOK")
    grade.add_argument("--json", action="store_true", help="print the rows as JSON")
    seconds = number(between(1, A_WEEK, "seconds"), float)
    grade.add_argument("--timeout", type=seconds, default=900,
                       help="seconds a whole notebook may run (default 900)")
    grade.add_argument("--cell-timeout", type=seconds, default=300,
                       help="seconds one cell may run before it is interrupted (default 300)")
    grade.add_argument("--lang", choices=list(MESSAGES), default="en",
                       help="the language of the table's notes (default en)")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    require_stdout("the grades")
    if not args.json and (c := unwritable_on_stdout("".join(MARKS.values())
                                                    + MESSAGES[args.lang]["notes_sep"])):
        raise DataError(f"stdout's encoding, {sys.stdout.encoding}, cannot write the table's "
                        f"marks (such as {c!r}); set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")
    args.notebooks = once_each(args.notebooks)
    folders, installation = Folders(args.notebooks), Installation()
    try:
        rows = [graded_and_restored(notebook, args, folders, installation)
                for notebook in args.notebooks]
    finally:
        folders.unlock()
    show(json.dumps(rows, ensure_ascii=bool(unwritable_on_stdout(json.dumps(rows))), indent=1)
         if args.json else table(rows, args.lang))   # JSON escapes what stdout cannot write
    if not all(row["graded"] for row in rows):
        raise SystemExit(1)


def graded_and_restored(notebook: Path, args, folders, installation) -> dict:
    """grade(notebook), then what it changed put back (in its folder and in the Python
    installation) and named in its row; on a stop, put back first, then stopped."""
    try:
        row = grade(notebook, args)
    except KeyboardInterrupt:         # Ctrl-C, SIGTERM, SIGHUP: first put back what it changed
        with signals_held():
            stopped = {"note": None}
            folders.restore(stopped, MESSAGES[args.lang])
            note_restored(stopped, installation.restore(), MESSAGES[args.lang])
        if stopped["note"]:
            say_error(f"{notebook}: {stopped['note']}")
        raise
    folders.restore(row, MESSAGES[args.lang])
    note_restored(row, installation.restore(), MESSAGES[args.lang])
    return row


def note_restored(row: dict, done: Restored, say: dict) -> None:
    """Name in the row what the notebook's code changed of the code every later kernel runs
    (guard.Installation): put back, moved aside, or changed beyond repair."""
    notes = [say["guard_put_back"].format(paths=listing(done.put_back, say))
             if done.put_back else None,
             say["guard_moved"].format(paths=listing(done.moved, say),
                                       found=listing(done.moved_to, say, lambda f: f.name))
             if done.moved else None,
             say["guard_changed"].format(paths=listing(done.changed, say))
             if done.changed else None]
    if any(notes):
        row["note"] = say["notes_sep"].join(filter(None, [row["note"], *notes]))


def once_each(notebooks: list[Path]) -> list[Path]:
    """The notebooks, each once: one given twice (or under another name, through a link) is
    graded once, with a note, so that a gradebook does not count it twice."""
    first, kept = {}, []
    for notebook in notebooks:
        key = os.path.realpath(notebook)
        if key in first:                     # (./a.ipynb and a.ipynb are one Path)
            say_error(f"note: {notebook} is given twice: graded once" if notebook == first[key]
                      else f"note: {notebook} is {first[key]}, given before: graded once")
            continue
        first[key] = notebook
        kept.append(notebook)
    return kept


class Folders:
    """The folders that hold the submissions, as they were before grading: every regular file
    in them (the notebooks given, and whatever lies beside them), with its contents and its
    inode change time (which no process can set back). A notebook runs the student's code,
    which may write anywhere it can; after each one, `restore` puts back what it changed."""

    def __init__(self, notebooks: list[Path]):
        self.folders = {Path(os.path.abspath(n)).parent for n in notebooks
                        if Path(os.path.abspath(n)).parent.is_dir()}
        for folder in sorted(self.folders):
            if kind := shared_folder(folder):
                raise DataError(f"{folder} holds notebooks to grade, and it is {kind}, where "
                                f"other programs write too: the grader would put back their "
                                f"files if they changed while a notebook ran; copy the "
                                f"notebooks into a folder of their own and grade them there")
        self.lock()
        self.files, self.kept, self.links = {}, 0, set(self.listed(links=True))
        for file in [Path(os.path.abspath(n)) for n in notebooks] + self.listed():
            if file not in self.files and file.is_file():
                self.keep(file, self.contents(file))

    def keep(self, file: Path, data: bytes | None) -> None:
        """Remember `file` as it is now: its bytes (`data`), inode change time and mode."""
        found = file.stat()
        self.files[file] = (data, found.st_ctime_ns, stat.S_IMODE(found.st_mode))

    def lock(self) -> None:
        """Take each folder for this grader alone: a second grader of the same folder would
        see the first's notebooks' writes as its own, and each would put back the other's.
        The locks live in the system's temporary folder, never among the submissions; the
        kernel drops them when this process ends, however it ends, and unlock removes their
        files when grading is done."""
        self.locks = []
        for folder in sorted(self.folders):
            found = folder.stat()
            name = Path(tempfile.gettempdir()) / f"annotated-grade-{found.st_dev}-{found.st_ino}"
            handle = self.locked(name, folder)
            while not os.path.exists(name) or not os.path.samestat(os.fstat(handle.fileno()),
                                                                   os.stat(name)):
                handle.close()                 # a grader that ended removed it meanwhile
                handle = self.locked(name, folder)
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            self.locks.append((name, handle))

    @staticmethod
    def locked(name: Path, folder: Path):
        """The lock file `name`, opened and locked for this grader alone."""
        try:
            handle = open(name, "a+")
        except OSError as e:
            raise DataError(f"cannot take the grading lock {name} ({e.strerror}); set "
                            f"TMPDIR to a folder you may write") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise DataError(f"{folder} is being graded by another grader (pid "
                            f"{handle.read().strip() or 'unknown'}): wait for it to end; "
                            f"two graders of one folder would each put back the other's "
                            f"files") from None
        return handle

    def unlock(self) -> None:
        """Remove the lock files, still holding their locks (a grader that opened one meanwhile
        finds it gone once it has the lock, and takes a new one), then let them go."""
        for name, handle in self.locks:
            try:
                os.unlink(name)
            except OSError:
                pass
            handle.close()
        self.locks = []

    def listed(self, links: bool = False) -> list[Path]:
        """The regular files in the folders and their subfolders now (not following links,
        not in hidden folders or __pycache__), at most MAX_FILES of them; or, with `links`,
        the symbolic links there."""
        found = []
        for folder in sorted(self.folders):
            for top, subfolders, names in os.walk(folder):
                subfolders[:] = sorted(d for d in subfolders
                                       if not d.startswith(".") and d != "__pycache__")
                found += [f for f in map(Path(top).joinpath, sorted(names + subfolders))
                          if f.is_symlink() == links and (links or f.is_file())]
                if len(found) >= MAX_FILES:
                    return found[:MAX_FILES]
        return found

    def contents(self, file: Path) -> bytes | None:
        """The file's bytes, or None for one that cannot be kept (unreadable, or past
        MAX_BYTES, or past KEPT_BYTES in all): it is watched but cannot be put back."""
        try:
            if self.kept + file.stat().st_size > KEPT_BYTES or unreadable(file, MESSAGES["en"]):
                return None
            data = file.read_bytes()
        except OSError:
            return None
        self.kept += len(data)
        return data

    def restore(self, row: dict, say: dict) -> None:
        """Put back what changed or went while the notebook just graded ran, and say so in its
        row, with what could not be put back and the files added. A changed file (or a folder
        in its place) is kept beside the one put back (NAME.found-while-grading): its code may
        have written it, or another program (a student saving, a chapter being regenerated)
        at the same time."""
        changed, lost, found, gone = self.changed(), [], [], []
        for file in changed:
            try:
                self.put_back(file, found, gone)
            except (OSError, DataError):         # too large to keep, or no longer writable
                lost.append(file)
        for file in [f for f in found if f.is_file()]:    # not counted as added next time
            self.keep(file, self.contents(file))
        added = [file for file in self.listed() if file not in self.files]
        for file in added:                       # the next notebook is not blamed for these
            self.keep(file, self.contents(file))
        links = [link for link in self.listed(links=True) if link not in self.links]
        self.links.update(links)                 # (a link is named, never followed)
        added += links
        notes = [say[key].format(paths=listing(files, say))
                 for key, files in (("restored", [f for f in changed
                                                  if f not in lost and f not in gone]),
                                    ("restored_gone", [f for f in gone if f not in lost]),
                                    ("not_restored", lost), ("added", added)) if files]
        if found:                  # (none when only modes changed: then no word of it)
            notes.insert(1, say["found_kept"].format(found=listing(found, say, lambda f: f.name)))
        if notes:
            row["note"] = say["notes_sep"].join(filter(None, [row["note"], *notes]))

    def put_back(self, file: Path, found: list, gone: list) -> None:
        """Give `file` its kept bytes and mode again; what stood in its place is kept beside
        it (appended to `found`), unless only its mode changed; a file that was removed is
        appended to `gone`. An OSError if it cannot be put back."""
        data, _, mode = self.files[file]
        if data is None:
            raise OSError("not kept")
        self.clear_the_way(file, found)
        if file.is_file() and not file.is_symlink():
            os.chmod(file, mode)                 # first: the change may have made it unreadable
        if not os.path.lexists(file):
            gone.append(file)
        elif file.is_symlink() or not file.is_file() or file.read_bytes() != data:
            found.append(free_name(file, FOUND))
            os.replace(file, found[-1])
        if not os.path.lexists(file):
            write_files({file: data})
            os.chmod(file, mode)
        self.keep(file, data)

    def clear_the_way(self, file: Path, found: list) -> None:
        """Move aside (appended to `found`) what stands in place of a folder on the way from
        the submissions' folder to `file`: a file, or a link, through which putting the file
        back would write elsewhere."""
        for folder in self.folders_on_the_way(file):
            if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
                found.append(free_name(folder, FOUND))
                os.replace(folder, found[-1])

    def through_a_link(self, file: Path) -> bool:
        """Whether a folder on the way to `file` (below its submissions' folder) is now a
        link: the file read there is another one."""
        return any(folder.is_symlink() for folder in self.folders_on_the_way(file))

    def folders_on_the_way(self, file: Path) -> list[Path]:
        """The folders between `file`'s submissions' folder (the deepest that holds it) and
        the file, from the top down."""
        root = max((f for f in self.folders if file.is_relative_to(f)), key=lambda f: len(f.parts))
        return [p for p in reversed(file.parents) if p.is_relative_to(root) and p != root]

    def changed(self) -> list[Path]:
        """The files kept that are gone, or whose bytes or mode differ from those kept."""
        out = []
        for file, (data, ctime, mode) in self.files.items():
            try:
                found = file.stat()
                if not file.is_file() or self.through_a_link(file) or (
                        found.st_ctime_ns != ctime and (
                        data is None or stat.S_IMODE(found.st_mode) != mode
                        or file.read_bytes() != data)):
                    out.append(file)
            except OSError:                      # made unreadable
                out.append(file)
        return out


def shared_folder(folder: Path) -> str | None:
    """What `folder` is, when other programs write there as a matter of course (the root
    folder, the home folder, a temporary folder), else None."""
    shared = [("/", "the root folder"), (os.path.expanduser("~"), "your home folder"),
              *((place, "a temporary folder") for place in (tempfile.gettempdir(), "/tmp",
                                                            "/var/tmp", "/dev/shm"))]
    for place, kind in shared:
        try:
            if os.path.samefile(folder, place):
                return kind
        except OSError:                          # no such folder on this system
            continue
    return None


def listing(files: list[Path], say: dict, name=str) -> str:
    """The files named in a row's note: the first five, then how many more."""
    shown = ", ".join(map(name, files[:5]))
    return shown + (say["more"].format(n=len(files) - 5) if len(files) > 5 else "")


def unreadable(notebook: Path, say: dict) -> str | None:
    """Why `notebook` is no file to read as a notebook (a device, a pipe, one too large, an
    archive), in the table's language, or None."""
    if not notebook.is_file():
        return say["not_regular"]
    if notebook.stat().st_size > MAX_BYTES:
        return say["too_large"].format(size=f"{notebook.stat().st_size / 2 ** 20:,.0f}",
                                       limit=MAX_BYTES // 2 ** 20)
    try:
        with open(notebook, "rb") as f:
            tool = compressed_by(f.read(8))
    except OSError:
        return None                               # (said when the notebook is read)
    return say["archive"].format(tool=tool) if tool else None


def notebook_problem(notebook: Path, say: dict) -> tuple[dict | None, str | None]:
    """The notebook, or why it is not one, in the table's language."""
    if why := unreadable(notebook, say):
        return None, why
    try:
        nb = read(notebook)
    except OSError as e:
        return None, e.strerror or str(e)
    except UnicodeDecodeError as e:
        utf16 = e.object[:2] in (b"\xff\xfe", b"\xfe\xff")           # its byte-order mark
        return None, say["not_utf8"].format(line=e.object[:e.start].count(b"\n") + 1,
                                            encoding="utf-16" if utf16 else "ITS_ENCODING")
    except NotANotebook as e:
        return None, say[e.key].format(detail=e.detail, **{name: say["json_types"][kind]
                                                            for name, kind in e.types.items()})
    except Exception as e:            # nbformat's reader raises whatever its parser met
        return None, " ".join(str(e).split())[:160] or type(e).__name__
    return nb, None


def grade(notebook: Path, args) -> dict:
    """One notebook's row of the table."""
    say = MESSAGES[args.lang]
    row = {"notebook": str(notebook), "graded": False, "passed": 0, "total": 0,
           "exercises": {}, "errors": [], "note": None}
    if notebook.is_dir() or not notebook.exists():
        row["note"] = (say["a_folder"].format(path=notebook) if notebook.is_dir() else
                       say["link_loop"] if links_loop(notebook) else
                       say["dangling"].format(target=os.readlink(notebook))
                       if notebook.is_symlink() else say["no_file"])
        return row
    nb, problem = notebook_problem(notebook, say)
    if problem:
        row["note"] = say["not_notebook"].format(problem=problem)
        return row
    called = checks(nb)
    ids = graded_ids(called)
    if not ids and (called or not mentions_check(nb)):
        row["note"] = (not_an_exercise(next(iter(called)), say) if called
                       else say["no_exercises"])
        return row
    report = execute(notebook, args)
    row["total"] = len(report.get("results") or ids)
    row["errors"] = report.get("errors", [])
    if report.get("results") == {}:              # it names check, but ran none of the book's
        row["note"] = say["notes_sep"].join(filter(None, [say["no_exercises"],
                                                          cell_note(row["errors"], args, say)]))
        return row
    if report.get("results") is None:
        what, detail = report["problem"]
        row["note"] = say["notes_sep"].join(filter(None, [
            say["not_graded"].format(why=say[what].format(detail=detail)),
            cell_note(row["errors"], args, say)]))
        return row
    row["exercises"] = report["results"]
    row["passed"] = sum(r["status"] == "passed" for r in row["exercises"].values())
    row["graded"] = True
    died = report.get("problem")              # the kernel died: the checks before it count
    if died and died[0] in ("stopped_in_cell", "unfinished_at"):
        died = ignored_interrupt(row, died)
    typos = [i for i in called if i not in exercises()]     # their checks print, not raise
    wrong_calls = [e[args.lang] for e in row["exercises"].values() if e.get("wrong_call")]
    opened = [Path(f).name for f in report.get("solutions_opened", [])]
    row["note"] = say["notes_sep"].join(dict.fromkeys(filter(None, [    # each note once
        opened and say["solutions_opened"].format(files=", ".join(opened)),
        died and say[died[0]].format(detail=died[1]), cell_note(row["errors"], args, say),
        typos and not_an_exercise(typos[0], say),
        *wrong_calls]))) or None
    return row


def ignored_interrupt(row: dict, died: list) -> list:
    """The note of a run that ended in a cell: that cell, if it was interrupted at
    --cell-timeout and ran on, is named by that note, not as a cell the interrupt stopped; the
    cells after it never ran (the kernel was still busy), so none of them ran past the time."""
    cell = int(died[1])
    ran_on = any(e["stopped"] and e["cell"] == cell for e in row["errors"])
    row["errors"] = [e for e in row["errors"] if not (e["stopped"] and e["cell"] >= cell)]
    return ["ignored_interrupt", died[1]] if ran_on and died[0] == "unfinished_at" else died


def cell_note(errors: list[dict], args, say: dict) -> str:
    """What went wrong in the cells, in a few words: cells stopped, cells that raised."""
    stopped = [e["cell"] for e in errors if e["stopped"]]
    continued = [e["cell"] for e in errors if e.get("continued")]
    raised = [e for e in errors if not e["stopped"] and not e.get("continued")]
    notes = [say["cell_stopped"].format(cells=", ".join(map(str, stopped)),
                                        seconds=args.cell_timeout)] if stopped else []
    if continued:
        notes.append(say["cell_continued"].format(cells=", ".join(map(str, continued))))
    if raised:
        notes.append(say["cell_raised"].format(n=len(raised), cell=raised[0]["cell"],
                                               error=raised[0]["error"]))
    return say["notes_sep"].join(notes)


def execute(notebook: Path, args) -> dict:
    """Run the notebook in a process of its own group; what it reported, or a note saying why
    it could not."""
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        report, work = Path(tmp) / "report.json", Path(tmp) / "work"
        work.mkdir()
        process = subprocess.Popen(
            [sys.executable, "-m", "annotated.exercises.run_notebook", str(notebook.resolve()),
             str(report), str(args.cell_timeout)],
            cwd=work, env=with_package_importable(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, text=True)
        try:
            _, stderr = process.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            stop_group(process, GRACE)        # it reports the checks that ran before
            if not report.is_file():
                return {"problem": ["timeout", f"{args.timeout:g}"]}
            return json.loads(report.read_text(encoding="utf-8"))
        except KeyboardInterrupt:             # Ctrl-C, SIGTERM, SIGHUP: the notebook stops too
            stop_group(process, GRACE)
            raise
        if report.is_file():
            found = json.loads(report.read_text(encoding="utf-8"))
            if found["problem"] and found["problem"][0] == "stopped_in_cell":
                found["problem"][0] = "signalled"         # not by the grader: by its own code
            return found
        last = [line for line in stderr.strip().split("\n") if line.strip()][-1:] or ["?"]
        return {"problem": ["crashed", last[0][:160]]}


def with_package_importable() -> dict:
    """The environment, with this project's folder first on PYTHONPATH: the notebook's process
    and kernel run in a scratch folder, and must still import this `annotated`."""
    paths = [str(PROJECT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def width(text: str) -> int:
    """Columns the text takes in a terminal: two for a Chinese character."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def padded(text: str, columns: int) -> str:
    return text + " " * (columns - width(text))


def visible(text: str) -> str:
    """`text` on one line of the table: a control character in a file's name (a newline, a
    terminal escape) written as Python writes it in a string (\\n, \\x1b), never sent raw."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) == "Cc" else c for c in text)


def table(rows: list[dict], lang: str) -> str:
    """The rows as a text table: notebook, passed, each exercise's mark, the note."""
    say = MESSAGES[lang]
    passed = [say["graded"].format(passed=r["passed"], total=r["total"]) if r["graded"] else "-"
              for r in rows]
    notebooks = [visible(r["notebook"]) for r in rows]
    names, counts = (max(map(width, column)) for column in (notebooks, passed))
    lines = []
    for r, notebook, count in zip(rows, notebooks, passed):
        marks = "  ".join(f"{i} {MARKS[e['status']]}" for i, e in r["exercises"].items())
        lines.append("  ".join(part for part in (padded(notebook, names), padded(count, counts),
                                                 marks, visible(r["note"] or "")) if part).rstrip())
    return "\n".join(lines + [say["legend"]])
