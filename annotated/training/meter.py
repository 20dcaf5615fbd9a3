"""What a training run reports as it goes: a progress bar, a metrics line every log_every
steps (stdout and RUN/metrics.jsonl), validations, and the clocks the loop asks about."""
import sys
import time
from contextlib import contextmanager

import torch
from tqdm import tqdm

from annotated.training.step import safe_exp


class Meter:
    def __init__(self, step: int, max_steps: int, elapsed: float, folder, say):
        self.folder, self.say, self.elapsed = folder, say, elapsed
        self.bar = tqdm(total=max_steps, initial=step, desc="train", dynamic_ncols=True,
                        disable=not folder.active or sys.stderr is None
                        or not sys.stderr.isatty())
        self.start = self.last_save = self.last_log = time.time()
        self.window = torch.zeros(5, dtype=torch.float64)  # sums since the last metrics line

    def seconds(self) -> float:
        return time.time() - self.start

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

    def update(self, step: int, sums: torch.Tensor, lr: float, log: bool):
        """Account one step's sums (loss, nll, correct, target tokens, source tokens)."""
        self.window += sums
        now = time.time()
        rate = self.window[3:].sum().item() / max(now - self.last_log, 1e-9)  # tokens/s
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{(sums[0] / sums[3]).item():.3f}",
                             ppl=f"{safe_exp((sums[1] / sums[3]).item()):.2f}",
                             lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}", refresh=False)
        if not log:
            return
        loss, nll, correct, tokens, _ = self.window.tolist()
        entry = {"step": step, "split": "train", "loss": loss / tokens, "nll": nll / tokens,
                 "ppl": safe_exp(nll / tokens), "accuracy": correct / tokens, "lr": lr,
                 "tokens_per_s": rate, "elapsed": self.elapsed + now - self.start}
        self.folder.record(entry)
        self.say(f"step {step} | loss {entry['loss']:.3f} | ppl {entry['ppl']:.2f} | "
                 f"acc {entry['accuracy']:.3f} | lr {lr:.2e} | {rate:,.0f} tok/s")
        self.window.zero_()
        self.last_log = now

    def validation(self, step: int, result: dict):
        self.folder.record({"step": step, "split": "valid", **result})
        self.say(f"step {step} | valid loss {result['loss']:.3f} | ppl {result['ppl']:.2f} | "
                 f"acc {result['accuracy']:.3f}")

    def close(self):
        self.bar.close()
