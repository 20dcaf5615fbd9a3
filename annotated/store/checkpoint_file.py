"""The checkpoint file: one self-contained file per save, written atomically and sealed; loading
a model from it; averaging (§6.1) and halving. Training, translation, the commands, the results
scripts and the chapters all read and write checkpoints through this module.

A checkpoint is a dict saved with torch.save and read back with `weights_only=True` (plain
containers, numbers, strings, bytes and tensors; no pickled code):

    format, version      "annotated-transformer checkpoint", FORMAT_VERSION
    run_id               a random id given at a run's first save and carried by all its later
                         checkpoints, so that averaging can tell one run from another
    config               the run's Config as a dict of its fields
    model                the model's state_dict (float32 weights; float16 in a file made by
                         `half`, which the model's float32 parameters take back on loading)
    tokenizer            {"kind": "bpe" | "copy", "bytes": tokenizer.to_bytes()}; the bytes alone
                         restore it (Tokenizer.from_bytes)
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
a changed byte in SEAL, or a file cut short, leaves a file without a seal. All are refused with
a CheckpointError naming the file and the newest checkpoint of the same folder that verifies,
to use instead.

Atomic writes: the bytes go to a temporary file in the same folder, are flushed to disk
(fsync), and only then renamed over the final name with os.replace, which is atomic on POSIX.
A crash at any moment leaves either the old files or the complete new one, never half a file
under a checkpoint name; the orphaned temporary file is ignored (and removed by the next run,
annotated.base.files.remove_stale_temporaries).
A run folder's checkpoints are named ckpt_NNNNNNN.pt by their step (`checkpoint_name`); which
to keep, and which run a folder holds, is the training's business (annotated.training.run_dir).

`average` averages the weights of several checkpoints of one run; the paper decodes with the
average of the last 5 (base) or 20 (big) checkpoints, written at 10-minute intervals. `half`
stores a model's weights in float16 without its training state: half the size, for sharing (the
project ships one). The command `python -m annotated.checkpoint` (average, half, verify) is
annotated/checkpoint.py.
"""
import hashlib
import os
import re
import secrets
import zipfile
from dataclasses import asdict
from pathlib import Path

import torch

from annotated.base.errors import CheckpointError, ConfigError, DeviceError
from annotated.base.files import atomic_open, compressed_by, links_loop
from annotated.base.settings import shown
from annotated.base.signals import signals_held
from annotated.configs import COPY_ONLY, SHAPE, TEXT_ONLY, Config
from annotated.data.tokenizer import Tokenizer
from annotated.model import EncoderDecoder

FORMAT = "annotated-transformer checkpoint"
FORMAT_VERSION = 2                          # sealed, with a run id
SEAL = b"\nannotated-transformer checkpoint sha256 "
SEAL_SIZE = len(SEAL) + 64 + 1              # SEAL, the hex digest, "\n"
NAME = re.compile(r"ckpt_(\d+)\.pt$")


class _Damaged(CheckpointError):
    """A checkpoint whose bytes are not those written: load and verify add what to use instead."""


class NotOurs(CheckpointError):
    """A torch file that is whole but holds what other code saved, not a checkpoint."""


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


# ---------------------------------------------------------------------------- writing

def _tokenizer_record(tokenizer) -> dict:
    """The tokenizer in its own format (its bytes say what it is), with its kind for readers."""
    return {"kind": tokenizer.kind, "bytes": tokenizer.to_bytes()}


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
    either the old file or the new one. Ctrl-C and SIGTERM wait until the file is written: an
    exception raised inside torch.save's writer, which is C++, aborts the process."""
    with signals_held(), atomic_open(path) as f:    # temporary file, fsync, os.replace
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


def header(path: Path) -> dict:
    """A checkpoint's dict, memory-mapped: its run id, step and config without reading the
    weights. A file torch cannot read, or one that holds anything but a checkpoint (a list, a
    model's weights alone), is one CheckpointError saying what it holds."""
    _check_a_file(Path(path))
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except OSError:
        raise
    except Exception as e:               # torch raises whatever its reader met
        if found := not_a_checkpoint(Path(path)):
            raise CheckpointError(f"{path} is not a checkpoint: it {found}, not the zip "
                                  f"archive torch.save writes; give a checkpoint that "
                                  f"annotated.train or annotated.checkpoint wrote") from None
        raise CheckpointError(unreadable(path, e)) from None
    _check_ours(payload, path)
    return payload


