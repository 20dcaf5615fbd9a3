"""Training-step speed of the annotated model against torch.nn.Transformer.

Both models have identical size: the same stacks, one shared embedding matrix tied to the
output projection, sinusoidal positions, the same label-smoothed loss and Adam. One step =
forward, loss, backward, optimizer step, on the same padded batch, same threads, timed
round-robin. Prints target tokens per second for each and the ratio (target: >= 1.0).

    python -m benchmarks.train_step_vs_nn_transformer [--threads 2] [--repeats 5]
"""
import math

import torch
from torch import nn

from annotated import batch_masks, configs
from annotated.base.cli import ArgumentParser, command
from annotated.loss import label_smoothed_loss
from annotated.masks import subsequent_mask
from annotated.model import EncoderDecoder
from annotated.positional import sinusoid_table
from benchmarks.common import add_timing_arguments, interleaved_times, set_threads

PAD = 0


class TorchTransformer(nn.Module):
    """The same architecture from PyTorch's building blocks (post-LN, no final stack norms)."""

    def __init__(self, vocab, N, d_model, d_ff, h, P_drop):
        super().__init__()
        enc = nn.TransformerEncoderLayer(d_model, h, d_ff, P_drop, batch_first=True)
        dec = nn.TransformerDecoderLayer(d_model, h, d_ff, P_drop, batch_first=True)
        self.core = nn.Transformer(d_model, h, batch_first=True,
                                   custom_encoder=nn.TransformerEncoder(enc, N, norm=None),
                                   custom_decoder=nn.TransformerDecoder(dec, N, norm=None))
        self.embed = nn.Embedding(vocab, d_model)
        self.dropout = nn.Dropout(P_drop)
        self.d_model = d_model

    def forward(self, src, tgt):
        def embed(x):
            pe = sinusoid_table(x.size(1), self.d_model)
            return self.dropout(self.embed(x) * math.sqrt(self.d_model) + pe)
        causal = ~subsequent_mask(tgt.size(1))[0, 0]     # nn.Transformer: True = blocked
        out = self.core(embed(src), embed(tgt), tgt_mask=causal, tgt_is_causal=True,
                        src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD,
                        memory_key_padding_mask=src == PAD)
        return out @ self.embed.weight.T                 # tied pre-softmax projection


def batch(n_sent, length, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(length // 2, length + 1, (n_sent,), generator=g)
    src = torch.randint(4, vocab, (n_sent, length), generator=g)
    tgt = torch.randint(4, vocab, (n_sent, length + 1), generator=g)
    for i, n in enumerate(lengths):
        src[i, n:] = PAD
        tgt[i, n + 1:] = PAD
    return src, tgt[:, :-1], tgt[:, 1:]


def step_fn(model, run, src, tgt_in, tgt_out):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step():
        optimizer.zero_grad(set_to_none=True)
        stats = label_smoothed_loss(run(src, tgt_in), tgt_out, pad=PAD, eps_ls=0.1)
        (stats.loss / stats.tokens).backward()
        optimizer.step()
    return step


def compare(name, config, vocab, n_sent, length, P_drop, repeats):
    torch.manual_seed(0)
    ours = EncoderDecoder(config.override(P_drop=P_drop), vocab).train()
    theirs = TorchTransformer(vocab, config.N, config.d_model, config.d_ff, config.h, P_drop).train()
    src, tgt_in, tgt_out = batch(n_sent, length, vocab)
    tokens = int((tgt_out != PAD).sum())
    t = interleaved_times({
        "annotated": step_fn(ours, lambda s, t: ours(s, t, *batch_masks(s, t, PAD)), src, tgt_in, tgt_out),
        "nn.Transformer": step_fn(theirs, theirs, src, tgt_in, tgt_out),
    }, repeats)
    ratio = t["nn.Transformer"] / t["annotated"]
    print(f"{name:<10} P_drop={P_drop:<4} batch={n_sent}x{length} ({tokens} target tokens)  "
          f"annotated {tokens / t['annotated']:8.0f} tok/s   nn.Transformer "
          f"{tokens / t['nn.Transformer']:8.0f} tok/s   ratio {ratio:.2f}x")
    return ratio


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.train_step_vs_nn_transformer",
                            description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser, repeats=5)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    print(f"threads: {set_threads(args.threads)}; target: annotated >= 1.0x nn.Transformer")
    small = configs.get("multi30k")
    for P_drop in (0.1, 0.0):
        compare("multi30k", small, 8000, 64, 32, P_drop, args.repeats)
        compare("base", configs.get("base"), 37000, 16, 32, P_drop, max(2, args.repeats // 2))


if __name__ == "__main__":
    main()
