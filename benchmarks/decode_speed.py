"""Beam-search speed with and without incremental decoding: the cached decoder should be >= 3x faster.

Decodes the first --sentences English sentences of newstest2014 as one batch (beam 4, alpha
0.6; a --checkpoint with its own beam and alpha), once with the decoder cache (each step feeds
one new token; keys and values of earlier positions are kept, the memory's are projected once)
and once recomputing the whole prefix every step. Same model, batch, threads; timed
round-robin. Prints sentences/second of each and the ratio, and checks that both produced the
same tokens.

The model: with --checkpoint, a trained one and its tokenizer. Otherwise a random base model
(§3, float32) with the paper's 37,000-token vocabulary; the sentences are cut into subwords by
a BPE trained on the newstest2014 English and German text itself (16,000 pieces: about 1.3
pieces per word, like a real 37k vocabulary), in a temporary folder. A random model would
stop at once or babble to the length limit, so for it EOS is made impossible and the maximum
length set to the input's (--max-extra 0): every output then has exactly as many tokens as
its source, EOS included, the length of a real translation. (The search then never
terminates early, so both modes do exactly the same steps.)

    python -m benchmarks.decode_speed [--data-dir DIR] [--sentences 50]
        [--threads 2] [--repeats 1] [--checkpoint CKPT]
"""
import os
import statistics
import tempfile
import time

import torch
from torch import nn

from annotated.base.cli import ArgumentParser, command, number, path
from annotated.base.errors import DataError
from annotated.base.files import read_lines
from annotated.base.settings import at_least, between
from annotated.configs import option
from annotated.data.corpus import DATA_ENV, data_location, folder_holding
from annotated.data.tokenizer import EOS, PAD, train_bpe
from annotated.inference.search import beam_search, source_batch
from annotated.model import make_model
from annotated.store.checkpoint_file import load_model
from benchmarks.common import add_timing_arguments, noise_note, set_threads, times_in_turn


class NoEOS(nn.Module):
    """The model's output layer with EOS's logit at -inf: outputs run to the length limit."""

    def __init__(self, generator):
        super().__init__()
        self.generator = generator

    def forward(self, h):
        logits = self.generator(h)                       # (rows, V)
        logits[..., EOS] = float("-inf")
        return logits


def random_model_and_tokenizer(folder, vocab, work_dir):
    files = [folder / "newstest2014.en", folder / "newstest2014.de"]
    try:
        tokenizer = train_bpe(files, 16_000, f"{work_dir}/newstest2014-bpe16k.model")
    except DataError:                  # its fix names vocab_size, which this has not
        count = sum(1 for _ in read_lines(files[0]))
        raise DataError(f"{files[0]} and its German hold {count:,} lines: too few to learn the "
                        f"16,000-piece BPE this benchmark cuts them with (newstest2014 has "
                        f"3,003); give the data location that holds all of newstest2014, or "
                        f"--checkpoint with a model of your own (its tokenizer is used)") from None
    model = make_model(vocab).eval()                          # base: N=6, d_model=512
    model.generator = NoEOS(model.generator)
    return model, tokenizer


#: The largest batch decoded: beam 4 keeps four copies of each sentence's states, and all of
#: newstest2014 in one batch runs a machine of a few tens of GB out of memory.
MOST = 500


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.decode_speed",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=path, help=f"folder holding wmt14/ (or env {DATA_ENV})")
    parser.add_argument("--sentences", type=number(between(1, MOST, "sentences")), default=50,
                        help=f"sentences decoded as one batch (default 50, at most {MOST}: "
                             f"beam 4 keeps each one's states four times over)")
    add_timing_arguments(parser, repeats=1)
    parser.add_argument("--checkpoint", help="a trained checkpoint instead of a random model")
    parser.add_argument("--vocab", type=number(at_least(16_000)), default=37_000,
                        help="random model's vocabulary (it holds the BPE's 16,000 pieces)")
    parser.add_argument("--max-extra", type=option("max_extra"),
                        help="default: 0 (random model), 50 (trained)")
    args = parser.parse_args(argv)
    if not (args.data_dir or os.environ.get(DATA_ENV)):
        parser.error(f"give --data-dir or set {DATA_ENV} (the folder holding wmt14/)")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    threads = set_threads(args.threads)
    folder = folder_holding("wmt14", ["newstest2014.en", "newstest2014.de"],
                            data_location(args.data_dir))
    lines = [line for line in read_lines(folder / "newstest2014.en") if line.strip()]
    lines = lines[:args.sentences]
    model, tokenizer, what, search = model_to_time(args, folder)
    if args.max_extra is not None:
        search["max_extra"] = args.max_extra
    src = source_batch(tokenizer.encode_all(lines))                 # (sentences, src_len)
    lengths = (src != PAD).sum(1).float()
    print(f"{what}; {len(lines)} newstest2014 sentences, {lengths.mean():.1f} source tokens on "
          f"average (max {int(lengths.max())}), beam {search['beam_size']}, alpha "
          f"{search['alpha']}, max length input + {search['max_extra']}, {threads} threads, "
          f"one batch")
    time_decoding(model, src, search, args.repeats)


def model_to_time(args, folder):
    """(model, tokenizer, what it is, its search settings): the --checkpoint, decoded as it
    was scored (its beam and alpha), or a random base model, decoded with the paper's (beam 4,
    alpha 0.6) to its input's length."""
    if args.checkpoint:
        model, config, tokenizer = load_model(args.checkpoint)
        if config.dataset == "copy" or config.source_lang != "en":
            what = ("the copy task" if config.dataset == "copy" else
                    f"{config.source_lang}->{config.target_lang}")
            raise DataError(f"--checkpoint {args.checkpoint}: a model of {what}; this benchmark "
                            f"decodes newstest2014's English, so give a model that translates "
                            f"from English, or leave out --checkpoint")
        return model, tokenizer, args.checkpoint, dict(beam_size=config.beam_size,
                                                       alpha=config.alpha, max_extra=50)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as work_dir:
        model, tokenizer = random_model_and_tokenizer(folder, args.vocab, work_dir)
    return (model, tokenizer, f"random base model, V={args.vocab:,}, EOS suppressed",
            dict(beam_size=4, alpha=0.6, max_extra=0))


def time_decoding(model, src, search: dict, repeats: int):
    """Beam search on `src` with and without the cache, timed round-robin; prints the speeds,
    their ratio and whether both gave the same tokens."""
    outputs = {}

    def run(cached, sentences=src):
        def decode():
            outputs[cached] = beam_search(model, sentences, **search, cached=cached)
        return decode

    start = time.perf_counter()
    for cached in (True, False):          # first calls allocate: warm up on one sentence
        run(cached, src[:1])()
    times = times_in_turn({"cached": run(True), "uncached": run(False)}, repeats, warmup=0)
    seconds = {name: statistics.median(t) for name, t in times.items()}
    sentences = len(src)
    out_len = sum(len(h.tokens) for h in outputs[True]) / sentences
    same = [h.tokens for h in outputs[True]] == [h.tokens for h in outputs[False]]
    for name, s in seconds.items():
        print(f"{name:>9}: {s:8.2f} s  {sentences / s:7.2f} sentences/s")
    ratio = seconds["uncached"] / seconds["cached"]
    print(f"output length {out_len:.1f} tokens on average; identical tokens: {same}; "
          f"wall time {time.perf_counter() - start:.0f} s")
    print(f"cached / uncached speed: {ratio:.2f}x ({'meets' if ratio >= 3 else 'MISSES'} the "
          f">= 3x target)")
    if note := noise_note(times):
        print(note)


if __name__ == "__main__":
    main()
