"""Build the website from the committed notebooks in chapters/, without running them.

Each notebook is checked first (a JSON notebook that nbformat's schema accepts, opening with a
markdown cell that holds its title), so that a damaged one is named in one line rather than in
a traceback from Sphinx. The notebooks are staged in a temporary folder, where three things are
added to the copies only: a download link and an estimate of the reading time under each
chapter's title, and the tag `hide-input` on cells that only draw a figure, which myst-nb shows
folded in a <details> element; the staged index page gets the whole book's reading time. Sphinx
then renders the stage with book/conf.py, and the committed notebooks are copied to the site's
notebooks/ folder, which the download links point to.

The site is built in a temporary folder and moved into the output folder only when the build
has succeeded, so a failed or interrupted build leaves the previous site as it was. The output
folder may be empty, missing, or a site built here before: a list of the files each build
writes, with their sha256 (`.book-files`), tells the next build what it may replace. A list
that does not look like ours, or that names anything but a file inside the folder, is refused.
A rebuild removes only listed files still as the last build wrote them, and overwrites only
those and listed ones it writes again (an edited page is rebuilt, with a note); anything else
in the folder stays (a `.git/` or a `CNAME` of a site published from it, a listed page edited
since that the new site no longer has). Every check (the list, and the new site's files
against what is there) comes before the first change; the swap then moves the old files aside
into a temporary folder inside the output folder, moves the new ones in, and on any failure or
Ctrl-C puts the old ones back.
"""
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path, PurePosixPath

import nbformat
from sphinx.cmd.build import build_main

from annotated.base.errors import DataError

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHAPTERS = ROOT / "chapters"
DEFAULT_OUT = ROOT / "build" / "site"
MANIFEST = ".book-files"                  # in the output folder: the files the last build wrote
#: The manifest's first line, which tells it from a list this command did not write; each
#: further line is `<sha256 of the file>  <its path inside the output folder>`.
MANIFEST_HEADER = "# python -m book build wrote these files here: sha256, two spaces, path"
ASIDE = ".book-old-"                      # prefix of the folder the old files wait in
#: The rates behind the reading-time estimate: technical prose, code (the chapters' cells and
#: the package source they show) read line by line, and a look at each figure.
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE, MINUTES_PER_FIGURE = 200, 20, 0.5


def chapters() -> list[Path]:
    """The chapter notebooks, in reading order."""
    return sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))


def draws_only(cell: dict) -> bool:
    """True for a code cell whose outputs are all figures (a text/plain stand-in allowed)."""
    outputs = cell.get("outputs", [])
    if cell.get("cell_type") != "code" or not outputs:
        return False
    return all(o.get("output_type") in ("display_data", "execute_result")
               and any(m.startswith("image/") for m in o.get("data", {}))
               and all(m.startswith("image/") or m == "text/plain" for m in o.get("data", {}))
               for o in outputs)


def reading(nb: dict) -> tuple[float, str]:
    """Estimated minutes to read a chapter (prose, code, shown source and figures at the rates
    above; printed outputs not counted), and the counts behind them, in words."""
    def lines(text) -> int:
        return len("".join(text).splitlines())
    cells = nb["cells"]
    words = sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    outputs = [o for c in cells for o in c.get("outputs", [])]
    code = (sum(lines(c["source"]) for c in cells if c["cell_type"] == "code")
            + sum(lines(o["data"]["text/markdown"]) for o in outputs
                  if "text/markdown" in o.get("data", {})))
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    minutes = (words / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE
               + figures * MINUTES_PER_FIGURE)
    return minutes, (f"{words:,} words, {code:,} lines of code, {figures} "
                     f"figure{'s' if figures != 1 else ''}")


