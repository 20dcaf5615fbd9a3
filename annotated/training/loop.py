"""The training loop (§5), from a laptop CPU to a multi-GPU machine.

`train(config, run_dir, ...)` reads like a script: load the corpus, build the model and Adam
with the §5.3 schedule, restore a checkpoint if resuming, then step through token batches
(§5.1) until max_steps, logging, validating and checkpointing on the way, and end by showing
the model at work. The machinery it calls lives beside it: `step` (one optimizer step, the
engine that wraps the model for DDP, compile and mixed precision), `distributed` (torchrun),
`checkpoint` (the file format), `run_dir` (the lock and the metrics log) and `cpu_memory` (on a
CPU, freed memory is kept for the next step instead of being mapped afresh).

Checkpoints are written every ckpt_every steps or ckpt_minutes minutes, whichever comes first,
and at the end; the newest keep_last stay on disk. They hold everything a resumed run needs to
continue bit for bit (on a GPU with --deterministic): weights, optimizer and schedule, the RNG
states of every rank, the data position (epoch, batch index) and where the data came from. A
loss that is not finite, that has grown past three times a uniform guess (3 ln V), or that
jumps far above the run's own recent losses and stays there stops the run before the update is
applied, naming the last checkpoint known to be good (`LossWatch`), which rotation never
deletes. Logged per step (progress bar) and every log_every steps (stdout and
RUN/metrics.jsonl): smoothed loss, nll, perplexity, token accuracy, learning rate and tokens/s
(source + target, padding excluded); validation every eval_every steps.
"""
import math
import os
import shlex
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from annotated.base.errors import CheckpointError, ConfigError, DataError, Diverged
from annotated.data.batching import lengths_of, make_batches, padding_fraction
from annotated.data.corpus import DATA_ENV, data_location, load_corpus
from annotated.data.datasets import DATASETS
from annotated.inference.search import beam_search, source_batch
from annotated.model import EncoderDecoder, count_parameters
from annotated.optim import make_optimizer
from annotated.store import checkpoint_file
from annotated.training import distributed
from annotated.training.cpu_memory import keep_freed_memory
from annotated.training.meter import Meter
from annotated.training.rng import rng_state, set_rng_state
from annotated.training.run_dir import RunDir, rotate
from annotated.training.step import evaluate, make_engine, train_step

