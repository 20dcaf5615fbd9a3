"""Checkpoints: one self-contained file per save, written atomically and sealed, and averaging
(§6.1).

A checkpoint is a dict saved with torch.save and read back with `weights_only=True` (plain
containers, numbers, strings, bytes and tensors; no pickled code):

    format, version      "annotated-transformer checkpoint", FORMAT_VERSION
    run_id               a random id given at a run's first save and carried by all its later
                         checkpoints, so that averaging can tell one run from another
    config               the run's Config as a dict of its fields
    model                the model's state_dict (float32 weights; float16 in a file made by
                         `half`, which the model's float32 parameters take back on loading)
    tokenizer            {"kind": "bpe" | "copy", "bytes": tokenizer.to_bytes()}
    step                 optimizer steps taken
    training             what `--resume` needs: optimizer, scheduler and grad-scaler states, the
                         RNG states of every rank and the data position; None in an averaged file
    averaged_from        names of the files averaged into this one (averaged files only)
    averaged_runs        the run id of each of those files, in the same order (likewise)
    halved_from          the name of the float32 file a `half` file was made from

So `load_model(path)` rebuilds the model and its tokenizer from the file alone.

The seal: torch.load does not check the CRCs of the zip archive torch.save writes, so bytes
changed in the middle of a file (a failing disk, a bad copy) would load silently as wrong
weights. So every file ends with a seal: SEAL, the sha256 of all the bytes before it in hex, and
a newline (torch.load ignores bytes after the archive, so the file stays a torch file). Every
reader (`load`, hence --resume, translate, averaging and `load_model`) hashes the file first. A
changed byte before the seal changes the hash; a changed byte in the digest no longer matches;
a changed byte in SEAL, or a file cut short, leaves a version 2 file without a seal. All are
refused with a CheckpointError naming the file and the newest checkpoint of the same folder that
verifies, to use instead. Version 1 files (written before the seal) are still read, with a
warning that they could not be verified; they have no run id.

Atomic writes: the bytes go to a temporary file in the same folder, are flushed to disk
(fsync), and only then renamed over the final name with os.replace, which is atomic on POSIX.
A crash at any moment leaves either the old files or the complete new one, never half a file
under a checkpoint name; the orphaned temporary file is ignored (and removed by the next run,
annotated.data.files.remove_stale_temporaries).
Rotation keeps the newest `keep_last` checkpoints of the run, the newest one that verifies, and
any the trainer names (`rotate(run_dir, keep_last, keep=[path], run_id=...)`); a checkpoint of
another run is never deleted, and a folder holding two runs is refused (`check_one_run`).

`average` averages the weights of several checkpoints of one run; the paper decodes with the
average of the last 5 (base) or 20 (big) checkpoints, written at 10-minute intervals. `half`
stores a model's weights in float16 without its training state: half the size, for sharing (the
project ships one). The command `python -m annotated.checkpoint` (average, half, verify) is
annotated/checkpoint.py.
"""
import hashlib
import os
import random
import re
import secrets
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from annotated.data.files import atomic_open

FORMAT = "annotated-transformer checkpoint"
FORMAT_VERSION = 2                          # 2: sealed, with a run id; 1: neither
SEAL = b"\nannotated-transformer checkpoint sha256 "
SEAL_SIZE = len(SEAL) + 64 + 1              # SEAL, the hex digest, "\n"
NAME = re.compile(r"ckpt_(\d+)\.pt$")
TOKENIZER_CLASSES = {"bpe": "Tokenizer", "copy": "CopyTokenizer"}   # in annotated.tokenizer
# What makes two checkpoints' weights the same model: averaging refuses any difference here.
# Other fields may differ within one run (a resume may change train_steps) or between the runs
# of a model soup (seed, dropout, learning rate).
MODEL_FIELDS = ("N", "d_model", "d_ff", "h", "d_k", "d_v", "positional", "max_len", "dataset",
                "vocab_size")


