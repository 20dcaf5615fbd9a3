"""The training loop (§5), from a laptop CPU to a multi-GPU machine.

`train(config, run_dir, ...)` reads top to bottom: load the corpus, build the model and Adam
with the §5.3 schedule, restore a checkpoint if resuming, then step through token batches
(§5.1) until max_steps, logging, validating and checkpointing on the way, and end by showing
the model at work. What it calls lives beside it in annotated.training (one step, the run's
state and the checks of a resume, the divergence watch, torchrun, the run folder, the meter,
the machine); the checkpoint file itself is annotated.store.checkpoint_file.

Checkpoints are written every ckpt_every steps or ckpt_minutes minutes, whichever comes first,
and at the end; the newest keep_last stay on disk, each with all a resumed run needs to continue
bit for bit (on a GPU with --deterministic). A diverging loss stops the run before the update
is applied, naming the last good checkpoint, which rotation never deletes (`LossWatch`). The
metrics go to the progress bar every step, to stdout and RUN/metrics.jsonl every log_every
steps; validation every eval_every steps.
"""
import sys
import traceback
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path

import torch

from annotated.base.cli import shell_word, unwritable_on_stdout
from annotated.base.errors import ConfigError, DataError
from annotated.configs import Config
from annotated.data.batching import lengths_of, make_batches, padding_fraction
from annotated.data.corpus import Corpus, data_location, load_corpus
from annotated.data.datasets import DATASETS
from annotated.inference.search import beam_search, source_batch
from annotated.model import EncoderDecoder, count_parameters
from annotated.optim import make_optimizer, noam_rate
from annotated.store import checkpoint_file
from annotated.training import distributed, resume
from annotated.training.divergence import LossWatch
from annotated.training.machine import check_memory, keep_freed_memory, use_deterministic_kernels
from annotated.training.meter import Meter, printer
from annotated.training.rng import rng_state, set_rng_state
from annotated.training.run_dir import RunDir, rotate
from annotated.training.state import TrainState, load_states
from annotated.training.step import Engine, check_device, evaluate, make_engine, train_step

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"    # in a clone of the project
# A peak learning rate below this moves Adam's weights by too little to learn anything.
TOO_SMALL_RATE = 1e-7


@dataclass
class Run:
    """What the loop and its checkpoints work with, once everything is built."""
    config: Config
    corpus: Corpus
    engine: Engine
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    state: TrainState
    folder: RunDir
    say: Callable[[str], None]


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
    check_device(config, device)
    if device.type == "cpu":
        keep_freed_memory()          # no page faults on each step's large tensors (machine)
    say = printer(rank == 0)
    _note_odd_lengths(config, steps, say)
    folder = RunDir(run_dir, active=rank == 0, say=say).open()
    try:
        folder.check_checkpoint_names(resumed["step"] if resumed else 0, steps)
        corpus, state = _data(config, data_dir, cache_dir, resumed, folder)
        V = corpus.tokenizer.vocab_size
        check_memory(config, V, device, max(map(sum, zip(*lengths_of(corpus.train)))))
        torch.manual_seed(config.seed)                 # the same initial weights on every rank
        model = EncoderDecoder(config, V).to(device)
        folder.check_room(3 * sum(p.numel() * p.element_size() for p in model.parameters())
                          + len(corpus.tokenizer.to_bytes()),   # weights, Adam's two moments
                          config.keep_last)                      # and the tokenizer
        optimizer, scheduler = make_optimizer(model, config.d_model, config.warmup_steps,
                                              config.lr_factor, config.train_steps,
                                              config.cooldown_steps)
        run = Run(config, corpus, make_engine(model, config, device), optimizer, scheduler,
                  state, folder, say)
        _restore(run, resumed)
        say(f"{config.dataset}: {len(corpus.train):,} training pairs; model "
            f"{count_parameters(model):,} parameters; {distributed.world_size()} process(es) on "
            f"{device}" + (f" ({distributed.backend()})" if distributed.active() else "")
            + (f", {torch.get_num_threads()} thread(s) each (--threads N to change)"
               if device.type == "cpu" else ""))
        folder.rewind_metrics(state.step, fresh=resumed is None)
        try:
            _loop(run, steps, max_minutes)
        except KeyboardInterrupt as stop:            # Ctrl-C, SIGTERM, SIGHUP
            if folder.active and (lost := unsaved_steps(run)):
                stop.add_note(lost)
            raise
        if folder.active:
            show_at_work(model, corpus, config, folder.path)
    except BaseException as error:     # a stop, or an error: the frames it carries hold DDP
        traceback.clear_frames(error.__traceback__)       # (freed in the finally, see there)
        raise
    finally:            # DDP freed after its process group hangs in gloo: free it first
        run = model = None
        folder.close()
        distributed.finish()