def notebook_problem(nb) -> str | None:
    """What keeps `nb` (parsed JSON) from being a chapter the site can show, or None."""
    if not isinstance(nb, dict):
        return f"expected a notebook (a JSON object), found a JSON {type(nb).__name__}"
    if nb.get("nbformat") != 4:
        return (f"expected a Jupyter notebook of nbformat 4 (with cells), found nbformat "
                f"{nb.get('nbformat')!r} and keys {sorted(nb)[:5]}")
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        where = "/".join(str(part) for part in getattr(e, "absolute_path", []))
        message = (getattr(e, "message", None) or str(e)).split("\n")[0][:200]
        return f"nbformat's schema says {message}" + (f" (at {where})" if where else "")
    first = nb["cells"][0] if nb["cells"] else None
    if first is None or first["cell_type"] != "markdown" or \
            not "".join(first["source"]).startswith("# "):
        found = "no cells" if first is None else f"a {first['cell_type']} cell"
        return f"expected a first markdown cell holding the title ('# ...'), found {found}"
    return None


def read_chapter(src: Path) -> dict:
    """The notebook at `src`, checked by notebook_problem; a damaged one is one line."""
    restore = (f"restore it with `git checkout -- {src.relative_to(ROOT)}`"
               if src.is_relative_to(ROOT) else "restore it")
    try:
        nb = json.loads(src.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{src} is not a readable notebook ({e}); {restore}")
    problem = notebook_problem(nb)
    if problem:
        raise DataError(f"{src} is not a chapter the site can show: {problem}; {restore} "
                        f"(or fix it in Jupyter)")
    return nb


def stage_notebook(src: Path, dest: Path) -> float:
    """Copy one chapter to `dest` with its download link, its reading time and its figure cells
    folded; return the reading time in minutes."""
    nb = read_chapter(src)
    minutes, counts = reading(nb)
    link = (f'\n\n<p class="download-notebook"><a href="notebooks/{src.name}" download>'
            f'Download this chapter as a Jupyter notebook ({src.name})</a></p>\n'
            f'<p class="reading-time">About {minutes:.0f} minutes to read ({counts}).</p>\n')
    first = nb["cells"][0]
    lines = "".join(first["source"]).split("\n", 1)      # the title, then the rest
    first["source"] = lines[0] + link + (lines[1] if len(lines) > 1 else "")
    for cell in nb["cells"]:
        if draws_only(cell):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            tags.append("hide-input")
    dest.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    return minutes


def files_under(folder: Path) -> set[str]:
    """Every file below `folder`, as paths relative to it."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


def sha256(path: Path) -> str:
    """The file's sha256, which tells a file as a build wrote it from one changed since."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def entry_problem(out: Path, name: str) -> str | None:
    """Why `name`, a path from the manifest, is not a file a build could have written inside
    `out`, or None."""
    if name in ("", ".") or str(PurePosixPath(name)) != name:
        return f"{name!r} is not a plain relative path to a file"
    if PurePosixPath(name).is_absolute():
        return f"{name} is an absolute path, not one inside {out}"
    if ".." in PurePosixPath(name).parts:
        return f"{name} goes up out of the folder ('..')"
    if name == MANIFEST or name.startswith(ASIDE):
        return f"{name} is the build's own bookkeeping, never a file of the site"
    return None


def changed_since(out: Path, name: str) -> str | None:
    """Why the listed file `name` can no longer be replaced as a file of the site: it is now a
    folder, or a link leading out of `out`; None if it can."""
    if not (out / name).resolve().is_relative_to(out):
        return "a link that leads outside the folder"
    if (out / name).is_dir():
        return "a folder"
    return None


def read_manifest(out: Path) -> dict[str, str]:
    """The manifest of `out` as {path: sha256}, every entry checked by entry_problem; a list
    that this command did not write, or that was edited, is refused before any change."""
    manifest = out / MANIFEST
    lines = manifest.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()                                   # the final newline
    if not lines or lines[0] != MANIFEST_HEADER:
        raise DataError(f"{manifest} is not a list this command wrote (its first line should "
                        f"be {MANIFEST_HEADER!r}); if {out} holds a site built by an older "
                        f"version, empty it (keep what you added, such as .git/ or CNAME) and "
                        f"build again; otherwise choose another --out")
    entries = {}
    for number, line in enumerate(lines[1:], start=2):
        digest, sep, name = line.partition("  ")
        problem = (f"expected '<sha256>  <path>', found {line!r}"
                   if not sep or len(digest) != 64 or digest.strip("0123456789abcdef")
                   else f"{name} is listed twice" if name in entries
                   else entry_problem(out, name))
        if problem:
            raise DataError(f"{manifest}, line {number}: {problem}; this command did not "
                            f"write that line, so the list cannot say what a rebuild may "
                            f"replace: restore the list, or choose another --out")
        now = changed_since(out, name)
        if now:
            raise DataError(f"{out / name}, a file of the site the last build wrote, is now "
                            f"{now}; a rebuild will not touch it: move it away, or choose another "
                            f"--out")
        entries[name] = digest
    return entries


def check_out(out: Path) -> dict[str, str]:
    """The files an earlier build wrote into `out`, with their sha256 (none if it is missing
    or empty); a folder that holds other files but no list of them is refused, before any
    work."""
    blocking = next((p for p in [out, *out.parents] if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise DataError(f"cannot make the site folder {out}: {blocking} is a file; choose "
                        f"another --out")
    if not out.exists() or not any(out.iterdir()):
        return {}
    if not (out / MANIFEST).is_file():
        raise DataError(f"{out} is not empty and holds no site built by this command (no "
                        f"{MANIFEST}); choose another --out, or empty it yourself")
    if not os.access(out, os.W_OK | os.X_OK):
        raise DataError(f"cannot write into {out}; choose another --out")
    return read_manifest(out)


def still_ours(out: Path, before: dict[str, str]) -> set[str]:
    """The listed files that are still regular files as the last build wrote them."""
    return {name for name, digest in before.items()
            if (out / name).is_file() and not (out / name).is_symlink()
            and sha256(out / name) == digest}


def in_the_way(out: Path, new: set[str], going: set[str]) -> list[str]:
    """The paths in `out` (relative), other than the `going` files the swap moves aside, that
    stand where the new site puts a file, or a folder on the way to one."""
    blocked = set()
    for name in new:
        parts = PurePosixPath(name).parts
        for i in range(1, len(parts) + 1):
            part = "/".join(parts[:i])
            path = out / part
            if not os.path.lexists(path) or part in going:
                continue
            if i == len(parts) or path.is_symlink() or not path.is_dir():
                blocked.add(part)
    return sorted(blocked)


def install(site: Path, out: Path, before: dict[str, str]) -> None:
    """Replace the earlier build's files in `out` with the new site's; other files stay. The
    listed files still as the last build wrote them go, and so do listed ones the new site
    writes again (an edited page is rebuilt); a listed file changed since and no longer part
    of the site stays, and anything in the way of a new file is refused before any change."""
    new = files_under(site)
    ours = still_ours(out, before)
    rebuilt = {n for n in before if n in new and os.path.lexists(out / n)} - ours
    theirs = in_the_way(out, new, ours | rebuilt)
    if theirs:
        raise DataError(f"{out} holds files this build would overwrite but did not write "
                        f"({', '.join(theirs[:3])}{', ...' if len(theirs) > 3 else ''}); move them "
                        f"away or choose another --out")
    listing = MANIFEST_HEADER + "\n" + "".join(f"{sha256(site / n)}  {n}\n" for n in sorted(new))
    swap(site, out, sorted(new), sorted(ours | rebuilt), listing)
    kept = sorted(n for n in before if n not in ours | new and os.path.lexists(out / n))
    for names, what in [(sorted(rebuilt), "replaced"), (kept, "kept")]:
        if names:
            print(f"note: {what} {len(names)} file(s) in {out} that the last build wrote but "
                  f"that were changed since: {', '.join(names[:3])}"
                  f"{', ...' if len(names) > 3 else ''}", file=sys.stderr)


def make_parents(out: Path, path: Path, made: list[Path]) -> None:
    """Create the missing folders between `out` and `path`, recording each in `made`."""
    missing = [p for p in path.parents if p.is_relative_to(out) and not p.exists()]
    for folder in reversed(missing):
        folder.mkdir()
        made.append(folder)


def remove_emptied(out: Path, names, removed: list[Path]) -> None:
    """Remove the folders below `out` that moving `names` away has left empty."""
    folders = {p for n in names for p in (out / n).parents if p != out and p.is_relative_to(out)}
    for folder in sorted(folders, key=lambda p: -len(p.parts)):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            removed.append(folder)


def swap(site: Path, out: Path, new: list[str], old: list[str], listing: str) -> None:
    """Move the `old` files of `out` aside, the `new` ones of `site` in, then write the list;
    on any failure (Ctrl-C included) put everything back as it was."""
    aside = Path(tempfile.mkdtemp(prefix=ASIDE, dir=out))
    moved, removed, placed, made = [], [], [], []
    try:
        for name in old:
            (aside / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(out / name, aside / name)
            moved.append(name)
        remove_emptied(out, old, removed)
        for name in new:
            make_parents(out, out / name, made)
            shutil.move(site / name, out / name)
            placed.append(name)
        (aside / MANIFEST).write_text(listing, encoding="utf-8")
        os.replace(aside / MANIFEST, out / MANIFEST)
    except BaseException as e:
        put_back(out, aside, moved, removed, placed, made)
        if isinstance(e, OSError):
            why = f"{e.filename}: {e.strerror}" if e.filename else e
            raise DataError(f"moving the new site into {out} failed ({why}); the site that was "
                            f"there is back as it was") from None
        raise
    shutil.rmtree(aside)


def put_back(out: Path, aside: Path, moved, removed, placed, made) -> None:
    """Undo a swap that stopped half-way: the old files and folders return, the new go."""
    try:
        for name in reversed(placed):
            (out / name).unlink(missing_ok=True)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        for folder in reversed(removed):
            folder.mkdir(exist_ok=True)
        for name in moved:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(aside / name, out / name)
        shutil.rmtree(aside)
    except OSError as e:
        raise DataError(f"the new site could not be moved into {out}, and putting the old one "
                        f"back failed too ({e}); its files are in {aside}: move them back into "
                        f"{out}") from None


class CtrlC(BaseException):
    """Ctrl-C while Sphinx runs: not a KeyboardInterrupt, which Sphinx would catch, report
    as its own error and turn into a failed build."""


def sphinx(args: list[str]) -> int:
    """Sphinx's build_main(args), but Ctrl-C stays Ctrl-C (a KeyboardInterrupt here)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return build_main(args)
    pressed = []

    def on_interrupt(signum, frame):
        pressed.append(signum)
        raise CtrlC
    signal.signal(signal.SIGINT, on_interrupt)
    try:
        code = build_main(args)
    except CtrlC:
        raise KeyboardInterrupt from None
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:                            # pressed where something caught it anyway
        raise KeyboardInterrupt
    return code


def build(out: Path = DEFAULT_OUT) -> Path:
    """Render every chapter into `out` (see the module docstring) and return the path of its
    index.html."""
    out = Path(out).expanduser().resolve()
    before = check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".book-", dir=out.parent) as tmp:
        site = Path(tmp) / "site"
        src = Path(tmp) / "src"
        src.mkdir()
        total = sum(stage_notebook(nb, src / nb.name) for nb in chapters())
        index = (BOOK / "index.md").read_text(encoding="utf-8")
        (src / "index.md").write_text(index.replace("<!-- reading time -->", (
            f"Reading all {len(chapters())} chapters takes about {total / 60:.1f} hours at "
            f"{WORDS_PER_MINUTE} words of prose or {CODE_LINES_PER_MINUTE} lines of code a "
            f"minute and {MINUTES_PER_FIGURE * 60:.0f} seconds a figure; each chapter gives its "
            f"own estimate under its title.")),
            encoding="utf-8")
        args = ["-b", "html", "-q", "-W", "--keep-going", "-c", str(BOOK),
                "-d", str(Path(tmp) / "doctrees"), str(src), str(site)]
        if sphinx(args) != 0:
            raise DataError("Sphinx could not build the site (its messages are above); the "
                            "site that was there, if any, is unchanged")
        (site / "notebooks").mkdir()
        for nb in chapters():
            shutil.copy(nb, site / "notebooks" / nb.name)
        out.mkdir(exist_ok=True)
        install(site, out, before)
    return out / "index.html"
