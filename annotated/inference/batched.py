"""Translate sentences with a trained model, batched by length (§6.1 decoding).

`translate_lines` encodes the sentences, sorts them by length and cuts them into batches of at
most `batch_tokens` source tokens (annotated.data.batching), so little work is spent on padding,
decodes each batch with beam search (or greedy search), and puts the translations back in the
input's order; an empty line gives an empty translation. The command around it is
`python -m annotated.translate` (annotated/translate.py).
"""
import re
import time

from annotated.base.errors import DataError
from annotated.data.batching import make_batches
from annotated.data.tokenizer import EOS
from annotated.inference.search import beam_search, greedy_decode, source_batch

# A line longer than this many times the longest sentence training could keep is refused:
# its decoding time grows with the square of its length, so it would run for a long time with
# no output, and the model has never seen anything like it. Cutting it short instead would drop
# text from the translation without a word.
LONGEST_TIMES = 4
# A line of several sentences whose translation stopped after the first is noted: one whose
# translation holds fewer sentences than it, or, for lines of SHORT_FROM tokens or more, is
# under 1/SHORT_BY of its tokens (sentences the punctuation does not show).
SHORT_FROM, SHORT_BY = 30, 3
# The end of a sentence that another one follows: a full stop, question or exclamation mark
# and any closing quotes, then (in Latin script) space and a capital letter or an opening quote,
# or (in CJK script) anything. The word before a full stop must not be an initial or one of
# ABBREVIATIONS ("Mr. Smith" is one sentence).
SENTENCE_END = re.compile(r"(?<![.!?])[.!?]+[\"'»”’“)]*\s+(?=[A-Z\u00c0-\u00de\"'«„“‘(\d])"
                          r"|(?<![。！？])[。！？]+[”’」』）]*\s*(?=\S)")
ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "no", "nr", "ca",
                 "bzw", "usw", "vgl", "mme", "mlle", "m"}


def sentence_count(text: str) -> int:
    """How many sentences `text` holds, by its punctuation: one more than its inner ends."""
    text = text.strip()
    return 1 + sum(not (text[end.start()] == "." and abbreviated(text, end.start()))
                   for end in SENTENCE_END.finditer(text))


def abbreviated(text: str, stop: int) -> bool:
    """Whether the full stop at `stop` ends an initial or one of ABBREVIATIONS."""
    start = stop
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    return stop - start == 1 or text[start:stop].lower() in ABBREVIATIONS


def dropped_sentences(line: str, n_in: int, translation: str, n_out: int) -> bool:
    """Whether `translation` (n_out tokens) looks like the first of several sentences of `line`
    (n_in tokens) only."""
    if sentence_count(translation) < sentence_count(line):
        return True
    return n_in >= SHORT_FROM and n_out < n_in / SHORT_BY