def run_id_of(path: Path) -> str | None:
    """The run id stored in a checkpoint (no weights are read)."""
    return header(path).get("run_id")


def run_id_in(run_dir) -> str | None:
    """The run id of the newest readable checkpoint in run_dir (memory-mapped: no weights are
    read); None if there is none."""
    for p in reversed(checkpoints(run_dir)):
        try:
            return run_id_of(p)
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


# ---------------------------------------------------------------------------- reading

def check_device(device) -> torch.device:
    """`device` as a torch.device, after checking that this machine has it (torch.load onto a
    missing GPU fails with an error that reads like a corrupt file)."""
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):         # torch's message lists twenty device types
        raise DeviceError(f"unknown device {device!r}; use cpu, cuda, cuda:N or mps") from None
    if device.type not in ("cpu", "cuda", "mps") or (device.type == "cpu" and device.index):
        raise DeviceError(f"device {device}: a model runs on cpu, cuda, cuda:N or mps")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError(f"device {device}: CUDA is not available on this machine; use cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise DeviceError(f"device {device}: this machine has {torch.cuda.device_count()} GPU(s)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceError(f"device {device}: this machine has no Apple GPU (mps); use cpu")
    return device


def _check_a_file(path: Path) -> None:
    """Refuse a folder, a missing path, a device or a pipe given as a checkpoint."""
    if path.is_dir():
        found = checkpoints(path)
        hint = (f", such as {found[-1]}, its newest" if found else
                "; it holds no ckpt_*.pt file")
        raise CheckpointError(f"{path} is a folder; give one checkpoint file{hint}")
    if not path.exists():
        raise CheckpointError(missing(path))
    if not path.is_file():
        raise CheckpointError(f"{path} is not a file (a device or a pipe); give a checkpoint "
                              f"file")


def _sealed(path: Path) -> bool:
    """True if the file ends with a seal that matches its bytes, False if it ends with none;
    a seal that does not match is an error."""
    _check_a_file(path)
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
                       f"sha256 it was written with); {DAMAGED}")
    return True


def missing(path: Path) -> str:
    """The message for a checkpoint that is not there, with what its folder holds instead: a
    training run deletes its older checkpoints as it saves new ones."""
    if not path.parent.is_dir():
        return f"checkpoint {path} does not exist: there is no folder {path.parent}"
    if links_loop(path):
        return (f"{path} is a link in a loop of links, which leads to no file: give the "
                f"checkpoint file itself")
    if path.is_symlink():
        return (f"{path} is a link to {os.readlink(path)}, which does not exist: give the "
                f"checkpoint file itself")
    found = checkpoints(path.parent)
    if not found:
        return (f"there is no file or folder {path} (in {path.parent.resolve()})" if
                path.suffix != ".pt" else f"checkpoint {path} does not exist, and its folder "
                f"{path.parent.resolve()} holds no ckpt_*.pt file")
    held = found[0].name if len(found) == 1 else f"{found[0].name} to {found[-1].name}"
    return (f"checkpoint {path} does not exist; its folder holds {held} (a run keeps only its "
            f"newest keep_last checkpoints, deleting older ones as it saves): give one of "
            f"those, such as the newest, {found[-1]}")


#: What to do about a checkpoint whose bytes are not those written.
DAMAGED = ("copy it again from where it came (a full disk or an unfinished copy cuts a file "
           "short), or give another checkpoint")


def unreadable(path: Path, error: Exception) -> str:
    """The message for a checkpoint torch's reader failed on, with the first words of why: a
    whole file of Python objects (torch.save of a model) is whole, just not ours."""
    if str(error).startswith("Weights only load failed"):
        return (f"{path} is not an annotated-transformer checkpoint (it holds objects that are "
                f"not plain data, such as a whole model saved with torch.save); {NOT_OURS}")
    detail = str(error).split(". ")[0][:160]
    return (f"checkpoint {path} is corrupt or truncated (torch cannot read it: "
            f"{detail or type(error).__name__}); {DAMAGED}")


