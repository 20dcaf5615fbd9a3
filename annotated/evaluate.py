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
import os
import re
import sys
import unicodedata
from pathlib import Path

from annotated.base.cli import ArgumentParser, command, path, require_stdout, say_error, show
from annotated.base.errors import DataError
from annotated.base.files import check_aligned, read_lines
from annotated.data.corpus import (MIN_LENGTH_CORRELATION, in_line_correlation,
                                   stretch_out_of_line)
from annotated.data.languages import FULL_WIDTH_LATIN, guess_language, guess_short_language
from annotated.data.tokenizer import base_language, is_language
from annotated.inference.bleu import (case_note, describe_paired, escaped_note, paired_bootstrap,
                                      report, tokenized_note, tokenizer_for, too_short_note)


# Below this many sentences, a paired bootstrap's resampled test sets are near copies of one
# another (Koehn, 2004, resamples test sets of hundreds).
FEW_SENTENCES = 100
# The fewest different pairs of lengths whose correlation says whether translations and
# references are in step: fewer than a corpus needs (MIN_PAIRS_IN_LINE), since a test set is
# scored, not trained on; in step, 15 of Multi30k's test sentences and their translations
# already go together far above MIN_LENGTH_CORRELATION (the tests measure it).
FEWEST_PAIRS_IN_STEP = 15
# German's letters with an umlaut, and ß, as they are written where the keyboard lacks them.
SPELLED_OUT = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "Ä": "Ae", "Ö": "Oe",
                             "Ü": "Ue"})


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m annotated.evaluate",
                            description="BLEU three ways; with --baseline, a "
                                                 "paired bootstrap")
    parser.add_argument("--hyp", type=path, required=True,
                        help="translations, one per line (-: standard input)")
    parser.add_argument("--ref", type=path, required=True,
                        help="references, line-aligned with --hyp")
    parser.add_argument("--baseline", type=path, help="another system's translations, "
                                                      "line-aligned: compare with a paired "
                                                      "bootstrap")
    parser.add_argument("--lang", type=language, help="the references' language code, e.g. de "
                                                      "or zh (default: guessed from their script)")
    return parser.parse_args(argv)


def language(text: str) -> str:
    """An argparse type: a language code (ISO 639-1, or three letters), which picks the
    tokenizer; an unknown one would be scored with 13a without a word."""
    if not is_language(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a language code: give the "
                                         f"references' ISO 639 code, such as de, fr or zh")
    return text


@command
def main(argv=None):
    args = parse_args(argv)
    require_stdout("the scores")
    if args.ref == Path("-"):
        raise DataError("--ref -: the references are read from a file; give its path (only "
                        "--hyp may be - for standard input)")
    if args.baseline == Path("-"):
        raise DataError("--baseline -: only --hyp may be - for standard input; give the "
                        "baseline's translations as a file")
    refs = list(read_lines(args.ref))
    hyps = aligned(args.hyp, refs, args.ref)
    baseline = aligned(args.baseline, refs, args.ref) if args.baseline else None
    note_empty_references(refs, args.ref)
    note_mismatch(hyps, refs, args.hyp, args.ref)
    show(report(hyps, refs, args.lang))
    note_copy(hyps, refs, f"--hyp {args.hyp}", args.ref)
    if baseline is not None:             # the checks the translations get, for the baseline too
        note_mismatch(baseline, refs, args.baseline, args.ref)
        note_copy(baseline, refs, f"--baseline {args.baseline}", args.ref)
        if (note := escaped_note(baseline, args.baseline)) is not None:
            say_error(note)
        if baseline == hyps:
            say_error(f"note: --baseline {args.baseline} holds the same translations as --hyp "
                      f"{args.hyp}: the comparison can only find no difference; give the other "
                      f"system's translations as --baseline")
        if len(refs) < FEW_SENTENCES:
            say_error(f"note: a bootstrap over {len(refs)} sentence(s) redraws the same few, so "
                      f"its intervals say little about chance; score a test set of hundreds")
        tok = tokenizer_for(args.lang, refs)
        for metric, lowercase in (("sacreBLEU (cased)", False), ("lowercased BLEU", True)):
            show(describe_paired(paired_bootstrap(hyps, baseline, refs, lowercase=lowercase,
                                                  tokenize=tok), metric))
    for note in (lang_note(refs, args.lang, args.ref), too_short_note(hyps, refs, args.lang),
                 tokenized_note(hyps, args.hyp), case_note(hyps, refs, args.hyp),
                 escaped_note(hyps, args.hyp), escaped_note(refs, args.ref)):
        if note:
            say_error(note)


