"""The project's own files in the site: the API reference (book/api/index.md with its list of
modules filled in, and a page per module of API_PACKAGES, which autodoc writes from the
docstrings, read from this checkout's source), and the zip of the project's tracked files
(`git ls-files`; skipped, with a note, outside a git checkout) at the site's top, for a reader
who runs the chapters offline."""
import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from book import i18n, languages

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
#: The packages of the API reference (api/ in the site), read from the checkout's source.
API_PACKAGES = ("annotated", "reference_numpy")
#: The project's tracked files, for a reader who runs the chapters offline (site root).
PROJECT_ZIP = "annotated-transformer.zip"


def api_modules() -> list[str]:
    """Every module of API_PACKAGES, from the checkout's files (none imported here)."""
    modules = []
    for package in API_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if all((ROOT.joinpath(*parts[:n]) / "__init__.py").is_file()
                   for n in range(1, len(parts))):
                modules.append(".".join(parts).removesuffix(".__init__"))
    return sorted(set(modules))


def summary(module: str) -> str:
    """The first sentence of a module's docstring, read from its file, as markdown text (code
    in backticks stays code; no other markup)."""
    path = ROOT.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = re.match(r"(.+?[.:;])(?=\s+[A-Z(`]|$)", first)
    text = (sentence[1] if sentence else first).rstrip(":;")
    parts = re.split(r"(`[^`]*`)", text)                 # code spans, at the odd places
    return "".join(part if k % 2 else re.sub(r"([\\*_\[\]$<>|{}#])", r"\\\1", part)
                   for k, part in enumerate(parts))


def stage_api(src: Path, modules: list[str], lang: str = languages.ENGLISH) -> None:
    """The API reference in the stage: book/api/index.md with its list of modules filled in
    (a link and the first line of each module's docstring), and a page per module that
    autodoc fills from the docstrings. The module pages are linked from that list, not from
    a toctree, so that the navigation of every page stays short."""
    (src / "api").mkdir(exist_ok=True)
    lists = "".join(f"\n## {package}\n\n" + "".join(
        f"- {{doc}}`{m} <{m}>`: {summary(m)}\n" for m in modules if m.split(".")[0] == package)
        for package in API_PACKAGES)
    index = i18n.page_text(BOOK / "api" / "index.md", lang)
    (src / "api" / "index.md").write_text(index.replace("<!-- modules -->", lists),
                                          encoding="utf-8")
    for module in modules:                    # reStructuredText, which autodoc writes
        (src / "api" / f"{module}.rst").write_text(
            f":orphan:\n\n{module}\n{'=' * len(module)}\n\n.. automodule:: {module}\n",
            encoding="utf-8")


def project_zip(dest: Path, leave_out=lambda name: False) -> int | None:
    """Write the project's tracked files (`git ls-files`, as they are in the working tree),
    but those for which `leave_out(path from the project's root)` is true, into the zip `dest`,
    under one folder, the same bytes for the same files; return its size in bytes, or None,
    with a note, when the project is not a git checkout."""
    try:
        top = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if Path(top).resolve() != ROOT.resolve():
            raise ValueError(f"the checkout is {top}")
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        why = e.stderr.strip() if isinstance(e, subprocess.CalledProcessError) else e
        print(f"note: {ROOT} is not a git checkout ({why}), so the site has no download of "
              f"the project; the chapters' notebooks are still there", file=sys.stderr)
        return None
    folder = PROJECT_ZIP.removesuffix(".zip")
    with zipfile.ZipFile(dest, "w") as archive:
        for name in sorted(n for n in listed.split("\0") if n and not leave_out(n)):
            path = ROOT / name
            if not path.is_file():                       # deleted, not yet committed
                continue
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | (path.stat().st_mode & 0o777)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes(), compresslevel=9)
    return dest.stat().st_size
