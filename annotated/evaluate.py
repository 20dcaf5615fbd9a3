"""`python -m annotated.evaluate`: BLEU of translations against references, three ways, and
whether one system's lead over another is more than chance.

    python -m annotated.evaluate --hyp FILE --ref FILE [--baseline FILE] [--lang CODE]

Prints sacreBLEU (cased, detokenized, with its signature: the number to report), lowercased
tokenized BLEU (the Multi30k literature's) and the paper-style tokenized BLEU with compound
splitting (for comparison with the paper's tables only); annotated.inference.bleu says how each
is computed. With --baseline, another system's translations of the same sentences: a paired
bootstrap (1,000 resampled test sets) says whether --hyp's lead, cased and lowercased, is more
than the luck of which sentences the test set holds. --lang names the references' language
(de, zh, ...), which picks the tokenizer (13a, or sacreBLEU's own for a language written
without spaces); by default it is guessed from the references' script.
"""
import argparse

from annotated.base.cli import command, path, require_stdout, show
from annotated.base.errors import DataError
from annotated.base.files import check_aligned, read_lines
from annotated.inference.bleu import describe_paired, paired_bootstrap, report, tokenizer_for


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m annotated.evaluate",
                                     description="BLEU three ways; with --baseline, a "
                                                 "paired bootstrap")
    parser.add_argument("--hyp", type=path, required=True, help="translations, one per line")
    parser.add_argument("--ref", type=path, required=True,
                        help="references, line-aligned with --hyp")
    parser.add_argument("--baseline", type=path, help="another system's translations, "
                                                      "line-aligned: compare with a paired "
                                                      "bootstrap")
    parser.add_argument("--lang", help="the references' language code, e.g. de or zh (default: "
                                       "guessed from their script)")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    require_stdout("the scores")
    refs = list(read_lines(args.ref))
    hyps = aligned(args.hyp, refs, args.ref)
    show(report(hyps, refs, args.lang))
    if args.baseline:
        baseline = aligned(args.baseline, refs, args.ref)
        tok = tokenizer_for(args.lang, refs)
        for metric, lowercase in (("sacreBLEU (cased)", False), ("lowercased BLEU", True)):
            show(describe_paired(paired_bootstrap(hyps, baseline, refs, lowercase=lowercase,
                                                  tokenize=tok), metric))


def aligned(path, refs, ref_path) -> list[str]:
    """The lines of `path`, checked to be as many as the references."""
    lines = list(read_lines(path))
    check_aligned(len(lines), len(refs), path, ref_path)
    if not lines:
        raise DataError(f"{path} and {ref_path} are empty: no sentences to score")
    return lines


if __name__ == "__main__":
    main()
