"""Subword tokenization (§5.1): "Sentences were encoded using byte-pair encoding, which has a
shared source-target vocabulary of about 37000 tokens."

We train a sentencepiece BPE model on the training split of both languages together, so the
source and target share one vocabulary, and with it one embedding matrix (§3.4). Four ids are
fixed for the whole project:

    PAD = 0   fills batches to a common length; never predicted, never attended to
    UNK = 1   a character the training text never showed
    BOS = 2   starts the decoder's input (the outputs "shifted right", §3.1)
    EOS = 3   ends every source and every target

`encode` returns subword ids without BOS/EOS; batching adds them. Deviation: the paper's BPE
worked on tokenized text; sentencepiece reads raw text (spaces become part of the pieces), so
decoding gives detokenized text directly, which is what sacrebleu scores.

Lowercasing (`lowercase=true`, not in the paper): the Multi30k literature trains on
lowercased text and scores lowercased BLEU. With it the BPE model normalises text with
sentencepiece's `nmt_nfkc_cf` rule instead of `nmt_nfkc`: the same Unicode normalisation, then
lowercase (on Multi30k's English, German and French it equals Python's `str.lower()` line for
line; ß stays ß). The rule is stored in the model, so encoding any input lowercases it and
decoding gives lowercased text, in training, translation and scoring alike.

A Tokenizer is a few hundred kilobytes: `to_bytes` lets a checkpoint carry it, so translating
needs nothing but the checkpoint. The copy task's `CopyTokenizer` has the same interface.
"""
import hashlib
import io
import json
import os
import re
import tempfile
import unicodedata
from pathlib import Path

import sentencepiece as spm

from annotated.base.errors import DataError
from annotated.base.files import atomic_open, read_lines, sha256_file

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL = (PAD, BOS, EOS)          # ids decode() leaves out

# Everything that shapes the BPE model besides the text and the vocabulary size; recorded with
# each cached model, so changing a setting here retrains.
BPE_SETTINGS = dict(
    model_type="bpe", pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
    character_coverage=1.0,           # keep every character seen (see coverage() for CJK)
    input_sentence_size=2_000_000,    # above this many sentences (WMT14 has 9 million, both
                                      # languages), train on a seeded sample of this many
    shuffle_input_sentence=True, seed=1234,
    num_threads=1,                    # one thread: the same model on every machine
)


# --- tokenizers ----------------------------------------------------------------------------------

class Tokenizer:
    """A sentencepiece BPE model with the project's fixed special ids."""
    kind = "bpe"

    def __init__(self, processor: spm.SentencePieceProcessor):
        found = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
        if found != (PAD, UNK, BOS, EOS):
            raise ValueError(f"sentencepiece model has pad/unk/bos/eos ids {found}, expected "
                             f"{(PAD, UNK, BOS, EOS)}; train it with train_bpe()")
        self.sp = processor

    @staticmethod
    def from_bytes(data: bytes):
        """The tokenizer `to_bytes` wrote: a BPE Tokenizer, or a CopyTokenizer."""
        if data.startswith(CopyTokenizer.MAGIC):
            return CopyTokenizer.from_bytes(data)
        try:
            processor = spm.SentencePieceProcessor(model_proto=data)
        except RuntimeError:           # sentencepiece's own words name its C++ source lines
            raise ValueError(f"not a tokenizer: {len(data):,} bytes that are neither a "
                             f"sentencepiece model nor a CopyTokenizer") from None
        return Tokenizer(processor)

    @staticmethod
    def load(path):
        return Tokenizer.from_bytes(Path(path).read_bytes())

    def to_bytes(self) -> bytes:
        return self.sp.serialized_model_proto()

    def save(self, path):
        with atomic_open(path) as f:
            f.write(self.to_bytes())

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def encode_all(self, texts: list[str]) -> list[list[int]]:
        """encode() of many sentences at once (sentencepiece runs the batch in C++)."""
        return self.sp.encode(list(texts))

    def decode(self, ids) -> str:
        return self.sp.decode([int(i) for i in ids if int(i) not in SPECIAL])

    def ids_without_text(self) -> set[int]:
        """The ids that carry no text: UNK (a character the training text never showed) and the
        pieces that show nothing, made of word boundaries ("▁"), spaces,
        control and format characters (a zero-width joiner the training text held). A
        sentence of these only encodes to no token of text."""
        return {UNK} | {i for i in range(self.vocab_size) if _shows_nothing(self.sp.id_to_piece(i))}


def _shows_nothing(piece: str) -> bool:
    """True for a piece of word boundaries, separators (Unicode's Z categories) and control,
    format or unassigned characters (its C categories) alone."""
    return all(c == "▁" or unicodedata.category(c)[0] in "CZ" for c in piece)