DIVERGED = 3.0            # a training loss above DIVERGED * ln V has diverged
RECENT = 50               # steps whose losses the jump test compares with
JUMP = 2.0                # a loss above JUMP x the best of them, and JUMP_NATS above it, has
JUMP_NATS = 1.0           # jumped; JUMP_STEPS jumps in a row are divergence (a single spike
JUMP_STEPS = 3            # can pass: the copy preset's own run has one, and recovers at once)
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
    the best recent loss and that loss plus JUMP_NATS. Measured from the best loss, not the
    mean, a slow climb cannot raise its own threshold as it goes; it is caught long before the
    absolute bound, while the checkpoints before it are still good, and a lone spike that the
    next step recovers from passes. The first loss, the recent losses and the last good
    checkpoint's name travel in checkpoints, so a resumed run judges its first steps as the
    uninterrupted run would."""

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
        best = min(self.recent)
        return min(self.bound, max(JUMP * best, best + JUMP_NATS)), (
            f"a jump from the best of the last {len(self.recent)} steps' losses, {best:.3f}")

    def check(self, loss: float, step: int, run_dir) -> None:
        """Pass `loss` (step `step`'s), or raise Diverged naming the last good checkpoint."""
        self.checked += 1
        if self.first is None and math.isfinite(loss):
            self.first = loss                  # the untrained model's: nothing to judge yet
        if not math.isfinite(loss) or loss > self.bound:
            self._stop(f"step {step}: training loss is {loss:.4g}, above {self.bound:.3g} "
                       f"({DIVERGED:g} ln V)", run_dir)
        limit, what = self.limit()
        if loss > limit:                               # not a good loss: nothing confirmed
            self.jumps += 1
            if self.jumps >= JUMP_STEPS:
                self._stop(f"step {step}: training loss is {loss:.4g}, the {JUMP_STEPS}th step "
                           f"in a row above {limit:.3g} ({what})", run_dir)
            return
        self.jumps = 0
        self.recent.append(loss)
        if self.pending is not None and loss < self.uniform:
            self.good = self.pending
        self.pending = None

    def _stop(self, why: str, run_dir):
        suspect = [p.name for p in checkpoint_file.checkpoints(run_dir) if self.good is None
                   or checkpoint_file.step_in_name(p) > checkpoint_file.step_in_name(self.good)]
        after = (f"; {', '.join(suspect)} hold{'s' if len(suspect) == 1 else ''} weights from "
                 f"after it" if suspect else "")
        if self.resumed_from is not None and self.checked == 1:
            raise Diverged(f"{why}, with the weights of {Path(self.resumed_from).name}, which "
                           f"this run resumed from, before any update: that checkpoint is "
                           f"damaged or diverged. Last good checkpoint: "
                           f"{self.good or 'none known'}{after}; to go on from the good one, "
                           f"move the later ones out of the run folder and --resume")
        raise Diverged(f"{why}: diverged, stopped before the update. Last good checkpoint: "
                       f"{self.good or 'none known'}{after}. Lower lr_factor or raise "
                       f"warmup_steps; to go on from the good one, move the later ones out of "
                       f"the run folder and --resume")

    def saved(self, path):
        self.pending = path


@dataclass
class TrainState:
    """Where a run is, beside its weights and optimizer: what a checkpoint's `training` holds."""
    step: int = 0
    epoch: int = 0
    index: int = 0                  # the next batch of the epoch
    elapsed: float = 0.0            # seconds of training before this process started
    run_id: str = ""
    data_dir: str | None = None
    recent: tuple = ()              # the last training losses (LossWatch)
    resumed_from: str | None = None   # the checkpoint this process started from
    data_sha256: dict | None = None   # corpus.fingerprints(): a resume checks the data is the same
    last_good: str | None = None    # the last checkpoint LossWatch confirmed, by file name
    first_loss: float | None = None   # the run's first training loss (LossWatch's bound)


def train(config, run_dir, *, data_dir=None, cache_dir=None, max_steps=None, max_minutes=None,
          resumed=None, deterministic=False) -> None:
    """Train `config` in `run_dir`, continuing the checkpoint `resumed` if given (a dict from
    annotated.store.checkpoint_file.load); see the module docstring."""
    steps = config.train_steps if max_steps is None else max_steps
    if config.cooldown_steps and steps > config.train_steps:
        raise ConfigError(f"--max-steps {steps:,} is past train_steps={config.train_steps:,}, "
                          f"where the cooldown has brought the learning rate to 0: the steps "
                          f"after it would not change the model; raise train_steps instead")
    if deterministic:
        use_deterministic_kernels()
    rank, _, device = distributed.init_distributed()
    if device.type == "cpu":
        keep_freed_memory()          # no page faults on each step's large tensors (cpu_memory)
    say = _printer(rank == 0)
    folder = RunDir(run_dir, active=rank == 0, say=say).open()
    try:
        _run(config, folder, device, data_dir, cache_dir, steps, max_minutes, resumed, say)
    finally:                # the model and its DDP wrapper are gone before the process group
        folder.close()
        distributed.finish()


def _run(config, folder, device, data_dir, cache_dir, steps, max_minutes, resumed, say):
    """train()'s body: data, model, Adam, the loop, the model at work."""
    state = _state(resumed, data_location(data_dir), config)
    where = _origin(data_dir, resumed, state)
    _say_data_location(config, data_dir, resumed, state, say)
    corpus = _load(config, state.data_dir, cache_dir, say, where)
    state.data_sha256 = corpus.fingerprints()
    if resumed:
        _check_same_data(resumed, corpus, state, folder.path, where)
    check_memory(config, corpus.tokenizer.vocab_size, device)
    torch.manual_seed(config.seed)                 # the same initial weights on every rank
    model = EncoderDecoder(config, corpus.tokenizer.vocab_size).to(device)
    optimizer, scheduler = make_optimizer(model, config.d_model, config.warmup_steps,
                                          config.lr_factor, config.train_steps,
                                          config.cooldown_steps)
    engine = make_engine(model, config, device)
    _restore(resumed, state, engine, optimizer, scheduler, config, say)
    say(f"{config.dataset}: {len(corpus.train):,} training pairs; model "
        f"{count_parameters(model):,} parameters; {distributed.world_size()} process(es) on "
        f"{device}" + (f" ({distributed.backend()})" if distributed.active() else "")
        + (f", {torch.get_num_threads()} thread(s) each (--threads N to change)"
           if device.type == "cpu" else ""))
    folder.rewind_metrics(state.step, fresh=resumed is None)
    _loop(config, engine, optimizer, scheduler, corpus, state, folder, steps, max_minutes, say)
    if folder.active:
        try:
            show_at_work(model, corpus, config, folder.path)
        except OSError:                       # stdout broke at the very end: nothing is lost
            _silence_stdout()


def available_memory(device) -> int | None:
    """Bytes free on `device`: the GPU's free memory, or the CPU's available RAM (Linux's
    MemAvailable); None where it cannot be told."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


def check_memory(config, vocab: int, device) -> None:
    """Refuse, before building it, a model whose weights, gradients and two Adam moments (16
    bytes a parameter in float32), with the output layer's scores for one micro-batch (its
    target tokens x V, held three times: logits, log-probabilities and their gradient), alone
    exceed the device's free memory: a clear line instead of a failed allocation, the machine
    swapping for minutes, or the kernel killing the process without a word."""
    n = config.parameter_count(vocab)              # from the shapes: nothing is allocated
    rows = -(-config.max_tokens // (config.accum_steps * distributed.world_size()))
    scores = 3 * 4 * rows * vocab
    need, free = 16 * n + scores, available_memory(device)
    if free is not None and need > free:
        where = f"the GPU {device}" if device.type == "cuda" else "this machine"
        raise MemoryError(f"the model has {n:,} parameters: training it needs at least "
                          f"{need / 2**30:,.1f} GiB for weights, gradients and Adam's moments "
                          f"and the output layer's scores of {rows:,} tokens x {vocab:,}, and "
                          f"{where} has {free / 2**30:,.1f} GiB free; lower d_model, d_ff, N, "
                          f"vocab_size or max_tokens (or raise accum_steps)")


def use_deterministic_kernels():
    """Kernels that give the same bits on every run. On a GPU some default kernels add up in
    an order that varies from run to run (the fused attention kernels' backward passes, for
    one), so two runs, or a run and its resumed copy, drift apart by rounding; these are slower
    but repeatable: attention as eq. (1) spelled out in matrix products. A CPU run is
    repeatable without them."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")    # before cuBLAS starts
    torch.use_deterministic_algorithms(True, warn_only=True)
    for fused in ("flash", "mem_efficient", "cudnn"):
        getattr(torch.backends.cuda, f"enable_{fused}_sdp")(False)


