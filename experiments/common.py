"""What the results scripts share: train a preset with the project's own command, then score
a checkpoint the way §6.1 does (beam 4, alpha 0.6, max length input + 50) with sacreBLEU."""
import json
import os
import platform
import shlex
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from annotated.base.cli import path
from annotated.base.errors import DataError
from annotated.base.signals import signals_held
from annotated.base.files import remove_stale_temporaries, temporary_beside
from annotated.configs import merged
from annotated.data.corpus import cache_folder, corpus_files, data_location, read_parallel
from annotated.inference.batched import translate_lines
from annotated.inference.bleu import lowercase_bleu, paper_bleu, sacre_bleu
from annotated.store.checkpoint_file import checkpoints, header, load_model
from annotated.training.step import evaluate

ROOT = Path(__file__).resolve().parent.parent
# Where models are scored: the GPU when there is one (decoding is then a matter of seconds).
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def machine_record() -> dict:
    """The machine a measurement was made on: its CPU and cores, torch; with a GPU, the GPU,
    its memory, CUDA and cuDNN."""
    record = {"torch": torch.__version__, "python": platform.python_version(),
              "cpu": cpu_name(), "cores": os.cpu_count()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        record.update(gpu=torch.cuda.get_device_name(0),
                      gpu_memory_GiB=round(props.total_memory / 2 ** 30, 1),
                      multiprocessors=props.multi_processor_count, cuda=torch.version.cuda,
                      cudnn=torch.backends.cudnn.version())
    return record


def cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_files(files: dict) -> None:
    """Write results files all or nothing: {path: text or bytes}. Each is written to a
    temporary file beside it first; only when every one is complete are they moved into place,
    each old file moved aside first, with Ctrl-C held back for that short phase, and on any
    failure the old files are put back: a failure leaves every file that was there as it
    was (and no folder it created), and the error names the file that could not be written."""
    targets = {_target(Path(path)): content for path, content in files.items()}
    created = _missing_folders(targets)
    staged = {}
    try:
        for path, content in targets.items():
            staged[path] = _stage(path, content)
        with signals_held():
            _commit(staged)
    except BaseException:
        _discard(staged.values(), created)
        raise


UNCHANGED = "no results file was changed"


def _target(path: Path) -> Path:
    """The file a results file replaces: a symbolic link's target (the link stays)."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists() and not target.is_file():
        raise DataError(f"cannot write {path}: it is not a file (a folder, a device or a pipe "
                        f"is in its place); move it away or choose another --out-dir")
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
        remove_stale_temporaries(path.parent, path.name)
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


def _commit(staged: dict) -> None:
    """Move every old file aside, then every new one in; on any failure the new ones are
    taken out and the old ones put back, and the error names the file that failed."""
    aside, placed = {}, []
    try:
        for path in staged:
            if path.exists():
                with _naming(path):
                    backup = temporary_beside(path)
                    os.rename(path, backup)
                aside[path] = backup
        for path, tmp in staged.items():
            with _naming(path):
                os.replace(tmp, path)
            placed.append(path)
    except BaseException:
        _restore(aside, placed)
        raise
    for backup in aside.values():
        backup.unlink(missing_ok=True)


def _restore(aside: dict, placed: list) -> None:
    """Undo a partial _commit: remove the new files placed, move the old ones back."""
    for path in placed:
        if path not in aside:
            path.unlink(missing_ok=True)
    for path, backup in aside.items():
        try:
            os.replace(backup, path)
        except OSError as e:
            raise OSError(e.errno, f"{e.strerror}; the file that was there is kept as "
                                   f"{backup.name}: rename it back", str(path)) from e


@contextmanager
def _naming(path: Path):
    """Re-raise an OSError naming `path`, the file the user asked for (not a temporary
    file), and saying that no results file was changed."""
    try:
        yield
    except OSError as e:
        raise OSError(e.errno, f"{e.strerror or e}; {UNCHANGED}", str(path)) from e


def invocation(module: str, argv=None) -> str:
    """The command line a script was started with (argv: its arguments, by default those of
    this process), for the first line of its results file."""
    args = sys.argv[1:] if argv is None else argv
    return recorded(["python", "-m", module, *args])


def recorded(cmd: list[str]) -> str:
    """A command (its words) as the results files record it: the data location is each
    reader's own, so `--data-dir` is written with the README's placeholder, DIR."""
    words = list(cmd)
    for i, word in enumerate(words):
        if word == "--data-dir" and i + 1 < len(words):
            words[i + 1] = "DIR"
        elif word.startswith("--data-dir="):
            words[i] = "--data-dir=DIR"
    return shlex.join(words)


def add_out_dir(parser):
    """--out-dir: the folder a results script writes into."""
    parser.add_argument("--out-dir", type=path, default=ROOT / "runs" / "results",
                        help="where to write the results (default runs/results; pass "
                             "--out-dir results to replace the committed ones, never with "
                             "--limit)")


# The folders whose files are committed: results written into them are the project's own
# (chapter 8 and the README read them), so a smoke test never writes there.
COMMITTED = (ROOT / "results", ROOT / "annotated")


def committed_folder(path) -> Path | None:
    """The committed folder (results/, annotated/) that `path` is in or is, if any."""
    resolved = Path(path).resolve()
    return next((c for c in COMMITTED if resolved.is_relative_to(c)), None)


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
                        f"{relative(folder)}/ holds the committed results; give --out-dir a "
                        f"scratch folder (the default is one), or leave out {smoke.split()[0]}")
    linked = [p for p in (out_dir.iterdir() if smoke and out_dir.is_dir() else ())
              if p.is_symlink() and committed_folder(p) is not None]
    if linked:
        raise DataError(f"refusing to write a smoke test ({smoke}) into {out_dir}: "
                        f"{linked[0].name} there is a link into "
                        f"{relative(committed_folder(linked[0]))}/, whose files are committed; "
                        f"remove the link or give another --out-dir")
    return out_dir


def check_run_folder(run: Path, option: str = "--run-dir") -> Path:
    """Refuse a training run's folder inside a committed folder (results/, annotated/): its
    checkpoints and logs would land among the project's files."""
    folder = committed_folder(run)
    if folder is not None:
        raise DataError(f"{option} {run} is inside {relative(folder)}/, whose files are "
                        f"committed; give a folder for training runs such as runs/NAME")
    return Path(run)


def first_sentences(n: int, total: int, of: str = "") -> str:
    """How a results file names the sentences it scored: "the first 10 of the 1,000 sentences"
    when --limit cut the set, "the 1,000 sentences" when not (then " of " and `of`, if given)."""
    text = f"the first {n:,} of the {total:,} sentences" if n < total else f"the {n:,} sentences"
    return text + (f" of {of}" if of else "")


def add_training_arguments(parser, overrides_help: str):
    """--data-dir, --out-dir and key=value: what the scripts that train models share."""
    parser.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                                           "ANNOTATED_DATA_DIR)")
    add_out_dir(parser)
    parser.add_argument("overrides", nargs="*", metavar="key=value", help=overrides_help)


