"""Where a training run is, beside its weights: the step, the data position, the clock, where
its data came from, every rank's random streams, and what the divergence watch remembers.

A checkpoint's `training` holds these fields under their own names (`SAVED`), with the states
of the optimizer, the schedule and the grad scaler (`to_dict`); `from_checkpoint` reads them
back, and `load_states` gives the three objects their saved states. The step and the run id
stand at the top of the checkpoint (annotated.store.checkpoint_file).
"""
from dataclasses import dataclass, field

from annotated.base.errors import CheckpointError
from annotated.store import checkpoint_file

SAVED = ("rng", "epoch", "index", "elapsed", "data_dir", "recent_losses", "last_good",
         "first_loss", "data_sha256", "window", "threads")


@dataclass
class TrainState:
    step: int = 0
    run_id: str = field(default_factory=checkpoint_file.new_run_id)
    rng: list = field(default_factory=list)    # every rank's random streams (training.rng)
    epoch: int = 0
    index: int = 0                  # the next batch of the epoch
    elapsed: float = 0.0            # seconds of training up to the last save
    data_dir: str | None = None     # where the corpus was read; None for a dataset that reads none
    recent_losses: list = field(default_factory=list)   # the last training losses (LossWatch)
    last_good: str | None = None    # the last checkpoint LossWatch confirmed, by file name
    first_loss: float | None = None   # the run's first training loss (LossWatch's bound)
    data_sha256: dict | None = None   # corpus.fingerprints(): a resume checks the data is the same
    window: list = field(default_factory=list)   # the sums since the last metrics line (Meter)
    threads: int | None = None      # CPU threads its sums were added on; None on a GPU
    resumed_from: str | None = None   # the checkpoint this process started from (not saved)

    def to_dict(self, optimizer, scheduler, scaler) -> dict:
        """A checkpoint's `training`."""
        return {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "scaler": scaler.state_dict(), **{k: getattr(self, k) for k in SAVED}}

    @staticmethod
    def from_checkpoint(resumed: dict) -> "TrainState":
        """The state a checkpoint saved (a dict from checkpoint_file.load, with its "file")."""
        t = resumed["training"]
        return TrainState(step=resumed["step"],
                          run_id=resumed.get("run_id") or checkpoint_file.new_run_id(),
                          resumed_from=resumed.get("file"), **{k: t[k] for k in SAVED if k in t})


def load_states(resumed: dict, model, optimizer, scheduler, scaler) -> None:
    """Give the model, the optimizer, the schedule and the grad scaler their saved states."""
    t = resumed["training"]
    try:
        model.load_state_dict(resumed["model"])
        optimizer.load_state_dict(t["optimizer"])
        scheduler.load_state_dict(t["scheduler"])
        # the rate of the step to come, by this run's schedule: the saved one was set by the
        # schedule the checkpoint was written with, which --resume may have changed
        for group, base, rate in zip(optimizer.param_groups, scheduler.base_lrs,
                                     scheduler.lr_lambdas):
            group["lr"] = base * rate(scheduler.last_epoch)
        if t["scaler"]:                      # empty when saved without fp16 loss scaling
            scaler.load_state_dict(t["scaler"])
    except (RuntimeError, ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"{resumed.get('file', 'the checkpoint')} does not fit its own "
                              f"config ({str(e).strip().splitlines()[0][:160]}); was it edited? "
                              f"Resume from another checkpoint") from None