def _printer(active: bool):
    """say(message): a line above the progress bar, flushed (for logs in files). If stdout
    cannot be written (closed, a full disk), training goes on without these lines, once said
    on stderr: metrics.jsonl and the checkpoints hold what they would have shown."""
    on = [active]

    def say(message):
        if not on[0]:
            return
        try:
            tqdm.write(message)
            sys.stdout.flush()
        except (OSError, AttributeError, ValueError) as e:   # AttributeError: stdout is None
            on[0] = False
            why = "it is closed" if sys.stdout is None else getattr(e, "strerror", None) or e
            _silence_stdout()
            print(f"warning: stdout cannot be written ({why}); training goes on without "
                  f"progress lines", file=sys.stderr, flush=True)
    return say


def _silence_stdout():
    """Point a broken stdout at /dev/null, so that nothing else fails on it, exit included."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass


def _state(resumed, data_dir, config) -> TrainState:
    """A fresh run's state, or the saved one; the data location given now wins over the
    saved one (a moved corpus), the saved one over none (so --resume needs no --data-dir).
    A dataset that reads no data location (copy, the shipped sample) saves none."""
    if not DATASETS[config.dataset].location:
        data_dir = None
    if resumed is not None:
        _check_position(resumed)
    if resumed is None:
        return TrainState(run_id=checkpoint_file.new_run_id(),
                          data_dir=str(data_dir) if data_dir else None)
    t = resumed["training"]
    return TrainState(resumed["step"], t["epoch"], t["index"], t["elapsed"],
                      resumed.get("run_id") or checkpoint_file.new_run_id(),
                      str(data_dir) if data_dir else t.get("data_dir"),
                      tuple(t.get("recent_losses", ())), resumed.get("file"),
                      last_good=t.get("last_good"), first_loss=t.get("first_loss"))


def _check_position(resumed) -> None:
    """Refuse a checkpoint whose training state is not what a run saves (a hand-edited file
    that still carries a valid seal): a clear line, not an error deep in the loop."""
    t, where = resumed["training"], resumed.get("file", "the checkpoint")
    whole = [k for k in ("epoch", "index") if not (type(t.get(k)) is int and t[k] >= 0)]
    number = isinstance(t.get("elapsed"), (int, float)) and t["elapsed"] >= 0
    losses = t.get("recent_losses", [])
    finite = isinstance(losses, list) and all(
        isinstance(x, (int, float)) and math.isfinite(x) for x in losses)
    if whole or not number or not finite:
        what = ", ".join(whole + ([] if number else ["elapsed"])
                         + ([] if finite else ["recent_losses"]))
        raise CheckpointError(f"{where}: its training state holds values a run never saves "
                              f"({what}); was it edited? Resume from another checkpoint")


def _origin(data_dir, resumed, state) -> str | None:
    """Where the data location came from, for messages: None when given with --data-dir."""
    if data_dir or state.data_dir is None:
        return None
    if os.environ.get(DATA_ENV):
        return f"the data location {state.data_dir} is {DATA_ENV}'s"
    if resumed:
        return (f"the data location {state.data_dir} was saved with this run; if the corpus "
                f"moved, give --data-dir NEW")
    return None


def _say_data_location(config, data_dir, resumed, state, say):
    """A line when the data location is not read, or is not the one the run started with."""
    if data_dir and not DATASETS[config.dataset].location:
        say(f"note: dataset {config.dataset} reads no data location: --data-dir is not used")
    saved = resumed["training"].get("data_dir") if resumed else None
    if saved and state.data_dir != saved:
        say(f"note: reading the data from {state.data_dir}, not from {saved}, where this run "
            f"started (its training and validation pairs must be the same)")


def _load(config, data_dir, cache_dir, say, where):
    """The corpus, rank 0 first: it may download data or train the tokenizer into the cache
    that the other ranks then read. `where`: the data location's origin, added to errors."""
    if distributed.rank() > 0:
        distributed.barrier()
    try:
        corpus = load_corpus(config, data_dir, cache_dir, log=say)
    except (DataError, FileNotFoundError) as e:
        if where is None:
            raise
        raise type(e)(f"{e} ({where})") from None
    if distributed.rank() == 0:
        distributed.barrier()
    return corpus


