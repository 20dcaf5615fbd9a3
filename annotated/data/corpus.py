"""Parallel corpora (§5.1) turned into token ids: the copy task, Multi30k and WMT14 English-German.

Every dataset ends up as the same `Corpus`: train/valid/test lists of (source ids, target ids)
without BOS/EOS (batching adds them), the shared-vocabulary tokenizer, and counts of everything
dropped on the way. Nothing is dropped silently:

- parallel files must have the same number of lines (else an error naming both counts),
  checked for every split before any tokenizer is trained;
- pairs with a side that encodes to no token of text carry no translation and are dropped and
  counted, in every split: a blank line, or one of characters the tokenizer drops or does not
  know (control characters, zero-width spaces); the tokenizer's ids decide
  (Tokenizer.ids_without_text), not a list of characters (a NUL byte, which text never holds
  and a crash leaves, refuses its whole file, annotated.base.files.read_lines);
- pairs longer than `max_sentence_len` tokens on either side (EOS/BOS counted) are dropped from
  train and valid and counted, never from test: the test set is scored whole.

Where the data comes from (the "data location": `--data-dir` or ANNOTATED_DATA_DIR, which may
name the folder holding `multi30k/` and `wmt14/` or the dataset's folder itself):

    copy      synthetic: random symbol sequences to repeat, generated from config.seed
    multi30k  English->German image captions (29,000 training pairs), the data location or,
              when none is given, downloaded once into the cache (ANNOTATED_CACHE_DIR, default
              ~/.cache/annotated-transformer) and checked against known sha256 sums
    multi30k_sample  the first 3,000 / 300 / 300 pairs of Multi30k's splits, shipped inside the
              package (annotated/data/sample/multi30k): works offline and ignores the data location
    wmt14     the paper's data: what `python -m annotated.data.prepare_wmt14` wrote, in the data
              location or by default in the cache's wmt14/ folder

Tokenizers are trained on the training split and cached in the cache folder (see tokenizer.py).
"""
import hashlib
import os
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from annotated.base.errors import DataError, DownloadError
from annotated.base.files import (check_aligned, download, expand, read_lines, resolved,
                                  text_sha256)
from annotated.base.settings import shown
from annotated.data.datasets import DATASETS
from annotated.data.languages import SCRIPTS, WORD_SETS, guess_language, guess_spaced_language
from annotated.data.tokenizer import CopyTokenizer, base_language, coverage, load_or_train

DATA_ENV, CACHE_ENV = "ANNOTATED_DATA_DIR", "ANNOTATED_CACHE_DIR"
DEFAULT_CACHE = Path("~/.cache/annotated-transformer")

# Multi30k task 1 (Elliott et al., 2016), from the multi30k/dataset repository.
MULTI30K_URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw/{name}"
MULTI30K_SPLITS = dict(train="train", valid="val", test="test_2016_flickr")
MULTI30K_SHA256 = {
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
}
# The same files' text (files.text_sha256): a data location's copy, or a cached one, must hold
# exactly the published sentences in the published order, however it is compressed.
MULTI30K_TEXT_SHA256 = {
    "train.en.gz": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "train.de.gz": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "val.en.gz": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "val.de.gz": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "test_2016_flickr.en.gz": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
    "test_2016_flickr.de.gz": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    "train.fr.gz": "5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d",
    "val.fr.gz": "5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc",
    "test_2016_flickr.fr.gz": "cb3160d69b002bb638e66cc7612fcd56cb0af82eadc9c142dedc438afb885ef6",
}
# The shipped sample: the first lines of each Multi30k split (see its README for the terms).
SAMPLE = Path(__file__).resolve().parent / "sample" / "multi30k"
SAMPLE_SPLITS = {split: f"{stem}_sample" for split, stem in MULTI30K_SPLITS.items()}
# WMT14 as prepare_wmt14 writes it: newstest2013 is the paper's dev set, newstest2014 its test.
WMT14_SPLITS = dict(train="train", valid="newstest2013", test="newstest2014")
# Paired lines whose lengths go together less than this, over at least this many pairs, are
# taken for files out of line (read_parallel, check_in_line).
MIN_LENGTH_CORRELATION, MIN_PAIRS_IN_LINE = 0.3, 50
# The pairs a stretch of two files is judged on for targets copied from the source
# (check_stretches) ...
STRETCH = 100
# ... and for lines out of line: few enough that the last SHIFT_STRETCH or so lines of a
# corpus shifted by a line are seen (stretch_out_of_line).
SHIFT_STRETCH = 30
# ... and in the last SHIFT_STRETCH lines, from TAIL_SHORTEST on (tail_out_of_line): paired
# lines there stray from the corpus's usual length ratio by more than TAIL_STRAY (in log
# characters, on average), and pairing each target with the next or previous source strays at
# least TAIL_BETTER times less: far apart enough that a clean corpus's tail is not refused,
# near enough that a shift of ten lines or more is found.
TAIL_SHORTEST, TAIL_STRAY, TAIL_BETTER = 6, 0.25, 1.8
# What the first line of a file exported from a table names its column by (check_no_header),
# beside the language code of the file's name.
COLUMN_NAMES = {"source", "target", "src", "tgt", "trg", "sentence", "sentences", "text",
                "translation", "input", "output", "english", "german", "deutsch", "french",
                "français", "francais", "spanish", "español", "chinese", "中文", "汉语", "英语",
                "德语", "法语", "italian", "italiano", "dutch", "nederlands", "portuguese",
                "português", "japanese", "日本語", "russian", "русский", "lang", "language"}
