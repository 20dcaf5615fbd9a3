"""`python -m annotated.checkpoint`: average checkpoints (§6.1), halve them, verify them.

    python -m annotated.checkpoint average --out OUT CKPT [CKPT ...]
    python -m annotated.checkpoint average --out OUT --last N RUN_DIR
    python -m annotated.checkpoint half --out OUT CKPT
    python -m annotated.checkpoint verify CKPT|RUN_DIR [...]

average: the weights of several checkpoints of one run, as the paper decodes with (the last 5
for base, 20 for big, written at 10-minute intervals); checkpoints of different models,
tokenizers or runs are refused (see --help). half: the model in float16 without its training
state, half the size, to share. verify: checks files against their sha256 seals.
The file format is annotated.store.checkpoint_file.
"""
import os
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, number, out_file, path, say_error
from annotated.base.errors import CheckpointError
from annotated.base.files import check_output, folder_claimed
from annotated.base.settings import at_least
from annotated.configs import option
from annotated.store.checkpoint_file import (NAME, NotOurs, atomic_save, average, checkpoints,
                                             half, header, not_a_checkpoint, step_in_name,
                                             verify)
from annotated.training.run_dir import check_one_run, in_use_by, misnamed


def _average_inputs(args) -> list[Path]:
    """The checkpoints `average` was given: the paths, or the newest --last N of a run folder."""
    if args.last is None:
        paths = [Path(p) for p in args.paths]
        seen = {}
        for p in paths:
            if p.is_dir():
                raise CheckpointError(f"{p} is a folder: give --last N {p} to average its newest "
                                      f"N checkpoints, or name the checkpoint files")
            if p.exists() and (twin := next((q for q in seen if os.path.samefile(p, q)), None)):
                raise CheckpointError(f"{p} is given twice (also as {twin}); an average takes "
                                      f"each checkpoint once")
            seen[p] = True
        return paths
    if not Path(args.paths[0]).is_dir():
        raise CheckpointError(f"--last {args.last}: {args.paths[0]} is "
                              f"{'not a folder' if Path(args.paths[0]).exists() else 'no folder'}"
                              f"; give the run folder whose newest {args.last} checkpoints to "
                              f"average")
    check_one_run(args.paths[0])          # the newest by name are the newest by step
    found = checkpoints(args.paths[0])
    if len(found) < args.last:
        training = in_use_by(args.paths[0])
        fix = (f"give --last {len(found)} or fewer, or train the run longer" if found else
               f"the run training there (pid {training}) has saved none yet: wait for its "
               f"first checkpoints" if training else
               "train a run there first, or give the run folder that holds its checkpoints")
        raise CheckpointError(f"{args.paths[0]} holds {len(found)} checkpoint"
                              f"{'' if len(found) == 1 else 's'}, fewer than --last "
                              f"{args.last}; {fix}")
    return found[-args.last:]


def _check_out(out, paths, example: str) -> None:
    """Refuse an --out that is one of the inputs, cannot be written, is stdout, or is named
    (or links to a file named) like a training checkpoint, which --resume and rotation would
    take the new file for. `example` is a fitting name, given in the refusals."""
    if str(out) == "-":
        raise CheckpointError("--out -: a checkpoint is a binary file, not text for stdout; "
                              f"give a file name, e.g. {example}")
    if Path(out).suffix in (".gz", ".xz", ".bz2", ".zst", ".zip"):
        raise CheckpointError(f"--out {out}: a checkpoint is written as torch.save writes it, "
                              f"not {Path(out).suffix[1:]}-compressed, and the name would say "
                              f"otherwise; give a name ending in .pt, e.g. {example}")
    check_output(out, reads=paths, say=say_error)
    target = Path(os.path.realpath(out)) if Path(out).is_symlink() else Path(out)
    for named in {Path(out), target}:
        link = f" (a link to {target})" if named == target != Path(out) else ""
        if NAME.fullmatch(named.name):
            raise CheckpointError(f"refusing to write {out}{link}: ckpt_NNNNNNN.pt names a "
                                  f"training checkpoint; choose another name, e.g. {example}")
        if named.name.startswith("."):
            raise CheckpointError(f"refusing to write {out}{link}: a hidden file such as a run "
                                  f"folder's .lock is not a checkpoint's place; choose another "
                                  f"name, e.g. {example}")
    if target.is_file() and target.stat().st_size:
        if holds := not_a_checkpoint(target) or foreign(target):
            raise CheckpointError(f"refusing to write {out}: that file {holds}, not a "
                                  f"checkpoint, and the checkpoint would replace it; choose "
                                  f"another name, e.g. {example}")
        if not _runs_of(target) & set().union(*(_runs_of(Path(p)) for p in paths)):
            raise CheckpointError(f"refusing to write {out}: it holds a checkpoint of another "
                                  f"run, which this would replace; choose another name, or "
                                  f"delete it first if it is not needed")
        if (step := _training_step_in(target)) is not None:
            raise CheckpointError(f"refusing to write {out}: it holds a training checkpoint "
                                  f"(step {step:,}, with the state to resume from), which this "
                                  f"would replace; choose another name, e.g. {example}")
        _check_remade(out, target, paths, example)