def relative(path: Path) -> str:
    """A path as the commands show it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def train_command(preset: str, out: Path, *, max_minutes: float | None = None,
                  max_steps: int | None = None, overrides=(), data_dir=None,
                  nproc: int = 1) -> list[str]:
    """The command line of a fresh `python -m annotated.train` run in `out`; with nproc > 1,
    under torchrun with that many processes on this machine (one global batch, chapter 9)."""
    cmd = [*launcher(nproc), "-m", "annotated.train", "--config", preset, "--run-dir",
           relative(out)]
    if data_dir:
        cmd += ["--data-dir", str(data_dir)]
    if max_minutes is not None:
        cmd += ["--max-minutes", str(max_minutes)]
    if max_steps is not None:
        cmd += ["--max-steps", str(max_steps)]
    return cmd + merged(overrides)


def resume_command(out: Path, *, max_minutes: float | None = None, data_dir=None,
                   nproc: int = 1) -> list[str]:
    """The command line that continues the run in `out` (`--resume`), for max_minutes more if
    given."""
    cmd = [*launcher(nproc), "-m", "annotated.train", "--run-dir", relative(out), "--resume"]
    if max_minutes is not None:
        cmd += ["--max-minutes", str(max_minutes)]
    return cmd + (["--data-dir", str(data_dir)] if data_dir else [])


def launcher(nproc: int) -> list[str]:
    """How a training command starts: python, or torchrun with nproc processes."""
    return ["python"] if nproc == 1 else ["torchrun", "--standalone", f"--nproc_per_node={nproc}"]


def with_this_python(cmd: list[str]) -> list[str]:
    """A command as shown ("python -m ..." or "torchrun ...") made to run with this Python."""
    module = ["-m", "torch.distributed.run"] if cmd[0] == "torchrun" else []
    return [sys.executable, *module, *cmd[1:]]


def run_command(cmd: list[str]) -> str:
    """Run one of the project's commands (cmd: "python", "-m", ...) from the repository root
    with this Python; returns it as one string, as recorded. If it fails, it has already said
    why on stderr: the ChildProcessError only names it."""
    line = shlex.join(cmd)
    print(f"+ {line}", flush=True)
    done = subprocess.run(with_this_python(cmd), cwd=ROOT)
    if done.returncode != 0:
        raise ChildProcessError(f"`{line}` failed (exit code {done.returncode}); its error is "
                                f"above")
    return recorded(cmd)


def train(preset: str, out: Path, **options) -> tuple[float, str]:
    """Run train_command(preset, out, **options); returns (wall seconds, the command)."""
    start = time.time()
    cmd = run_command(train_command(preset, out, **options))
    return time.time() - start, cmd


def average(run_dir: Path, n: int, out: Path | None = None) -> tuple[Path, str]:
    """Average the newest n checkpoints of a run (§6.1) into `out` (default
    run_dir/average.pt). An `out` that already averages exactly those checkpoints is used as
    it is; one that averages others is replaced only if they are all still there (it can be
    made again); one that cannot be made again (the user's own, from checkpoints rotation has
    deleted) never is."""
    out = out or run_dir / "average.pt"
    command = ["python", "-m", "annotated.checkpoint", "average", "--last", str(n),
               relative(run_dir), "--out", relative(out)]
    if out.exists():
        present = [p.name for p in checkpoints(run_dir)]
        try:
            sources = header(out).get("averaged_from")
        except Exception:
            sources = None
        if sources == present[-n:]:
            return out, recorded(command)
        if not sources or not set(sources) <= set(present):
            raise DataError(f"{out} exists and is not an average this script can make again "
                            f"(its checkpoints are not all in {run_dir}); move it away (it is "
                            f"left as it is), then run this again")
    return out, run_command(command)


def read_metrics(run_dir: Path) -> list[dict]:
    """The lines of a run's metrics.jsonl, which `python -m annotated.train` writes."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise DataError(f"no {path}: {run_dir} was not written by python -m annotated.train; "
                        f"give the folder of a training run")
    lines = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as e:
            entry = e
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
            raise DataError(f"{path}, line {number}: not a metrics line as the trainer writes "
                            f"them; restore or delete the line")
        lines.append(entry)
    return lines