# A run of letters or digits: a sentence's words, for telling near copies apart (pair_gist).
WORD = re.compile(r"[^\W_]+")
# A user's own corpus (dataset=files): the stems each split may have, in order of preference.
USER_SPLITS = dict(train=("train",), valid=("valid", "val", "dev"), test=("test",))


@dataclass
class Corpus:
    train: list          # [(src_ids, tgt_ids)], ids without BOS/EOS
    valid: list
    test: list
    tokenizer: object    # Tokenizer or CopyTokenizer, shared by source and target
    stats: dict          # {split: {"read", "empty", "too_long", "kept"}}; empty: a side that
                         # encodes to no token
    test_src: list = field(default_factory=list)   # raw test sentences, aligned with test
    test_ref: list = field(default_factory=list)   # raw references, for BLEU

    def fingerprints(self) -> dict:
        """{"train": sha256, "valid": sha256} of the token ids a run trains and validates on,
        pair by pair in order: a resumed run checks that its data has not changed."""
        return {"train": fingerprint(self.train), "valid": fingerprint(self.valid)}


def fingerprint(pairs) -> str:
    """The sha256 of a split's token ids: any changed, added, removed or reordered pair, or a
    source swapped with a target, changes it."""
    digest = hashlib.sha256()
    for src, tgt in pairs:
        src, tgt = np.asarray(src, np.int32), np.asarray(tgt, np.int32)
        digest.update(np.array([len(src), len(tgt)], np.int64).tobytes())
        digest.update(src.tobytes())
        digest.update(tgt.tobytes())
    return digest.hexdigest()


def read_parallel(src_path, tgt_path):
    """Line-aligned sentence pairs of two text files (plain or gzip), each side stripped.

    Returns (pairs, stats) with stats = {"read": lines read}. Files with no line that has text
    on both sides are an error now, before a tokenizer is trained on them; which pairs carry
    no token is for the tokenizer to say (load_corpus drops them).
    """
    src, tgt = list(read_lines(src_path)), list(read_lines(tgt_path))
    check_aligned(len(src), len(tgt), src_path, tgt_path)
    pairs = [(s.strip(), t.strip()) for s, t in zip(src, tgt)]
    both = [(s, t) for s, t in pairs if s and t]
    if not both:
        raise DataError(f"{src_path} and {tgt_path} hold no sentence pair ({len(pairs):,} lines, "
                        f"all blank on one side or both); check the files")
    same = sum(s == t for s, t in both)
    if same > len(both) / 2:
        raise DataError(f"{src_path} and {tgt_path} hold the same text on {same:,} of their "
                        f"{len(both):,} lines (one file a copy of the other?): a parallel corpus "
                        f"pairs each sentence with its translation; check the files")
    check_no_header(pairs[0], src_path, tgt_path)
    check_sides_apart(pairs, src_path, tgt_path)
    check_in_line(pairs, src_path, tgt_path)
    check_stretches(pairs, src_path, tgt_path)
    return pairs, {"read": len(pairs)}


def check_no_header(first_pair, src_path, tgt_path) -> None:
    """Refuse files whose first lines name their columns ("en" and "de", "English" and
    "German", "source" and "target"), as a table exported to text does: that pair would be
    trained on as a sentence and its translation."""
    def column_name(line: str, path) -> bool:
        word = line.strip("#:;,|\"' \t").lower()
        return word in COLUMN_NAMES or word == Path(path).name.removesuffix(".gz").split(".")[-1]
    if all(column_name(line, path) for line, path in zip(first_pair, (src_path, tgt_path))):
        s, t = first_pair
        raise DataError(f"{src_path} and {tgt_path} begin with a header, {shown(s)} and "
                        f"{shown(t)}: the names of the columns, not a sentence and its "
                        f"translation. The files hold sentences only, one a line; remove the "
                        f"first line of both (e.g. tail -n +2)")


def length_correlation(lengths: np.ndarray) -> float:
    """How closely the lengths of paired lines, (pairs, 2), go together: the correlation of
    their ranks (Spearman's), which one line far longer than the rest cannot sway. Equal
    lengths share their mean rank, so that a corpus of a few sentences repeated is not
    ranked by where the repeats happen to stand."""
    return float(np.corrcoef(mean_ranks(lengths[:, 0]), mean_ranks(lengths[:, 1]))[0, 1])


def mean_ranks(values: np.ndarray) -> np.ndarray:
    """The rank of each value (from 0), equal values sharing the mean of their ranks."""
    ranks = np.empty(len(values))
    ranks[values.argsort(kind="stable")] = np.arange(len(values))
    _, group = np.unique(values, return_inverse=True)
    return (np.bincount(group, weights=ranks) / np.bincount(group))[group]