def _note_odd_lengths(config, steps: int, say) -> None:
    """Notes on a run whose length or schedule will not do what a reader may expect: steps
    past its planned length, a warmup longer than the run, a rate too small to learn."""
    if steps > config.train_steps:
        say(f"note: --max-steps {steps:,} runs past train_steps={config.train_steps:,}, the "
            f"run's planned length (--max-minutes or Ctrl-C stop it; --resume goes on)")
    if config.warmup_steps > config.train_steps:
        say(f"note: warmup_steps={config.warmup_steps:,} is longer than the run "
            f"(train_steps={config.train_steps:,}): the learning rate rises until the end and "
            f"never reaches its peak (§5.3); lower warmup_steps for a short run")
    peak = noam_rate(config.warmup_steps, config.d_model, config.warmup_steps, config.lr_factor)
    if peak < TOO_SMALL_RATE:
        say(f"note: the learning rate peaks at {peak:.1e} (lr_factor={config.lr_factor:g}), "
            f"too small to move the weights: the model will not learn; the paper's schedule "
            f"has lr_factor=1 (§5.3)")


def _data(config, data_dir, cache_dir, resumed, folder) -> tuple[Corpus, TrainState]:
    """The corpus, and the run's state: fresh or saved. The data location given now wins over
    the saved one (a moved corpus), the saved one over none (--resume needs no --data-dir)."""
    say = folder.say
    reads_location = DATASETS[config.dataset].location
    location = data_location(data_dir) if reads_location else None
    if resumed is None:
        state = TrainState()
    else:
        resume.check_saved_state(resumed)
        state = TrainState.from_checkpoint(resumed)
    state.data_dir = str(location) if location else state.data_dir
    where = resume.data_origin(data_dir, resumed, state.data_dir)
    if data_dir and not reads_location:
        say(f"note: dataset {config.dataset} reads no data location: --data-dir is not used")
    resume.say_if_moved(resumed, state.data_dir, say)
    if distributed.rank() > 0:         # rank 0 first: it may download data or train the
        distributed.barrier()          # tokenizer into the cache the other ranks then read
    try:
        corpus = load_corpus(config, state.data_dir, cache_dir, log=say)
    except (DataError, FileNotFoundError) as e:
        if where is None:
            raise
        raise type(e)(f"{e} ({where})") from None
    if distributed.rank() == 0:
        distributed.barrier()
    state.data_sha256 = corpus.fingerprints()
    if resumed:
        resume.check_same_data(resumed, corpus.tokenizer, state.data_sha256, folder.path,
                               where)
    return corpus, state


def _restore(run: Run, resumed) -> None:
    """Load the saved weights, optimizer, schedule and RNG streams, or seed a fresh run."""
    rank, world, state = distributed.rank(), distributed.world_size(), run.state
    threads = torch.get_num_threads() if run.engine.device.type == "cpu" else None
    if resumed and threads and state.threads and state.threads != threads:
        run.say(f"note: this run trained on {state.threads} CPU thread(s), this process on "
                f"{threads}: its sums add up in another order, so this resume is not bit-exact; "
                f"--threads {state.threads} makes it so")
    state.threads = threads
    if resumed is None:
        torch.manual_seed(run.config.seed + rank)         # each rank its own dropout masks
        return
    load_states(resumed, run.engine.model, run.optimizer, run.scheduler, run.engine.scaler)
    if len(state.rng) == world:
        set_rng_state(state.rng[rank])
    else:
        run.say(f"note: this run trained in {len(state.rng)} process(es), this resume runs "
                f"{world}: the global batch stays the same, but each process's random stream "
                f"(dropout) is seeded anew, so this resume is not bit-exact")
        torch.manual_seed(run.config.seed + 1000 * state.step + rank)
    run.say(f"resumed from step {state.step} (epoch {state.epoch}, batch {state.index})")


