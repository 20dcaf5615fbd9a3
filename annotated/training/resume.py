"""The checks a resumed run passes before it takes a step: the checkpoint's training state is
one a run saves, the data is read from where the run's was (or where the user now says), and
it is the same data: the same tokenizer, the same training and validation pairs, and a data
position inside it. Each refusal is one line naming the checkpoint or the run folder and what
to do instead.
"""
import math
import os

from annotated.base.errors import CheckpointError, DataError
from annotated.data.corpus import DATA_ENV


def check_saved_state(resumed: dict) -> None:
    """Refuse a checkpoint whose training state is not what a run saves (a hand-edited file
    that still carries a valid seal): a clear line, not an error deep in the loop."""
    t, where = resumed["training"], resumed.get("file", "the checkpoint")
    whole = [k for k in ("epoch", "index") if not (type(t.get(k)) is int and t[k] >= 0)]
    number = isinstance(t.get("elapsed"), (int, float)) and t["elapsed"] >= 0
    window = t.get("window", [])              # StepSums' five sums, or none (an older file)
    lists = [k for k, fits in (("recent_losses", finite_numbers(t.get("recent_losses", []))),
                               ("window", finite_numbers(window) and len(window) in (0, 5)))
             if not fits]
    if whole or not number or lists:
        what = ", ".join(whole + ([] if number else ["elapsed"]) + lists)
        raise CheckpointError(f"{where}: its training state holds values a run never saves "
                              f"({what}); was it edited? Resume from another checkpoint")


def finite_numbers(values) -> bool:
    """Whether `values` is a list of finite numbers."""
    return isinstance(values, list) and all(
        isinstance(x, (int, float)) and math.isfinite(x) for x in values)


def data_origin(given, resumed, data_dir) -> str | None:
    """Where the data location `data_dir` came from, for messages: None when there is none, or
    it was `given` (--data-dir) where the run read its data before."""
    saved = resumed["training"].get("data_dir") if resumed else None
    if given and saved and str(saved) != str(data_dir):
        return (f"--data-dir {data_dir} is not {saved}, where this run read its data: give "
                f"--data-dir {saved}, or leave it out if that corpus has not moved")
    if given or data_dir is None:
        return None
    if os.environ.get(DATA_ENV) and saved and str(saved) != str(data_dir):
        return (f"the data location {data_dir} is {DATA_ENV}'s, not {saved}, where this run "
                f"read its data: unset {DATA_ENV}, or give --data-dir {saved}")
    if os.environ.get(DATA_ENV):
        return f"the data location {data_dir} is {DATA_ENV}'s"
    if resumed:
        return (f"the data location {data_dir} was saved with this run; if the corpus "
                f"moved, give --data-dir NEW")
    return None


def say_if_moved(resumed, data_dir, say) -> None:
    """A line when the data is read from another location than the checkpoint's run read it
    from (each checkpoint records the location of the sitting that wrote it)."""
    saved = resumed["training"].get("data_dir") if resumed else None
    if saved and data_dir != saved:
        say(f"note: reading the data from {data_dir}, not from {saved}, where the run read it "
            f"before this checkpoint (its training and validation pairs must be the same)")


def check_same_data(resumed, tokenizer, fingerprints: dict, run_dir, where) -> None:
    """Refuse to resume on other data than the run was trained on: another tokenizer, or other
    training or validation pairs (an edited, reordered or replaced file; `fingerprints`: the
    data's now, corpus.fingerprints())."""
    because = f" ({where})" if where else ""
    if resumed["tokenizer"]["bytes"] != tokenizer.to_bytes():
        raise DataError(f"the tokenizer built now from the training files differs from the "
                        f"one in the checkpoint in {run_dir}: a training file (train.*) was "
                        f"edited, reordered or replaced since the run began (or the tokenizer "
                        f"cache was changed){because}; resume with the run's data, or start a "
                        f"new run with another --run-dir")
    saved = resumed["training"].get("data_sha256") or {}
    changed = [split for split, sha in saved.items() if fingerprints.get(split) != sha]
    if changed:
        raise DataError(f"the {' and '.join(changed)} pairs differ from those the run in "
                        f"{run_dir} was trained on: a file was edited, reordered or replaced"
                        f"{because}; resume with the run's data, or start a new run with "
                        f"another --run-dir")


def check_data_position(state, batches: list) -> None:
    """Refuse a data position past the end of the epoch's batches."""
    if state.index > len(batches):
        raise CheckpointError(f"{state.resumed_from}: its data position, batch {state.index:,} "
                              f"of an epoch, is past this data's {len(batches):,} batches; was "
                              f"it edited? Resume from another checkpoint")