def in_line_correlation(pairs, fewest: int = MIN_PAIRS_IN_LINE) -> float | None:
    """length_correlation of the pairs of lines that are not empty, in characters; None where
    it cannot tell: fewer than `fewest` different pairs, or lines all about as long."""
    both = [(len(s), len(t)) for s, t in pairs if s and t]
    if len(set(both)) < fewest:
        return None
    lengths = np.array(both, dtype=np.float64)
    return None if min(lengths.std(axis=0)) < 3 else length_correlation(lengths)


def check_in_line(pairs, src_path, tgt_path) -> None:
    """Refuse two files whose lines do not translate each other: a sentence's translation is
    about as long as it is, so over a corpus the lengths of paired lines, in characters, go
    together closely; shifted by one line, they hardly do (the tests measure both on the
    shipped sample)."""
    r = in_line_correlation(pairs)
    if r is not None and r < MIN_LENGTH_CORRELATION:
        s, t = next((s, t) for s, t in pairs if s and t)
        both = sum(1 for s, t in pairs if s and t)
        found = stretch_out_of_line(pairs)          # where, if not from the first lines on
        where = (f"they go out of line near line {found[0]}" if found and
                 found[0] > SHIFT_STRETCH else f"their first pair is {shown(s)} / {shown(t)}")
        raise DataError(f"{src_path} and {tgt_path} look out of line: the lengths of paired lines "
                        f"do not go together (rank correlation {r:.2f} over {both:,} pairs; "
                        f"translations line for line come close to 1). Line i of one file must "
                        f"translate line i of the other, and a line added or removed shifts "
                        f"every pair after it; {where}: check the files")