def _check_remade(out, target: Path, paths, example: str) -> None:
    """An --out that holds an average or a half made from other files than `paths`: refused
    when some of them are gone from the folder of `paths` (rotation deletes old checkpoints),
    since it could not be made again; noted when they are all still there. One made from
    `paths` themselves is simply made again."""
    try:
        made = header(target)
    except Exception:                    # damaged or foreign: refused above
        return
    sources = [made["halved_from"]] if made.get("halved_from") else made.get("averaged_from")
    if not sources or sorted(sources) == sorted(Path(p).name for p in paths):
        return
    folder = Path(paths[0]).parent
    gone = [name for name in sources if not (folder / name).is_file()]
    what = (f"an average of {len(sources)} checkpoints ({sources[0]} ... {sources[-1]})"
            if len(sources) > 1 else f"a file made from {sources[0]}")
    if gone:
        more = f" and {len(gone) - 1} more are" if len(gone) > 1 else " is"
        example = example if Path(out).name != example else f"{Path(example).stem}_2.pt"
        raise CheckpointError(f"refusing to write {out}: it holds {what}, of which "
                              f"{gone[0]}{more} no longer in {folder}, so it could not be made "
                              f"again, and this would replace it; choose another name, e.g. "
                              f"{example}, or delete {out} first if it is not needed")
    say_error(f"note: {out} held {what}; this replaces it (the files it was made from are all "
              f"still in {folder}: it can be made again from them)")


def _training_step_in(path: Path) -> int | None:
    """The step of a training checkpoint (one that holds the state a run resumes from); None
    for an average or a halved file, or a file that cannot be read."""
    try:
        saved = header(path)
    except Exception:                    # damaged or foreign: refused or named elsewhere
        return None
    return saved.get("step") if saved.get("training") is not None else None


def foreign(path: Path) -> str | None:
    """What a zip archive holds when it is not one of this project's checkpoints, or None."""
    try:
        header(path)
    except NotOurs:
        return "holds what other code saved with torch.save"
    except Exception:
        return "holds a zip archive torch cannot read (NumPy's .npz is one)"
    return None


def _runs_of(path: Path) -> set[str]:
    """The runs a checkpoint comes from: its run id and, for an average, its sources' (none if
    it cannot be read)."""
    try:
        saved = header(path)
        return {saved.get("run_id"), *saved.get("averaged_runs", [])} - {None}
    except Exception:                    # damaged or foreign: no run this command reads
        return set()