def translate_lines(model, tokenizer, lines: list[str], *, beam_size: int = 4,
                    alpha: float = 0.6, max_extra: int = 50, batch_tokens: int = 2000,
                    greedy: bool = False, cached: bool = True, log=None,
                    longest: int | None = None) -> list[str]:
    """Translations of `lines`, in order; `log(message)` receives progress if given, a warning
    for lines longer than `longest` tokens (the longest its training could keep), and a note
    for translations cut at the maximum length."""
    ids = tokenizer.encode_all(lines)
    todo = [i for i, x in enumerate(ids) if x]               # empty lines stay empty
    check_lengths(ids, todo, model.max_positions(), longest, log)
    out = [""] * len(lines)
    if not todo:
        return out
    lengths = [(len(ids[i]) + 1, len(ids[i]) + 1) for i in todo]     # source + EOS
    # a sentence longer than batch_tokens is not an error here: it forms a batch of its own
    budget = max(batch_tokens, max(n for n, _ in lengths))
    batches = sorted(make_batches(lengths, budget, seed=0, epoch=0), key=lambda b: lengths[b[0]])
    device = next(model.parameters()).device
    start, done, cut, short, empty = time.perf_counter(), 0, [], [], []
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
            if hyp.tokens[-1:] != [EOS]:                        # stopped by the length limit
                cut.append(i)
            elif not out[i].strip():                            # EOS alone scored best
                empty.append(i)
            elif dropped_sentences(lines[i], len(ids[i]), out[i], len(hyp.tokens)):
                short.append(i)                                 # several sentences, one read
        done += len(rows)
        if log:
            rate = done / (time.perf_counter() - start)
            log(f"translated {done}/{len(todo)} sentences ({rate:.1f} sentences/s)")
    if short and log:
        first = min(short)
        log(f"note: {len(short)} translation(s) may hold only part of their line, line "
            f"{first + 1} first ({sentence_count(lines[first])} sentence(s) and "
            f"{len(ids[first])} tokens in, {sentence_count(out[first])} sentence(s) and "
            f"{len(out[first].split())} words out): the model translates one sentence a line, "
            f"and may stop after the first: split such lines into sentences")
    if empty and log:
        log(f"note: {len(empty)} translation(s) are empty, line {min(empty) + 1} first: the "
            f"search ended at once, an end of sentence alone scoring best"
            + ("" if greedy else f" (alpha {alpha:g}: a larger alpha favours longer outputs)"))
    if cut and log:
        log(f"note: {len(cut)} translation(s) reached the maximum length (input + {max_extra} "
            f"tokens) before the model ended them, line {min(cut) + 1} first: each stops "
            f"there, whole or cut short (the search cannot tell); give a larger --max-extra to "
            f"see whether they go on")
    if log:
        note_numbers_lost(lines, out, log)
    return out


def note_numbers_lost(lines: list[str], out: list[str], log) -> None:
    """A note for translations that lack a number of two digits or more that their line has
    (12345 in, 199555500000 out): a model reads a number as word pieces, and may write
    another; numbers stay as they are in a translation."""
    lost = []
    for i, (line, said) in enumerate(zip(lines, out)):
        missing = [n for n in re.findall(r"\d{2,}", line) if n not in re.findall(r"\d+", said)]
        if said and missing:
            lost.append((i, missing[0]))
    if lost:
        i, number = lost[0]
        log(f"note: {len(lost)} translation(s) lack a number their line has, line {i + 1} "
            f"first ({number} in, not out): the model writes numbers as word pieces and may "
            f"change them; check the numbers of the translations")


def check_lengths(ids: list[list[int]], todo: list[int], limit: int | None,
                  longest: int | None, log) -> None:
    """Refuse lines longer than the model's learned positions (`limit`) or far longer than
    the longest sentence its training could keep (`longest`); warn of lines over `longest`."""
    too_long = [i for i in todo if limit is not None and len(ids[i]) + 1 > limit]
    if too_long:
        raise DataError(f"line {too_long[0] + 1} has {len(ids[too_long[0]]) + 1} tokens (EOS "
                        f"included); this model's learned positions cover {limit}: shorten "
                        f"or split it ({len(too_long)} line(s) are too long)")
    longer = [i for i in todo if longest is not None and len(ids[i]) + 1 > longest]
    refused = [i for i in longer if len(ids[i]) + 1 > LONGEST_TIMES * longest]
    if refused:
        raise DataError(f"line {refused[0] + 1} has {len(ids[refused[0]]) + 1:,} tokens (EOS "
                        f"included), over {LONGEST_TIMES} times the longest sentence this model's "
                        f"training could keep ({longest}): decoding it would take very long, its "
                        f"time growing with the square of its length, for a poor translation; "
                        f"split it into sentences ({len(refused)} line(s) are that long)")
    if longer and log:
        first = longer[0]
        log(f"warning: {len(longer)} line(s) are longer than any sentence this model's "
            f"training could keep ({longest} tokens), line {first + 1} with "
            f"{len(ids[first]) + 1}: they translate slowly and poorly; split them into sentences")
