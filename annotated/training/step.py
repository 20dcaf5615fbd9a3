"""One optimizer step's worth of computation (§5): forward, label-smoothed loss, backward.

The objective is the label-smoothed cross-entropy (§5.4) summed over the step's target tokens
and divided by their GLOBAL count (all-reduced first), so the gradient is the same whether one
process computes the global batch or many share it, and whether a process takes its share in
one micro-batch or several (gradient accumulation): only the order of floating-point additions
differs. The paper clips no gradients, and neither do we.

`Engine` is what depends on the machine: the model wrapped for several processes
(DistributedDataParallel) and compiled (`compile=true`), the device, and mixed precision
(`amp=bf16` on CPU or GPU; `amp=fp16` with loss scaling on GPU only). The step itself does not
care which of these it gets. Its forward pass stops before the output projection
(training.decoder_states, which also picks the attention kernels), and the projection and the
loss are computed together a chunk of tokens at a time (training.output_loss): at the paper's
batch the logits alone are 25,000 x 37,000 numbers, which the plain loss of annotated.loss
reads and writes about ten times. `cuda_graphs=true` (on a GPU, with compile=true) replays
the compiled forward and backward passes as CUDA graphs, one for each of a few padded batch
shapes (training.buckets), so that the GPU no longer waits for the CPU to launch each kernel.
On a CPU without compile, dropout draws its random numbers four elements at a time
(training.dropout), and the linear layers' matrix products run through oneDNN, whose kernels
use the processor's widest instructions whoever made it (training.onednn).
"""
import functools
import math
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import astuple, dataclass

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from annotated.base.errors import ConfigError
from annotated.data.batching import collate, lengths_of, make_batches, shard
from annotated.data.tokenizer import PAD
from annotated.loss import label_smoothed_loss
from annotated.masks import batch_masks
from annotated.training import distributed
from annotated.training.buckets import Bucketed
from annotated.training.decoder_states import DecoderStates
from annotated.training.dropout import use_drawn_dropout
from annotated.training.onednn import use_onednn_linear
from annotated.training.output_loss import OutputLoss