def _read(path: Path, device) -> dict:
    """load() without the advice on what to use instead of a damaged file."""
    sealed = _sealed(path)
    if not sealed and (found := not_a_checkpoint(path)):
        raise _Damaged(f"checkpoint {path} is corrupt or truncated, or not a checkpoint: it "
                       f"{found}, not the zip archive torch.save writes; give a checkpoint "
                       f"that annotated.train or annotated.checkpoint wrote")
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:
        raise _Damaged(unreadable(path, e)) from e
    _check_format(payload, path)
    if not sealed:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 2 * SEAL_SIZE))
            resaved = SEAL not in f.read()      # whole to torch, and no seal begun at its end
        raise _Damaged(f"checkpoint {path} is corrupt or truncated (it lacks the sha256 seal "
                       f"every checkpoint ends with)" + (
                           "; or it was saved again by other code (torch.save writes no seal): "
                           "use the file annotated.train or annotated.checkpoint wrote, or "
                           "save it with annotated.store.checkpoint_file.atomic_save"
                           if resaved else f"; {DAMAGED}"))
    missing = {"config", "model", "tokenizer", "step", "training", "run_id"} - set(payload)
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(sorted(missing))}, which "
                              f"every checkpoint of annotated.train holds (it was written or "
                              f"changed by other code); use another checkpoint of its run")
    return payload


def not_a_checkpoint(path: Path) -> str | None:
    """What the file `path` holds instead of torch.save's zip archive (empty, text, other
    bytes), or None if it begins as one."""
    with open(path, "rb") as f:
        head = f.read(200)
    if head.startswith(b"PK\x03\x04"):
        return other_zip(path)
    if not head:
        return "is empty"
    if tool := compressed_by(head):
        return f"is {tool}-compressed (decompress it first)"
    try:
        text = head.decode()
    except UnicodeDecodeError as e:                # text whose last character was cut here
        if e.start < len(head) - 3:
            return f"begins with the bytes {head[:8].hex(' ')}"
        text = head[:e.start].decode()
    line = text.splitlines()[0] if text.strip() and "\x00" not in text else ""
    return f"holds text ({shown(line, 40)})" if line else f"begins with {shown(head[:8])}"


def other_zip(path: Path) -> str | None:
    """What a zip archive holds when it is not torch.save's (whose one folder holds data.pkl),
    or None: a zip whose table of contents is damaged is for torch's reader to find damaged."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if any(name.endswith("/data.pkl") for name in names):
        return None
    return (f"is a zip archive of other files ({', '.join(map(shown, names[:3])) or 'none'}"
            f"{', ...' if len(names) > 3 else ''})")


#: What to give instead of a torch file that another program wrote.
NOT_OURS = ("give a checkpoint that `python -m annotated.train` wrote (ckpt_*.pt in its run "
            "folder), or one made from those by `python -m annotated.checkpoint average` or "
            "`half`")


def held_instead(payload) -> str:
    """What a torch file holds that is not a checkpoint, in a few words: a model's weights
    alone (a state_dict: names to tensors), a dict named by a few of its keys, or a type."""
    if not isinstance(payload, dict) or not payload:
        return f"a {type(payload).__name__}"
    if all(isinstance(v, torch.Tensor) for v in payload.values()):
        return (f"{len(payload):,} tensor{'s' * (len(payload) != 1)} alone, such as "
                f"{shown(str(next(iter(payload))), 60)} (a model's weights, without the "
                f"settings and tokenizer a checkpoint carries)")
    return (f"a dict of {', '.join(shown(str(k), 30) for k in list(payload)[:4])}"
            + (", ..." if len(payload) > 4 else ""))


def _check_ours(payload, path: Path) -> None:
    """Refuse what torch loaded from `path` unless it is a dict with this project's format."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        fix = "" if step_in_name(path) is not None else f"; {NOT_OURS}"   # _instead: what to do
        raise NotOurs(f"{path} is not an annotated-transformer checkpoint: it holds "
                      f"{held_instead(payload)}, and no format record{fix}")


