"""`python -m annotated.translate`: translate text with a trained checkpoint (§6.1 decoding).

    python -m annotated.translate --checkpoint CKPT [--beam-size 4] [--alpha 0.6]
        [--max-extra 50] [--batch-tokens 2000] [--input FILE] [--out FILE] [--greedy]
        [--no-cache] [--ref FILE]

Reads sentences from --input (plain or gzip) or stdin and writes one detokenized translation
per input line, in the input's order; an empty input line gives an empty output line; `-`
means stdin or stdout. An --out that is the input, the references, the checkpoint or a file
committed to the project, or that cannot be written, is refused before any work. The checkpoint carries its tokenizer and config,
so nothing else is needed; an averaged checkpoint (`python -m annotated.checkpoint average`) is
read the same way. Beam size, alpha and the maximum extra length default to the checkpoint
config's decoding fields (the paper's 4, 0.6 and 50 unless the run changed them). With --ref
the BLEU scores of `python -m annotated.evaluate` are printed (on stderr, as is the progress:
stdout holds only translations). A copy-task checkpoint reads its symbols as numbers separated
by spaces: `echo "4 9 5" | ...` prints `4 9 5`. The code is annotated.inference.
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import torch

from annotated.base.cli import (ArgumentParser, allocation_failed, command, number,
                                out_file, out_of_memory, path, say_error, unwritable_on_stdout)
from annotated.base.errors import DataError, DeviceError
from annotated.base.files import (atomic_open, check_aligned, check_output, not_lines_of_text,
                                  not_text_to_replace, read_lines, std_stream)
from annotated.base.settings import between
from annotated.base.threads import use_threads
from annotated.configs import Config, option
from annotated.data.languages import (LANGUAGE_NAMES, SCRIPTS, THREE_LETTER_CODES, WORD_SETS,
                                      guess_language, guess_short_language)
from annotated.data.tokenizer import UNK, base_language
from annotated.inference.batched import translate_lines
from annotated.inference.bleu import escaped_note, report, too_short_note
from annotated.model import count_parameters
from annotated.store.checkpoint_file import check_device, load_model


# More unknown pieces than this share, and the input is likely not in the model's language.
UNKNOWN_SHARE = 0.2
# Control characters, which no sentence holds (tab, CR and the line end aside): a terminal's
# colour codes (ESC) or a form feed read as words and change the translation.
CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Invisible characters that text pasted from the web carries (a soft hyphen, a zero-width
# space, a word joiner, a no-break space of zero width, a direction override): the line looks
# the same, but the model reads a word split in two or a mark it never learned. The joiners
# and direction marks that some scripts write with are not among them.
INVISIBLE = re.compile("[\u00ad\u200b\u2060\ufeff\u202a-\u202e]")
# HTML tags and web or mail addresses, which no training sentence held: the model reads
# them as rare characters, and writes no copy of them.
MARKUP = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
ADDRESS = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
PAPER_BEAM = Config().beam_size
# A beam over 16 times the paper's does that much more work a step, and a batch goes quiet
# for long: the command says so before it starts.
SLOW_BEAM = 16 * PAPER_BEAM


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m annotated.translate",
                       description="translate with a checkpoint (§6.1 decoding)")
    p.add_argument("--checkpoint", type=path, required=True,
                   help="a checkpoint or averaged checkpoint")
    p.add_argument("--beam-size", type=option("beam_size"),
                   help="beam size (default: the config's, 4)")
    p.add_argument("--alpha", type=option("alpha"),
                   help="length penalty alpha (default: the config's, 0.6)")
    p.add_argument("--max-extra", type=option("max_extra"),
                   help="maximum output length = input length + this (default: config's, 50)")
    p.add_argument("--greedy", action="store_true", help="greedy search instead of beam")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute the whole prefix every step (slow; for comparison)")
    p.add_argument("--batch-tokens", type=number(between(1, 10 ** 7, "tokens")), default=2000,
                   help="source tokens per batch, padding included")
    p.add_argument("--input", type=path, help="text file, plain or gzip (default or -: stdin)")
    p.add_argument("--out", type=out_file, help="file to write, atomically (gzip if it ends in "
                                            ".gz); never the input, the references, the "
                                            "checkpoint or a project file (default or -: "
                                            "stdout)")
    p.add_argument("--ref", type=path,
                   help="references: print BLEU (annotated.evaluate) on stderr")
    p.add_argument("--device", type=device_name,
                   default="cuda" if torch.cuda.is_available() else "cpu",
                   help="cpu, cuda, cuda:N or mps (default: cuda where there is a GPU)")
    args = p.parse_args(argv)
    if args.greedy and (args.beam_size is not None or args.alpha is not None):
        p.error("--greedy keeps one hypothesis and no length penalty, so --beam-size and "
                "--alpha mean nothing with it; give one or the other")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    source = None if str(args.input) in ("None", "-") else args.input
    out_path = None if str(args.out) in ("None", "-") else args.out
    check_streams(args, source, out_path)
    model, config, tokenizer = load_model(args.checkpoint, map_location=args.device)
    if out_path is None and (c := unwritable_on_stdout(
            "".join(tokenizer.decode([i]) for i in range(tokenizer.vocab_size)))):
        raise DataError(f"stdout's encoding, {sys.stdout.encoding}, cannot write this model's "
                        f"{config.target_lang} translations (such as {c!r}); set "
                        f"PYTHONIOENCODING=utf-8 (or a UTF-8 locale), or give --out FILE")
    use_threads(count_parameters(model))
    if source is None and sys.stdin.isatty():
        log("reading sentences from the terminal, one a line; end with Ctrl-D (or give "
            "--input FILE)")
    lines = list(read_lines(source or sys.stdin.buffer))
    if why := not_lines_of_text(lines) or control_character(lines):
        raise DataError(f"{source or 'stdin'} {why}")
    if not lines:
        raise DataError(f"{source or 'stdin'} is empty: there is nothing to translate"
                        + (f"; {out_path} is left as it was" if out_path else ""))
    refs = list(read_lines(args.ref)) if args.ref else None
    if refs is not None:
        check_references(lines, refs, source or "stdin", args.ref, config)
    refuse_other_side(source, out_path)
    check_out_name(out_path)
    check_replaceable(out_path, lines)
    try:
        note_markup(lines)
        note_foreign_input([MARKUP.sub(" ", line) for line in lines], tokenizer, config)
        if note := escaped_note(lines, source or "stdin"):
            log(note)
        out = decoded(args, model, config, tokenizer, lines)
    except DataError as e:                         # a line that cannot be translated
        raise DataError(f"{source or 'stdin'}, {e}") from None
    if note := empty_output_note(lines, out, source or "stdin"):
        log(note + ("; the scores below score nothing" if refs is not None else ""))
    scores = report(out, refs, config.target_lang) if refs is not None else None
    write(out, out_path)
    if scores is not None:
        log(scores)
        if note := too_short_note(out, refs, config.target_lang):
            log(note)


def control_character(lines: list[str]) -> str | None:
    """Why lines holding a control character or an invisible one (INVISIBLE) cannot be
    translated as they are, or None."""
    found = next(((n, m.group()) for n, line in enumerate(lines, 1)
                  if (m := CONTROL.search(line) or INVISIBLE.search(line))), None)
    if found is None:
        return None
    n, c = found
    if INVISIBLE.match(c):
        escaped = "".join(f"\\x{b:02x}" for b in c.encode())
        return (f"holds the invisible character U+{ord(c):04X} ({unicodedata.name(c)}) on line "
                f"{n:,}: the line looks the same without it, but the model reads a word split "
                f"or a mark it never learned; delete it (sed -i 's/{escaped}//g' FILE)")
    return (f"holds the control character U+{ord(c):04X} on line {n:,}, which no sentence "
            f"holds (a terminal's colour codes? a form feed?): the model would read it as a "
            f"word; turn them into spaces (tr '\\001-\\010\\013\\014\\016-\\037\\177' ' ')")


def device_name(text: str) -> str:
    """--device as given, after checking that torch knows it and this machine has it: a wrong
    one is a wrong argument (exit 2), named with the devices to use."""
    try:
        check_device(text)
    except DeviceError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def empty_output_note(lines: list[str], out: list[str], source) -> str | None:
    """A note when nothing was translated: every input line blank (each gets an empty line),
    or a model that wrote only </s> for every line that holds text."""
    if not any(line.strip() for line in lines):
        return f"note: every line of {source} is blank, so every translation is an empty line"
    if not any(o.strip() for o, line in zip(out, lines) if line.strip()):
        return ("note: every translation is empty: the model writes only </s> (one trained "
                "too briefly, or for another language pair?)")
    return None


def check_streams(args, source, out_path) -> None:
    """Before any work: the output is never a file this command reads, nor one that is not
    text; and neither stream it needs is closed."""
    if out_path is not None:
        check_output(out_path, reads=[args.checkpoint, source, args.ref], say=log)
        if what := not_text_to_replace(out_path):
            raise DataError(f"refusing to write {out_path}: it {what}, which the translations "
                            f"would replace; choose another --out")
        if Path(out_path).suffix in (".pt", ".pth") or Path(out_path).name == "metrics.jsonl":
            raise DataError(f"refusing to write {out_path}: that is a name for a checkpoint or "
                            f"a metrics log, which the commands that read a run would take the "
                            f"translations for; choose another --out, such as hyp.de")
    elif sys.stdout is None:
        raise DataError("stdout is closed: there is nowhere to write the translations; give "
                        "--out FILE")
    if source is None and sys.stdin is None:
        raise DataError("stdin is closed: there is nothing to translate; give --input FILE")


def decoded(args, model, config, tokenizer, lines: list[str]) -> list[str]:
    """The translations of `lines`, with the decoding settings given or the checkpoint's; too
    little memory is one line naming the settings that lower it."""
    beam = config.beam_size if args.beam_size is None else args.beam_size
    alpha = config.alpha if args.alpha is None else args.alpha
    max_extra = config.max_extra if args.max_extra is None else args.max_extra
    how = "greedy search" if args.greedy else f"beam {beam}, alpha {alpha}"
    log(f"translating {len(lines)} lines with {how}, maximum length input + {max_extra}"
        f"{', uncached' if args.no_cache else ''}")
    if note := slow_settings_note(1 if args.greedy else beam, args.max_extra, config):
        log(note)
    try:
        return translate_lines(model, tokenizer, lines, beam_size=beam, alpha=alpha,
                               max_extra=max_extra, batch_tokens=args.batch_tokens,
                               greedy=args.greedy, cached=not args.no_cache, log=log,
                               longest=config.longest_sentence())
    except (MemoryError, RuntimeError) as e:
        if isinstance(e, RuntimeError) and not out_of_memory(e):
            raise
        raise MemoryError(f"{allocation_failed(e) or 'an allocation failed'}; lower "
                          f"--batch-tokens or --beam-size, or split the longest lines") from None


def slow_settings_note(beam: int, max_extra: int | None, config) -> str | None:
    """A note, before a long silence, for decoding settings far beyond the paper's: the work
    grows with the beam and with the length a translation may reach (`max_extra`: the one
    given, None for the checkpoint's own)."""
    slow = []
    if beam > SLOW_BEAM:
        slow.append(f"beam {beam} keeps {beam} hypotheses a sentence where the paper keeps "
                    f"{PAPER_BEAM} (§6.1)")
    if max_extra is not None and max_extra > config.longest_sentence():
        slow.append(f"--max-extra {max_extra} lets a translation that does not end run past "
                    f"the longest sentence this model's training kept "
                    f"({config.longest_sentence()} tokens)")
    if not slow:
        return None
    return (f"note: {'; '.join(slow)}: each batch takes far longer than usual, and progress is "
            f"reported once a batch is done")


def check_references(lines: list[str], refs: list[str], source, ref, config) -> None:
    """Refuse references that cannot score these lines (another number of lines); note ones
    that are the input itself, unless the model learned to copy."""
    check_aligned(len(lines), len(refs), source, ref)
    if refs == lines and config.dataset != "copy":
        log(f"note: --ref {ref} holds the same text as {source}, the input: the scores measure "
            f"copying; the references are the input's translations, in {config.target_lang}")
        return
    target = base_language(config.target_lang)
    read_as = guess_language(refs) or guess_short_language(refs)
    if read_as not in (None, target) and (target in WORD_SETS or target in SCRIPTS.values()):
        log(f"note: --ref {ref} reads as {read_as}; this model translates into "
            f"{config.target_lang}, and BLEU compares one language with itself: give "
            f"references in {config.target_lang}")
    if note := escaped_note(refs, ref):
        log(note)


def refuse_other_side(source, out_path) -> None:
    """Refuse an --out that holds a file named like the other side of the input's parallel
    corpus, under its own name or another (a hard link in the input's folder, which a write
    goes through): the translations would replace what may be its references."""
    if source is None or out_path is None or not Path(out_path).is_file() \
            or Path(out_path).stat().st_size == 0:
        return
    named = next((p for p in names_of(Path(out_path), Path(source).parent)
                  if named_as_other_side(source, p)), None)
    if named is None:
        return
    also = (f" is another name (a hard link) of {named}, which" if named != Path(out_path) else
            f" is a link to {os.path.realpath(out_path)}, which" if Path(out_path).is_symlink()
            else "")
    raise DataError(f"--out {out_path}{also} is named like the other side of {source}'s corpus "
                    f"(the same path but for the language or the side, as src and ref): the "
                    f"translations would replace "
                    f"what may be its references; give another --out, or delete {out_path} "
                    f"first if it is an earlier translation")


def names_of(file: Path, folder: Path) -> list[Path]:
    """`file`, then its other names in `folder` (hard links to it) if it has any."""
    if file.stat().st_nlink == 1 or not folder.is_dir():
        return [file]
    return [file, *sorted(p for p in folder.iterdir() if p.is_file() and p != file
                          and os.path.samefile(p, file))]


def named_as_other_side(source, out_path) -> bool:
    """Whether the two paths differ only in words that name a language (a code of two letters
    or three, or its English name) or a side (src beside ref): test.en and test.de,
    news-en.txt and news-de.txt, en/test.txt and de/test.txt, test.eng and test.deu,
    test2016.en and test2016.German, test.src and test.ref, news-src.en and news-ref.de."""
    words = [re.split(r"[./_\\-]+", str(Path(p).resolve()).removesuffix(".gz"))
             for p in (source, out_path)]
    differ = [pair for pair in zip(*words) if pair[0] != pair[1]]
    return len(words[0]) == len(words[1]) and bool(differ) and all(
        all(names_a_language(word) for word in pair)
        or (pair[0].lower() in SOURCE_WORDS and pair[1].lower() in REFERENCE_WORDS)
        for pair in differ)


SOURCE_WORDS = {"src", "source", "input"}
REFERENCE_WORDS = {"ref", "refs", "reference", "references", "tgt", "target"}


def names_a_language(word: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z]{2}", word)) or word.lower() in THREE_LETTER_CODES \
        or word.lower() in LANGUAGE_NAMES


# What other tools compress by their names; translate writes .gz compressed, any other plain.
OTHER_COMPRESSED = (".bz2", ".xz", ".zst", ".lzma", ".zip", ".7z", ".Z")


def check_out_name(out_path) -> None:
    """Refuse an --out whose name says it is compressed in a way translate does not write: a
    plain text named .bz2 would fail whatever reads it by its name."""
    if out_path is not None and Path(out_path).suffix.lower() in {
            s.lower() for s in OTHER_COMPRESSED}:
        raise DataError(f"--out {out_path}: translate writes a {Path(out_path).suffix} name as "
                        f"plain text (it compresses only .gz); name it .gz, or leave the "
                        f"suffix out")


#: The project's top folder: the package's parent (in a checkout, the git repository).
PROJECT = Path(__file__).resolve().parent.parent


def committed_to_the_project(path) -> bool:
    """Whether `path` is a file committed to the project's own repository (the shipped
    model's record, a results file, the README); False outside a checkout or without git."""
    here = Path(os.path.realpath(path))
    if not here.is_relative_to(PROJECT) or not (PROJECT / ".git").exists():
        return False
    try:
        return subprocess.run(["git", "-C", str(PROJECT), "ls-files", "--error-unmatch",
                               str(here.relative_to(PROJECT))], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def check_replaceable(out_path, lines: list[str]) -> None:
    """Refuse an --out that holds the input's own text (test.en.gz beside test.en, a copy of
    it), or that is a file of the project's own (the record beside the shipped model); say so
    when it holds another number of lines than these, which the translations replace as
    asked, though perhaps not meant."""
    if out_path is None or not Path(out_path).is_file() or Path(out_path).stat().st_size == 0 \
            or std_stream(Path(out_path)) is not None:        # `--out /dev/stdout >> log`
        return
    if committed_to_the_project(out_path):
        raise DataError(f"--out {out_path} is a file of this project, committed to its "
                        f"repository: the translations would replace it; choose another "
                        f"--out, outside the project's files")
    try:
        held = list(read_lines(out_path))
    except DataError:
        return                      # not text: not_text_to_replace has refused what matters
    if held == lines:
        raise DataError(f"--out {out_path} holds the input's own text, line for line: the "
                        f"translations would replace it; choose another --out")
    if len(held) != len(lines):
        log(f"note: {out_path} holds {len(held):,} lines, so it is not a translation of these "
            f"{len(lines):,}; the translations replace it")


def write(translations: list[str], out_path) -> None:
    """The translations, one a line, to `out_path` (atomically) or to stdout."""
    text = "".join(line + "\n" for line in translations)
    if out_path is not None:
        gz = Path(out_path).suffix.lower() == ".gz"         # as its name says, like the inputs
        with atomic_open(out_path, "wb" if gz else "w") as f:
            f.write(gzip.compress(text.encode(), mtime=0) if gz else text)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise DataError(f"cannot write the translations to stdout: {e.strerror}; give "
                        f"--out FILE") from None


def input_lines(found: list[int], read: int) -> str:
    """'input line N' for the first of the lines `found` (numbered from 1), with how many such
    lines the first `read` lines hold, where more than one."""
    more = f" ({len(found)} such lines among the first {read:,})" if len(found) > 1 else ""
    return f"input line {found[0]}{more}"


def note_markup(lines: list[str], sample: int = 200) -> None:
    """A note for HTML tags, and one for web or mail addresses, in the input's first `sample`
    lines: the model never saw them, translates tags as words and loses addresses."""
    for pattern, what, fix in (
            (MARKUP, "HTML tags", "it translates them as words; remove them first "
                                  "(sed 's/<[^>]*>//g')"),
            (ADDRESS, "a web or mail address", "it cannot copy one, and loses or garbles it; put "
                                               "it back into the translation by hand")):
        found = [(n, m[0]) for n, line in enumerate(lines[:sample], 1)
                 if (m := pattern.search(line))]
        if found:
            log(f"note: {input_lines([n for n, _ in found], min(len(lines), sample))} holds "
                f"{what} ({found[0][1][:40]!r}), which the model never saw in training: {fix}")


def note_foreign_input(lines: list[str], tokenizer, config, sample: int = 200) -> None:
    """A warning when much of the input (its first `sample` lines) is characters the model never
    saw in training (UNK), or when it reads as another language than the model's source: text
    the model would turn into a confident, meaningless translation, or when most lines hold a
    tab, as the lines of a file of pairs (source, tab, translation) do."""
    tabbed = sum("\t" in line for line in lines[:sample])
    if tabbed > min(len(lines), sample) / 2:
        log(f"warning: {tabbed:,} of the first {min(len(lines), sample):,} input lines hold a "
            f"tab, as a file of pairs (sentence, tab, translation) does; each whole line is "
            f"translated, tab and all. Give the {config.source_lang} column alone (cut -f1 FILE)")
    pieces = tokenizer.encode_all(lines[:sample])
    ids = [i for piece in pieces for i in piece]
    share = sum(i == UNK for i in ids) / max(len(ids), 1)
    if share > UNKNOWN_SHARE:
        log(f"warning: {share:.0%} of the input's pieces are characters this model never saw in "
            f"training; it translates {config.source_lang} into {config.target_lang}: is the "
            f"input in {config.source_lang}?")
        return
    # one such line among the others: a third of its pieces unknown (a run of unknown
    # characters is one piece)
    unknown = [n for n, piece in enumerate(pieces, 1)
               if 0 < 3 * sum(i == UNK for i in piece) >= len(piece)]
    if unknown:
        log(f"warning: {input_lines(unknown, len(pieces))} is mostly characters this model "
            f"never saw in training: is it in {config.source_lang}? Its translation will mean "
            f"nothing")
    partly = [n for n, piece in enumerate(pieces, 1) if UNK in piece and n not in unknown]
    chars = sorted({c for c in lines[partly[0] - 1] if not c.isspace()}) if partly else []
    if unseen := "".join(c for c, ids in zip(chars, tokenizer.encode_all(chars)) if UNK in ids):
        log(f"note: {input_lines(partly, len(pieces))} holds characters this model never saw "
            f"in training ({unseen[:20]!r}): it reads them as one unknown piece, and its "
            f"translation may make up words for it; write them in words, or leave them out")
    wordless = [n for n, line in enumerate(lines[:sample], 1)
                if line.strip() and not any(c.isalnum() for c in line)]
    if wordless:
        log(f"warning: {input_lines(wordless, min(len(lines), sample))} holds no letter or "
            f"digit, only punctuation or symbols: there is nothing to translate, and its "
            f"translation will mean nothing")
    if not config.lowercase and (capitals := in_capitals(lines[:sample])):
        log(f"warning: {len(capitals):,} of the first {min(len(lines), sample):,} input lines "
            f"are written in capitals, line {capitals[0] + 1} first, which the model rarely "
            f"saw in training: its translations of them are poor; write them as ordinary "
            f"sentences (only the first letter and names capitalised)")
    source = base_language(config.source_lang)
    read_as = guess_short_language(lines[:sample])         # the same script, another language
    if source in WORD_SETS and read_as not in (None, source):
        log(f"warning: the input reads as {read_as} (from its commonest words); this model "
            f"translates {config.source_lang} into {config.target_lang}: is the input in "
            f"{config.source_lang}?")


def in_capitals(lines: list[str]) -> list[int]:
    """The positions of lines written in capitals: most of their cased letters (of 6 or more:
    "A DOG RUNS." is one, "I saw NASA." is not) upper case."""
    found = []
    for i, line in enumerate(lines):
        cased = [c for c in line if c.isupper() or c.islower()]
        if len(cased) >= 6 and sum(c.isupper() for c in cased) > 0.8 * len(cased):
            found.append(i)
    return found


def log(message):
    """Progress and scores, on stderr; nothing if stderr is closed."""
    say_error(message)


if __name__ == "__main__":
    main()