def _check_same_data(resumed, corpus, state, run_dir, where) -> None:
    """Refuse to resume on other data than the run was trained on: another tokenizer, or other
    training or validation pairs (an edited, reordered or replaced file)."""
    because = f" ({where})" if where else ""
    if resumed["tokenizer"]["bytes"] != corpus.tokenizer.to_bytes():
        raise DataError(f"the tokenizer built now differs from the one in the checkpoint in "
                        f"{run_dir}: the training data or the cache changed{because}; resume "
                        f"with the run's data, or start a new run with another --run-dir")
    saved = resumed["training"].get("data_sha256") or {}
    changed = [split for split, sha in saved.items() if state.data_sha256.get(split) != sha]
    if changed:
        raise DataError(f"the {' and '.join(changed)} pairs differ from those the run in "
                        f"{run_dir} was trained on: a file was edited, reordered or replaced"
                        f"{because}; resume with the run's data, or start a new run with "
                        f"another --run-dir")


def _restore(resumed, state, engine, optimizer, scheduler, config, say):
    """Load the saved weights, optimizer, schedule and RNG streams, or seed a fresh run."""
    rank, world = distributed.rank(), distributed.world_size()
    if resumed is None:
        torch.manual_seed(config.seed + rank)             # each rank its own dropout masks
        return
    t = resumed["training"]
    try:
        engine.model.load_state_dict(resumed["model"])
        optimizer.load_state_dict(t["optimizer"])
        scheduler.load_state_dict(t["scheduler"])
        if t["scaler"]:                      # empty when saved without fp16 loss scaling
            engine.scaler.load_state_dict(t["scaler"])
    except (RuntimeError, ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"{resumed.get('file', 'the checkpoint')} does not fit its own "
                              f"config ({str(e).strip().splitlines()[0][:160]}); was it edited? "
                              f"Resume from another checkpoint") from None
    if len(t["rng"]) == world:
        set_rng_state(t["rng"][rank])
    else:
        say(f"world size changed ({len(t['rng'])} -> {world}): RNG streams reseeded, so this "
            f"resume is not bit-exact")
        torch.manual_seed(config.seed + 1000 * state.step + rank)
    say(f"resumed from step {state.step} (epoch {state.epoch}, batch {state.index})")