def _verify_command(paths) -> int:
    """Verify each file, or each checkpoint of each run folder; the number that failed."""
    failed = 0
    for given in map(Path, paths):
        found = (checkpoints(given) + sorted(set(given.glob("*.pt")) - set(checkpoints(given)))
                 if given.is_dir() else [given])
        if not found:
            failed += 1
            say_error(f"error: {given} holds no checkpoints")
        for file in found:
            try:
                verify(file)
                if not given.is_dir() and step_in_name(file) is not None and (
                        wrong := misnamed(file, file.parent)):
                    raise CheckpointError(wrong)      # a folder's are checked below, together
                print(f"{file}: intact")
            except CheckpointError as e:
                failed += 1
                say_error(f"error: {e}")
        if given.is_dir() and found:
            try:
                check_one_run(given)
            except CheckpointError as e:
                failed += 1
                say_error(f"error: {e}")
    return failed


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m annotated.checkpoint",
                            description="checkpoint tools")
    commands = parser.add_subparsers(dest="command", required=True)
    avg = commands.add_parser("average", help="average several checkpoints (§6.1)")
    avg.add_argument("--out", type=out_file, required=True,
                     help="file to write the averaged checkpoint to: not one of the inputs, "
                          "not named like a training checkpoint (ckpt_*.pt), not an earlier "
                          "average whose checkpoints rotation has deleted")
    avg.add_argument("--last", type=number(at_least(1)), metavar="N",
                     help="average the newest N checkpoints of the one RUN_DIR given")
    avg.add_argument("--allow-different-runs", action="store_true",
                     help="average checkpoints of different runs of the same model (e.g. other "
                          "seeds): a 'model soup', a known technique, done on purpose; the "
                          "output records every source's file name and run id. Without it, "
                          "checkpoints of different runs are refused. Different model shapes, "
                          "datasets or tokenizers are always refused")
    avg.add_argument("paths", type=path, nargs="+", metavar="CKPT|RUN_DIR")
    hlf = commands.add_parser("half", help="the model in float16, without training state")
    hlf.add_argument("--out", type=out_file, required=True,
                     help="file to write: not the input, not ckpt_*.pt")
    hlf.add_argument("path", type=path, metavar="CKPT")
    for name in ("beam_size", "alpha", "max_extra"):
        hlf.add_argument(f"--{name.replace('_', '-')}", type=option(name), dest=name,
                         help=f"the file's default {name} for translating (default: the "
                              f"source's)")
    ver = commands.add_parser("verify", help="check checkpoints against their sha256 seals")
    ver.add_argument("paths", type=path, nargs="+", metavar="CKPT|RUN_DIR",
                     help="checkpoint files, or run folders (all their checkpoints)")
    args = parser.parse_args(argv)
    if args.command == "average" and args.last is not None and len(args.paths) != 1:
        parser.error("--last N takes exactly one run folder")
    return args


def save_whole(checkpoint: dict, out) -> None:
    """atomic_save, which finishes a file it has begun before a stop takes effect: the stop's
    one line then says that `out` was written."""
    before = _stamp(out)
    try:
        atomic_save(checkpoint, out)
    except KeyboardInterrupt as stop:        # Ctrl-C, or SIGTERM/SIGHUP (Stopped)
        if _stamp(out) != before:
            stop.add_note(f"{out} was written whole before stopping")
        raise


def _stamp(file) -> tuple | None:
    """What tells a file replaced since: its inode and time of change (None if none)."""
    try:
        found = os.stat(file)
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


@command
def main(argv=None):
    args = parse_args(argv)
    if args.command == "verify":
        if _verify_command(args.paths):
            raise SystemExit(1)                  # each failure has had its line
        return
    if args.command == "half":
        with folder_claimed(args.out, say_error):   # checked and written by one at a time
            _check_out(args.out, [args.path], "model_fp16.pt")
            decoding = {k: getattr(args, k) for k in ("beam_size", "alpha", "max_extra")
                        if getattr(args, k) is not None}
            save_whole(half(args.path, **decoding), args.out)
        print(f"{args.path} -> {args.out}: float16 weights, no training state "
              f"({Path(args.out).stat().st_size / 2**20:.1f} MiB)")
        return
    paths = _average_inputs(args)
    with folder_claimed(args.out, say_error):
        _check_out(args.out, paths, "average.pt")
        save_whole(average(paths, args.allow_different_runs), args.out)
    one_folder = len({Path(p).resolve().parent for p in paths}) == 1
    print(f"averaged {len(paths)} checkpoint{'s' if len(paths) > 1 else ''} "
          f"({', '.join(Path(p).name if one_folder else str(p) for p in paths)}) -> {args.out}")


if __name__ == "__main__":
    main()