def lang_note(refs: list[str], lang: str | None, ref) -> str | None:
    """A note when --lang names another language than the references read as (their script,
    or their commonest words): the language picks the tokenizer BLEU splits words with."""
    read = guess_language(refs) or guess_short_language(refs)
    if lang is None or read is None or read == base_language(lang):
        return None
    return (f"note: --lang {lang}, but the references ({ref}) read as {read}: the language picks "
            f"the tokenizer that BLEU splits words with; give --lang {read}, or the references "
            f"in {lang}")


def note_copy(lines: list[str], refs: list[str], given: str, ref_path) -> None:
    """A note for translations that are the references line for line (`given`: the option and
    its file): the score of a copy, not of a system."""
    if [line.strip() for line in lines] == [ref.strip() for ref in refs]:
        say_error(f"note: {given} holds the references ({ref_path}) line for line, a copy of "
                  f"them, not a system's output: give a system's translations there")


def note_empty_references(refs: list[str], ref) -> None:
    """A note on stderr for empty lines among the references (of the file `ref`), which no
    translation can match."""
    empty = [i for i, line in enumerate(refs, 1) if not line.strip()]
    if empty and len(empty) < len(refs):
        say_error(f"note: {ref}, line {empty[0]} ({len(empty):,} such line(s) in all): an "
                  f"empty reference, which no translation can match; check the references")


def note_mismatch(hyps: list[str], refs: list[str], hyp, ref) -> None:
    """Notes on stderr for translations (`hyps`, of the file `hyp`) that cannot match their
    references: two columns (a file of pairs), in another script or language than theirs (the
    wrong file, or the wrong direction), in another Unicode form, or out of step
    (note_form_and_step)."""
    tabbed = [sum("\t" in line for line in lines[:200]) for lines in (hyps, refs)]
    if tabbed[0] > min(len(hyps), 200) / 2 and not tabbed[1]:
        say_error(f"note: {tabbed[0]:,} of the first {min(len(hyps), 200):,} lines of {hyp} hold "
                  f"a tab, as a file of pairs (source, tab, translation) does, and the references "
                  f"none: each whole line is scored, both columns; give the translations' column "
                  f"alone (cut -f2 {hyp})")
        return
    scripts = [guess_language(lines) for lines in (hyps, refs)]
    if scripts[0] != scripts[1] and any(c.isalpha() for line in hyps[:200] for c in line):
        named = [f"a script without spaces ({s})" if s else "a script with spaces between words"
                 for s in scripts]
        say_error(f"note: the translations ({hyp}) are in {named[0]}, the references "
                  f"({ref}) in {named[1]}: BLEU compares one language with itself; check "
                  f"that --hyp and --ref are the translations and their references")
        return
    spaced = [guess_short_language(lines) for lines in (hyps, refs)]
    if None not in spaced and spaced[0] != spaced[1]:
        say_error(f"note: the translations ({hyp}) read as {spaced[0]}, the references "
                  f"({ref}) as {spaced[1]} (from their commonest words): BLEU compares one "
                  f"language with itself; check that --ref holds references in the language "
                  f"translated into")
        return
    note_form_and_step(hyps, refs, hyp, ref)