def _loop(config, engine, optimizer, scheduler, corpus, state, folder, max_steps, max_minutes,
          say):
    """Step until max_steps (or max_minutes): log, validate and save on the way."""
    lengths = lengths_of(corpus.train)
    batches = make_batches(lengths, config.max_tokens, config.seed, state.epoch)
    if state.index > len(batches):
        raise CheckpointError(f"{state.resumed_from}: its data position, batch {state.index:,} "
                              f"of an epoch, is past this data's {len(batches):,} batches; was "
                              f"it edited? Resume from another checkpoint")
    src_pad, tgt_pad = padding_fraction(lengths, batches)
    say(f"{len(batches):,} batches per epoch (padding {src_pad:.1%} source, {tgt_pad:.1%} "
        f"target)")
    meter = Meter(state.step, max_steps, state.elapsed, folder, say)
    good = folder.path / state.last_good if state.last_good else None
    watch = LossWatch(config.vocab_size, state.recent, pending=state.resumed_from,
                      good=good if good is not None and good.is_file() else None,
                      first=state.first_loss)
    saved_step = state.step                  # both checkpoint intervals count from the last save
    if state.step >= max_steps:
        say(f"step {state.step}: already at --max-steps / train_steps {max_steps}; nothing to do")
    engine.model.train()
    while state.step < max_steps:
        if state.index == len(batches):
            state.epoch, state.index = state.epoch + 1, 0
            batches = make_batches(lengths, config.max_tokens, config.seed, state.epoch)
        sums = train_step(engine, corpus.train, batches[state.index], config)
        watch.check(sums.mean_loss(), state.step + 1, folder.path)
        lr = optimizer.param_groups[0]["lr"]
        engine.scaler.step(optimizer)
        engine.scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        state.step, state.index = state.step + 1, state.index + 1
        timeout = max_minutes is not None and meter.minutes() >= max_minutes
        done, overdue = distributed.rank0_says(
            state.step == max_steps or timeout, meter.since_save() >= 60 * config.ckpt_minutes,
            device=engine.device)
        meter.update(state.step, sums, lr, log=state.step % config.log_every == 0 or done)
        with meter.paused():                         # tokens/s counts training time only
            if state.step % config.eval_every == 0 or done:
                result = evaluate(engine.model, corpus.valid, config, engine.device)
                meter.validation(state.step, result)
            if state.step - saved_step >= config.ckpt_every or done or overdue:
                state.recent = tuple(watch.recent)
                state.last_good = watch.good.name if watch.good else None
                state.first_loss = watch.first
                watch.saved(_save(engine, optimizer, scheduler, config, corpus.tokenizer, state,
                                  meter, folder, say, keep=[watch.good] if watch.good else []))
                saved_step = state.step
        if done:
            break
    meter.close()


