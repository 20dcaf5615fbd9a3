"""`python -m annotated.train`: training (§5), one command from a laptop CPU to 8 GPUs.

    python -m annotated.train --config sample                     # no data needed
    python -m annotated.train --config multi30k --data-dir DIR --run-dir runs/multi30k
    python -m annotated.train --run-dir runs/multi30k --resume    # continue exactly
    torchrun --nproc_per_node=8 -m annotated.train --config base --data-dir DIR amp=bf16

`key=value` arguments override fields of the preset (annotated.configs), parsed by the field's
type and validated before anything is built. torchrun sets RANK / WORLD_SIZE / LOCAL_RANK; the
same command then runs DistributedDataParallel over NCCL (GPUs) or gloo (CPUs). --max-steps K
stops at global step K (default train_steps), --max-minutes M after M minutes of training.

A run folder (--run-dir, default runs/CONFIG) holds one run. Giving the same command again continues
that run (or has nothing to do if it finished); --resume continues it whatever --config says,
and its key=value may change only what does not change the model or its data (the schedule,
logging, checkpoints, decoding, precision): the rest is refused, naming the keys. The code is in
annotated.training (the loop, one step, checkpoints, torchrun).
"""
from dataclasses import fields
from pathlib import Path

from annotated.base.cli import (ArgumentParser, command, number, output_optional, path, positive,
                                show)