def _loop(run: Run, max_steps: int, max_minutes: float | None) -> None:
    """Step until max_steps (or max_minutes): log, validate and save on the way."""
    config, state, engine, folder, say = run.config, run.state, run.engine, run.folder, run.say
    lengths = lengths_of(run.corpus.train)
    batches = make_batches(lengths, config.max_tokens, config.seed, state.epoch)
    resume.check_data_position(state, batches)
    src_pad, tgt_pad = padding_fraction(lengths, batches)
    say(f"{len(batches):,} batches per epoch (padding {src_pad:.1%} source, {tgt_pad:.1%} "
        f"target); per target token, loss is the label-smoothed loss (§5.4) and ppl the "
        f"perplexity, exp of the loss without smoothing (nll in metrics.jsonl)")
    meter = Meter(state, max_steps, folder, say)
    good = folder.path / state.last_good if state.last_good else None
    watch = LossWatch(config.vocab_size, state.recent_losses, pending=state.resumed_from,
                      good=good if good is not None and good.is_file() else None,
                      first=state.first_loss)
    saved_step = state.step                  # both checkpoint intervals count from the last save
    if state.step >= max_steps:
        say(f"step {state.step:,}: the run is already at or past {max_steps:,} steps "
            f"(--max-steps, or train_steps); nothing to do")
    engine.model.train()
    while state.step < max_steps:
        if state.index == len(batches):
            state.epoch, state.index = state.epoch + 1, 0
            batches = make_batches(lengths, config.max_tokens, config.seed, state.epoch)
        sums = train_step(engine, run.corpus.train, batches[state.index], config)
        watch.check(sums.mean_loss(), state.step + 1, folder.path)
        lr = run.optimizer.param_groups[0]["lr"]
        engine.scaler.step(run.optimizer)
        engine.scaler.update()
        run.scheduler.step()
        run.optimizer.zero_grad(set_to_none=True)
        state.step, state.index = state.step + 1, state.index + 1
        timeout = max_minutes is not None and meter.minutes() >= max_minutes
        done, overdue = distributed.rank0_says(
            state.step == max_steps or timeout, meter.since_save() >= 60 * config.ckpt_minutes,
            device=engine.device)
        meter.update(state.step, sums, lr, log=state.step % config.log_every == 0 or done)
        with meter.paused():                         # tokens/s counts training time only
            if state.step % config.eval_every == 0 or done:
                result = evaluate(engine.model, run.corpus.valid, config, engine.device)
                meter.validation(state.step, result)
            if state.step - saved_step >= config.ckpt_every or done or overdue:
                watch.saved(_save(run, meter, watch))
                saved_step = state.step
        if done:
            break
    meter.close()
    if state.step < max_steps:                             # --max-minutes ran out first
        say(f"step {state.step:,}: stopped by --max-minutes {max_minutes:g}, short of "
            f"{max_steps:,} steps; run again with --resume (and --max-minutes) to go on")


def _save(run: Run, meter: Meter, watch: LossWatch):
    """A checkpoint of everything --resume needs (every rank's RNG streams included); rotation
    spares the last good one and other runs' checkpoints. Returns its path (on rank 0)."""
    state = run.state
    state.rng = distributed.gather(rng_state())
    if not run.folder.active:
        return None
    state.elapsed = meter.training_seconds()
    state.recent_losses, state.first_loss = list(watch.recent), watch.first
    state.window = list(astuple(meter.window))
    state.last_good = watch.good.name if watch.good else None
    path = run.folder.path / checkpoint_file.checkpoint_name(state.step)
    run.folder.check_still_there()
    try:
        checkpoint_file.save(path, model=run.engine.model, config=run.config,
                             tokenizer=run.corpus.tokenizer, step=state.step,
                             training=state.to_dict(run.optimizer, run.scheduler,
                                                    run.engine.scaler),
                             run_id=state.run_id)
        rotate(run.folder.path, run.config.keep_last, keep=[watch.good] if watch.good else [],
               run_id=state.run_id)
        meter.saved()
    except KeyboardInterrupt:        # a stop during the write waits for the file to be whole
        if path.is_file():
            run.say(f"step {state.step}: saved {path} before stopping")
        raise
    run.say(f"step {state.step}: saved {path}")
    return path


