"""Translate text with a trained checkpoint (§6.1 decoding).

    python -m annotated.translate --checkpoint CKPT [--beam 4] [--alpha 0.6] [--max-extra 50]
        [--batch-tokens 2000] [--input FILE] [--output FILE] [--greedy] [--no-cache] [--ref FILE]

Reads sentences from --input (plain or gzip) or stdin and writes one detokenized translation
per input line, in the input's order; an empty input line gives an empty output line; `-`
means stdin or stdout. An --output that is the input, the references or the checkpoint, or that
cannot be written, is refused before any work. The checkpoint carries its tokenizer and config,
so nothing else is needed; an averaged checkpoint (`python -m annotated.checkpoint average`) is
read the same way. Beam size, alpha and the maximum extra length default to the checkpoint
config's decoding fields (the paper's 4, 0.6 and 50 unless the run changed them). With --ref
the BLEU scores of annotated.evaluate are printed (on stderr, as is the progress: stdout holds
only translations). A copy-task checkpoint reads its symbols as numbers separated by spaces:
`echo "4 9 5" | ...` prints `4 9 5`.

Batching: sentences are sorted by length and cut into batches of at most --batch-tokens source
tokens, padding included (annotated.batching), so little work is spent on padding; the
translations are put back in input order. Beam search holds beam_size rows per sentence.
"""
import argparse
import sys
import time

import torch

from annotated.batching import make_batches
from annotated.checkpoint import load_model
from annotated.decoding import beam_search, greedy_decode, source_batch
from annotated.evaluate import report
from annotated.tokenizer import atomic_open, check_output, read_lines


def translate_lines(model, tokenizer, lines: list[str], *, beam_size: int = 4,
                    alpha: float = 0.6, max_extra: int = 50, batch_tokens: int = 2000,
                    greedy: bool = False, cached: bool = True, log=None) -> list[str]:
    """Translations of `lines`, in order; `log(message)` receives progress if given."""
    ids = tokenizer.encode_all(lines)
    todo = [i for i, x in enumerate(ids) if x]               # empty lines stay empty
    out = [""] * len(lines)
    if not todo:
        return out
    lengths = [(len(ids[i]) + 1, len(ids[i]) + 1) for i in todo]     # source + EOS
    # a sentence longer than batch_tokens is not an error here: it forms a batch of its own
    budget = max(batch_tokens, max(n for n, _ in lengths))
    batches = sorted(make_batches(lengths, budget, seed=0, epoch=0), key=lambda b: lengths[b[0]])
    device = next(model.parameters()).device
    start, done = time.perf_counter(), 0
    for batch in batches:
        rows = [todo[j] for j in batch]
        src = source_batch([ids[i] for i in rows], device)          # (batch, src_len)
        if greedy:
            hyps = greedy_decode(model, src, max_extra=max_extra, cached=cached)
        else:
            hyps = beam_search(model, src, beam_size=beam_size, alpha=alpha,
                               max_extra=max_extra, cached=cached)
        for i, hyp in zip(rows, hyps):
            out[i] = tokenizer.decode(hyp.tokens)               # drops EOS
        done += len(rows)
        if log:
            rate = done / (time.perf_counter() - start)
            log(f"translated {done}/{len(todo)} sentences ({rate:.1f} sentences/s)")
    return out


def stdin_lines():
    """Lines of stdin as UTF-8; like read_lines, only "\\n" ends a line."""
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        try:
            yield raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as e:
            raise ValueError(f"stdin, line {number}: not UTF-8 ({e.reason} at byte "
                             f"{e.start})") from None


def at_least(low, kind=int):
    """An argparse type: a number of this kind, >= low."""
    def parse(text):
        value = kind(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        return value
    return parse


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m annotated.translate",
                                     description="translate with a checkpoint (§6.1 decoding)")
    parser.add_argument("--checkpoint", required=True, help="a checkpoint or averaged checkpoint")
    parser.add_argument("--beam", type=at_least(1), help="beam size (default: the config's, 4)")
    parser.add_argument("--alpha", type=at_least(0.0, float),
                        help="length penalty alpha (default: the config's, 0.6)")
    parser.add_argument("--max-extra", type=at_least(0),
                        help="maximum output length = input length + this (default: config's, 50)")
    parser.add_argument("--greedy", action="store_true", help="greedy search instead of beam")
    parser.add_argument("--no-cache", action="store_true",
                        help="recompute the whole prefix every step (slow; for comparison)")
    parser.add_argument("--batch-tokens", type=at_least(1), default=2000,
                        help="source tokens per batch, padding included")
    parser.add_argument("--input", help="text file, plain or gzip (default or -: stdin)")
    parser.add_argument("--output", help="file to write, atomically; never the input, the "
                                         "references or the checkpoint (default or -: stdout)")
    parser.add_argument("--ref", help="references: print BLEU (annotated.evaluate) on stderr")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return parser, parser.parse_args(argv)


def main(argv=None):
    parser, args = parse_args(argv)
    source = None if args.input in (None, "-") else args.input
    output = None if args.output in (None, "-") else args.output

    def log(message):
        print(message, file=sys.stderr, flush=True)

    try:
        if output is not None:            # before any work: never over a file this reads
            check_output(output, reads=[args.checkpoint, source, args.ref])
        model, config, tokenizer = load_model(args.checkpoint, map_location=args.device)
        lines = list(read_lines(source) if source else stdin_lines())
        refs = list(read_lines(args.ref)) if args.ref else None
        if refs is not None and len(refs) != len(lines):
            raise ValueError(f"{args.ref} has {len(refs)} lines but the input has {len(lines)}")
        beam = config.beam_size if args.beam is None else args.beam
        alpha = config.alpha if args.alpha is None else args.alpha
        max_extra = config.max_extra if args.max_extra is None else args.max_extra
        how = "greedy search" if args.greedy else f"beam {beam}, alpha {alpha}"
        log(f"translating {len(lines)} lines with {how}, maximum length input + {max_extra}"
            f"{', uncached' if args.no_cache else ''}")
        out = translate_lines(model, tokenizer, lines, beam_size=beam, alpha=alpha,
                              max_extra=max_extra, batch_tokens=args.batch_tokens,
                              greedy=args.greedy, cached=not args.no_cache, log=log)
        text = "".join(line + "\n" for line in out)
        if output is not None:
            with atomic_open(output, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        if refs is not None:
            log(report(out, refs))
    except (OSError, ValueError) as e:                        # CheckpointError is a ValueError
        parser.exit(1, f"error: {e}\n")


if __name__ == "__main__":
    main()
