"""When a run has diverged, and which checkpoint is the last good one (`LossWatch`).

A loss that is not finite, that has grown past three times a uniform guess (3 ln V; for a model
whose first loss is above that, twice its first loss), or that jumps far above the run's own
recent losses and stays there stops the run before the update is applied, naming the last
checkpoint known to be good, which rotation never deletes.
"""
import math
from collections import deque
from pathlib import Path

from annotated.base.errors import Diverged
from annotated.store import checkpoint_file

DIVERGED = 3.0            # a training loss above DIVERGED * ln V has diverged
RECENT = 50               # steps whose losses the jump test compares with
LOW = 0.1                 # the share of them below their "low": the 10th percentile
JUMP = 2.0                # a loss above JUMP x their low, and JUMP_NATS above it, has
JUMP_NATS = 1.0           # jumped; JUMP_STEPS jumps in a row are divergence (a single spike
JUMP_STEPS = 3            # that the next step recovers from passes)
HISTORY = 3               # losses the jump test needs before it applies


class LossWatch:
    """Is a step's training loss diverging, and which checkpoint is the last good one?

    A step's loss is computed with the weights left by the step before, which is what the
    checkpoint saved after that step holds. So a checkpoint is known good only once the next
    step's loss has passed (until then it is pending), and only if that loss is below ln V, a
    uniform guess's: a model that does worse than guessing is worth nothing, however it got
    there. The run has diverged when a loss is not finite or above DIVERGED ln V (or, for a
    model that starts above it, JUMP times its first loss) at once, or when, once HISTORY
    losses have passed, JUMP_STEPS losses in a row lie above both JUMP times
    the recent losses' low (their 10th percentile) and that low plus JUMP_NATS. Measured from
    the low, not the mean, a slow climb cannot raise its own threshold as it goes; it is
    caught long before the absolute bound, while the checkpoints before it are still good.
    Not from the very best: one lucky batch (short sentences, on a task as easy as copying)
    would set a threshold the ordinary batches lie above. A lone spike that the next step
    recovers from passes. The first loss, the recent losses and the last good
    checkpoint's name travel in checkpoints (annotated.training.state), so a resumed run
    judges its first steps as the uninterrupted run would."""

    def __init__(self, vocab_size: int, recent=(), pending=None, good=None, first=None):
        self.uniform = math.log(vocab_size)
        self.recent = deque(recent, maxlen=RECENT)
        self.pending, self.good, self.jumps, self.first = pending, good, 0, first
        self.resumed_from, self.checked = pending, 0   # the first loss judges these weights

    @property
    def bound(self) -> float:
        """DIVERGED ln V, or JUMP times the run's first loss if that is higher: an untrained
        wide model can start above 3 ln V without anything having diverged."""
        return max(DIVERGED * self.uniform, JUMP * (self.first or 0.0))

    def limit(self) -> tuple[float, str]:
        """The loss above which a step counts as a jump, and what sets it."""
        if len(self.recent) < HISTORY:
            return self.bound, f"{DIVERGED:g} ln V"
        low = sorted(self.recent)[int(LOW * (len(self.recent) - 1))]
        return min(self.bound, max(JUMP * low, low + JUMP_NATS)), (
            f"a jump from the low, the 10th percentile, of the last {len(self.recent)} steps' "
            f"losses, {low:.3f}")

    def check(self, loss: float, step: int, run_dir) -> None:
        """Pass `loss` (step `step`'s), or raise Diverged naming the last good checkpoint."""
        self.checked += 1
        if self.first is None and math.isfinite(loss):
            self.first = loss                  # the untrained model's: nothing to judge yet
        if not math.isfinite(loss):
            self._stop(f"step {step}: training loss is {loss}, not a finite number", run_dir)
        if loss > self.bound:
            self._stop(f"step {step}: training loss is {loss:.4g}, above {self.bound:.3g} "
                       f"({DIVERGED:g} ln V)", run_dir)
        limit, what = self.limit()
        if loss > limit:                               # not a good loss: nothing confirmed
            self.jumps += 1
            if self.jumps >= JUMP_STEPS:
                self._stop(f"step {step}: training loss is {loss:.4g}, above {limit:.3g} "
                           f"{JUMP_STEPS} steps in a row ({what})", run_dir)
            return
        self.jumps = 0
        self.recent.append(loss)
        if self.pending is not None and loss < self.uniform:
            self.good = self.pending
        self.pending = None

    def _stop(self, why: str, run_dir):
        damaged = self.resumed_from is not None and self.checked == 1
        # the checkpoint this run resumed from trained well until now, unless it is the cause
        good = self.good or (None if damaged or self.resumed_from is None
                             else Path(self.resumed_from).name)
        suspect = [p.name for p in checkpoint_file.checkpoints(run_dir) if good is None
                   or checkpoint_file.step_in_name(p) > checkpoint_file.step_in_name(good)]
        holds = "holds" if len(suspect) == 1 else "hold"
        after = ("" if not suspect else f"; {', '.join(suspect)} {holds} weights from after it"
                 if good else f" ({', '.join(suspect)} may {holds[:4]} diverged weights)")
        go_on = ("to go on from the good one, move the later ones out of the run folder and "
                 "--resume" if good else "no checkpoint is known good, so start again in "
                 "a new --run-dir")
        if damaged:
            raise Diverged(f"{why}, with the weights of {Path(self.resumed_from).name}, which "
                           f"this run resumed from, before any update: that checkpoint is "
                           f"damaged or diverged. Last good checkpoint: "
                           f"{good or 'none known'}{after}; {go_on}")
        raise Diverged(f"{why}: diverged, stopped before the update. Last good checkpoint: "
                       f"{good or 'none known'}{after}. Lower lr_factor or raise "
                       f"warmup_steps; {go_on}")

    def saved(self, path):
        self.pending = path