def _check_format(payload, path: Path) -> int:
    """The format version of a loaded checkpoint, after checking that it is one."""
    _check_ours(payload, path)
    version = payload.get("version")
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        raise CheckpointError(f"checkpoint {path} has format version {version}; this code reads "
                              f"version {FORMAT_VERSION}: " + (
                                  "a newer version of this project wrote it, so update this one "
                                  "(git pull)" if newer else "read it with the version of this "
                                  "project that wrote it, or train the model again"))
    return version


def newest_intact(run_dir, besides=None) -> Path | None:
    """The newest checkpoint of run_dir (other than `besides`) that verifies; None if none."""
    besides = besides and Path(besides).resolve()
    return next((p for p in reversed(checkpoints(run_dir))
                 if p.resolve() != besides and _verifies(p)), None)


def _verifies(path: Path) -> bool:
    try:
        _verify(path)
        return True
    except CheckpointError:
        return False


def _instead(error: CheckpointError, path: Path, purpose: str = "use") -> CheckpointError:
    """`error` about the damaged `path`, saying what to do instead, by `purpose`: "use" (one
    checkpoint: which to use instead), "resume" (the newest of a run being resumed: what to
    move so that it goes on from another) or "average" (one of several: which to name)."""
    if step_in_name(path) is None:            # not a run's checkpoint: no advice about others
        return CheckpointError(str(error))
    if purpose == "average":
        intact = [p.name for p in checkpoints(path.parent) if p != path and _verifies(p)]
        advice = (f"leave it out of the average and name the checkpoints to average; those of "
                  f"{path.parent} that verify: {', '.join(intact)}" if intact else
                  f"no other checkpoint in {path.parent} verifies")
        return CheckpointError(f"{error}; {advice}")
    other = newest_intact(path.parent, besides=path)
    if purpose == "resume":
        advice = (f"move it out of {path.parent}, and the run continues from {other.name}"
                  if other else f"no other checkpoint in {path.parent} verifies: move it out "
                  f"of that folder to start the run again there, or choose another --run-dir")
    else:
        advice = (f"use {other} instead, the newest checkpoint in {path.parent} that verifies"
                  if other else f"no other checkpoint in {path.parent} verifies")
    return CheckpointError(f"{error}; {advice}")


def _verify(path: Path) -> None:
    """verify() without the advice on what to use instead of a damaged file."""
    if not _sealed(path):
        _read(path, "cpu")             # no seal: says whether it is cut short or not ours
    _check_format(header(path), path)


def verify(path) -> None:
    """Raise CheckpointError unless `path` is an intact checkpoint: its seal proves its bytes
    and a memory-mapped look its format (no weights are read)."""
    try:
        _verify(Path(path))
    except (_Damaged, NotOurs) as e:
        raise _instead(e, Path(path)) from None


def load(path, map_location="cpu", purpose: str = "use") -> dict:
    """The checkpoint's dict, after checking its seal, its format and its version; damage is
    reported with what to do instead, for `purpose` (_instead)."""
    device = check_device(map_location)
    try:
        return _read(Path(path), device)
    except (_Damaged, NotOurs) as e:
        raise _instead(e, Path(path), purpose) from None


def config_from(payload: dict, path="checkpoint"):
    """The Config stored in a checkpoint; fields this code does not know are an error."""
    try:
        return Config.from_dict(payload["config"])
    except ConfigError as e:
        raise CheckpointError(f"{path}: {e}") from None
    except (TypeError, AttributeError, ValueError) as e:
        raise CheckpointError(f"{path}: its config is not a dict of settings ({e})") from None


#: What to do about a checkpoint whose parts do not fit together though its bytes are whole.
CHANGED = "it was changed after training saved it; use another checkpoint of its run"


def tokenizer_from(payload: dict, path="checkpoint"):
    """The tokenizer a checkpoint carries, restored from its own bytes."""
    record = payload["tokenizer"]
    try:
        return Tokenizer.from_bytes(record["bytes"])
    except (ValueError, TypeError, KeyError) as e:
        raise CheckpointError(f"{path}: its tokenizer cannot be read ({e}); {CHANGED}") \
            from None


