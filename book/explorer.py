"""The attention explorer page (book/explorer.md): the data it shows, computed at build time.

The model that ships with the project (annotated/pretrained/multi30k_en_de.pt) translates the
300 English sentences of the Multi30k test2016 sample (annotated/data/sample/multi30k) with
beam search at the checkpoint's own settings, batched exactly as
annotated.inference.batched.translate_lines batches them, so each translation is the one that
function gives. Each sentence and its translation are then fed through the model once, the
translation teacher-forced (the decoder reads [BOS] + output minus its last token), and the
weights of every attention layer and head are recorded (annotated.inference.search's
attention_maps, which reads the `record_weights` switch of annotated.multihead).

The site gets them as `_static/explorer-data.js`, a script that assigns the global
`window.EXPLORER_DATA`, so the page needs no fetch() and works from file:// as well as from a
server. Its JSON object holds:

- `model`: N, h, d_model, the vocabulary size, and the decoding settings (beam, alpha);
- `levels`: 255; a weight w is stored as the byte round(w * 255), within 1/510 of w;
- `featured`: the indices of the sentences the page lists (FEATURED below);
- `sentences`: per sentence `source` and `translation` (text), `src_ids` and `out_ids` (the
  token ids of the source, without EOS, and of the output), `src` (the source's subword
  pieces, shown readably, then the end token), `tgt` (the decoder's input pieces: the start
  token, then the output minus its last token), `next` (the piece each decoder position
  predicts: the output, end token included) and `offset` (its first byte in `weights`);
- `weights`: base64 of the bytes of every sentence, one after the other. A sentence with S
  source and T decoder positions holds, in this order: encoder self-attention, N layers x h
  heads x S rows x S keys; decoder self-attention, N x h x the lower triangle by rows (row i
  holds its i + 1 keys 0..i; the rest are masked, exactly 0); encoder-decoder attention,
  N x h x T rows x S keys. Layers and heads go in order, rows and keys by position.

Computing takes some seconds, so the file is kept in build/explorer-cache/ under a digest of
everything it depends on (the checkpoint, the sentences, this module and the annotated
package's source); a build whose inputs have not changed reuses it.
"""
import base64
import contextlib
import hashlib
import json
from pathlib import Path

import numpy as np
import torch

from annotated.base.errors import DataError
from annotated.base.files import atomic_open, read_lines
from annotated.base.threads import threads_for
from annotated.data.batching import make_batches
from annotated.data.tokenizer import BOS, EOS, UNK
from annotated.inference.search import attention_maps, beam_search, source_batch
from annotated.model import count_parameters
from annotated.store.checkpoint_file import load_model
from book import i18n

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
CHECKPOINT = ROOT / "annotated" / "pretrained" / "multi30k_en_de.pt"
SENTENCES = ROOT / "annotated" / "data" / "sample" / "multi30k" / "test_2016_flickr_sample.en.gz"
PAGE = "explorer.md"
DATA = "explorer-data.js"                # in the site's _static/ folder
CACHE = ROOT / "build" / "explorer-cache"
GLOBAL = "EXPLORER_DATA"
LEVELS = 255
KINDS = ("encoder", "decoder", "cross")
BATCH_TOKENS = 2000                      # translate_lines' default, as `translate` uses it
#: The sentences the page lists: first sentence 0, the one chapter 8 draws, which the page
#: opens on; then, shortest first, sentences picked by hand from the 300 after reading every
#: translation: translations that read as fluent German, sources from 8 to 22 pieces
#: (the end token included), varied scenes (people, animals, sport, music, work), and several
#: where German puts a word elsewhere than English does (a verb at the end of a clause after
#: "while" or "as", an object after an adverb) or joins two English words into one
#: ("life vest", Schwimmweste).
FEATURED = (0, 8, 4, 68, 85, 286, 12, 40, 24, 39, 77, 203, 266, 64, 189, 22, 9, 275, 41, 73)
#: How the page shows the special tokens and the subword pieces.
START, END, UNKNOWN = "<s>", "</s>", "<unk>"   # as chapter 8's figures write them
WORD, CONTINUES = "\u2581", "\u00b7"     # sentencepiece's word-start mark; ours for the rest


def piece(tokenizer, token: int) -> str:
    """A subword piece as the page shows it: a word's first piece as it is (without
    sentencepiece's mark), a piece that continues a word after a middle dot."""
    if token in (BOS, EOS, UNK):
        return {BOS: START, EOS: END, UNK: UNKNOWN}[token]
    text = tokenizer.sp.id_to_piece(int(token))
    if text.startswith(WORD):
        return text[1:] or "\u2423"                      # a lone word-start mark: a space
    return CONTINUES + text


def translate(model, config, ids: list[list[int]]) -> list[list[int]]:
    """The output tokens (EOS included when the search ended with one) of beam search at the
    checkpoint's settings, in the batches translate_lines forms, so the same numbers."""
    lengths = [(len(x) + 1, len(x) + 1) for x in ids]
    budget = max(BATCH_TOKENS, max(n for n, _ in lengths))
    batches = sorted(make_batches(lengths, budget, seed=0, epoch=0), key=lambda b: lengths[b[0]])
    device = next(model.parameters()).device
    out = [None] * len(ids)
    for batch in batches:
        hyps = beam_search(model, source_batch([ids[i] for i in batch], device),
                           beam_size=config.beam_size, alpha=config.alpha,
                           max_extra=config.max_extra)
        for i, hyp in zip(batch, hyps):
            out[i] = list(hyp.tokens)
    return out


