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

Is a difference real? A test set is a sample of sentences, so a score moves when the sample
does. `paired_bootstrap` (Koehn, 2004) draws many test sets of the same size from the real one,
with replacement, scores both systems on each draw, and reports how the scores and their
difference spread: a 95% interval, and the share of draws on which the first system does not
beat the second (`python -m annotated.evaluate --hyp A --baseline B --ref R` prints it).
"""
import re

import numpy as np
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


def sentence_stats(hyps: list[str], refs: list[str], lowercase: bool = False) -> np.ndarray:
    """(sentences, 10): each sentence's output length, reference length, and matched and total
    n-grams for n = 1..4, as sacreBLEU counts them. Corpus BLEU is a function of their sums."""
    _check(hyps, refs)
    bleu = BLEU(lowercase=lowercase)
    rows = []
    for hyp, ref in zip(hyps, refs):
        s = bleu.corpus_score([hyp], [[ref]])
        rows.append([s.sys_len, s.ref_len, *s.counts, *s.totals])
    return np.array(rows, dtype=np.int64)


def bleu_of(stats: np.ndarray) -> float:
    """sacreBLEU's corpus score (exponential smoothing) from summed sentence_stats."""
    sys_len, ref_len, counts, totals = stats[0], stats[1], stats[2:6], stats[6:10]
    return BLEU.compute_bleu(counts.tolist(), totals.tolist(), int(sys_len), int(ref_len),
                             smooth_method="exp").score


def paired_bootstrap(hyps: list[str], baseline: list[str], refs: list[str], *,
                     lowercase: bool = False, samples: int = 1000, seed: int = 12345) -> dict:
    """Both systems scored on `samples` test sets drawn from refs' sentences with replacement,
    the same draws for both (module docstring). Each score and the difference (hyps minus
    baseline) with its 95% interval; p: the share of draws where hyps scores <= baseline."""
    ours, theirs = sentence_stats(hyps, refs, lowercase), sentence_stats(baseline, refs, lowercase)
    n = len(refs)
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=samples)
    a = np.array([bleu_of(row) for row in weights @ ours])           # (samples,)
    b = np.array([bleu_of(row) for row in weights @ theirs])
    full_a, full_b = bleu_of(ours.sum(axis=0)), bleu_of(theirs.sum(axis=0))
    return dict(bleu=round(full_a, 2), interval=middle_95(a),
                baseline_bleu=round(full_b, 2), baseline_interval=middle_95(b),
                difference=round(full_a - full_b, 2), difference_interval=middle_95(a - b),
                p=round(float(np.mean(a <= b)), 4), samples=samples, sentences=n, seed=seed)


def middle_95(values: np.ndarray) -> tuple[float, float]:
    """The interval holding the middle 95% of the resampled values (2.5th to 97.5th percentile)."""
    low, high = np.percentile(values, [2.5, 97.5])
    return round(float(low), 2), round(float(high), 2)


def describe_paired(result: dict, metric: str) -> str:
    """One line: both scores with their 95% intervals, the difference and how often it flips."""
    lo, hi = result["difference_interval"]
    return (f"{metric}: {result['bleu']} {list(result['interval'])} against the baseline's "
            f"{result['baseline_bleu']} {list(result['baseline_interval'])}; difference "
            f"{result['difference']:+.2f}, 95% interval [{lo:+.2f}, {hi:+.2f}]; the baseline "
            f"scores as well or better on {result['p']:.1%} of {result['samples']:,} resampled "
            f"test sets of {result['sentences']:,} sentences")