AMP_DTYPES = {"none": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class Engine:
    """How a step runs on this machine. `model` holds the weights that checkpoints store;
    `net` is what the forward pass calls: the model up to its output projection, inside DDP,
    compiled, replayed as CUDA graphs; `loss` is the output projection and the loss."""
    model: nn.Module
    net: Callable
    ddp: DistributedDataParallel | None
    device: torch.device
    amp: torch.dtype | None
    scaler: torch.amp.GradScaler
    loss: OutputLoss

    def autocast(self):
        return torch.autocast(self.device.type, dtype=self.amp) if self.amp else nullcontext()


def check_device(config, device: torch.device) -> None:
    """Refuse the settings that need a GPU on another device (training checks this before it
    reads any data)."""
    if config.amp == "fp16" and device.type != "cuda":
        raise ConfigError("amp=fp16 needs a GPU (its loss scaling is CUDA's); on a CPU use "
                          "amp=bf16 or amp=none")
    if config.cuda_graphs and device.type != "cuda":
        raise ConfigError("cuda_graphs=true needs a GPU (the graphs are CUDA's); on a CPU "
                          "leave it false")
    if config.compile:
        check_compiler(device)


@functools.cache
def check_compiler(device: torch.device) -> None:
    """Compile a one-line function on `device`, so that a machine where torch.compile cannot
    build code (no C++ compiler for a CPU, no Triton for a GPU) is told before any data is read,
    not at the first step."""
    try:
        torch.compile(lambda x: 2 * x + 1)(torch.ones(4, device=device))
    except Exception as error:                      # whatever stopped the build, in its words
        cause = (str(error).strip() or type(error).__name__).splitlines()[0]
        needs = "a C++ compiler (g++, or the one named by $CXX)" if device.type == "cpu" \
            else "Triton and a C compiler"
        raise ConfigError(f"compile=true: torch.compile cannot build code on this {device.type} "
                          f"({cause}); it needs {needs}: install it, or set compile=false") \
            from None


def make_engine(model: nn.Module, config, device: torch.device) -> Engine:
    """Wrap `model` for config.amp, config.compile and config.cuda_graphs on `device`, and in
    DDP under torchrun."""
    check_device(config, device)
    amp = AMP_DTYPES[config.amp]
    if device.type == "cpu" and not config.compile:
        use_drawn_dropout(model)                     # cheaper random draws (training.dropout)
        use_onednn_linear(model)                     # oneDNN matrix products (training.onednn)
    ddp = None
    states = DecoderStates(model, spelled_out=device.type == "cpu" and amp is not None)
    if distributed.active():
        ddp = DistributedDataParallel(states, device_ids=[device.index] if device.type == "cuda"
                                      else None)
    net = ddp or states
    if config.compile:
        net = torch.compile(net, mode="reduce-overhead" if config.cuda_graphs else None)
    if config.cuda_graphs:
        net = Bucketed(net)
    scaler = torch.amp.GradScaler(device.type, enabled=amp is torch.float16)
    return Engine(model, net, ddp, device, amp, scaler,
                  OutputLoss(model.generator, compile=config.compile))


@dataclass
class StepSums:
    """Sums over a step's (or several steps') target tokens of all ranks, each by its name:
    what the meter logs and LossWatch judges."""
    loss: float = 0.0               # smoothed cross-entropy
    nll: float = 0.0                # -log p(y)
    correct: float = 0.0            # tokens whose y has the highest probability
    tokens: float = 0.0             # target tokens (padding excluded)
    source_tokens: float = 0.0

    def __add__(self, other: "StepSums") -> "StepSums":
        return StepSums(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def mean_loss(self) -> float:
        return self.loss / self.tokens

    def perplexity(self) -> float:
        return safe_exp(self.nll / self.tokens)


def forward_stats(model, src, tgt_in, tgt_out, eps_ls, loss=label_smoothed_loss):
    """Label-smoothed loss statistics of one batch (annotated.loss), summed over its tokens."""
    src_mask, tgt_mask = batch_masks(src, tgt_in, PAD)      # (b, 1, 1, S), (b, 1, T, T)
    logits = model(src, tgt_in, src_mask, tgt_mask)          # (b, T, V)
    return loss(logits, tgt_out, pad=PAD, eps_ls=eps_ls)


def train_step(engine: Engine, pairs, batch: list[int], config) -> StepSums:
    """Forward and backward over this rank's micro-batches of the global `batch`; the sums
    over all ranks."""
    micro = shard(batch, distributed.rank(), distributed.world_size(), config.accum_steps)
    tensors = [collate(pairs, idx) for idx in micro if idx]
    weight = 1.0
    if not tensors:       # fewer examples than shards: join the gradient all-reduce with loss 0
        tensors, weight = [collate(pairs, batch[:1])], 0.0
    device, world = engine.device, distributed.world_size()
    tokens = distributed.all_reduce(torch.tensor(
        weight * sum(int((t != PAD).sum()) for *_, t in tensors), dtype=torch.float64,
        device=device))
    sums = torch.zeros(5, dtype=torch.float64, device=device)      # StepSums' fields, in order
    for i, (src, tgt_in, tgt_out) in enumerate(tensors):
        src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
        last = i == len(tensors) - 1
        with nullcontext() if engine.ddp is None or last else engine.ddp.no_sync():
            with engine.autocast():                          # grads are all-reduced once
                stats = engine.loss(engine.net(src, tgt_in), tgt_out, pad=PAD,
                                    eps_ls=config.eps_ls)
            # step loss = (sum over every rank's micro-batches of the smoothed loss) / tokens;
            # DDP averages gradients over ranks, so * world makes that mean the global sum
            loss = stats.loss * (weight * world / tokens.to(stats.loss.dtype))
            engine.scaler.scale(loss).backward()
        sums += weight * torch.stack([stats.loss.detach().double(), stats.nll.detach().double(),
                                      stats.correct.double(), stats.tokens.double(),
                                      (src != PAD).sum().double()])
    return StepSums(*distributed.all_reduce(sums).tolist())    # one all-reduce for the five


@torch.no_grad()
def evaluate(model, pairs, config, device) -> dict:
    """Smoothed loss, negative log-likelihood (whose exp is the perplexity), perplexity and
    accuracy per target token on `pairs`, over all ranks; the model is left in the mode it was
    found in."""
    was_training = model.training
    model.eval()
    sums = torch.zeros(4, dtype=torch.float64, device=device)
    for batch in make_batches(lengths_of(pairs), config.max_tokens, config.seed, 0):
        for idx in shard(batch, distributed.rank(), distributed.world_size()):
            if idx:
                src, tgt_in, tgt_out = (t.to(device) for t in collate(pairs, idx))
                s = forward_stats(model, src, tgt_in, tgt_out, config.eps_ls)
                sums += torch.stack([s.loss.double(), s.nll.double(), s.correct.double(),
                                     s.tokens.double()])
    model.train(was_training)
    loss, nll, correct, tokens = distributed.all_reduce(sums).tolist()
    return {"loss": loss / tokens, "nll": nll / tokens, "ppl": safe_exp(nll / tokens),
            "accuracy": correct / tokens}


def safe_exp(x: float) -> float:
    """exp(x), or inf where it overflows (the perplexity of a diverging run)."""
    return math.exp(x) if x < 700 else math.inf