class CopyTokenizer:
    """The copy task's vocabulary: ids 4..V-1 are the symbols, written as their decimal ids, so
    encode("4 9 5") == [4, 9, 5] and decode inverts it. UNK decodes to "⁇" as in sentencepiece."""
    MAGIC = b"annotated.CopyTokenizer vocab_size="
    kind = "copy"

    def __init__(self, vocab_size: int):
        if vocab_size < 5:
            raise ValueError(f"copy task needs vocab_size >= 5 (4 special ids + symbols), got "
                             f"{vocab_size}")
        self.vocab_size = vocab_size

    @staticmethod
    def from_bytes(data: bytes):
        return CopyTokenizer(int(data[len(CopyTokenizer.MAGIC):]))

    def to_bytes(self) -> bytes:
        return CopyTokenizer.MAGIC + str(self.vocab_size).encode()

    def encode(self, text: str) -> list[int]:
        words = text.split()
        bad = [w for w in words if not (w.isdigit() and 4 <= int(w) < self.vocab_size)]
        if bad:
            raise DataError(f"the copy task reads symbols {4}..{self.vocab_size - 1} written as "
                             f"numbers separated by spaces (e.g. \"4 9 5\"); got {bad[0]!r} in "
                             f"{text!r}")
        return [int(w) for w in words]

    def encode_all(self, texts: list[str]) -> list[list[int]]:
        ids = []
        for number, text in enumerate(texts, start=1):
            try:
                ids.append(self.encode(text))
            except DataError as e:
                raise DataError(f"line {number}: {e}") from None
        return ids

    def decode(self, ids) -> str:
        return " ".join("⁇" if int(i) == UNK else str(int(i)) for i in ids
                        if int(i) not in SPECIAL)

    def ids_without_text(self) -> set[int]:
        return {UNK}


# --- training and the cache ----------------------------------------------------------------------

def _sentences(texts_or_files):
    for source in texts_or_files:
        lines = read_lines(source) if isinstance(source, (str, os.PathLike)) else source
        yield from (line for line in lines if line.strip())


# Scripts with thousands of characters: a BPE model that keeps every character seen would
# spend its vocabulary on rare ones, so these keep the 99.95% most frequent (sentencepiece's
# advice); the rest become UNK. sentencepiece needs no spaces between words, so these scripts
# are cut into pieces as they are.
LARGE_SCRIPTS = {"zh", "ja", "ko", "yue", "wuu"}
# Three-letter codes (ISO 639-2/3) of the languages whose script decides something here.
THREE_LETTERS = {"zho": "zh", "chi": "zh", "cmn": "zh", "jpn": "ja", "kor": "ko", "tha": "th",
                 "lao": "lo", "khm": "km", "mya": "my", "bur": "my"}
# The two-letter codes of ISO 639-1.
TWO_LETTERS = set("""aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co
    cr cs cu cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he
    hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku
    kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr
    nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr
    ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo
    za zh zu""".split())


def base_language(code: str | None) -> str:
    """The language of a code such as `zh`, `zh-Hant`, `zh_CN`, ` ZH` or `zho`, as the
    two-letter code where one is known here: `zh`."""
    base = re.split(r"[-_]", (code or "").strip().lower())[0]
    return THREE_LETTERS.get(base, base)


def is_language(code: str) -> bool:
    """Whether `code` reads as a language: an ISO 639-1 code, or three letters (ISO 639-2/3),
    with or without a region or script (zh_CN, zh-Hant)."""
    base = base_language(code)
    return base in TWO_LETTERS or re.fullmatch(r"[a-z]{3}", base) is not None


def coverage(*langs: str) -> float:
    """The share of characters the BPE model keeps, for a corpus in these languages."""
    return 0.9995 if any(base_language(lang) in LARGE_SCRIPTS for lang in langs) else 1.0


def bpe_settings(character_coverage: float = 1.0, lowercase: bool = False) -> dict:
    """BPE_SETTINGS with the corpus's character coverage and, with lowercase, the normalisation
    rule that also lowercases (the module docstring says why)."""
    settings = dict(BPE_SETTINGS, character_coverage=character_coverage)
    if lowercase:
        settings["normalization_rule_name"] = "nmt_nfkc_cf"
    return settings