class DeviceError(ValueError):
    """A device this machine does not have (e.g. --device cuda without a GPU)."""


class CheckpointError(ValueError):
    """A checkpoint file that is missing, damaged, unreadable, or of another format version."""


class _Damaged(CheckpointError):
    """A checkpoint whose bytes are not those written: load and verify add what to use instead."""


def checkpoint_name(step: int) -> str:
    return f"ckpt_{step:07d}.pt"


def step_in_name(path) -> int | None:
    """The step a checkpoint's file name says it holds; None for another name."""
    m = NAME.fullmatch(Path(path).name)
    return int(m.group(1)) if m else None


def checkpoints(run_dir) -> list[Path]:
    """The checkpoints of a run folder, oldest first (by step, from the file name)."""
    found = [(int(m.group(1)), p) for p in Path(run_dir).glob("ckpt_*.pt")
             if (m := NAME.fullmatch(p.name)) and p.is_file()]
    return [p for _, p in sorted(found)]


# ---------------------------------------------------------------------------- RNG states

def rng_state() -> dict:
    """Every random stream training may draw from, as plain data (python, numpy, torch, CUDA)."""
    np_state = np.random.get_state(legacy=False)
    return {
        "python": random.getstate(),
        "numpy": {"key": np_state["state"]["key"].tolist(), "pos": np_state["state"]["pos"],
                  "has_gauss": np_state["has_gauss"], "gauss": np_state["gauss"]},
        "torch": torch.get_rng_state(),
        # this process's GPU only: touching the others would open a context on each of them
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None,
    }