def split_text(config, data_dir, split: str) -> tuple[list[str], list[str]]:
    """A split ("valid", "test") of config's corpus as raw source and target sentences."""
    files = corpus_files(config, data_location(data_dir), cache_folder(), log=lambda *_: None)
    pairs, _ = read_parallel(*files[split])
    return [s for s, _ in pairs], [t for _, t in pairs]


def score(checkpoint: Path, sources: list[str], references: list[str], **decode) -> dict:
    """Translate with `translate_lines(**decode)`; sacreBLEU (cased), lowercased tokenized BLEU
    (sacreBLEU -lc, 13a: the Multi30k literature's metric) and paper-style BLEU."""
    model, config, tokenizer = load_model(checkpoint, map_location=DEVICE)
    start = time.time()
    hyps = translate_lines(model, tokenizer, sources, **decode)
    seconds = time.time() - start
    sacre, signature = sacre_bleu(hyps, references)
    lower, lower_signature = lowercase_bleu(hyps, references)
    return dict(bleu=round(sacre.score, 2), signature=signature,
                lowercase_bleu=round(lower.score, 2), lowercase_signature=lower_signature,
                lowercase_ref_tokens=lower.ref_len,
                paper_bleu=round(paper_bleu(hyps, references).score, 2),
                sentences_per_s=round(len(sources) / seconds, 1), hypotheses=hyps)


def perplexity(checkpoint: Path, pairs) -> dict:
    """Label-smoothed loss, perplexity and accuracy per target token on `pairs` (a split)."""
    model, config, _ = load_model(checkpoint, map_location=DEVICE)
    return rounded(evaluate(model, pairs, config, torch.device(DEVICE)))


def rounded(stats: dict) -> dict:
    """The loss, ppl and accuracy of a validation, to 4 decimals as the results files show them."""
    return {k: round(stats[k], 4) for k in ("loss", "ppl", "accuracy")}


def markdown_table(header: list[str], rows: list[list]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])
