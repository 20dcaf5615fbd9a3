"""Training (§5): one command from a laptop CPU to a multi-GPU machine.

    python -m annotated.train --config copy
    python -m annotated.train --config multi30k --data-dir ../shared/data --out runs/m30k
    python -m annotated.train --out runs/m30k --resume            # continue exactly
    torchrun --nproc_per_node=8 -m annotated.train --config base --data-dir D accum_steps=1

`key=value` arguments override fields of the preset (annotated.configs), parsed by the
field's type. torchrun sets RANK / WORLD_SIZE / LOCAL_RANK; the same script then runs
DistributedDataParallel over NCCL (GPUs) or gloo (CPU). --max-steps K stops at global step K
(default train_steps), --max-minutes M after M minutes of training; --resume takes the run's
config from its newest checkpoint (key=value still applies, e.g. train_steps=... to go on).

One optimizer step consumes one global batch of about max_tokens source and max_tokens target
tokens (§5.1, annotated.batching). Every rank takes its `shard` of it, accum_steps
micro-batches. The objective is the label-smoothed cross-entropy (§5.4) summed over the
step's target tokens and divided by their GLOBAL count (all-reduced first), so the gradient is
the same whether the batch is computed by one process or spread over many; only the order of
floating-point additions differs. Adam with the warmup-then-1/sqrt(step) rate of §5.3
(annotated.optim). The paper clips no gradients, and neither do we.

Checkpoints (annotated.checkpoint) are written every ckpt_every steps or ckpt_minutes
minutes, whichever comes first, and at the end; the newest keep_last stay on disk. They hold
everything a resumed run needs to continue bit for bit on CPU: weights, optimizer and
schedule, the RNG states of every rank, and the data position (epoch, batch index).
A NaN or infinite loss stops the run before the update is applied; checkpoints never hold
non-finite weights. Logged per step (progress bar) and every log_every steps (stdout and
RUN_DIR/metrics.jsonl): smoothed loss, nll, perplexity, token accuracy, learning rate and
tokens/s (source + target, padding excluded); validation every eval_every steps. Mixed
precision (`amp=bf16|fp16`) and `compile=true` apply on GPU only.
"""
import argparse
import json
import math
import os
import shlex
import sys
import time
from contextlib import nullcontext
from dataclasses import fields
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from annotated import checkpoint
from annotated.batching import collate, lengths_of, make_batches, padding_fraction, shard
from annotated.configs import PRESETS, Config, apply_overrides, get
from annotated.data import data_location, load_corpus
from annotated.decoding import beam_search, source_batch
from annotated.loss import label_smoothed_loss
from annotated.masks import batch_masks
from annotated.model import count_parameters
from annotated.optim import make_optimizer
from annotated.tokenizer import PAD, atomic_open


SMALL_MODEL = 5_000_000   # parameters; smaller models train on one CPU thread by default


def init_distributed():
    """(rank, world_size, device): torchrun's environment, or one process."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return rank, world, device


def all_reduce(t: torch.Tensor) -> torch.Tensor:
    if dist.is_initialized():
        dist.all_reduce(t)
    return t


def rank0_says(*flags: bool, device) -> list[bool]:
    """Rank 0's yes/no decisions, shared with every rank (clocks differ across ranks)."""
    t = torch.tensor([float(f) for f in flags], device=device)
    if dist.is_initialized():
        dist.broadcast(t, 0)
    return [bool(f) for f in t.tolist()]


def forward_stats(model, src, tgt_in, tgt_out, eps_ls):
    src_mask, tgt_mask = batch_masks(src, tgt_in, PAD)    # (b, 1, 1, S), (b, 1, T, T)
    logits = model(src, tgt_in, src_mask, tgt_mask)  # (b, T, V)
    return label_smoothed_loss(logits, tgt_out, pad=PAD, eps_ls=eps_ls)


def train_step(net, ddp, pairs, batch, micro, config, device, autocast, scaler):
    """Forward and backward over this rank's micro-batches of one global batch. Returns the
    sums over all ranks: (smoothed loss, nll, correct, target tokens, source tokens)."""
    tensors = [collate(pairs, idx) for idx in micro if idx]
    weight = 1.0
    if not tensors:       # fewer examples than shards: join the gradient all-reduce with loss 0
        tensors, weight = [collate(pairs, batch[:1])], 0.0
    world = dist.get_world_size() if dist.is_initialized() else 1
    tokens = all_reduce(torch.tensor(weight * sum(int((t != PAD).sum()) for *_, t in tensors),
                                     dtype=torch.float64, device=device))
    sums = torch.zeros(5, dtype=torch.float64, device=device)
    for i, (src, tgt_in, tgt_out) in enumerate(tensors):
        src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
        last = i == len(tensors) - 1
        with nullcontext() if ddp is None or last else ddp.no_sync():  # all-reduce grads once
            with autocast():
                stats = forward_stats(net, src, tgt_in, tgt_out, config.eps_ls)
            # step loss = (sum over every rank's micro-batches of the smoothed loss) / tokens;
            # DDP averages gradients over ranks, so * world makes that mean the global sum
            scaler.scale(stats.loss * (weight * world / tokens.to(stats.loss.dtype))).backward()
        sums += weight * torch.stack([stats.loss.detach().double(), stats.nll.detach().double(),
                                      stats.correct.double(), stats.tokens.double(),
                                      (src != PAD).sum().double()])
    return all_reduce(sums)