def set_rng_state(state: dict) -> None:
    """Undo `rng_state`: the streams continue exactly where they were saved."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state({"bit_generator": "MT19937",
                         "state": {"key": np.array(n["key"], dtype=np.uint32), "pos": n["pos"]},
                         "has_gauss": n["has_gauss"], "gauss": n["gauss"]})
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


# ---------------------------------------------------------------------------- writing

def _tokenizer_record(tokenizer) -> dict:
    kind = next((k for k, cls in TOKENIZER_CLASSES.items()
                 if type(tokenizer).__name__ == cls), None)
    if kind is None:
        raise TypeError(f"cannot store a tokenizer of type {type(tokenizer).__name__}; "
                        f"known: {', '.join(TOKENIZER_CLASSES.values())}")
    return {"kind": kind, "bytes": tokenizer.to_bytes()}


class _Sealer:
    """A file to hand torch.save: passes the bytes on to `f` and hashes them on the way (torch
    writes its archive front to back), and keeps the OSError a write raised, which torch would
    report as an obscure "unexpected pos" error."""

    def __init__(self, f):
        self.f, self.sha256, self.error = f, hashlib.sha256(), None

    def write(self, data):
        self.sha256.update(data)
        try:
            return self.f.write(data)
        except OSError as e:
            self.error = e
            raise

    def flush(self):
        self.f.flush()


def atomic_save(obj, path) -> None:
    """torch.save `obj` to `path`, sealed (see the module docstring), so that `path` is always
    either the old file or the new one."""
    with atomic_open(path) as f:      # temporary file, fsync, os.replace (annotated.tokenizer)
        sealer = _Sealer(f)
        try:
            torch.save(obj, sealer)
        except RuntimeError as e:
            if sealer.error is not None:       # e.g. a full disk: atomic_open says so
                raise sealer.error from e
            raise
        f.write(SEAL + sealer.sha256.hexdigest().encode() + b"\n")


def new_run_id() -> str:
    """A fresh run id: 16 random hex digits."""
    return secrets.token_hex(8)


def _run_id_of(path: Path) -> str | None:
    """The run id stored in a checkpoint, read memory-mapped (no weights are read)."""
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True).get("run_id")


def _run_id_or_none(path: Path) -> str | None:
    """_run_id_of, or None for a file that cannot be read (so rotation leaves it alone)."""
    try:
        return _run_id_of(path)
    except Exception:
        return None


def check_one_run(run_dir) -> None:
    """Refuse a run folder whose checkpoints come from more than one run (a checkpoint of
    another run copied in): continuing would mix the two runs, and rotation would delete the
    folder's own checkpoints for the other run's. Files that cannot be read are left to the
    checks that load them."""
    runs = {}
    for p in checkpoints(run_dir):
        try:
            runs.setdefault(_run_id_of(p), []).append(p)
        except Exception:                          # damaged: load() says so, naming it
            continue
    if len(runs) > 1:
        described = "; ".join(
            f"run {run_id or '(version 1, no id)'}: "
            + (paths[0].name if len(paths) == 1 else
               f"{len(paths)} files, {paths[0].name} to {paths[-1].name}")
            for run_id, paths in runs.items())
        raise CheckpointError(f"{run_dir} holds checkpoints of {len(runs)} different runs "
                              f"({described}); a run folder holds one run: move the other "
                              f"run's checkpoints into a folder of their own, then start again")


def run_id_in(run_dir) -> str | None:
    """The run id of the newest readable checkpoint in run_dir (memory-mapped: no weights are
    read); None if there is none, or it is a version 1 file, which has none."""
    for p in reversed(checkpoints(run_dir)):
        try:
            return _run_id_of(p)
        except Exception:                      # unreadable: the next older one may do
            continue
    return None


def save(path, *, model, config, tokenizer, step: int, training: dict | None = None,
         averaged_from: list[str] | None = None, run_id: str | None = None) -> Path:
    """Write one checkpoint atomically. Refuses weights that are not finite, so a diverged run
    can never overwrite good checkpoints with NaN. `run_id`: new_run_id() at a run's first
    save, the resumed checkpoint's after; by default the run id of the newest checkpoint in
    path's folder, or a new one if there is none."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"not writing {path}: non-finite values in {', '.join(bad[:5])}")
    payload = {"format": FORMAT, "version": FORMAT_VERSION,
               "run_id": run_id or run_id_in(Path(path).parent) or new_run_id(),
               "config": asdict(config), "model": state, "tokenizer": _tokenizer_record(tokenizer),
               "step": step, "training": training}
    if averaged_from is not None:
        payload["averaged_from"] = averaged_from
    atomic_save(payload, path)
    return Path(path)


def rotate(run_dir, keep_last: int, keep=(), run_id: str | None = None) -> list[Path]:
    """Delete all but the newest `keep_last` checkpoints of a run; returns the deleted ones.
    With `run_id`, only that run's checkpoints are counted and deleted: a checkpoint of another
    run is never touched. Never deleted either: the files in `keep` (e.g. the trainer's last
    good checkpoint), and the newest checkpoint that verifies, even when damaged newer ones
    have pushed it out of the last keep_last."""
    found = checkpoints(run_dir)
    if run_id is not None:
        found = [p for p in found if _run_id_or_none(p) == run_id]
    old = found[:-keep_last] if keep_last > 0 else []
    spared = {Path(p).resolve() for p in keep}
    if old and (intact := newest_intact(run_dir)) is not None:
        spared.add(intact.resolve())
    old = [p for p in old if p.resolve() not in spared]
    deleted = []
    for p in old:
        try:
            p.unlink()
            deleted.append(p)
        except OSError as e:                   # an old file kept is no reason to stop training
            warnings.warn(f"could not delete the old checkpoint {p} ({e.strerror}); "
                          f"training goes on", stacklevel=2)
    return deleted


# ---------------------------------------------------------------------------- reading