from annotated.base.errors import CheckpointError, ConfigError, RunDirError
from annotated.base.settings import at_least, between
from annotated.base.threads import SMALL_MODEL, use_threads
from annotated.configs import PRESETS, RESUMABLE, Config, apply_overrides, get
from annotated.optim import cooldown
from annotated.store import checkpoint_file
from annotated.training.loop import train
from annotated.training.run_dir import check_one_run, in_use_by


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m annotated.train",
                       description=__doc__.split("\n")[0].split(": ", 1)[1])
    p.add_argument("--config", help="preset: " + ", ".join(PRESETS))
    p.add_argument("--run-dir", type=path, help="the run folder: checkpoints and metrics.jsonl "
                                                "(default runs/CONFIG)")
    p.add_argument("--data-dir", type=path, help="folder with the corpora (default: env "
                   "ANNOTATED_DATA_DIR, or the one the run was started with)")
    p.add_argument("--cache-dir", type=path, help="tokenizer and download cache (default: env "
                   "ANNOTATED_CACHE_DIR or ~/.cache/annotated-transformer)")
    p.add_argument("--max-steps", type=number(at_least(1)),
                   help="stop after this global step (default train_steps)")
    p.add_argument("--max-minutes", type=positive, help="also stop after this many minutes")
    p.add_argument("--threads", type=number(between(1, 1024, "threads")),
                   help=f"CPU threads (default: 1 for models under {SMALL_MODEL // 10**6} million "
                        f"parameters, else one per core)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    p.add_argument("--deterministic", action="store_true",
                   help="deterministic GPU kernels, so that a resumed GPU run continues exactly "
                        "as an uninterrupted one (a CPU run always does)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="override config fields")
    args = p.parse_intermixed_args(argv)
    if args.config is None and args.run_dir is None:
        p.error("give --config NAME (or --run-dir RUN_DIR --resume to continue a run)")
    if args.config is None and not args.resume:
        p.error(f"--run-dir {args.run_dir} without --config: give --config NAME to start a "
                f"run there, or --resume to continue the run it holds")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    with output_optional("training"):     # its lines tell of progress: a reader may go away
        out = Path(args.run_dir or Path("runs") / args.config)
        config, resumed = run_config(args, out)
        note_head_widths(config, args.overrides)
        use_threads(config.parameter_count(), args.threads)
        train(config, out, data_dir=args.data_dir, cache_dir=args.cache_dir,
              max_steps=args.max_steps, max_minutes=args.max_minutes, resumed=resumed,
              deterministic=args.deterministic)


def note_head_widths(config, overrides: list[str]) -> None:
    """A note when h was set but d_k, d_v kept, so that h * d_k is no longer d_model: the
    paper's d_k = d_v = d_model / h (§3.2.2) keeps the cost of attention constant; Table 3's
    rows B change d_k alone on purpose."""
    keys = {o.split("=")[0].strip() for o in overrides}
    if "h" in keys and not keys & {"d_k", "d_v"} and config.h * config.d_k != config.d_model:
        show(f"note: h={config.h} keeps d_k={config.d_k}, d_v={config.d_v}: h x d_k = "
              f"{config.h * config.d_k}, not d_model={config.d_model} as in the paper (§3.2.2); "
              f"set d_k and d_v too to keep them equal")


def renamed_advice(out: Path) -> str:
    """What to do when `out` holds no ckpt_*.pt: rename a training checkpoint kept under
    another name (best.pt) back to the name of its step, or start a run there."""
    for other in sorted(out.glob("*.pt")) if out.is_dir() else ():
        try:
            saved = checkpoint_file.header(other)
        except CheckpointError:
            continue                              # not a checkpoint: not one to name
        if isinstance(saved, dict) and saved.get("training") is not None:
            return (f"it holds {other.name}, a training checkpoint of step {saved['step']:,} "
                    f"under another name: rename it "
                    f"{checkpoint_file.checkpoint_name(saved['step'])} to continue from it")
    return "run without --resume to start a run there"


def run_config(args, out: Path):
    """(config, checkpoint to continue or None) for a run in `out`. A folder holding checkpoints
    is continued with --resume, or when --config and the overrides ask for the very config it
    was started with; anything else is refused, so two runs never mix in one folder."""
    found = checkpoint_file.checkpoints(out)
    if not found:
        if args.resume and (pid := in_use_by(out)):
            raise RunDirError(f"{out} is in use by another training process (pid {pid}), which "
                              f"has saved no checkpoint yet; wait for it to end or choose "
                              f"another --run-dir")
        if args.resume and out.exists() and not out.is_dir():
            raise RunDirError(f"--run-dir {out} is a file, not a run folder; give the folder "
                              f"that holds the run's checkpoints")
        if args.resume:
            raise ConfigError(f"--resume: no checkpoint in {out} to continue; "
                              + renamed_advice(out))
        return apply_overrides(get(args.config), args.overrides), None
    check_one_run(out)
    resumed = checkpoint_file.load(found[-1], purpose="resume")
    resumed["file"] = found[-1]              # where this process starts from (LossWatch)
    saved = checkpoint_file.config_from(resumed, found[-1])
    if resumed["training"] is None:
        kind = "float16 weights (a halved file)" if "halved_from" in resumed else (
            "an average" if "averaged_from" in resumed else "no training state")
        raise ConfigError(f"{found[-1]} holds {kind}, not a training checkpoint to continue; "
                          f"move it out of {out} (or rename it, e.g. average.pt), or choose "
                          f"another --run-dir")
    if not args.resume:
        changed = _differences(saved, apply_overrides(get(args.config), args.overrides))
        if changed and all(c.split(" ")[0] in RESUMABLE for c in changed):
            raise ConfigError(f"{out} holds a run that differs from this command in "
                              f"{', '.join(changed)}: settings a --resume may change (an "
                              f"earlier --resume may have changed them); pass --resume to "
                              f"continue it as it is, or --resume KEY=VALUE to change them")
        if changed:
            raise ConfigError(f"{out} already holds a run of another config: "
                              f"{', '.join(changed)}; pass --resume to continue that run or "
                              f"choose another --run-dir")
        return saved, resumed
    if args.config:
        show(f"--resume: using the run's saved config; --config {args.config} is not read")
    config = apply_overrides(saved, args.overrides)
    changed = _differences(saved, config)
    refused = [c for c in changed if c.split(" ")[0] not in RESUMABLE]
    if refused:
        raise ConfigError(f"--resume cannot change {', '.join(refused)}: it would change the "
                          f"model or its data; start a new run with another --run-dir")
    if changed:
        show(f"--resume: changing {', '.join(changed)}")
        _note_rewarming(saved, config, resumed["step"])
        if resumed["step"] >= (args.max_steps or config.train_steps):   # no checkpoint to keep
            show(f"note: the run is at step {resumed['step']:,} and no step will run, so no "
                  f"checkpoint keeps these changes: give them again with the --resume that "
                  f"trains further (--max-steps, or train_steps)")
    return config, resumed


def _note_rewarming(saved: Config, config: Config, step: int) -> None:
    """A note when a resume lifts a learning rate that the saved run's cool-down had lowered
    (annotated.optim.cooldown): the cooled-down weights are shaken, and keep_last rotates the
    checkpoints that hold them out of the folder."""
    before = cooldown(step + 1, saved.train_steps, saved.cooldown_steps)
    after = cooldown(step + 1, config.train_steps, config.cooldown_steps)
    if before < 1 and after > before:
        show(f"note: at step {step:,} the run's cool-down had brought the learning rate to "
              f"{before:.2f} of its schedule; these settings lift it to {after:.2f}, so the loss "
              f"rises before it falls again, and the cooled-down checkpoints will be rotated "
              f"out (keep_last={config.keep_last}); copy them out of the run folder first to "
              f"keep them")


def _differences(saved: Config, requested: Config) -> list[str]:
    return [f"{f.name} ({getattr(saved, f.name)!r} there, {getattr(requested, f.name)!r} here)"
            for f in fields(Config) if getattr(saved, f.name) != getattr(requested, f.name)]


if __name__ == "__main__":
    main()