def note_form_and_step(hyps: list[str], refs: list[str], hyp, ref) -> None:
    """Notes for translations that match their references in a way BLEU cannot see: letters
    stored in another Unicode form (an accent apart from its letter, NFD, as some macOS tools
    write), or lines out of step (a line added or removed shifts every pair after it)."""
    decomposed = [sum(unicodedata.normalize("NFC", line) != line for line in lines)
                  for lines in (hyps, refs)]
    if bool(decomposed[0]) != bool(decomposed[1]):
        which, other = (hyp, ref) if decomposed[0] else (ref, hyp)
        say_error(f"note: {which} stores accented letters decomposed (Unicode NFD, the accent "
                  f"apart from its letter) in {max(decomposed):,} line(s), {other} composed "
                  f"(NFC): BLEU counts such words as different; convert {which} to NFC (e.g. "
                  f"uconv -x any-nfc)")
    wide = [sum(line.translate(FULL_WIDTH_LATIN) != line for line in lines)
            for lines in (hyps, refs)]
    if bool(wide[0]) != bool(wide[1]):
        which, other = (hyp, ref) if wide[0] else (ref, hyp)
        say_error(f"note: {which} writes letters or digits in their full-width forms (Ｅｉｎ for "
                  f"Ein) in {max(wide):,} line(s), {other} in ordinary ones: BLEU counts such "
                  f"words as different; convert {which} with NFKC (e.g. uconv -x any-nfkc)")
    for lines, other, named, other_named in ((hyps, refs, hyp, ref), (refs, hyps, ref, hyp)):
        if found := umlauts_spelled_out(lines, other):
            say_error(f"note: {other_named} writes ä, ö, ü and ß as ae, oe, ue and ss "
                      f"({found[1]!r} where {named} has {found[0]!r}): BLEU counts such words as "
                      f"different; write both files the same way")
            break
    r = in_line_correlation(list(zip(hyps, refs)), FEWEST_PAIRS_IN_STEP)
    if r is not None and r < MIN_LENGTH_CORRELATION:
        say_error(f"note: the lengths of the translations ({hyp}) and their references "
                  f"do not go together (rank correlation {r:.2f}; translations line for line "
                  f"come close to 1): the lines may be out of step, a line added or removed "
                  f"shifting every pair after it; check that line i translates the sentence "
                  f"of reference i")
    elif found := stretch_out_of_line(list(zip(hyps, refs))):
        start, end, aligned, shifted = found
        say_error(f"note: {hyp} and {ref} go out of step near line {start}: over lines "
                  f"{start}-{end} each translation's length goes with the next or previous "
                  f"reference's (rank correlation {shifted:.2f}) better than with its own "
                  f"({aligned:.2f}), as after a line added or removed; check the lines there")


def umlauts_spelled_out(lines: list[str], other: list[str]) -> tuple[str, str] | None:
    """A word of `lines` with ä, ö, ü or ß that `other` spells with ae, oe, ue or ss (fährt as
    faehrt), where `other` does so for more words than it writes with those letters: the word
    and that spelling."""
    words = [{w for line in text for w in re.findall(r"\w+", line)} for text in (lines, other)]
    spelled = [(w, w.translate(SPELLED_OUT)) for w in sorted(words[0])
               if w.translate(SPELLED_OUT) != w and w.translate(SPELLED_OUT) in words[1]]
    kept = sum(w.translate(SPELLED_OUT) != w for w in words[1])
    return spelled[0] if len(spelled) > kept else None


def aligned(path, refs, ref_path) -> list[str]:
    """The lines of `path` (- for standard input), checked to be as many as the references
    and not the references themselves; a note on stderr names lines that hold characters one
    cannot see, which count in BLEU."""
    if path == Path("-"):
        if sys.stdin is None:
            raise DataError("--hyp -: stdin is closed, so there are no translations to read; "
                            "give them as --hyp FILE")
        if os.path.samestat(os.fstat(0), os.stat(ref_path)):
            raise DataError(f"standard input is the references file {ref_path} itself: give "
                            f"the translations to score on standard input (--hyp -)")
        lines = list(read_lines(sys.stdin.buffer, "standard input"))
    elif os.path.exists(path) and os.path.samefile(path, ref_path):
        raise DataError(f"{path} is the references file itself: give the translations to score "
                        f"as --hyp (or --baseline) and the references as --ref")
    else:
        lines = list(read_lines(path))
    name = "standard input" if path == Path("-") else path
    if name != path and not lines and refs:
        raise DataError(f"--hyp -: standard input was empty, where the translations of "
                        f"{ref_path}'s {len(refs):,} lines should come; pipe them in, or give "
                        f"--hyp FILE")
    check_aligned(len(lines), len(refs), name, ref_path)
    if not lines:
        raise DataError(f"{name} and {ref_path} are empty: no sentences to score")
    empty = [i for i, (line, ref) in enumerate(zip(lines, refs), 1)
             if not line.strip() and ref.strip()]
    if not any(line.strip() for line in lines):
        say_error(f"note: every line of {name} is empty: no translation to score (a model that "
                  f"writes only </s>, or the wrong file?)")
    elif empty:
        say_error(f"note: {name}, line {empty[0]} ({len(empty):,} of {len(lines):,} lines): an "
                  f"empty translation of a sentence, which scores nothing; check how the file "
                  f"was made")
    hidden = [i for i, line in enumerate(lines, 1) if any(
        unicodedata.category(c) in ("Cc", "Cf") and c != "\t" for c in line)]
    if hidden:
        many = f"{len(hidden):,} such lines in all" if len(hidden) > 1 else "the only such line"
        say_error(f"note: {name}, line {hidden[0]} ({many}): control or zero-width characters, "
                  f"which count in BLEU as they stand; remove them if they are not part of the "
                  f"text")
    return lines


if __name__ == "__main__":
    main()