def unsaved_steps(run: Run) -> str | None:
    """What a stop loses: the steps run since the newest checkpoint (None when it holds them
    all), named for the line that says the run was interrupted."""
    found = checkpoint_file.checkpoints(run.folder.path)
    last = checkpoint_file.step_in_name(found[-1]) if found else 0
    if run.state.step <= last:
        return None
    if not found:
        lost = "its one step is" if run.state.step == 1 else f"its {run.state.step:,} steps are"
        return (f"no checkpoint was saved, so {lost} lost (ckpt_every or ckpt_minutes saves "
                f"sooner)")
    lost = (f"step {last + 1:,} came after the newest checkpoint, {found[-1].name}, and is"
            if run.state.step == last + 1 else f"steps {last + 1:,} to {run.state.step:,} came "
            f"after the newest checkpoint, {found[-1].name}, and are")
    return f"{lost} lost; --resume continues from it"


def show_at_work(model, corpus, config, run_dir, n: int = 3):
    """End a run by showing what it learned (a few test sentences decoded with §6.1's beam
    search) and the commands that come next, translating the first of those sentences."""
    model.eval()
    tokenizer = corpus.tokenizer
    kept = [(s, r) for s, r in zip(corpus.test_src, corpus.test_ref)     # as training keeps
            if len(tokenizer.encode(s)) + 1 <= config.longest_sentence()]  # them, EOS counted
    sentences = ([(s, r) for s, r in kept if len(tokenizer.encode(s)) < 20][:n]
                 or sorted(kept, key=lambda pair: len(tokenizer.encode(pair[0])))[:n])
    if sentences:
        show_translations(model, config, tokenizer, sentences)
    else:                                   # every test sentence is longer than training's
        print(f"\nNo test sentence is as short as the longest training keeps "
              f"({config.longest_sentence()} tokens), so the model is not shown at work.")
    show_next(config, run_dir, sentences)


def show_translations(model, config, tokenizer, sentences) -> None:
    """The test sentences decoded with §6.1's beam search, beside their references."""
    src = source_batch([tokenizer.encode(s) for s, _ in sentences],
                       next(model.parameters()).device)
    hyps = beam_search(model, src, config.beam_size, config.alpha, config.max_extra)
    shown = "".join(s + r + tokenizer.decode(h.tokens) for (s, r), h in zip(sentences, hyps))
    if unwritable_on_stdout(shown) and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")    # the model is saved: show it all
    print(f"\nThe model at work on {len(sentences)} sentences of the test set "
          f"(beam {config.beam_size}, alpha {config.alpha}):")
    for (source, reference), hyp in zip(sentences, hyps):
        print(f"  input      {source}\n  output     {tokenizer.decode(hyp.tokens)}\n"
              f"  reference  {reference}\n", flush=True)         # a log shows them as they come


def show_next(config, run_dir, sentences) -> None:
    """The commands that come next: the checkpoint, translating with it (the first sentence
    shown, if any), averaging, the chapters and the full corpus."""
    found = checkpoint_file.checkpoints(run_dir)
    if not found:
        return
    last, n = found[-1], min(config.keep_last, len(found))    # what the folder holds
    print(f"Next:\n  the checkpoint         {last}")
    if sentences:
        print(f"  translate with it      echo {shell_word(sentences[0][0])} | "
              f"python -m annotated.translate --checkpoint {shell_word(str(last))}")
    if n > 1:
        print(f"  average the last ones  python -m annotated.checkpoint average --last {n} "
              f"{shell_word(str(run_dir))} --out {shell_word(str(run_dir / 'average.pt'))}")
    if config.dataset in ("copy", "multi30k_sample"):
        if CHAPTERS.is_dir():                     # a clone of the project, not an installed copy
            here = Path.cwd()
            where = CHAPTERS.relative_to(here) if CHAPTERS.is_relative_to(here) else CHAPTERS
            print(f"  read the chapters      jupyter lab {shell_word(str(where))}/")
        print("  train on all of Multi30k (29,000 pairs)\n"
              "                         python -m annotated.train --config multi30k "
              "--data-dir DIR    # DIR holds multi30k/train.en.gz ...")
    sys.stdout.flush()
