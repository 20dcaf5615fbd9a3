"""What a training run reports as it goes: a progress bar, a metrics line every log_every
steps (stdout and RUN/metrics.jsonl), validations, and the clocks the loop asks about; its
lines go through `printer`. A stdout that cannot be written does not stop training
(base.cli.output_optional)."""
import sys
import time
from contextlib import contextmanager

from tqdm import tqdm

from annotated.base.cli import escaped_for_stdout
from annotated.training.step import StepSums


class Meter:
    def __init__(self, state, max_steps: int, folder, say):
        """From the run's TrainState: its step, its training seconds so far, and the sums of
        the steps since the last metrics line, which a checkpoint keeps, so that a resumed run
        logs the lines an uninterrupted run would."""
        self.folder, self.say, self.elapsed = folder, say, state.elapsed
        self.bar = tqdm(total=max_steps, initial=state.step, desc="train", dynamic_ncols=True,
                        disable=not folder.active or sys.stderr is None
                        or not sys.stderr.isatty())
        self.start = self.last_save = self.last_log = time.time()
        self.window = StepSums(*state.window)              # sums since the last metrics line
        self.timed = 0.0                   # tokens since this process's last line (tokens/s)

    def seconds(self) -> float:
        return time.time() - self.start

    def training_seconds(self) -> float:
        """Seconds of training, those of the processes before this one included."""
        return self.elapsed + self.seconds()

    def minutes(self) -> float:
        return self.seconds() / 60

    def since_save(self) -> float:
        return time.time() - self.last_save

    def saved(self):
        self.last_save = time.time()

    @contextmanager
    def paused(self):
        """Time spent in the block (validation, checkpoints) does not count against tokens/s."""
        start = time.time()
        yield
        self.last_log += time.time() - start

    def update(self, step: int, sums: StepSums, lr: float, log: bool):
        """Account one step's sums."""
        self.window += sums
        self.timed += sums.tokens + sums.source_tokens
        w, now = self.window, time.time()
        rate = self.timed / max(now - self.last_log, 1e-9)                     # tokens/s
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{sums.mean_loss():.3f}", ppl=f"{sums.perplexity():.2f}",
                             lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}", refresh=False)
        if not log:
            return
        entry = {"step": step, "split": "train", "loss": w.mean_loss(), "nll": w.nll / w.tokens,
                 "ppl": w.perplexity(), "accuracy": w.correct / w.tokens, "lr": lr,
                 "tokens_per_s": rate, "elapsed": self.training_seconds()}
        self.folder.record(entry)
        self.say(f"step {step} | loss {entry['loss']:.3f} | ppl {entry['ppl']:.2f} | "
                 f"acc {entry['accuracy']:.3f} | lr {lr:.2e} | {rate:,.0f} tok/s")
        self.window, self.timed = StepSums(), 0.0
        self.last_log = now

    def validation(self, step: int, result: dict):
        self.folder.record({"step": step, "split": "valid", **result})
        self.say(f"step {step} | valid loss {result['loss']:.3f} | ppl {result['ppl']:.2f} | "
                 f"acc {result['accuracy']:.3f}")

    def close(self):
        self.bar.close()


def printer(active: bool):
    """say(message): a line above the progress bar, flushed (for logs in files); nothing where
    `active` is false (a torchrun process other than the first). A stdout that cannot be
    written does not stop training (base.cli.output_optional)."""
    def say(message):
        if not active:
            return
        try:
            tqdm.write(message)
        except UnicodeEncodeError:              # a character stdout's encoding lacks
            tqdm.write(escaped_for_stdout(message))
        sys.stdout.flush()
    return say
