"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), one module per idea.

    attention    eq. (1), scaled dot-product attention
    masks        padding and subsequent masks (True = attend)
    multihead    §3.2.2, multi-head attention
    feedforward  eq. (2), position-wise feed-forward network
    positional   §3.5, sinusoidal and learned positional encodings
    embeddings   §3.4, embeddings scaled by sqrt(d_model)
    sublayer     §3.1, LayerNorm(x + Dropout(Sublayer(x)))
    encoder, decoder, model   §3.1, the stacks and the full encoder-decoder
    configs      base, big, every Table 3 row, and the small presets copy and multi30k
    tokenizer    §5.1, the shared BPE vocabulary (sentencepiece); PAD/UNK/BOS/EOS = 0/1/2/3
    data         §5.1, the copy task, Multi30k and WMT14 as token ids
    batching     §5.1, batches by token count, shards for DDP and accumulation, collation
    loss         §5.4, label smoothing
    optim        §5.3, Adam and the warmup schedule
    train        §5, the training command (1 CPU to N GPUs)
    checkpoint   atomic checkpoints, resume, averaging (§6.1)
    decoding     §6.1, greedy and beam search with cached incremental decoding
    translate, evaluate   the translation command and sacreBLEU scoring
    prepare_wmt14         downloads and prepares the paper's WMT14 data
    flops        FLOPs from the model's shapes (MFU, Table 2)
    notebook     helpers for the chapters
"""
from annotated.masks import batch_masks, padding_mask, subsequent_mask, target_mask
from annotated.model import EncoderDecoder, count_parameters, make_model

__all__ = ["configs", "make_model", "EncoderDecoder", "count_parameters", "batch_masks",
           "padding_mask", "subsequent_mask", "target_mask"]


def __getattr__(name):
    # `annotated.configs` is imported on first use, so `python -m annotated.configs` runs cleanly.
    if name == "configs":
        import importlib
        return importlib.import_module("annotated.configs")
    raise AttributeError(f"module 'annotated' has no attribute {name!r}")