def check_device(device) -> torch.device:
    """`device` as a torch.device, after checking that this machine has it (torch.load onto a
    missing GPU fails with an error that reads like a corrupt file)."""
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise DeviceError(f"unknown device {device!r} ({e}); use cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda", "mps") or (device.type == "cpu" and device.index):
        raise DeviceError(f"device {device}: a model runs on cpu, cuda, cuda:N or mps")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"device {device}: CUDA is not available on this machine; use cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise DeviceError(f"device {device}: this machine has {torch.cuda.device_count()} GPU(s)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceError(f"device {device}: this machine has no Apple GPU (mps); use cpu")
    return device


def _sealed(path: Path) -> bool:
    """True if the file ends with a seal that matches its bytes, False if it ends with none;
    a seal that does not match is an error."""
    if path.is_dir():
        found = checkpoints(path)
        hint = (f", such as {found[-1]}, its newest" if found else
                f"; it holds no ckpt_*.pt file")
        raise CheckpointError(f"{path} is a folder; give one checkpoint file{hint}")
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if not path.is_file():
        raise CheckpointError(f"{path} is not a file (a device or a pipe); give a checkpoint "
                              f"file")
    with open(path, "rb") as f:
        left = f.seek(0, os.SEEK_END) - SEAL_SIZE
        if left < 0:
            return False
        f.seek(left)
        seal = f.read()
        if not seal.startswith(SEAL):
            return False
        f.seek(0)
        digest = hashlib.sha256()
        while left > 0 and (block := f.read(min(left, 1 << 20))):
            digest.update(block)
            left -= len(block)
    if seal != SEAL + digest.hexdigest().encode() + b"\n":
        raise _Damaged(f"checkpoint {path} is corrupt or truncated (its bytes do not match the "
                       f"sha256 it was written with)")
    return True


def _read(path: Path, device) -> dict:
    """load() without the advice on what to use instead of a damaged file."""
    sealed = _sealed(path)
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:
        detail = str(e).split(". ")[0][:160]
        raise _Damaged(f"checkpoint {path} is corrupt or truncated "
                       f"({type(e).__name__}{': ' + detail if detail else ''})") from e
    version = _check_format(payload, path)
    if version == FORMAT_VERSION and not sealed:
        raise _Damaged(f"checkpoint {path} is corrupt or truncated (it lacks the sha256 seal "
                       f"every version {FORMAT_VERSION} checkpoint ends with)")
    if version == 1:
        warnings.warn(f"checkpoint {path} has format version 1, which carries no sha256: it is "
                      f"read unverified", stacklevel=3)
        payload = {"run_id": None, **payload}
    missing = {"config", "model", "tokenizer", "step", "training", "run_id"} - set(payload)
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(sorted(missing))}")
    return payload