@torch.no_grad()
def evaluate(model, pairs, config, device, rank, world):
    """Smoothed loss, perplexity and accuracy per target token on `pairs`, over all ranks."""
    model.eval()
    sums = torch.zeros(4, dtype=torch.float64, device=device)
    for batch in make_batches(lengths_of(pairs), config.max_tokens, config.seed, 0):
        for idx in shard(batch, rank, world):
            if idx:
                src, tgt_in, tgt_out = (t.to(device) for t in collate(pairs, idx))
                s = forward_stats(model, src, tgt_in, tgt_out, config.eps_ls)
                sums += torch.stack([s.loss.double(), s.nll.double(), s.correct.double(),
                                     s.tokens.double()])
    model.train()
    loss, nll, correct, tokens = all_reduce(sums).tolist()
    return {"loss": loss / tokens, "ppl": math.exp(nll / tokens), "accuracy": correct / tokens}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m annotated.train", description=__doc__.split("\n")[0])
    p.add_argument("--config", help="preset: " + ", ".join(PRESETS))
    p.add_argument("--data-dir", help="folder with the corpora (default: env ANNOTATED_DATA_DIR)")
    p.add_argument("--cache-dir", help="tokenizer and download cache (default: env "
                                       "ANNOTATED_CACHE_DIR or ~/.cache/annotated-transformer)")
    p.add_argument("--out", help="run folder for checkpoints and metrics.jsonl (default runs/CONFIG)")
    p.add_argument("--max-steps", type=int, help="stop after this global step (default train_steps)")
    p.add_argument("--max-minutes", type=float, help="also stop after this many minutes")
    p.add_argument("--threads", type=int, help="CPU threads (default: 1 for models under "
                   f"{SMALL_MODEL // 10**6} million parameters, else one per core)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="override config fields")
    return p, p.parse_intermixed_args(argv)


def main(argv=None):
    parser, args = parse_args(argv)
    if args.out is None and args.config is None:
        parser.error("give --config NAME (and/or --out RUN_DIR with --resume)")
    out = Path(args.out or Path("runs") / args.config)
    try:
        config, resumed = run_config(args, out)
    except ValueError as e:
        parser.error(str(e))
    return train(config, out, args, resumed)


def run_config(args, out: Path):
    """(config, resumed checkpoint or None) for a run in `out`. A folder that already holds
    checkpoints is continued with --resume, or when --config and the overrides ask for the very
    config it was started with (so the same command can be repeated); anything else is an
    error, so two different runs never mix in one folder."""
    found = checkpoint.checkpoints(out)
    if not found:
        if args.resume:
            raise ValueError(f"--resume: no checkpoint in {out}")
        return apply_overrides(get(args.config), args.overrides), None
    resumed = checkpoint.load(found[-1])
    saved = checkpoint.config_from(resumed, found[-1])
    if not args.resume:
        requested = apply_overrides(get(args.config), args.overrides)
        changed = [f"{f.name} ({getattr(saved, f.name)!r} there, {getattr(requested, f.name)!r} "
                   f"here)" for f in fields(Config)
                   if getattr(saved, f.name) != getattr(requested, f.name)]
        if changed:
            raise ValueError(f"{out} already holds a run of another config: "
                             f"{', '.join(changed)}; pass --resume to continue that run or "
                             f"choose another --out")
    if resumed["training"] is None:
        raise ValueError(f"--resume: {found[-1]} holds no training state (averaged?)")
    return apply_overrides(saved, args.overrides if args.resume else []), resumed


def train(config: Config, out: Path, args, resumed):
    rank, world, device = init_distributed()
    is_main = rank == 0
    # the data location: the flag or ANNOTATED_DATA_DIR, else the one the run was started with
    data_dir = data_location(args.data_dir) or (resumed and resumed["training"].get("data_dir"))

    def say(message):                    # above the progress bar; flushed, for logs in files
        if is_main:
            tqdm.write(message)
            sys.stdout.flush()

    if is_main:
        out.mkdir(parents=True, exist_ok=True)
        for stale in checkpoint.remove_temporaries(out):
            say(f"removed {stale.name}, left by an interrupted checkpoint write")
        if args.resume and args.config:
            say(f"--resume: using the run's saved config; --config {args.config} is not read")
    # rank 0 first: it may download data or train the tokenizer into the shared cache
    if dist.is_initialized() and not is_main:
        dist.barrier()
    corpus = load_corpus(config, data_dir, args.cache_dir, log=say)
    if dist.is_initialized() and is_main:
        dist.barrier()
    tokenizer, pairs = corpus.tokenizer, corpus.train
    if resumed and resumed["tokenizer"]["bytes"] != tokenizer.to_bytes():
        raise SystemExit(f"error: the tokenizer built now differs from the one in the checkpoint "
                         f"in {out}; was the data or the cache changed?")

    torch.manual_seed(config.seed)                             # same initial weights on all ranks
    model = config.make_model(tokenizer.vocab_size).to(device)
    threads = args.threads or (1 if count_parameters(model) < SMALL_MODEL else None)
    if threads and device.type == "cpu":
        torch.set_num_threads(threads)
    optimizer, scheduler = make_optimizer(model, config.d_model, config.warmup_steps,
                                          config.lr_factor)
    cuda = device.type == "cuda"
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config.amp) if cuda else None
    autocast = (lambda: torch.autocast("cuda", dtype=amp)) if amp else nullcontext
    scaler = torch.amp.GradScaler("cuda", enabled=amp is torch.float16)
    if not cuda and (config.amp != "none" or config.compile):
        say(f"amp={config.amp} compile={config.compile}: both apply on GPU only, not used here")
    ddp = (DistributedDataParallel(model, device_ids=[device.index] if cuda else None,
                                   forward_sync_buffers=False) if world > 1 else None)
    net = ddp or model
    if config.compile and cuda:
        net = torch.compile(net)

    step, epoch, index, elapsed = 0, 0, 0, 0.0
    if resumed:
        t = resumed["training"]
        model.load_state_dict(resumed["model"])
        optimizer.load_state_dict(t["optimizer"])
        scheduler.load_state_dict(t["scheduler"])
        if t["scaler"]:                      # empty when saved without fp16 loss scaling
            scaler.load_state_dict(t["scaler"])
        step, epoch, index, elapsed = resumed["step"], t["epoch"], t["index"], t["elapsed"]
        if len(t["rng"]) == world:
            checkpoint.set_rng_state(t["rng"][rank])
        else:
            say(f"world size changed ({len(t['rng'])} -> {world}): RNG streams reseeded, "
                f"so this resume is not bit-exact")
            torch.manual_seed(config.seed + 1000 * step + rank)
        say(f"resumed from step {step} (epoch {epoch}, batch {index})")
    else:
        torch.manual_seed(config.seed + rank)                  # each rank its own dropout masks
    continuing = resumed is not None
    del resumed

    lengths = lengths_of(pairs)
    batches = make_batches(lengths, config.max_tokens, config.seed, epoch)
    src_pad, tgt_pad = padding_fraction(lengths, batches)
    say(f"{config.dataset}: {len(pairs):,} training pairs, {len(batches):,} batches per epoch "
        f"(padding {src_pad:.1%} source, {tgt_pad:.1%} target); model "
        f"{count_parameters(model):,} parameters; {world} process(es) on {device}"
        + (f", {torch.get_num_threads()} thread(s) each (--threads N to change)"
           if device.type == "cpu" else ""))
    metrics = out / "metrics.jsonl"
    if is_main and continuing and metrics.exists():            # drop lines the resume redoes
        kept = [ln for ln in metrics.read_text().splitlines() if json.loads(ln)["step"] <= step]
        with atomic_open(metrics, "w") as f:
            f.writelines(ln + "\n" for ln in kept)

    def record(entry):
        if is_main:
            with metrics.open("a") as f:
                f.write(json.dumps(entry) + "\n")

    def save():
        rng = [checkpoint.rng_state()]                         # every rank's, gathered
        if dist.is_initialized():
            rng, mine = [None] * world, rng[0]
            dist.all_gather_object(rng, mine)
        if is_main:
            training = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                        "scaler": scaler.state_dict(), "rng": rng, "epoch": epoch,
                        "index": index, "elapsed": elapsed + time.time() - start,
                        "data_dir": str(data_dir) if data_dir else None}
            path = checkpoint.save(out / checkpoint.checkpoint_name(step), model=model,
                                   config=config, tokenizer=tokenizer, step=step,
                                   training=training)
            checkpoint.rotate(out, config.keep_last)
            say(f"step {step}: saved {path}")

    def validate():
        result = evaluate(model, corpus.valid, config, device, rank, world)
        record({"step": step, "split": "valid", **result})
        say(f"step {step} | valid loss {result['loss']:.3f} | ppl {result['ppl']:.2f} | "
            f"acc {result['accuracy']:.3f}")

    max_steps = args.max_steps if args.max_steps is not None else config.train_steps
    bar = tqdm(total=max_steps, initial=step, desc="train", dynamic_ncols=True,
               disable=not is_main or not sys.stderr.isatty())
    start = last_save = last_log = time.time()
    saved_step = step                    # both checkpoint intervals count from the last save
    window = torch.zeros(5, dtype=torch.float64)               # sums since the last log line
    if step >= max_steps:
        say(f"step {step}: already at --max-steps / train_steps {max_steps}; nothing to do")
    model.train()
    while step < max_steps:
        if index == len(batches):
            epoch, index = epoch + 1, 0
            batches = make_batches(lengths, config.max_tokens, config.seed, epoch)
        batch = batches[index]
        sums = train_step(net, ddp, pairs, batch, shard(batch, rank, world, config.accum_steps),
                          config, device, autocast, scaler).cpu()
        loss = (sums[0] / sums[3]).item()
        if not math.isfinite(loss):
            bar.close()
            last = checkpoint.checkpoints(out)
            raise SystemExit(f"error: step {step + 1}: training loss is {loss}; stopping before "
                             f"the update. Last good checkpoint: "
                             f"{last[-1] if last else 'none written yet'}" if is_main else 1)
        lr = optimizer.param_groups[0]["lr"]
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step, index = step + 1, index + 1
        window += sums
        now = time.time()
        rate = window[3:].sum().item() / max(now - last_log, 1e-9)   # source + target tokens/s
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}", ppl=f"{math.exp(sums[1] / sums[3]):.2f}",
                        lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}", refresh=False)
        timeout = args.max_minutes is not None and now - start >= 60 * args.max_minutes
        done, overdue = rank0_says(step == max_steps or timeout,
                                   now - last_save >= 60 * config.ckpt_minutes, device=device)
        if step % config.log_every == 0 or done:
            w_loss, w_nll, w_correct, w_tokens, _ = window.tolist()
            entry = {"step": step, "split": "train", "loss": w_loss / w_tokens,
                     "nll": w_nll / w_tokens, "ppl": math.exp(w_nll / w_tokens),
                     "accuracy": w_correct / w_tokens, "lr": lr, "tokens_per_s": rate,
                     "elapsed": elapsed + now - start}
            record(entry)
            say(f"step {step} | loss {entry['loss']:.3f} | ppl {entry['ppl']:.2f} | "
                f"acc {entry['accuracy']:.3f} | lr {lr:.2e} | {rate:,.0f} tok/s")
            window.zero_()
            last_log = now
        if step % config.eval_every == 0 or done:
            validate()
        if step - saved_step >= config.ckpt_every or done or overdue:
            save()
            last_save, saved_step = time.time(), step
        last_log += time.time() - now            # tokens/s counts training time only
        if done:
            break
    bar.close()
    if is_main:
        show_at_work(model, corpus, config, out)
    if dist.is_initialized():
        dist.destroy_process_group()