def _save(engine, optimizer, scheduler, config, tokenizer, state, meter, folder, say,
          keep=()) -> Path | None:
    """A checkpoint of everything --resume needs (every rank's RNG streams included); rotation
    spares the files in `keep` and other runs' checkpoints. Returns its path (on rank 0)."""
    streams = distributed.gather(rng_state())
    if not folder.active:
        return None
    training = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "scaler": engine.scaler.state_dict(), "rng": streams, "epoch": state.epoch,
                "index": state.index, "elapsed": state.elapsed + meter.seconds(),
                "data_dir": state.data_dir, "recent_losses": list(state.recent),
                "last_good": state.last_good, "first_loss": state.first_loss,
                "data_sha256": state.data_sha256}
    path = checkpoint_file.save(folder.path / checkpoint_file.checkpoint_name(state.step),
                           model=engine.model, config=config, tokenizer=tokenizer,
                           step=state.step, training=training, run_id=state.run_id)
    rotate(folder.path, config.keep_last, keep=keep, run_id=state.run_id)
    meter.saved()
    say(f"step {state.step}: saved {path}")
    return path


def show_at_work(model, corpus, config, run_dir: Path, n: int = 3):
    """End a run by showing what it learned (a few test sentences decoded with §6.1's beam
    search) and the commands that come next."""
    model.eval()
    tokenizer = corpus.tokenizer
    pairs = list(zip(corpus.test_src, corpus.test_ref))
    sentences = ([(s, r) for s, r in pairs if len(tokenizer.encode(s)) < 20][:n]
                 or sorted(pairs, key=lambda pair: len(tokenizer.encode(pair[0])))[:n])
    src = source_batch([tokenizer.encode(s) for s, _ in sentences],
                       next(model.parameters()).device)
    hyps = beam_search(model, src, config.beam_size, config.alpha, config.max_extra)
    print(f"\nThe model at work on {len(sentences)} test sentences it never saw in training "
          f"(beam {config.beam_size}, alpha {config.alpha}):")
    for (source, reference), hyp in zip(sentences, hyps):
        print(f"  input      {source}\n  output     {tokenizer.decode(hyp.tokens)}\n"
              f"  reference  {reference}\n")
    found = checkpoint_file.checkpoints(run_dir)
    if not found:
        return
    last = found[-1]
    example = "4 9 5 7 7 10" if config.dataset == "copy" else sentences[0][0]
    print(f"Next:\n  the checkpoint         {last}\n"
          f"  translate with it      echo {shlex.quote(example)} | "
          f"python -m annotated.translate --checkpoint {shlex.quote(str(last))}\n"
          f"  average the last ones  python -m annotated.checkpoint average --last "
          f"{config.keep_last} {shlex.quote(str(run_dir))} --out "
          f"{shlex.quote(str(run_dir / 'average.pt'))}")
    if config.dataset in ("copy", "multi30k_sample"):
        print("  read the chapters      jupyter lab chapters/\n"
              "  train on all of Multi30k (29,000 pairs; an hour on 2 CPU cores)\n"
              "                         python -m annotated.train --config multi30k "
              "--data-dir DIR    # DIR holds multi30k/train.en.gz ...")
    sys.stdout.flush()