def stretches(values: np.ndarray, size: int = STRETCH) -> tuple[np.ndarray, np.ndarray]:
    """values (n >= size,) -> the first index of each stretch of `size` of them, one every
    size // 2 and the last ending at the end, and the stretches, (stretches, size)."""
    starts = np.unique(np.r_[np.arange(0, len(values) - size + 1, size // 2),
                             len(values) - size])
    return starts, np.lib.stride_tricks.sliding_window_view(values, size)[starts]


def stretch_ranks(values: np.ndarray, size: int) -> np.ndarray:
    """The ranks of the values within each of their stretches (ties ranked in order)."""
    return stretches(values, size)[1].argsort(axis=1, kind="stable").argsort(axis=1) \
        .astype(float)


def row_correlations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The correlation of each row of a with the same row of b, (rows,)."""
    a, b = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    return (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))


def check_stretches(pairs, src_path, tgt_path) -> None:
    """Refuse files in line as a whole but not in a stretch of SHIFT_STRETCH pairs: there, the
    lengths of each line and the next (or the one before) of the other file go together much
    better than those of paired lines, as they do after a line added or removed (the
    whole-file check misses a shift near the end); or, over a stretch of STRETCH pairs, most
    targets are their source copied."""
    lines = np.array([i for i, (s, t) in enumerate(pairs, 1) if s and t])
    copied = np.array([s == t for s, t in pairs if s and t], dtype=np.float64)
    if len(lines) >= STRETCH + 2:
        starts, found = stretches(copied)
        share = found.mean(axis=1)
        if share.max() > 0.5:
            at = starts[share.argmax()]
            first = lines[at + int(copied[at:].argmax())]
            raise DataError(f"{tgt_path}, line {first}: from about there most lines are the "
                            f"same as {src_path}'s ({share.max():.0%} of {STRETCH} pairs): a "
                            f"parallel corpus pairs each sentence with its translation, not a "
                            f"copy; check the files there")
    if shift := stretch_out_of_line(pairs):
        start, end, aligned, shifted = shift
        raise DataError(f"{src_path} and {tgt_path} go out of line near line {start}: over "
                        f"lines {start}-{end} the lengths of paired lines go together less "
                        f"(rank correlation {aligned:.2f}) than each line's and the next or "
                        f"previous line's of the other file ({shifted:.2f}). A line added or "
                        f"removed about there shifts every pair after it; check the files there")
    if tail := tail_out_of_line(pairs):
        start, aligned, shifted = tail
        raise DataError(f"{src_path} and {tgt_path} go out of line near line {start}: from there "
                        f"to the end, paired lines differ in length from the corpus's usual "
                        f"ratio much more (by {aligned:.2f} in log characters, on average) than "
                        f"each line and the next or previous line of the other file ({shifted:.2f})"
                        f". A line added or removed about there shifts every pair after it; check "
                        f"the files there")


def stretch_out_of_line(pairs) -> tuple[int, int, float, float] | None:
    """The first stretch of SHIFT_STRETCH pairs (of lines that are not empty) where the lengths
    of each line and the next (or the one before) of the other side go together much better
    than those of paired lines, as they do after a line added or removed: (its first line, its
    last, counted from 1; the two rank correlations), or None."""
    lines = np.array([i for i, (s, t) in enumerate(pairs, 1) if s and t])
    if len(lines) < SHIFT_STRETCH + 2:
        return None
    lengths = np.array([(len(s), len(t)) for s, t in pairs if s and t], dtype=np.float64)
    src, tgt = lengths[1:-1, 0], lengths[1:-1, 1]
    ranks = [stretch_ranks(x, SHIFT_STRETCH) for x in (src, tgt, lengths[2:, 0], lengths[:-2, 0])]
    aligned = row_correlations(ranks[0], ranks[1])
    shifted = np.maximum(row_correlations(ranks[2], ranks[1]), row_correlations(ranks[3], ranks[1]))
    off = (shifted > aligned + 0.4) & (shifted > 0.5)
    if not off.any():
        return None
    w = int(off.argmax())
    at = stretches(src, SHIFT_STRETCH)[0][w]       # where that stretch starts, among the pairs
    return int(lines[1 + at]), int(lines[at + SHIFT_STRETCH]), float(aligned[w]), float(shifted[w])


def tail_out_of_line(pairs) -> tuple[int, float, float] | None:
    """Where the last lines go out of line, too few for a stretch of SHIFT_STRETCH to show it:
    the first line of the longest tail (of TAIL_SHORTEST to SHIFT_STRETCH pairs of lines that
    are not empty) whose paired lengths stray from the corpus's usual ratio much more than each
    target's and its next or previous source's do; with how far each strays. None if none."""
    lines = np.array([i for i, (s, t) in enumerate(pairs, 1) if s and t])
    if len(lines) < SHIFT_STRETCH + 2:
        return None
    logs = np.log([(len(s), len(t)) for s, t in pairs if s and t])      # (pairs, 2)
    usual = np.median(logs[:, 1] - logs[:, 0])
    src, tgt = logs[-SHIFT_STRETCH - 1:, 0], logs[-SHIFT_STRETCH:-1, 1]
    aligned, after, before = (np.abs(tgt - s - usual) for s in (src[1:-1], src[2:], src[:-2]))
    found = None
    for k in range(TAIL_SHORTEST, SHIFT_STRETCH):
        stray, shifted = aligned[-k:].mean(), min(after[-k:].mean(), before[-k:].mean())
        if stray > TAIL_STRAY and shifted * TAIL_BETTER < stray:
            found = int(lines[-k - 1]), float(stray), float(shifted)
    return found


def check_sides_apart(pairs, src_path, tgt_path) -> None:
    """Refuse a corpus in which one side's lines hold the other side's as well, for most pairs
    (a file made with `paste`, or two columns of a table): the model would learn to copy."""
    both = [(i, s, t) for i, (s, t) in enumerate(pairs, 1) if s and t and s != t]
    holding = [(i, s, t) for i, s, t in both if t in s or s in t]
    if both and len(holding) > len(both) / 2:
        i, s, t = holding[0]
        whole, part = (src_path, tgt_path) if t in s else (tgt_path, src_path)
        raise DataError(f"{whole}, line {i}: {shown(max(s, t, key=len))} holds the whole of "
                        f"{part}'s line {i}, {shown(min(s, t, key=len))}, and so do "
                        f"{len(holding):,} of the {len(both):,} pairs: each file must hold one "
                        f"side only (a file made with paste?); split it into its two sides")


def check_side(path, lines: list[str]) -> None:
    """Refuse one side of a training corpus that holds no sentences to learn from: every line
    the same, or not one letter or digit in any line (only punctuation or symbols; digits
    alone may be a language of numbers, as the copy task's are); or whose
    lines are nearly all wrapped in double quotes (a CSV export)."""
    if len(lines) > 1 and len(set(lines)) == 1:
        raise DataError(f"{path}: all {len(lines):,} lines with text are the same, "
                        f"{shown(lines[0])}: a corpus pairs each sentence with its own "
                        f"translation; check the file")
    if not any(c.isalnum() for line in lines for c in line):
        raise DataError(f"{path}: not one line holds a letter or a digit (only punctuation or "
                        f"symbols, e.g. {shown(lines[0])}): no sentences to learn from; check "
                        f"the file")
    quoted = sum(len(line) > 1 and line[0] == line[-1] == '"' for line in lines)
    if quoted > 0.9 * len(lines) and len(lines) >= 10:
        raise DataError(f"{path}: {quoted:,} of its {len(lines):,} lines are wrapped in double "
                        f"quotes, as a CSV export writes them (e.g. {shown(lines[0])}): the "
                        f"model would learn the quotes as part of every sentence; export the "
                        f"column as plain text, one sentence a line")


def check_split_languages(text: dict, files: dict, config) -> None:
    """Refuse a training side that reads as another language than the one its setting names
    (the sides swapped; German in files named .zh), then a split whose side reads as another
    language than the same side of the training split (a valid.fr holding German): the model
    would learn another pair than the one named, or validation and test measure nothing."""
    for side, setting in enumerate(("source_lang", "target_lang")):
        lines = [pair[side] for pair in text["train"]]
        named, by_script = base_language(getattr(config, setting)), guess_language(lines)
        found = by_script or guess_spaced_language(lines)
        if named in WORD_SETS.keys() | set(SCRIPTS.values()) and found not in (None, named):
            raise DataError(f"{files['train'][side]} reads as {found} (from its "
                            f"{'script' if by_script else 'commonest words'}), but "
                            f"{setting}={getattr(config, setting)}: the sides swapped, or "
                            f"another language's file? Check the files, or the languages")
        if named in set(SCRIPTS.values()) and by_script is None:
            raise DataError(f"{files['train'][side]}: hardly any of its letters are in the script "
                            f"{setting}={getattr(config, setting)} is written in (e.g. "
                            f"{shown(lines[0])}): another language's file? Check the files, "
                            f"or the languages")
        if found is not None:
            check_stretch_languages(lines, files["train"][side], found)
    for side in (0, 1):
        trained = guess_spaced_language([pair[side] for pair in text["train"]])
        for split in ("valid", "test"):
            found = guess_spaced_language([pair[side] for pair in text[split]])
            if None not in (trained, found) and found != trained:
                raise DataError(f"{files[split][side]} reads as {found}, but "
                                f"{files['train'][side]} as {trained} (from their commonest "
                                f"words): each side's splits are in one language; check "
                                f"{files[split][side].name}")


def check_stretch_languages(lines: list[str], path, language: str) -> None:
    """Refuse a side that reads as `language` as a whole but as another in a stretch of
    STRETCH lines (a part of the file from another language's corpus, under half of it): the
    model would learn to write that language too. Stretches start every STRETCH // 2 lines."""
    if len(lines) < STRETCH:
        return
    for start in stretches(np.arange(len(lines)))[0]:
        stretch = lines[start:start + STRETCH]
        by_script = guess_language(stretch)
        found = by_script or guess_spaced_language(stretch)
        if found not in (None, language):
            raise DataError(f"{path}, lines {start + 1:,}-{start + STRETCH:,}: they read as "
                            f"{found} (from their {'script' if by_script else 'commonest words'}"
                            f"), the rest of the file as {language}: a side is in one language; "
                            f"check the file there")


def check_line_counts(src_path, tgt_path) -> int:
    """The number of lines of two parallel files, after checking that they have as many."""
    n_src, n_tgt = (sum(1 for _ in read_lines(p)) for p in (src_path, tgt_path))
    check_aligned(n_src, n_tgt, src_path, tgt_path)
    return n_src


def cache_folder(cache_dir=None) -> Path:
    """The cache location: `cache_dir`, else ANNOTATED_CACHE_DIR, else the default; a file
    where it or one of its folders must be is an error now, not after a tokenizer was trained."""
    folder = expand(cache_dir or os.environ.get(CACHE_ENV) or DEFAULT_CACHE)
    for part in (folder / "tokenizers", folder / "multi30k", folder, *folder.parents):
        try:
            there = part.exists()
        except OSError as e:                  # a folder above it this user may not enter
            raise DataError(f"cannot use the cache location {folder}: {e.strerror} ({part}); "
                            f"give --cache-dir DIR (or {CACHE_ENV}) a folder you can "
                            f"write") from None
        if there and not part.is_dir():
            raise DataError(f"the cache location {folder} cannot hold its folders: {part} is a "
                            f"file; give another --cache-dir (or {CACHE_ENV})")
        if part == folder and there:
            break
    return folder


def data_location(data_dir=None) -> Path | None:
    """The data location as an absolute path: `data_dir` (a flag, relative to the current
    folder), else ANNOTATED_DATA_DIR, else None. A relative ANNOTATED_DATA_DIR is read where
    the user set it: from the current folder or, when nothing is there (a Jupyter kernel runs
    in the notebook's folder), from the shell's folder that started the process ($PWD)."""
    if data_dir:
        return _folder(resolved(data_dir))
    value = os.environ.get(DATA_ENV)
    if not value:
        return None
    path = expand(value)
    if not path.is_absolute() and not path.exists() and os.environ.get("PWD"):
        path = Path(os.environ["PWD"]) / path
    return _folder(resolved(path))


def _folder(location: Path) -> Path:
    """`location` if it is a folder; else a DataError saying what it is instead."""
    if not location.is_dir():
        what = "a file, not a folder" if location.exists() else "not there"
        spaced = str(location) != str(location).strip()
        name = f"{str(location)!r} (its name ends or begins with a space)" if spaced else location
        raise DataError(f"the data location {name} is {what}: point --data-dir (or "
                        f"{DATA_ENV}) at the folder that holds the corpora")
    return location


def pair_gist(pair: tuple) -> tuple:
    """A pair's words alone: Unicode's compatible forms folded (NFKC, as the tokenizer does),
    case folded, and spaces and punctuation dropped. Two pairs with the same gist teach the
    same translation, so a test pair with the gist of a training pair tests memory."""
    return tuple(" ".join(WORD.findall(unicodedata.normalize("NFKC", side).casefold()))
                 for side in pair)


def note_overlap(text: dict, files: dict, log) -> None:
    """A warning for a training split that is mostly repeats, or one of whose sides repeats
    one line across many pairs (a line pasted over others), and for a validation or test split
    most of whose pairs have the words of a training pair (pair_gist: a copy, say, with the
    case changed or the final periods dropped): its loss and BLEU would measure what the model
    memorised, not translation."""
    seen = set(text["train"])
    repeats = len(text["train"]) - len(seen)
    if repeats and repeats >= len(text["train"]) / 2:       # a copy appended once: a half
        src, tgt = files["train"]
        log(f"warning: {repeats:,} of the {len(text['train']):,} pairs of {src} and {tgt} "
            f"repeat another pair exactly (a corpus copied onto itself?): check the files")
    different = list(dict.fromkeys(text["train"]))     # each pair once, in the files' order
    for side, path in enumerate(files["train"]):      # one line pasted over many others
        lines = [pair[side] for pair in different if pair[side]]
        line, count = Counter(lines).most_common(1)[0] if lines else ("", 0)
        if len(lines) >= 100 and count > 0.05 * len(lines):
            log(f"warning: {path}: one line, {shown(line)}, is paired with {count:,} different "
                f"sentences, {count / len(lines):.0%} of the corpus's different pairs: check "
                f"the file")
    for split in ("valid", "test"):
        if (shared := shared_gists(text[split], text["train"])) > len(text[split]) / 2:
            src, tgt = files[split]
            log(f"warning: {shared:,} of the {len(text[split]):,} pairs of {src} and {tgt} are "
                f"training pairs, or differ from one in case, spaces or punctuation only: their "
                f"scores measure memory, not translation; give {split} sentences the model does "
                f"not train on")
    if (shared := shared_gists(text["test"], text["valid"])) > len(text["test"]) / 2:
        log(f"warning: {shared:,} of the {len(text['test']):,} pairs of {files['test'][0]} "
            f"and {files['test'][1]} are also validation pairs (up to case, spaces or "
            f"punctuation): what is chosen on valid would be scored on the same sentences; "
            f"give test sentences of its own")


def shared_gists(pairs: list, others: list) -> int:
    """How many of `pairs` have the gist of one of `others` (both sides holding words)."""
    seen = {pair_gist(pair) for pair in others}
    return sum(all(gist) and gist in seen for gist in map(pair_gist, pairs))


def load_corpus(config, data_dir=None, cache_dir=None, log=print) -> Corpus:
    """The corpus config.dataset names, tokenized with a shared vocabulary of config.vocab_size."""
    if config.dataset == "copy":
        return _copy_corpus(config, log)
    cache = cache_folder(cache_dir)
    location = data_location(data_dir) if DATASETS[config.dataset].location else None
    files = corpus_files(config, location, cache, log)
    for src_path, tgt_path in files.values():     # a misaligned corpus fails in seconds, not
        check_line_counts(src_path, tgt_path)     # after training a tokenizer on it
    text, stats = {}, {}                          # ... and so does an empty one
    for split, (src_path, tgt_path) in files.items():
        text[split], stats[split] = read_parallel(src_path, tgt_path)
    for side, path in enumerate(files["train"]):      # before a tokenizer is trained on it
        check_side(path, [pair[side] for pair in text["train"] if pair[side]])
    check_split_languages(text, files, config)
    note_overlap(text, files, log)
    tokenizer = load_or_train(files["train"], config.vocab_size, cache / "tokenizers",
                              f"{config.dataset}-{config.source_lang}-{config.target_lang}", log,
                              character_coverage=coverage(config.source_lang, config.target_lang),
                              lowercase=config.lowercase)
    splits = {}
    for split, pairs in text.items():
        ids, kept = _with_text(tokenizer, pairs, files[split], stats[split])
        splits[split] = _filter(config, split, ids, stats[split], log)
        if split == "test":
            test_src, test_ref = [s for s, _ in kept], [t for _, t in kept]   # raw, for BLEU
    return Corpus(splits["train"], splits["valid"], splits["test"], tokenizer, stats,
                  test_src, test_ref)


def _with_text(tokenizer, pairs, files, stats):
    """(token ids, text) of the pairs whose sides both encode to a token of text; the others
    are counted in stats["empty"]. No pair left is an error naming the files."""
    src, tgt = [s for s, _ in pairs], [t for _, t in pairs]
    (src_ids, src_text), (tgt_ids, tgt_text) = _encode(tokenizer, src), _encode(tokenizer, tgt)
    kept = [i for i, both in enumerate(zip(src_text, tgt_text)) if all(both)]
    stats["empty"] = len(pairs) - len(kept)
    if not kept:
        raise DataError(f"{' and '.join(map(str, files))} hold no sentence pair: each of their "
                        f"{len(pairs):,} lines has a side that encodes to no token (blank, or "
                        f"only control or unknown characters); check the files")
    return [(src_ids[i], tgt_ids[i]) for i in kept], [pairs[i] for i in kept]


def corpus_files(config, data_dir, cache, log) -> dict:
    """{split: [source file, target file]} of config.dataset in the config's two languages,
    found (or downloaded) as the module docstring says."""
    langs = (config.source_lang, config.target_lang)
    if config.dataset == "files":
        return _user_files(data_dir, langs)
    if config.dataset == "multi30k_sample":
        folder, stems, suffix = SAMPLE, SAMPLE_SPLITS, ".gz"
        names = [f"{stem}.{lang}{suffix}" for stem in stems.values() for lang in langs]
        folder_holding("multi30k_sample", names, folder)
    elif config.dataset == "multi30k":
        stems, suffix = MULTI30K_SPLITS, ".gz"
        names = [f"{stem}.{lang}{suffix}" for stem in stems.values() for lang in langs]
        if data_dir:
            folder = folder_holding("multi30k", names, data_dir)
            _check_published(folder, names)
            log(f"multi30k: reading {folder}")
        else:
            folder = _download_multi30k(cache / "multi30k", names, log)
    else:                                                      # wmt14
        stems, suffix = WMT14_SPLITS, ""
        names = [f"{stem}.{lang}" for stem in stems.values() for lang in langs]
        folder = folder_holding("wmt14", names, data_dir or cache / "wmt14")
        log(f"wmt14: reading {folder}")
    return {split: [folder / f"{stem}.{lang}{suffix}" for lang in langs]
            for split, stem in stems.items()}


def _user_files(data_dir, langs) -> dict:
    """A user's own parallel corpus: in the data location, train.L, valid.L (or val.L, dev.L)
    and test.L for both languages L, plain or gzip (.gz)."""
    if data_dir is None:
        raise DataError("dataset=files reads your own corpus from the data location: give "
                        "--data-dir DIR (or ANNOTATED_DATA_DIR), where DIR holds train.SRC, "
                        "train.TGT, valid.SRC, valid.TGT, test.SRC and test.TGT")
    files, missing = {}, []
    for p in (Path(data_dir) / f"{stem}.{lang}{gz}" for stems in USER_SPLITS.values()
              for stem in stems for lang in langs for gz in ("", ".gz")):
        if (p.exists() or p.is_symlink()) and not p.is_file():
            what = ("a folder" if p.is_dir() else "not a regular file" if p.exists()
                    else "a broken link or a loop of links")
            raise DataError(f"{p} is {what}: dataset=files reads it as a corpus file; put the "
                            f"file there (or rename that entry)")
    for split, stems in USER_SPLITS.items():
        found = [[Path(data_dir) / f"{stem}.{lang}{gz}" for gz in ("", ".gz")
                  if (Path(data_dir) / f"{stem}.{lang}{gz}").is_file()]
                 for stem in stems for lang in langs]
        for both in (f for f in found if len(f) > 1):
            raise DataError(f"{data_dir} holds both {both[0].name} and {both[1].name}: keep "
                            f"one of them (they would be read as one corpus each)")
        pairs = [found[i] + found[i + 1] for i in range(0, len(found), 2)
                 if found[i] and found[i + 1]]
        if len(pairs) > 1:
            names = " and ".join(f"{a.name}/{b.name}" for a, b in pairs)
            raise DataError(f"{data_dir} holds {names} for the {split} split: keep one pair of "
                            f"them")
        if pairs:
            files[split] = pairs[0]
            continue
        for i, stem in enumerate(stems):              # one side there: name the other
            here, there = found[2 * i], found[2 * i + 1]
            if here or there:
                have, lack = (here[0].name, f"{stem}.{langs[1]}") if here else \
                    (there[0].name, f"{stem}.{langs[0]}")
                side = 1 if here else 0                 # the lacking side, under another stem
                other = next((f[0] for j, f in enumerate(found)
                              if f and j % 2 == side and j // 2 != i), None)
                gz = ".gz" if other and other.suffix == ".gz" else ""
                fix = (f"the split's two sides are named apart ({have}, {other.name}): rename "
                       f"{other.name} to {lack}{gz}" if other else
                       _case_fix(data_dir, lack) or f"add {lack}")
                raise DataError(f"{data_dir} has {have} but no {lack} (plain or .gz): each "
                                f"split needs both sides, line for line; {fix}")
        missing.append(f"{'/'.join(stems)}.{{{','.join(langs)}}}")
    if missing:
        fix = next(filter(None, (_case_fix(data_dir, f"{stem}.{lang}") for stems in
                                 USER_SPLITS.values() for stem in stems for lang in langs)),
                   "add them")
        raise DataError(f"{data_dir} has no {', '.join(missing)} (plain or .gz): dataset=files "
                        f"needs train, valid and test files of source_lang and target_lang; "
                        f"{fix}")
    return files


# What a corpus file compressed otherwise than with gzip is named with, and what undoes it.
OTHER_COMPRESSION = {".xz": "xz -d", ".bz2": "bunzip2", ".zst": "zstd -d --rm", ".zip": "unzip",
                     ".lzma": "xz -d"}


def _case_fix(data_dir, name: str) -> str | None:
    """How to make a file of `data_dir` readable as `name` (or name.gz): one named so but for
    letter case (train.EN for train.en: file names are case-sensitive), or compressed with
    another tool than gzip (train.en.xz); None if there is none."""
    if not Path(data_dir).is_dir():
        return None
    wanted = {name.lower(), f"{name}.gz".lower()}
    for other in sorted(p.name for p in Path(data_dir).iterdir()):
        if other.lower() in wanted and other not in (name, f"{name}.gz"):
            right = name + other[len(name):]
            return f"it holds {other}: file names are case-sensitive, so rename it {right}"
        if other.startswith(f"{name}.") and (tool := OTHER_COMPRESSION.get(other[len(name):])):
            return (f"it holds {other}, but only plain text or .gz is read: decompress it "
                    f"({tool} {other})")
    return None


def _copy_corpus(config, log) -> Corpus:
    """Random sequences of 1..copy_len symbols (ids 4..V-1); the target repeats the source.
    valid and test hold a tenth as many pairs as train, each split from its own seeded stream."""
    tokenizer = CopyTokenizer(config.vocab_size)
    sizes = dict(train=config.copy_examples, valid=max(1, config.copy_examples // 10),
                 test=max(1, config.copy_examples // 10))
    splits, stats = {}, {}
    for stream, (split, n) in enumerate(sizes.items()):
        rng = np.random.default_rng([config.seed, stream])
        lengths = rng.integers(1, config.copy_len + 1, size=n)
        seqs = [rng.integers(4, config.vocab_size, size=k).astype(np.int32) for k in lengths]
        stats[split] = {"read": n, "empty": 0}
        splits[split] = _filter(config, split, [(s, s) for s in seqs], stats[split], log)
    test_text = [tokenizer.decode(s) for s, _ in splits["test"]]
    return Corpus(splits["train"], splits["valid"], splits["test"], tokenizer, stats,
                  test_text, list(test_text))


def _encode(tokenizer, texts, chunk=100_000):
    """(token ids as int32 arrays, for each whether it holds a token of text), a chunk at a
    time: lists of Python ints take 10x the memory. A blank line, or one of characters the
    tokenizer drops or does not know, holds none (Tokenizer.ids_without_text)."""
    without_text = tokenizer.ids_without_text()
    ids, text = [], []
    for start in range(0, len(texts), chunk):
        for x in tokenizer.encode_all(texts[start:start + chunk]):
            ids.append(np.asarray(x, dtype=np.int32))
            text.append(not without_text.issuperset(x))
    return ids, text


def _filter(config, split, pairs, stats, log):
    """Drop pairs longer than max_sentence_len (never from test), count and log. A training or
    validation split with no pair left is an error, before any training."""
    stats["too_long"] = 0
    if split != "test":
        pairs = _drop_too_long(pairs, config.max_sentence_len, stats)
    stats["kept"] = len(pairs)
    log(f"{config.dataset} {split}: {_describe(stats)}")
    if not pairs and split != "test":
        raise DataError(f"{config.dataset} {split}: no sentence pair is left ({_describe(stats)})"
                        f"; every pair is longer than max_sentence_len={config.max_sentence_len}"
                        f" tokens on a side: raise max_sentence_len")
    return pairs


def _drop_too_long(pairs, max_len, stats):
    """Keep pairs whose source + EOS and BOS + target fit in max_len; count the others."""
    kept = [(s, t) for s, t in pairs if len(s) + 1 <= max_len and len(t) + 1 <= max_len]
    stats["too_long"] = len(pairs) - len(kept)
    return kept


def _describe(s) -> str:
    return (f"{s['read']:,} pairs read, {s['empty']:,} with a side that encodes to no token "
            f"dropped, {s['too_long']:,} longer than max_sentence_len dropped, {s['kept']:,} kept")


def folder_holding(dataset, names, location) -> Path:
    """The folder holding all `names`: location/dataset or location itself."""
    location = expand(location)
    folders = (location / dataset, location)
    for folder in folders:
        if all((folder / name).is_file() for name in names):
            return folder
    best = max(folders, key=lambda f: sum((f / name).is_file() for name in names))
    missing = []
    for name in (n for n in names if not (best / n).is_file()):
        plain = best / name.removesuffix(".gz")
        missing.append(name + (" (a broken link)" if (best / name).is_symlink() else
                               " (a folder there, not a file)" if (best / name).is_dir() else
                               f" ({plain.name} is there: gzip it)" if name.endswith(".gz")
                               and plain.is_file() else ""))
    point = (f"point --data-dir or {DATA_ENV} at the folder holding them (or at its parent "
             f"holding {dataset}/)")
    if dataset == "wmt14":
        point = f"run `python -m annotated.data.prepare_wmt14 --out-dir DIR` with internet, then {point}"
    raise FileNotFoundError(f"{dataset}: looked for {', '.join(names)} in {location / dataset} "
                            f"and in {location}; {best} lacks {', '.join(missing)}. To fix: "
                            f"{point}")


def _check_published(folder: Path, names) -> None:
    """Refuse Multi30k files whose sentences are not the published ones (edited, reordered,
    another language copied over one): they would train a wrong model without a word."""
    for name in names:
        if text_sha256(folder / name) != MULTI30K_TEXT_SHA256[name]:
            raise DataError(f"{folder / name} does not hold the published Multi30k sentences "
                            f"(its text's sha256 differs): restore it from "
                            f"{MULTI30K_URL.format(name=name)}, or train on your own version "
                            f"as your own corpus, with dataset=files")


def _download_multi30k(folder: Path, names, log) -> Path:
    """Fetch each Multi30k file the cache lacks, or holds with other sentences, checking its
    sha256; a cached file is replaced only by a complete, verified download."""
    for name in names:
        path = folder / name
        if path.is_file():
            try:
                if text_sha256(path) == MULTI30K_TEXT_SHA256[name]:
                    continue
            except DataError:
                pass
            log(f"multi30k: the cached {path} does not hold the published sentences; "
                f"downloading it again")
        url = MULTI30K_URL.format(name=name)
        log(f"multi30k: downloading {url}")
        try:
            download(url, path, MULTI30K_SHA256[name])
        except (DownloadError, OSError) as e:
            state = ("holds other sentences (kept as it is)" if path.is_file() else
                     "is not in the cache")
            raise FileNotFoundError(
                f"multi30k: {path} {state} and downloading {url} failed ({e}). "
                f"Without internet, point --data-dir or {DATA_ENV} at a folder holding "
                f"{', '.join(names)} (or at its parent holding multi30k/), or train on the "
                f"sample shipped with the package: dataset=multi30k_sample (--config sample)") from e
    return folder
