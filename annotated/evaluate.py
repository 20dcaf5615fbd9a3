"""`python -m annotated.evaluate`: BLEU of translations against references, two ways.

    python -m annotated.evaluate --hyp FILE --ref FILE

Prints sacreBLEU (cased, detokenized, with its signature: the number to report) and the
paper-style tokenized BLEU with compound splitting (for comparison with the paper's tables
only); annotated.inference.bleu says how each is computed.
"""
import argparse

from annotated.data.files import DataError, read_lines
from annotated.inference.bleu import report
from annotated.tools.cli import command


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m annotated.evaluate",
                                     description="sacreBLEU and the paper's tokenized BLEU")
    parser.add_argument("--hyp", required=True, help="translations, one per line")
    parser.add_argument("--ref", required=True, help="references, line-aligned with --hyp")
    args = parser.parse_args(argv)
    hyps, refs = list(read_lines(args.hyp)), list(read_lines(args.ref))
    if len(hyps) != len(refs):
        raise DataError(f"{args.hyp} has {len(hyps)} lines but {args.ref} has {len(refs)}; "
                        f"they must be line-aligned")
    if not hyps:
        raise DataError(f"{args.hyp} and {args.ref} are empty: no sentences to score")
    print(report(hyps, refs))


if __name__ == "__main__":
    main()