def show_at_work(model, corpus, config, out: Path, n: int = 3):
    """End a run by showing what it learned (a few test sentences decoded with §6.1's beam
    search) and the commands that come next."""
    model.eval()
    tokenizer = corpus.tokenizer
    sentences = [(s, r) for s, r in zip(corpus.test_src, corpus.test_ref)
                 if len(tokenizer.encode(s)) < 20][:n]
    src = source_batch([tokenizer.encode(s) for s, _ in sentences],
                       next(model.parameters()).device)
    hyps = beam_search(model, src, config.beam_size, config.alpha,
                       config.max_extra)
    print(f"\nThe model at work on {len(sentences)} test sentences it never saw in training "
          f"(beam {config.beam_size}, alpha {config.alpha}):")
    for (source, reference), hyp in zip(sentences, hyps):
        print(f"  input      {source}\n  output     {tokenizer.decode(hyp.tokens)}\n"
              f"  reference  {reference}\n")
    found = checkpoint.checkpoints(out)
    if not found:
        return
    last = found[-1]
    example = "4 9 5 7 7 10" if config.dataset == "copy" else sentences[0][0]
    print(f"Next:\n  the checkpoint         {last}\n"
          f"  translate with it      echo {shlex.quote(example)} | "
          f"python -m annotated.translate --checkpoint {shlex.quote(str(last))}\n"
          f"  average the last ones  python -m annotated.checkpoint average --last "
          f"{config.keep_last} {shlex.quote(str(out))} --out {shlex.quote(str(out / 'average.pt'))}")
    if config.dataset in ("copy", "multi30k_sample"):
        print("  read the chapters      jupyter lab chapters/\n"
              "  train on all of Multi30k (29,000 pairs; an hour on 2 CPU cores)\n"
              "                         python -m annotated.train --config multi30k "
              "--data-dir DIR    # DIR holds multi30k/train.en.gz ...")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
