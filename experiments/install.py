"""The README's two commands, timed on this machine: install, then run, then how big the
virtual environment is; and the fast test tier. Each command runs as a newcomer would run it,
in a fresh copy of the project's files (git's tracked and untracked, not ignored), with a fresh
cache; the package index's wheels may already be downloaded.

    python -m experiments.install [--out-dir results]

Writes install.json and install.md (runs/results by default); the README's table of the two
commands is read from install.json (python -m experiments.summary).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from annotated.base.cli import ArgumentParser, command
from annotated.base.errors import DataError
from annotated.base.files import read_lines, write_files
from experiments.commands import invocation
from experiments.folders import ROOT, add_out_dir, check_out_dir
from experiments.machine import machine_record
from experiments.report import markdown_table

README = ROOT / "README.md"


def commands() -> dict[str, str]:
    """The README's two commands (each the line after its comment, `# (1) ...`), split into
    their install and their run; a README without them is one DataError naming the mark."""
    lines = list(read_lines(README))
    found = {}
    for mark in ("(1)", "(2)"):
        at = next((i for i, t in enumerate(lines) if t.startswith(f"# {mark}")), None)
        line = lines[at + 1] if at is not None and at + 1 < len(lines) else ""
        install, _, run = line.rpartition(" && ")
        if not install:
            raise DataError(f"{README}: no command after a line beginning '# {mark}' (the "
                            f"comment above the README's command {mark}, which this times); "
                            f"put the comment back as it was (git checkout -- README.md)")
        found[mark] = {"install": install, "run": run}
    return found


def copy_project(into: Path) -> Path:
    """The project's files (what git tracks, and what it neither tracks nor ignores)."""
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


LOG = ROOT / "runs" / "install" / "log.txt"


def timed(line: str, folder: Path, env: dict) -> float:
    """Seconds `line` takes in bash in `folder`; its output goes to LOG, kept after the copy
    is gone."""
    start = time.time()
    with open(LOG, "a") as log:
        log.write(f"\n$ {line}\n")
        log.flush()
        done = subprocess.run(["bash", "-c", line], cwd=folder, env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise ChildProcessError(f"`{line}` failed (exit code {done.returncode}); its output "
                                f"is in {LOG}")
    return time.time() - start


def venv_size(folder: Path) -> tuple[int, int]:
    """(bytes, packages) of folder/.venv."""
    size = sum(p.stat().st_size for p in (folder / ".venv").rglob("*")
               if p.is_file() and not p.is_symlink())
    listed = subprocess.run([str(folder / ".venv" / "bin" / "python"), "-m", "pip", "list",
                             "--format=json"], capture_output=True, text=True, check=True)
    return size, len(json.loads(listed.stdout))


def measure(mark: str, line: dict, env: dict) -> dict:
    """One command in a fresh copy: install, run (and for (2), the fast tier), size."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = copy_project(Path(tmp) / "project")
        env = dict(env, ANNOTATED_CACHE_DIR=str(Path(tmp) / "cache"))
        result = {"install_s": round(timed(line["install"], folder, env)),
                  "run_s": round(timed(". .venv/bin/activate && " + line["run"], folder, env))}
        if mark == "(2)":
            result["fast_tier_s"] = round(timed(". .venv/bin/activate && python -m pytest -m "
                                                "'not slow'", folder, env))
        size, packages = venv_size(folder)
        return {**result, "venv_bytes": size, "packages": packages}


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.install",
                            description=__doc__.split("\n\n")[0])
    add_out_dir(parser, smoke=None)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    check_out_dir(args.out_dir)
    timed_commands = commands()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANNOTATED_", "VIRTUAL"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(sys.prefix))    # not this .venv's python
    LOG.parent.mkdir(parents=True, exist_ok=True)
    LOG.write_text("")
    result = {"commands": {}, "machine": machine_record()}
    for mark, line in timed_commands.items():
        print(f"timing {mark}: {line['install']} && {line['run']}", flush=True)
        result["commands"][mark] = {**line, **measure(mark, line, env)}
    rows = [[mark, f"{r['install_s']} s", f"{r['run_s']} s", f"{r['venv_bytes'] / 2**30:.1f} GB",
             r["packages"]] for mark, r in result["commands"].items()]
    text = "\n".join(["# The README's two commands, timed", "",
                      f"Written by `{invocation('experiments.install', argv)}` (do not edit by "
                      f"hand).", ""] + markdown_table(
        ["command", "install", "run", "size of .venv/", "packages"], rows)
        + ["", f"The fast test tier (`python -m pytest -m 'not slow'`) took "
               f"{result['commands']['(2)']['fast_tier_s']} s.", ""])
    write_files({args.out_dir / "install.json": json.dumps(result, indent=1),
                 args.out_dir / "install.md": text})
    print(f"wrote {args.out_dir / 'install.md'}; python -m experiments.summary --write puts "
          f"the times into README.md")


if __name__ == "__main__":
    main()