def load_model(path, map_location="cpu"):
    """(model in eval mode, Config, tokenizer) from one checkpoint file, e.g. for translation.
    Weights that do not fit the config and tokenizer, or that are not finite (a run that
    diverged, float16 that overflowed), are refused before a model is built."""
    payload = load(path, map_location)
    config = config_from(payload, path)
    tokenizer = tokenizer_from(payload, path)
    _check_weights(payload["model"], config, tokenizer.vocab_size, path)
    model = EncoderDecoder(config, tokenizer.vocab_size).to(map_location)
    try:
        found = model.load_state_dict(payload["model"], strict=False)
    except RuntimeError as e:                      # a weight of another shape
        raise CheckpointError(f"checkpoint {path} does not fit its own config: "
                              f"{' '.join(str(e).split())[:300]}; {CHANGED}") from None
    if found.missing_keys or found.unexpected_keys:
        named = [f"{len(keys):,} weight(s) {what} ({', '.join(keys[:3])}"
                 f"{', ...' if len(keys) > 3 else ''})" for what, keys in (
                     ("missing", found.missing_keys), ("the model has no place for",
                                                       found.unexpected_keys)) if keys]
        raise CheckpointError(f"checkpoint {path} does not fit its own config: "
                              f"{'; '.join(named)}; {CHANGED}")
    return model.eval(), config, tokenizer


def _check_weights(state: dict, config, vocab_size: int, path) -> None:
    """Refuse weights whose output layer does not have one row per token of the tokenizer, or
    that hold values that are not finite."""
    rows = state.get("generator.weight")
    if rows is None or tuple(rows.shape) != (vocab_size, config.d_model):
        raise CheckpointError(f"checkpoint {path} does not fit its own config: its output layer "
                              f"is {tuple(getattr(rows, 'shape', ()))}, its tokenizer and "
                              f"config need ({vocab_size:,}, {config.d_model})")
    refuse_not_finite(state, path, "translate")


def refuse_not_finite(state: dict, path, purpose: str) -> None:
    """Refuse weights that hold inf or NaN (a run that diverged, float16 that overflowed):
    nothing made from them can `purpose` (translate, be averaged, be shared)."""
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"checkpoint {path} holds weights that are not finite "
                              f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}): it "
                              f"cannot {purpose}; use a checkpoint from before the run diverged")


# ---------------------------------------------------------------------------- averaging

