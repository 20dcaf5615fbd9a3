"""The built site published into the output folder, all or nothing, replacing only what the
last build wrote there.

The output folder may be empty, missing, or a site built here before: a list of the files each
build writes, with their sha256 (`.book-files`, the manifest), tells the next build what it
may replace. A list that does not look like ours, or that names anything but a file inside the
folder, is refused, and so is a listed file changed since (an edited page: a rebuild would lose
the edit), before the build starts. A rebuild removes and overwrites only listed files still as
the last build wrote them; anything else in the folder stays (a `.git/` or a `CNAME` of a site
published from it). Every check (the list, and the new site's files against what is there)
comes before the first change; the swap then moves the old files
aside into a folder inside the output folder, moves the new ones in and the list last, and on
any failure or stop (Ctrl-C, SIGTERM, SIGHUP) puts the old ones back
(annotated.base.files.all_or_nothing).
"""
import os
import secrets
from pathlib import Path, PurePosixPath

from annotated.base.errors import DataError
from annotated.base.files import all_or_nothing, scratch_folder, sha256_file

MANIFEST = ".book-files"                  # in the output folder: the files the last build wrote
#: The manifest's first line, which tells it from a list this command did not write; each
#: further line is `<sha256 of the file>  <its path inside the output folder>`.
MANIFEST_HEADER = "# python -m book build wrote these files here: sha256, two spaces, path"
ASIDE = ".book-old-"                      # prefix of the folder the old files wait in


def files_under(folder: Path) -> set[str]:
    """Every file below `folder`, as paths relative to it."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


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


#: The project's folders a site must not be built into: what the book is made from, the
#: packages and scripts, and what the tests collect.
SOURCES = [Path(__file__).resolve().parents[1] / name for name in
           ("chapters", "book", "annotated", "tests", "results", "reference_numpy", "docs",
            "experiments", "benchmarks", "figures", ".git")]


def check_out(out: Path) -> dict[str, str]:
    """The files an earlier build wrote into `out`, with their sha256 (none if it is missing
    or empty); a folder that holds other files but no list of them, or the old files of a
    build killed during its swap, is refused, before any work."""
    inside = next((p for p in SOURCES if out.resolve().is_relative_to(p)), None)
    if inside is not None:
        raise DataError(f"--out {out} is inside the project's {inside.name}/, whose files the "
                        f"book is made from (and the tests read); choose a folder outside it, "
                        f"such as build/site (the default)")
    site = next((p for p in out.resolve().parents if (p / MANIFEST).is_file()), None)
    if site is not None:                  # a rebuild of that site would replace it, or delete it
        raise DataError(f"--out {out} is inside {site}, a site this command built: build the "
                        f"site into {site} itself (--out {site}), or choose a folder outside it")
    blocking = next((p for p in [out, *out.parents] if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise DataError(f"cannot make the site folder {out}: {blocking} is a file; choose "
                        f"another --out")
    where = next(p for p in [out, *out.parents] if p.exists())     # the folder that is, or
    if not os.access(where, os.W_OK | os.X_OK):                      # will hold, the site
        mounted = os.statvfs(where).f_flag & os.ST_RDONLY
        raise DataError(f"cannot write into {where}"
                        f"{' (its file system is mounted read-only)' if mounted else ''}, "
                        f"where the site {out} would go; choose another --out")
    try:                     # what the permissions do not tell: /proc, /sys, a full disk
        with scratch_folder(where, ".book-"):
            pass
    except OSError as e:
        raise DataError(f"cannot write into {where} ({e.strerror}), where the site {out} "
                        f"would go; choose another --out") from None
    if not out.exists() or not any(out.iterdir()):
        return {}
    left = sorted(out.glob(f"{ASIDE}*"))
    if left:
        raise DataError(f"{left[0]} holds files of the site that was in {out}, left by a build "
                        f"that was killed while it replaced them: move them back into {out} "
                        f"(they keep their paths there), delete {left[0].name}, then build again")
    if not (out / MANIFEST).is_file():
        what = "not a file" if (out / MANIFEST).exists() else "missing"
        empty = "" if (out / ".git").exists() else ", or empty it yourself"
        raise DataError(f"{out} is not empty and holds no site built by this command (its "
                        f"{MANIFEST} is {what}); choose another --out{empty}")
    before = read_manifest(out)
    refuse_edited(out, sorted(n for n in set(before) - still_ours(out, before)
                              if os.path.lexists(out / n)))
    return before


def refuse_edited(out: Path, edited: list[str]) -> None:
    """Refuse to replace the listed files `edited`, changed since the last build wrote them: a
    rebuild would lose the change."""
    if edited:
        more = f" (and {len(edited) - 1} more)" if edited[1:] else ""
        raise DataError(f"{out / edited[0]}{more} was changed since the last build wrote it; a "
                        f"rebuild would lose the change: move it out of {out} (or undo the "
                        f"change), then build again")


def still_ours(out: Path, before: dict[str, str]) -> set[str]:
    """The listed files that are still regular files as the last build wrote them."""
    return {name for name, digest in before.items()
            if (out / name).is_file() and not (out / name).is_symlink()
            and sha256_file(out / name) == digest}


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


def publish(site: Path, out: Path, before: dict[str, str]) -> None:
    """Replace the earlier build's files in `out` with the new site's; other files stay. The
    listed files still as the last build wrote them go; one changed since (check_out refuses
    it before the build, this again for an edit during it) or anything else in the way of a
    new file is refused before any change. The new manifest is written beside `site` first."""
    new = files_under(site)
    ours = still_ours(out, before)
    refuse_edited(out, sorted({n for n in before if n in new and os.path.lexists(out / n)}
                              - ours))                    # edited during this build
    theirs = in_the_way(out, new, ours)
    if theirs:
        raise DataError(f"{out} holds files this build would overwrite but did not write "
                        f"({', '.join(theirs[:3])}{', ...' if len(theirs) > 3 else ''}); move them "
                        f"away or choose another --out")
    listing = site.parent / MANIFEST
    listing.write_text(MANIFEST_HEADER + "\n" + "".join(f"{sha256_file(site / n)}  {n}\n"
                                                       for n in sorted(new)), encoding="utf-8")
    swap(site, out, sorted(new), sorted(ours), listing)


def swap(site: Path, out: Path, new: list[str], old: list[str], listing: Path) -> None:
    """Move the `old` files of `out` and its manifest aside, the `new` ones of `site` in, then
    the new manifest, `listing`: all or nothing. A failure or a stop puts everything back; a
    stop that arrives after the last move takes effect once the site is published, and says
    so."""
    aside, published = out / f"{ASIDE}{secrets.token_hex(4)}", False
    try:
        with all_or_nothing() as moves:
            for name in old + ([MANIFEST] if os.path.lexists(out / MANIFEST) else []):
                moves.move_aside(out / name, aside / name)
            moves.remove_emptied(out)
            for name in new:
                moves.move(site / name, out / name)
            moves.move(listing, out / MANIFEST)
            published = True
    except KeyboardInterrupt as stop:           # held until the moves were done, or undone
        stop.add_note(f"the new site was published whole in {out} before the stop took effect"
                      if published else f"the site in {out} is as it was")
        raise
    except OSError as e:
        why = f"{e.filename}: {e.strerror}" if e.filename else e
        raise DataError(f"moving the new site into {out} failed ({why}); the site that was "
                        f"there is back as it was") from None
