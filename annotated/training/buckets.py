"""Batches padded up to a few shapes, so that a CUDA graph recorded for a shape can replay it.

Token batching (§5.1) makes batches of every shape: many sentences when they are short, few
when they are long. A CUDA graph replays the kernels of one shape only, so with `cuda_graphs`
the training step pads each batch's rows, source length and target length up to its bucket
(`bucket`): a multiple of 8 up to 128, above that one of eight sizes per doubling. A size grows
by at most an eighth above 64 (and by at most 7 below it), and 1 to 256 fall into 24 buckets.

What is added changes nothing the loss sees (`Bucketed`): added positions are padding, and an
added row is an empty sentence (EOS alone as its source, BOS as its target input), so that
every row has a key to attend to; the states of added rows and positions are cut away before
the loss, so they add nothing to it, to the token counts or to any gradient.
"""

from annotated.data.tokenizer import BOS, EOS, PAD


def bucket(n: int) -> int:
    """n rounded up to its bucket: a multiple of 8, or of an eighth of the power of two below
    n when that is larger (129 -> 144, 200 -> 208, 657 -> 704)."""
    step = max(8, (1 << n.bit_length()) >> 4)
    return -(-n // step) * step


def padded_to(tokens, rows: int, length: int, start: int):
    """tokens (batch, n) padded with PAD to (rows, length); each added row starts with
    `start` (EOS for a source, BOS for a target input)."""
    out = tokens.new_full((rows, length), PAD)
    out[:tokens.size(0), :tokens.size(1)] = tokens
    out[tokens.size(0):, 0] = start
    return out


class Bucketed:
    """`net(src, tgt_in)`, a DecoderStates or its DDP or compiled wrapper, called on the batch
    padded to its bucket; returns the states of the batch's own rows and positions."""

    def __init__(self, net):
        self.net = net

    def __call__(self, src, tgt_in):
        (batch, S), T = src.shape, tgt_in.size(1)
        rows = bucket(batch)
        states = self.net(padded_to(src, rows, bucket(S), EOS),
                          padded_to(tgt_in, rows, bucket(T), BOS))
        return states[:batch, :T]                                # (batch, T, d_model)
