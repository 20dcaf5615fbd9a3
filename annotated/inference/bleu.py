"""BLEU of translations against references, measured three ways.

1. sacreBLEU (Post 2018): cased BLEU of the detokenized output, tokenized internally by
   sacreBLEU's own "13a" tokenizer, with its signature printed. This is the number to report
   today: anyone with the same references and signature gets the same score.

2. Paper-style BLEU, for comparison with the paper's tables only. The paper's numbers come
   from tensor2tensor's `get_ende_bleu.sh`: tokenize hypotheses and references with Moses'
   tokenizer, split hyphenated compounds ("rich-text" -> "rich ##AT##-##AT## text", the
   convention of earlier papers), then score the tokens with `multi-bleu.perl` (corpus BLEU, no
   smoothing). Deviation: we tokenize with sacreBLEU's 13a tokenizer, not Moses'
   `tokenizer.perl` (no Perl here). The two differ in details (13a splits a hyphen after a
   digit, "5-fach" -> "5 - fach", which then is no compound; Moses escapes & < > as entities),
   so this is close to, not identical with, the script's score. Splitting compounds turns one
   token into three that are easy to match, which is one reason it comes out about 0.7-1.5
   higher than sacreBLEU for the same output.

3. Lowercased tokenized BLEU, the number the Multi30k literature reports: sacreBLEU with
   `lowercase=True` (its `-lc`) and the same 13a tokenizer, exponential smoothing; the
   signature says so (`case:lc`). Lowercasing forgives capitalisation errors, so it comes out
   higher than the cased score for the same output.

The command `python -m annotated.evaluate --hyp FILE --ref FILE` (annotated/evaluate.py)
prints all three; `python -m annotated.translate ... --ref FILE` prints the same after translating.
"""
import re

from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from annotated.data.files import DataError

COMPOUND = re.compile(r"(\S)-(\S)")     # get_ende_bleu.sh: s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g
_tokenize_13a = Tokenizer13a()


def split_compounds(tokenized: str) -> str:
    """'a-b' -> 'a ##AT##-##AT## b'. Like the Perl original the matches do not overlap, so
    'a-b-c' -> 'a ##AT##-##AT## b-c'."""
    return COMPOUND.sub(r"\1 ##AT##-##AT## \2", tokenized)


def paper_tokenize(text: str) -> str:
    return split_compounds(_tokenize_13a(text))


def _check(hyps, refs):
    if len(hyps) != len(refs):
        raise DataError(f"{len(hyps)} hypotheses but {len(refs)} references; they must be "
                         f"line-aligned")
    if not hyps:
        raise DataError("no sentences to score: the hypotheses and references are empty")


def sacre_bleu(hyps: list[str], refs: list[str]):
    """(score object, signature) of sacreBLEU's default: cased, 13a, exponential smoothing."""
    _check(hyps, refs)
    bleu = BLEU()
    return bleu.corpus_score(hyps, [refs]), str(bleu.get_signature())


def lowercase_bleu(hyps: list[str], refs: list[str]):
    """(score object, signature) of sacreBLEU -lc: lowercased, 13a-tokenized (Multi30k papers)."""
    _check(hyps, refs)
    bleu = BLEU(lowercase=True)
    return bleu.corpus_score(hyps, [refs]), str(bleu.get_signature())


def paper_bleu(hyps: list[str], refs: list[str]):
    """Tokenized, compound-split, unsmoothed corpus BLEU (see the module docstring)."""
    _check(hyps, refs)
    tokenized = BLEU(tokenize="none", smooth_method="none", force=True)
    return tokenized.corpus_score([paper_tokenize(h) for h in hyps],
                                  [[paper_tokenize(r) for r in refs]])


def report(hyps: list[str], refs: list[str]) -> str:
    """The three scores as printed lines, each labelled with what it is."""
    sacre, signature = sacre_bleu(hyps, refs)
    lower, lower_signature = lowercase_bleu(hyps, refs)
    return (f"sacreBLEU (cased, detokenized): {sacre}\n"
            f"  signature: {signature}\n"
            f"lowercased tokenized BLEU (sacreBLEU -lc, 13a; as Multi30k papers report): "
            f"{lower}\n"
            f"  signature: {lower_signature}\n"
            f"paper-style tokenized BLEU with compound splitting (13a tokens, ##AT## splits, "
            f"no smoothing; compare with the paper only, not with sacreBLEU): "
            f"{paper_bleu(hyps, refs)}")