def quantize(weights: np.ndarray) -> np.ndarray:
    """Weights in [0, 1] as bytes: round(w * 255)."""
    return np.clip(np.rint(weights * LEVELS), 0, LEVELS).astype(np.uint8)


def pack(maps: dict[str, np.ndarray]) -> bytes:
    """One sentence's weights in the layout of the module docstring."""
    lower = np.tril(np.ones(maps["decoder"].shape[-2:], dtype=bool))
    parts = [quantize(maps["encoder"]).ravel(),
             quantize(maps["decoder"][..., lower]).ravel(),     # row by row, keys 0..i
             quantize(maps["cross"]).ravel()]
    return b"".join(p.tobytes() for p in parts)


@contextlib.contextmanager
def threads(count: int | None):
    """torch's CPU thread count set to `count` (if given) for the block, then put back."""
    before = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def compute(checkpoint: Path = CHECKPOINT, sentences: Path = SENTENCES) -> dict:
    """The data object of the module docstring."""
    model, config, tokenizer = load_model(checkpoint)
    lines = list(read_lines(sentences))
    if not lines or any(not line.strip() for line in lines):
        raise DataError(f"{sentences}: expected one sentence on every line, found an empty one")
    if max(FEATURED) >= len(lines):
        raise DataError(f"{sentences} has {len(lines)} sentences; the explorer lists sentence "
                        f"{max(FEATURED)}")
    ids = tokenizer.encode_all(lines)
    with threads(threads_for(count_parameters(model))):
        outputs = translate(model, config, ids)
        blobs, entries, offset = [], [], 0
        for line, src, out in zip(lines, ids, outputs):
            maps = attention_maps(model, src, out)
            blob = pack(maps)
            entries.append({
                "source": line,
                "translation": tokenizer.decode(out),
                "src_ids": src, "out_ids": out,
                "src": [piece(tokenizer, t) for t in src + [EOS]],
                "tgt": [piece(tokenizer, t) for t in [BOS] + out[:-1]],
                "next": [piece(tokenizer, t) for t in out],
                "offset": offset})
            blobs.append(blob)
            offset += len(blob)
    return {"model": {"N": config.N, "h": config.h, "d_model": config.d_model,
                      "vocab": tokenizer.vocab_size, "beam_size": config.beam_size,
                      "alpha": config.alpha},
            "levels": LEVELS, "kinds": list(KINDS), "featured": list(FEATURED),
            "sentences": entries,
            "weights": base64.b64encode(b"".join(blobs)).decode("ascii")}


def script(data: dict) -> str:
    """The data as a script assigning the global the page reads."""
    return (f"// The attention explorer's data, written by `python -m book build` "
            f"(book/explorer.py)\nwindow.{GLOBAL} = "
            + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + ";\n")


def inputs_digest() -> str:
    """A digest of everything the data depends on: the checkpoint, the sentences, this module
    and the annotated package's Python source."""
    digest = hashlib.sha256()
    sources = sorted((ROOT / "annotated").rglob("*.py"))
    for path in [CHECKPOINT, SENTENCES, Path(__file__).resolve(), *sources]:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def data_text() -> str:
    """The data file's text: from the cache when its inputs are unchanged, else computed (and
    cached)."""
    cached = CACHE / f"explorer-data-{inputs_digest()[:20]}.js"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    text = script(compute())
    try:
        for old in CACHE.glob("explorer-data-*.js"):
            old.unlink(missing_ok=True)
        with atomic_open(cached, "w") as f:
            f.write(text)
    except OSError:
        pass                            # a read-only checkout: compute again next time
    return text


def stage(src: Path, lang: str = "en") -> None:
    """Put the page, in `lang`, into the staged Sphinx source `src`, its numbers filled in from
    the checkpoint's settings (so that the prose states only what the data holds)."""
    model, config, tokenizer = load_model(CHECKPOINT)
    count = sum(1 for _ in read_lines(SENTENCES))
    values = {"N": config.N, "h": config.h, "d_model": config.d_model,
              "vocab": f"{tokenizer.vocab_size:,}", "beam": config.beam_size,
              "alpha": config.alpha, "count": count, "last": count - 1,
              "featured": len(FEATURED)}
    text = i18n.page_text(BOOK / PAGE, lang)
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", str(value))
    if "{{" in text:
        raise DataError(f"{BOOK / PAGE}: unknown placeholder {text[text.index('{{'):][:20]!r}")
    (src / PAGE).write_text(text, encoding="utf-8")


def write_data(site: Path) -> Path:
    """Write the data file into the built site's _static/ folder; return its path."""
    path = site / "_static" / DATA
    path.parent.mkdir(exist_ok=True)
    path.write_text(data_text(), encoding="utf-8")
    return path