def _check_compatible(paths, payloads, allow_different_runs: bool) -> None:
    """Refuse to average checkpoints of different models (configs.SHAPE, weight shapes) or
    tokenizers, and, unless allow_different_runs, checkpoints of different runs."""
    first, config = payloads[0], payloads[0]["config"]
    for p, other in zip(paths[1:], payloads[1:]):
        differ = [f"{k} {other['config'].get(k)} vs {config.get(k)}" for k in SHAPE
                  if other["config"].get(k) != config.get(k)]
        same_model = "; only checkpoints of one model can be averaged: leave one of them out"
        if differ:
            raise CheckpointError(f"{p} has a different config from {paths[0]} "
                                  f"({', '.join(differ)}){same_model}")
        data = [f"{k} {other['config'].get(k)} vs {config.get(k)}"
                for k in ("dataset", *COPY_ONLY, *TEXT_ONLY)
                if other["config"].get(k) != config.get(k)]
        if data:
            raise CheckpointError(f"{p} was trained on other data than {paths[0]} "
                                  f"({', '.join(data)}); only checkpoints of models trained on "
                                  f"the same data can be averaged: leave one of them out")
        shapes = {k: tuple(v.shape) for k, v in other["model"].items()}
        if shapes != {k: tuple(v.shape) for k, v in first["model"].items()}:
            raise CheckpointError(f"{p} holds a different model from {paths[0]}{same_model}")
        if other["tokenizer"] != first["tokenizer"]:
            raise CheckpointError(f"{p} has a different tokenizer from {paths[0]}{same_model}")
        kinds = [{str(v.dtype) for v in q["model"].values() if v.is_floating_point()}
                 for q in (first, other)]
        if kinds[0] != kinds[1]:
            raise CheckpointError(f"{p} holds {'/'.join(sorted(kinds[1]))} weights and "
                                  f"{paths[0]} {'/'.join(sorted(kinds[0]))}: average checkpoints "
                                  f"of one precision (average the float32 ones, then halve the "
                                  f"average)")
    seen = {}
    for p, other in zip(paths, payloads):          # one checkpoint under two paths (a copy)
        ident = (other["run_id"], other.get("step"), tuple(other.get("averaged_from", ())))
        if ident in seen and other.get("step") is not None:
            raise CheckpointError(f"{p} is the same checkpoint as {seen[ident]} (run "
                                  f"{other['run_id']}, step {other['step']:,}; a copy?): an "
                                  f"average takes each checkpoint once")
        seen.setdefault(ident, p)
    for p, other in zip(paths, payloads):
        inside = [q for q, o in zip(paths, payloads) if o is not other
                  and (Path(q).name, o["run_id"]) in _sources(other)]
        if inside:
            raise CheckpointError(f"{p} is already an average of {inside[0]} (and "
                                  f"{len(other['averaged_from']) - 1} more): averaging both "
                                  f"would count {inside[0]} twice")
    if allow_different_runs:
        return
    for p, other in zip(paths, payloads):
        if other["run_id"] != first["run_id"]:
            raise CheckpointError(f"{p} comes from another run than {paths[0]}; to average "
                                  f"different runs on purpose (a model soup), pass "
                                  f"--allow-different-runs")


def _sources(payload: dict) -> set[tuple[str, str]]:
    """(file name, run id) of each checkpoint an average was made from (none for another)."""
    names = payload.get("averaged_from") or ()
    runs = payload.get("averaged_runs") or [payload["run_id"]] * len(names)
    return set(zip(names, runs))


def average(paths, allow_different_runs: bool = False) -> dict:
    """The element-wise mean of the weights of several checkpoints of the same model (§6.1),
    computed in float64 and stored in the original dtype, with the step and config of the
    newest of them, in whatever order they are given. Checkpoints of different runs are
    refused unless allow_different_runs; the result records every source's name and run."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    payloads = [load(p, purpose="average") for p in paths]
    for path, payload in zip(paths, payloads):
        refuse_not_finite(payload["model"], path, "be averaged")
    _check_compatible(paths, payloads, allow_different_runs)
    newest = max(payloads, key=lambda p: p.get("step") or 0)   # whatever order they came in

    def mean(k, v):
        if not v.is_floating_point():
            return newest["model"][k]
        return (sum(p["model"][k].double() for p in payloads) / len(payloads)).to(v.dtype)

    runs = [p["run_id"] for p in payloads]
    one_run = len(set(runs)) == 1
    last = {k: v for k, v in newest.items() if k != "halved_from"}
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


def half(path, **decoding) -> dict:
    """A checkpoint's model with its floating-point weights rounded to float16 and no training
    state: a file half the size to share. Loading casts the weights back to float32, so the
    model computes in float32 with weights that differ from the source by float16 rounding
    (a relative 2^-11 at most). A weight beyond float16's range (65,504) is refused: it would
    become infinite. `decoding` (beam_size, alpha, max_extra) become the file's defaults, so
    that translating with it needs no options to decode as its results were scored."""
    payload = load(path)
    refuse_not_finite(payload["model"], path, "be shared")
    limit = torch.finfo(torch.float16).max
    for k, v in payload["model"].items():
        if v.is_floating_point() and v.numel() and v.abs().max() > limit:
            raise CheckpointError(f"{path}: {k} holds {v.abs().max().item():.4g}, beyond "
                                  f"float16's range ({limit:,.0f}); keep this model in float32")
    config = Config.from_dict({**payload["config"], **decoding})       # checked like any config
    model = _per_storage(payload["model"], lambda k, v: v.half() if v.is_floating_point() else v)
    return {**payload, "config": asdict(config), "model": model, "training": None,
            "halved_from": Path(path).name}