def _check_format(payload, path: Path) -> int:
    """The format version of a loaded checkpoint, after checking that it is one."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not an annotated-transformer checkpoint")
    version = payload.get("version")
    if version not in (1, FORMAT_VERSION):
        raise CheckpointError(f"checkpoint {path} has format version {version}; this code reads "
                              f"versions 1 and {FORMAT_VERSION}")
    return version


def newest_intact(run_dir, besides=None) -> Path | None:
    """The newest checkpoint of run_dir (other than `besides`) that verifies; None if none."""
    besides = besides and Path(besides).resolve()
    for p in reversed(checkpoints(run_dir)):
        if p.resolve() != besides:
            try:
                _verify(p)
                return p
            except CheckpointError:
                continue
    return None


def _instead(error: CheckpointError, path: Path, resuming: bool = False) -> CheckpointError:
    """`error` about the damaged `path`, saying which checkpoint to use instead: for a run
    being resumed, what to move so that it goes on from that one."""
    other = newest_intact(path.parent, besides=path)
    if resuming:
        advice = (f"move it out of {path.parent}, and the run continues from {other.name}"
                  if other else f"no other checkpoint in {path.parent} verifies: start again")
    else:
        advice = (f"use {other} instead, the newest checkpoint in {path.parent} that verifies"
                  if other else f"no other checkpoint in {path.parent} verifies")
    return CheckpointError(f"{error}; {advice}")


def _verify(path: Path) -> bool:
    """verify() without the advice on what to use instead of a damaged file."""
    if path.is_file() and _sealed(path):
        _check_format(torch.load(path, map_location="cpu", weights_only=True, mmap=True), path)
        return True
    _read(path, "cpu")                 # no seal: a version 1 file loads, a damaged one fails
    return False


def verify(path) -> bool:
    """Raise CheckpointError unless `path` is an intact checkpoint. True if its seal proved it
    (reading no weights); False for a version 1 file, which has no seal and was loaded instead."""
    try:
        return _verify(Path(path))
    except _Damaged as e:
        raise _instead(e, Path(path)) from None


def load(path, map_location="cpu", resuming: bool = False) -> dict:
    """The checkpoint's dict, after checking its seal, its format and its version; `resuming`:
    the newest of a run folder, whose damage is reported with what to move."""
    device = check_device(map_location)
    try:
        return _read(Path(path), device)
    except _Damaged as e:
        raise _instead(e, Path(path), resuming) from None


def config_from(payload: dict, path="checkpoint"):
    """The Config stored in a checkpoint; fields this code does not know are an error."""
    from annotated.configs import Config, ConfigError
    try:
        return Config.from_dict(payload["config"])
    except ConfigError as e:
        raise CheckpointError(f"{path}: {e}") from None
    except (TypeError, AttributeError, ValueError) as e:
        raise CheckpointError(f"{path}: its config is not a dict of settings ({e})") from None


def tokenizer_from(payload: dict, path="checkpoint"):
    import annotated.data.tokenizer as tokenizers
    record = payload["tokenizer"]
    if not isinstance(record, dict) or record.get("kind") not in TOKENIZER_CLASSES:
        raise CheckpointError(f"{path}: unknown tokenizer record "
                              f"{record.get('kind') if isinstance(record, dict) else record!r}")
    try:
        return getattr(tokenizers, TOKENIZER_CLASSES[record["kind"]]).from_bytes(record["bytes"])
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        raise CheckpointError(f"{path}: its tokenizer cannot be read ({e})") from None


def load_model(path, map_location="cpu"):
    """(model in eval mode, Config, tokenizer) from one checkpoint file, e.g. for translation.
    Weights that do not fit the config and tokenizer, or that are not finite (a run that
    diverged, float16 that overflowed), are refused before a model is built."""
    payload = load(path, map_location)
    config = config_from(payload, path)
    tokenizer = tokenizer_from(payload, path)
    _check_weights(payload["model"], config, tokenizer.vocab_size, path)
    model = config.make_model(tokenizer.vocab_size).to(map_location)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError as e:
        raise CheckpointError(f"checkpoint {path} does not fit its own config: {e}") from e
    return model.eval(), config, tokenizer


def _check_weights(state: dict, config, vocab_size: int, path) -> None:
    """Refuse weights whose output layer does not have one row per token of the tokenizer, or
    that hold values that are not finite."""
    rows = state.get("generator.weight")
    if rows is None or tuple(rows.shape) != (vocab_size, config.d_model):
        raise CheckpointError(f"checkpoint {path} does not fit its own config: its output layer "
                              f"is {tuple(getattr(rows, 'shape', ()))}, its tokenizer and "
                              f"config need ({vocab_size:,}, {config.d_model})")
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"checkpoint {path} holds weights that are not finite "
                              f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}): it "
                              f"cannot translate; use a checkpoint from before the run diverged")


# ---------------------------------------------------------------------------- averaging

def _check_compatible(paths, payloads, allow_different_runs: bool) -> None:
    """Refuse to average checkpoints of different models (MODEL_FIELDS, weight shapes) or
    tokenizers, and, unless allow_different_runs, checkpoints of different runs."""
    first, config = payloads[0], payloads[0]["config"]
    for p, other in zip(paths[1:], payloads[1:]):
        differ = [f"{k} {config.get(k)} vs {other['config'].get(k)}" for k in MODEL_FIELDS
                  if other["config"].get(k) != config.get(k)]
        if differ:
            raise CheckpointError(f"{p} has a different config from {paths[0]} "
                                  f"({', '.join(differ)})")
        shapes = {k: tuple(v.shape) for k, v in other["model"].items()}
        if shapes != {k: tuple(v.shape) for k, v in first["model"].items()}:
            raise CheckpointError(f"{p} holds a different model from {paths[0]}")
        if other["tokenizer"] != first["tokenizer"]:
            raise CheckpointError(f"{p} has a different tokenizer from {paths[0]}")
    for p, other in zip(paths, payloads):
        inside = [q for q, o in zip(paths, payloads) if o is not other
                  and Path(q).name in other.get("averaged_from", ())
                  and o["run_id"] == other["run_id"]]
        if inside:
            raise CheckpointError(f"{p} is already an average of {inside[0]} (and "
                                  f"{len(other['averaged_from']) - 1} more): averaging both "
                                  f"would count {inside[0]} twice")
    if allow_different_runs:
        return
    for p, other in zip(paths, payloads):
        if other["run_id"] is None or other["run_id"] != first["run_id"]:
            what = ("carries no run id (format version 1), so its run cannot be checked"
                    if other["run_id"] is None else f"comes from another run than {paths[0]}")
            raise CheckpointError(f"{p} {what}; to average different runs on purpose (a model "
                                  f"soup), pass --allow-different-runs")


def average(paths, allow_different_runs: bool = False) -> dict:
    """The element-wise mean of the weights of several checkpoints of the same model (§6.1),
    computed in float64 and stored in the original dtype. Checkpoints of different runs are
    refused unless allow_different_runs; the result records every source's name and run."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    payloads = [load(p) for p in paths]
    _check_compatible(paths, payloads, allow_different_runs)

    def mean(k, v):
        if not v.is_floating_point():
            return payloads[-1]["model"][k]
        return (sum(p["model"][k].double() for p in payloads) / len(payloads)).to(v.dtype)

    runs = [p["run_id"] for p in payloads]
    one_run = len(set(runs)) == 1 and runs[0] is not None
    last = {k: v for k, v in payloads[-1].items() if k != "halved_from"}
    return {**last, "version": FORMAT_VERSION, "training": None,
            "model": _per_storage(payloads[0]["model"], mean),
            "run_id": runs[0] if one_run else new_run_id(),
            "averaged_from": [Path(p).name for p in paths], "averaged_runs": runs}


