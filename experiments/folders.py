"""The folders the results scripts read and write: the repository (ROOT) and paths shown
relative to it, the committed folders that only a full run may write into, and the options
that name folders (--out-dir, --data-dir), each checked before any work."""
import os
from pathlib import Path

from annotated.base.cli import path
from annotated.base.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
# The folders whose files are committed: results written into them are the project's own
# (chapter 8 and the README read them), so a smoke test never writes there.
COMMITTED = (ROOT / "results", ROOT / "annotated")
# How the files the results scripts write are named: the --out-dir check refuses a folder (or
# anything but a file) under such a name before the work, not when the results are written.
RESULTS_SUFFIXES = (".json", ".md", ".npz", ".txt", ".csv")


def relative(path: Path) -> str:
    """A path as the commands show it: relative to the repository when inside it. A link is
    named as the link (the file a fix restores), not as what it leads to."""
    path = Path(path).parent.resolve() / Path(path).name
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def add_out_dir(parser, smoke: str | None = "--limit"):
    """--out-dir: the folder a results script writes into; `smoke` names its smoke-test option,
    which never writes into results/ (None: the script has none)."""
    never = f", never with {smoke}" if smoke else ""
    parser.add_argument("--out-dir", type=path, default=ROOT / "runs" / "results",
                        help="where to write the results (default runs/results; pass "
                             f"--out-dir results to replace the committed ones{never})")


def add_training_arguments(parser, overrides_help: str):
    """--data-dir, --out-dir and key=value: what the scripts that train models share."""
    parser.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                                           "ANNOTATED_DATA_DIR)")
    add_out_dir(parser)
    parser.add_argument("overrides", nargs="*", metavar="key=value", help=overrides_help)


def committed_folder(path) -> Path | None:
    """The committed folder (results/, annotated/) that `path` is in or is, if any."""
    try:
        resolved = Path(path).resolve()
    except (RuntimeError, OSError):             # a link that leads to itself: no folder at all
        resolved = Path(os.path.abspath(path))
    return next((c for c in COMMITTED if resolved.is_relative_to(c)), None)


def committed_file(path) -> Path | None:
    """What writing the file `path` would change among the committed files: the committed
    folder it is in, whatever the path says on the way (a link, '..'), or the committed file
    it is another name of (a hard link, which a write goes through); None if nothing."""
    folder = committed_folder(path)
    if folder is not None:
        return folder
    path = Path(path)
    if not path.is_file() or path.stat().st_nlink == 1:
        return None
    return next((f for c in COMMITTED for f in c.rglob("*")
                 if f.is_file() and os.path.samefile(f, path)), None)


def check_out_dir(out_dir: Path, limit=None, option: str = "--out-dir", smoke=None) -> Path:
    """Refuse, before any work, an --out-dir that is no folder or cannot become one, or a smoke
    test's (--limit N, or the `smoke` option named) into a committed folder, directly or
    through a link in the folder: partial results must never replace the project's own. The
    folder itself is made only when there is something to write."""
    out_dir = Path(out_dir)
    smoke = smoke or (f"--limit {limit}" if limit is not None else None)
    if out_dir.exists() and not out_dir.is_dir():
        raise DataError(f"{option} {out_dir} is not a folder; give a folder (one that "
                        f"does not exist yet is created)")
    if out_dir.is_symlink() and not out_dir.exists():
        raise DataError(f"{option} {out_dir} is a link to {os.readlink(out_dir)}, which does "
                        f"not exist; make that folder, or give another {option}")
    existing = next(p for p in [out_dir, *out_dir.absolute().parents] if p.exists())
    if not existing.is_dir():
        raise DataError(f"{option} {out_dir}: {existing} is a file, so no folder can be made "
                        f"there; give another folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DataError(f"{option} {out_dir}: the folder {existing} is not writable; give "
                        f"another folder")
    folder = committed_folder(out_dir)
    if smoke and folder is not None:
        raise DataError(f"refusing to write a smoke test ({smoke}) into {out_dir}: "
                        f"{relative(folder)}/ holds files committed with the project (its "
                        f"results, the shipped model); give --out-dir a "
                        f"scratch folder (the default is one), or leave out {smoke.split()[0]}")
    linked = [p for p in (out_dir.iterdir() if smoke and out_dir.is_dir() else ())
              if p.is_symlink() and committed_folder(p) is not None]
    if linked:
        raise DataError(f"refusing to write a smoke test ({smoke}) into {out_dir}: "
                        f"{linked[0].name} there is a link into "
                        f"{relative(committed_folder(linked[0]))}/, whose files are committed; "
                        f"remove the link or give another --out-dir")
    blocking = not_files_named_like_results(out_dir)
    if blocking:
        raise DataError(f"{option} {out_dir}: {blocking[0].name} there is not a file, and a "
                        f"results file may be written under that name after all the work; "
                        f"move it away or give another {option}")
    leaving = links_out_of(out_dir)
    if leaving:
        raise DataError(f"refusing to write into {option} {out_dir}: {leaving[0].name} there is "
                        f"a link to {os.readlink(leaving[0])}, outside the folder, and the "
                        f"results written there would replace that file; remove the link or "
                        f"give another {option}")
    return out_dir


def not_files_named_like_results(folder: Path) -> list[Path]:
    """What in `folder` is named like a results file (RESULTS_SUFFIXES) but is a folder, a
    pipe or another thing no results file can replace."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in RESULTS_SUFFIXES
                  and (p.exists() or not p.is_symlink()) and not p.is_file())


def links_out_of(folder: Path) -> list[Path]:
    """The links in `folder` (not in its subfolders) that lead to a file outside it, or to no
    file yet: a results file written under such a name would land outside the folder."""
    if not folder.is_dir():
        return []
    inside = folder.resolve()
    return sorted(p for p in folder.iterdir() if p.is_symlink() and not p.is_dir()
                  and not Path(os.path.realpath(p)).is_relative_to(inside))


def check_run_folder(run: Path, option: str = "--run-dir") -> Path:
    """Refuse a training run's folder inside a committed folder (results/, annotated/): its
    checkpoints and logs would land among the project's files."""
    folder = committed_folder(run)
    if folder is not None:
        raise DataError(f"{option} {run} is inside {relative(folder)}/, whose files are "
                        f"committed; give a folder for training runs such as runs/NAME")
    return Path(run)
