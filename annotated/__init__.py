"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017).

The top level is the paper, one module per idea, in the order the chapters teach them (each
mirrored, forward and backward, by reference_numpy/):

    attention    eq. (1), scaled dot-product attention
    masks        padding and subsequent masks (True = attend)
    multihead    §3.2.2, multi-head attention
    feedforward  eq. (2), position-wise feed-forward network
    positional   §3.5, sinusoidal and learned positional encodings
    embeddings   §3.4, embeddings scaled by sqrt(d_model)
    sublayer     §3.1, LayerNorm(x + Dropout(Sublayer(x)))
    encoder, decoder, model   §3.1, the stacks and the full encoder-decoder
    loss         §5.4, label smoothing
    optim        §5.3, Adam and the warmup schedule
    configs      base, big, every Table 3 row, the small presets; parsing and validation

Four commands, `python -m annotated.<command>`, each a short module that parses arguments and
calls the machinery:

    train        training (§5), one CPU to 8 GPUs under torchrun
    translate    translating text with a checkpoint (§6.1)
    evaluate     sacreBLEU and the paper's tokenized BLEU
    checkpoint   averaging (§6.1), halving and verifying checkpoints

The machinery lives in sub-packages, each of which imports only from those below it, from the
ground up: `base` (errors, files, settings, the command-line convention, the thread rule),
`data` (the datasets, tokenizer, corpora, batching), `store` (the checkpoint file),
`inference` (beam search, translation, BLEU) and `training` (the loop, one step, torchrun, the
run folder), which uses both. Above the commands stands the teaching layer, `notebooks` (the
chapters' helpers and figures), which nothing else imports; `pretrained` holds a trained
Multi30k English->German model that ships with the project.
"""
import atexit
import contextlib

from annotated.base.signals import command_starting, starting_a_command

# `python -m annotated.<command>` is starting: Python imports this package first, and torch
# with it, which takes seconds; a stop meanwhile waits for the imports, and imports that cannot
# work say why in one line (command_starting).
with command_starting() if starting_a_command() else contextlib.nullcontext():
    from annotated.masks import batch_masks, padding_mask, subsequent_mask, target_mask
    from annotated.model import EncoderDecoder, ModelConfig, count_parameters, make_model

from annotated.base.cli import not_a_command  # noqa: E402

atexit.register(not_a_command)           # `python -m experiments.scoring` says it is no command

__all__ = ["configs", "make_model", "EncoderDecoder", "ModelConfig", "count_parameters",
           "batch_masks", "padding_mask", "subsequent_mask", "target_mask"]


def __getattr__(name):
    # `annotated.configs` is imported on first use, so `python -m annotated.configs` runs cleanly.
    if name == "configs":
        import importlib
        return importlib.import_module("annotated.configs")
    raise AttributeError(f"module 'annotated' has no attribute {name!r}")