def train_bpe(texts_or_files, vocab_size: int, model_path, character_coverage: float = 1.0,
              lowercase: bool = False) -> Tokenizer:
    """Train a shared BPE vocabulary and save it (atomically) at model_path.

    texts_or_files: paths of text files (plain or gzip), or lists of sentences, or a mixture:
    pass the training split of both languages. Blank lines are skipped. The result depends only
    on the sentences, their order, vocab_size and BPE_SETTINGS.
    """
    settings = bpe_settings(character_coverage, lowercase)
    spm.set_random_generator_seed(settings.pop("seed"))
    model, raised = io.BytesIO(), []

    def sentences():           # what the reading raises, sentencepiece turns into RuntimeError
        try:
            yield from _sentences(texts_or_files)
        except BaseException as e:           # a file that is no text; Ctrl-C, SIGTERM, SIGHUP
            raised.append(e)
            raise
    try:
        spm.SentencePieceTrainer.train(sentence_iterator=sentences(), model_writer=model,
                                       vocab_size=vocab_size, minloglevel=2, **settings)
    except RuntimeError as e:              # no sentences, or too few characters for vocab_size
        if raised:
            raise raised[0] from None
        why = re.sub(r"^.*?\]\)?\s*", "", str(e).strip().splitlines()[-1]).rstrip(".") or \
            "the training text holds no sentence"
        why = re.sub(r"\.\s*Increase vocab_size or decrease character_coverage.*", "", why)
        raise DataError(f"sentencepiece cannot learn a {vocab_size:,}-token vocabulary from "
                        f"the training text: {why}; choose a vocab_size that fits the corpus") \
            from None
    tokenizer = Tokenizer.from_bytes(model.getvalue())
    tokenizer.save(model_path)
    return tokenizer


def load_or_train(files, vocab_size: int, cache_dir, name: str, log=print,
                  character_coverage: float = 1.0, lowercase: bool = False) -> Tokenizer:
    """The BPE model of these training files, trained once and then reused from cache_dir.

    The model is stored as `{name}-bpe{vocab_size}-{key}.model`, where key hashes the record of
    what it was trained on (each file's sha256, vocab_size, BPE_SETTINGS, sentencepiece version),
    written beside it as a .json file with the model file's own sha256. A model whose record
    differs, whose bytes are not the ones recorded (cut short, or another model copied over
    it), or that cannot be loaded is trained again, and the log says so.
    """
    record = dict(inputs=[sha256_file(f) for f in files], vocab_size=vocab_size,
                  settings=bpe_settings(character_coverage, lowercase),
                  sentencepiece=spm.__version__)
    text = json.dumps(record, indent=1, sort_keys=True)
    key = hashlib.sha256(text.encode()).hexdigest()[:12]
    model_path = Path(cache_dir) / f"{name}-bpe{vocab_size}-{key}.model"
    record_path = model_path.with_suffix(".json")
    cached = _cached(model_path, record_path, record, log)
    if cached is not None:
        return cached
    _check_writable(Path(cache_dir))
    log(f"tokenizer: training a {vocab_size:,}-token{' lowercased' if lowercase else ''} BPE "
        f"vocabulary on {', '.join(Path(f).name for f in files)}")
    tokenizer = train_bpe(files, vocab_size, model_path, character_coverage, lowercase)
    with atomic_open(record_path, "w") as f:     # written last: a model without it is retrained
        json.dump({**record, "model_sha256": sha256_file(model_path)}, f, indent=1,
                  sort_keys=True)
    return tokenizer


def _check_writable(cache_dir: Path) -> None:
    """Make the cache folder and write a file there before training, so that a cache that
    cannot be written (a read-only home) is one line now, not after the training."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache_dir):
            pass
    except OSError as e:
        where = f" ({e.filename})" if e.filename and str(e.filename) != str(cache_dir) else ""
        raise DataError(f"cannot write the tokenizer cache {cache_dir}: {e.strerror}{where}; "
                        f"give --cache-dir DIR (or ANNOTATED_CACHE_DIR) a folder you can "
                        f"write") from None


def _cached(model_path: Path, record_path: Path, record: dict, log) -> Tokenizer | None:
    """The cached tokenizer if its record matches `record` and its bytes the recorded sha256;
    else None (a damaged model is removed first, and the log says why)."""
    try:
        saved = json.loads(record_path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(saved, dict) or {k: saved.get(k) for k in record} != record \
            or "model_sha256" not in saved or not model_path.is_file():
        return None
    why = None
    if saved.get("model_sha256") != sha256_file(model_path):
        why = "its bytes are not those it was saved with"
    else:
        try:
            tokenizer = Tokenizer.load(model_path)
            log(f"tokenizer: reusing {model_path}")
            return tokenizer
        except ValueError as e:
            why = f"it cannot be loaded: {e}"
    log(f"tokenizer: the cached {model_path} is damaged ({why}); removing it and training "
        f"again")
    model_path.unlink()
    return None
