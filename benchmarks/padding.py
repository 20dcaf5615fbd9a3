"""Padding in the token batches of §5.1: at most 10% on Multi30k.

Builds the `multi30k` preset's training batches (max_tokens per side, its vocabulary) and prints
the share of each side's padded tensors that is padding, beside two baselines cut to the same
batch sizes: pairs in random order, and pairs sorted by source length, then target length
(make_batches sorts by the longer side first, the one the token budget binds on).

    python -m benchmarks.padding [--data-dir D] [--config multi30k] [--epochs 3]
"""

import numpy as np

from annotated import configs
from annotated.base.cli import ArgumentParser, command, number, require_stdout
from annotated.base.settings import at_least
from annotated.data.batching import lengths_of, make_batches, padding_fraction
from annotated.data.corpus import load_corpus


def same_sizes(order, batches):
    """The examples of `order` cut into batches as large as `batches`."""
    cuts = np.cumsum([len(b) for b in batches])[:-1]
    return [part.tolist() for part in np.split(np.asarray(order), cuts)]


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.padding",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="multi30k", choices=configs.PRESETS,
                        help="the preset whose corpus and batching to measure")
    parser.add_argument("--data-dir", help="folder holding multi30k/ (or env ANNOTATED_DATA_DIR)")
    parser.add_argument("--cache-dir", help="tokenizer cache (or env ANNOTATED_CACHE_DIR)")
    parser.add_argument("--epochs", type=number(at_least(1)), default=3,
                        help="epochs of batches to average over")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    require_stdout("the table")
    config = configs.get(args.config)
    corpus = load_corpus(config, args.data_dir, args.cache_dir)
    lengths = lengths_of(corpus.train)
    src_len, tgt_len = np.array(lengths).T

    print(f"{args.config}: {len(lengths):,} training pairs, vocabulary {config.vocab_size:,}, "
          f"max_tokens {config.max_tokens:,} per side, seed {config.seed}")
    print(f"{'epoch':>5} {'batches':>8} {'pairs/batch':>11}  {'padding src':>11} {'tgt':>6}"
          f"  {'random order src':>16} {'tgt':>6}  {'by (src, tgt) src':>18} {'tgt':>6}")
    results = []
    for epoch in range(args.epochs):
        batches = make_batches(lengths, config.max_tokens, config.seed, epoch)
        rng = np.random.default_rng([config.seed, epoch])
        shuffled = rng.permutation(len(lengths))
        by_source = shuffled[np.lexsort((tgt_len[shuffled], src_len[shuffled]))]
        row = [padding_fraction(lengths, batches),
               padding_fraction(lengths, same_sizes(shuffled, batches)),
               padding_fraction(lengths, same_sizes(by_source, batches))]
        results.append(row)
        print(f"{epoch:>5} {len(batches):>8} {len(lengths) / len(batches):>11.1f}  "
              + "  ".join(f"{' ' * (w - 11)}{s:>11.1%} {t:>6.1%}"
                          for (s, t), w in zip(row, (11, 16, 18))))
    ours = np.mean([r[0] for r in results], axis=0)
    verdict = "meets" if max(ours) <= 0.10 else "MISSES"
    print(f"mean padding: source {ours[0]:.1%}, target {ours[1]:.1%} ({verdict} the <= 10% target)")


if __name__ == "__main__":
    main()