def _per_storage(state: dict, fn) -> dict:
    """{key: fn(key, tensor)}, computed once per storage: tied weights (one matrix serving as
    source and target embedding and output layer, §3.4), which share one storage in a loaded
    checkpoint, stay one tensor, so torch.save stores them once."""
    done, out = {}, {}
    for k, v in state.items():
        ident = (v.data_ptr(), v.shape, v.stride(), v.dtype)
        if ident not in done:
            done[ident] = fn(k, v)
        out[k] = done[ident]
    return out


def half(path) -> dict:
    """A checkpoint's model with its floating-point weights rounded to float16 and no training
    state: a file half the size to share. Loading casts the weights back to float32, so the
    model computes in float32 with weights that differ from the source by float16 rounding
    (a relative 2^-11 at most). A weight beyond float16's range (65,504) is refused: it would
    become infinite."""
    payload = load(path)
    limit = torch.finfo(torch.float16).max
    for k, v in payload["model"].items():
        if v.is_floating_point() and v.numel() and v.abs().max() > limit:
            raise CheckpointError(f"{path}: {k} holds {v.abs().max().item():.4g}, beyond "
                                  f"float16's range ({limit:,.0f}); keep this model in float32")
    model = _per_storage(payload["model"], lambda k, v: v.half() if v.is_floating_point() else v)
    return {**payload, "model": model, "training": None, "halved_from": Path(path).name}
