"""Reading parallel text, the three datasets, downloads with checksums, WMT14 preparation."""
import bz2
import gzip
import html
import io
import json
import re
import shutil
import tarfile

import numpy as np
import pytest
from conftest import full_corpus, says, user_corpus

import annotated.data.corpus as data
import annotated.data.tokenizer as tokenizer_module
from annotated.base.files import read_lines, sha256_file
from annotated.configs import get
from annotated.data.batching import lengths_of, make_batches, padding_fraction
from annotated.data.corpus import SAMPLE, load_corpus, read_parallel
from annotated.data.prepare_wmt14 import URLS, aligned_sgml, prepare, read_sgml


def quiet(*_):
    pass


# --- read_parallel ---------------------------------------------------------------------------

def test_read_parallel_gzip_and_plain_every_pair_stripped(tmp_path):
    with gzip.open(tmp_path / "a.en.gz", "wt", encoding="utf-8") as f:
        f.write("A dog.\n\nA cat. \n   \nTwo men.\n")
    (tmp_path / "a.de").write_text("Ein Hund.\nLeer.\n Eine Katze.\nZwei.\nZwei Männer.\n")
    pairs, stats = read_parallel(tmp_path / "a.en.gz", tmp_path / "a.de")
    assert pairs == [("A dog.", "Ein Hund."), ("", "Leer."), ("A cat.", "Eine Katze."),
                     ("", "Zwei."), ("Two men.", "Zwei Männer.")]
    assert stats == {"read": 5}          # load_corpus drops what encodes to no token


def test_read_parallel_line_count_mismatch_names_both(tmp_path):
    (tmp_path / "x.en").write_text("a\nb\nc\n")
    (tmp_path / "x.de").write_text("a\nb\n")
    with pytest.raises(ValueError) as error:
        read_parallel(tmp_path / "x.en", tmp_path / "x.de")
    says(error, "x.en", "3 lines", "x.de", "has 2")


# --- copy task -------------------------------------------------------------------------------

@pytest.mark.parametrize("target, names", [
    ("。！？\n" * 5, ["all 5 lines", "the same", "。！？"]),
    ("*, !\n-- + --\n。\n%%\n?\n", ["not one line holds a letter or a digit", "*, !"])])
def test_a_side_with_no_sentences_is_refused_before_any_training(tmp_path, target, names):
    """Every line the same, or not a letter anywhere: a model would learn nothing from it."""
    (tmp_path / "a.en").write_text("A dog runs.\nTwo men talk.\nA girl sings.\nIt rains.\n"
                                   "A cat sleeps.\n")
    (tmp_path / "a.zh").write_text(target)
    (tmp_path / "valid.en").write_text("A dog runs.\n")
    (tmp_path / "valid.zh").write_text("。\n")                 # one line: no check for a split
    (tmp_path / "test.en").write_text("A dog runs.\n")
    (tmp_path / "test.zh").write_text("一只狗在跑。\n")
    (tmp_path / "train.en").write_bytes((tmp_path / "a.en").read_bytes())
    (tmp_path / "train.zh").write_bytes((tmp_path / "a.zh").read_bytes())
    config = get("sample").override(dataset="files", source_lang="en", target_lang="zh")
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=tmp_path, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "train.zh", *names, "check the file")
    assert not (tmp_path / "cache").exists()                   # no tokenizer was trained


def test_a_side_of_digits_alone_is_a_language_of_numbers_not_refused():
    data.check_side("train.xx", ["4071", "12 3", "9", "500 1"])


def test_a_target_that_is_mostly_a_copy_of_its_source_is_refused(tmp_path):
    """The source file copied as the target, a few lines then edited: not one file the same
    as the other, but most pairs are a sentence and itself, and the model would learn to
    copy. Refused, naming both files and the count; a few pairs alike (names) pass."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:100]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:100]
    src = _write(tmp_path / "train.en", en)
    with pytest.raises(data.DataError) as error:
        read_parallel(src, _write(tmp_path / "train.de", ["Ein Hund läuft."] * 5 + en[5:]))
    says(error, "train.en", "train.de", "same text on 95 of their 100 lines", "check the files")
    pairs, _ = read_parallel(src, _write(tmp_path / "train.de", en[:10] + de[10:]))
    assert len(pairs) == 100


def test_a_side_exported_as_quoted_csv_is_refused_and_a_few_quotations_pass(tmp_path):
    """Every line wrapped in double quotes (a spreadsheet's CSV export): the quotes would be
    learned as part of every sentence. A corpus where some sentences are quotations passes."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:40]
    with pytest.raises(data.DataError) as error:
        data.check_side(tmp_path / "train.en", [f'"{line}"' for line in en])
    says(error, "train.en", "40 of its 40 lines", "double quotes", "CSV", "plain text")
    data.check_side(tmp_path / "train.en", [f'"{line}"' for line in en[:20]] + en[20:])


def test_one_line_pasted_over_many_of_a_side_is_warned_about(tmp_path):
    """Every fifth German line replaced by one Russian sentence: 120 English sentences
    paired with the same target. A warning names the file, the line and the count."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:600]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:600]
    pasted = "Мужчина в оранжевой шляпе смотрит на что-то."
    text = {"train": [(e, pasted if i % 5 == 4 else d) for i, (e, d) in enumerate(zip(en, de))],
            "valid": [], "test": []}
    files = {split: (tmp_path / f"{split}.en", tmp_path / f"{split}.de") for split in text}
    said = []
    data.note_overlap(text, files, said.append)
    assert len(said) == 1, said
    says(said[0], "warning", "train.de", pasted[:20], "paired with 120 different sentences")
    said.clear()
    data.note_overlap({**text, "train": list(zip(en, de))}, files, said.append)
    assert said == []


@pytest.mark.parametrize("change", ["spaces doubled", "lowercased", "final period dropped",
                                    "quotes changed"])
def test_a_test_split_copied_from_train_is_warned_about_up_to_case_spaces_and_punctuation(
        tmp_path, change):
    """A copy of training pairs changed in what does not make another sentence to translate:
    the model is scored on what it memorised, and the warning says so. Other pairs pass."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:400]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:400]
    changed = {"spaces doubled": lambda s: s.replace(" ", "  ", 1), "lowercased": str.lower,
               "final period dropped": lambda s: s.rstrip("."),
               "quotes changed": lambda s: f"\u201e{s}\u201c"}[change]
    test = [(changed(e), changed(d)) for e, d in zip(en[:200], de[:200])]
    text = {"train": list(zip(en, de)), "valid": list(zip(en, de))[200:201], "test": test}
    files = {split: (tmp_path / f"{split}.en", tmp_path / f"{split}.de") for split in text}
    said = []
    data.note_overlap(text, files, said.append)
    says(" ".join(said), "200 of the 200 pairs", "test.en", "training pairs", "punctuation")
    said.clear()
    data.note_overlap({**text, "train": text["train"][200:]}, files, said.append)
    assert not any("test.en" in line for line in said), said


def test_a_corpus_of_repeated_pairs_gets_one_warning_not_one_per_side(tmp_path):
    """A pair repeated 300 times repeats each of its sides too: that is the one warning about
    repeats, not a line pasted over others on either side."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:100]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:100]
    text = {"train": list(zip(en, de)) + [(en[0], de[0])] * 300, "valid": [], "test": []}
    files = {split: (tmp_path / f"{split}.en", tmp_path / f"{split}.de") for split in text}
    said = []
    data.note_overlap(text, files, said.append)
    assert len(said) == 1, said
    says(said[0], "warning", "300 of the 400 pairs", "repeat")


def test_a_test_split_that_is_the_validation_split_is_warned_about(tmp_path):
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:300]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:300]
    pairs = list(zip(en, de))
    text = {"train": pairs[:200], "valid": pairs[200:], "test": pairs[200:]}
    files = {split: (tmp_path / f"{split}.en", tmp_path / f"{split}.de") for split in text}
    said = []
    data.note_overlap(text, files, said.append)
    assert len(said) == 1, said
    says(said[0], "warning", "100 of the 100 pairs", "test.en", "validation pairs")


def test_a_split_whose_sides_are_named_apart_is_told_to_rename_one(tmp_path):
    """valid.en beside val.de: both names are accepted, but a split's sides go by one."""
    for split in ("train", "test"):
        for lang in ("en", "de"):
            (tmp_path / f"{split}.{lang}").write_text("A dog runs.\nTwo men.\n")
    (tmp_path / "valid.en").write_text("A dog runs.\nTwo men.\n")
    (tmp_path / "val.de").write_text("Ein Hund.\nZwei Männer.\n")
    config = get("sample").override(dataset="files", source_lang="en", target_lang="de")
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=tmp_path, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "valid.en", "val.de", "named apart", "rename val.de to valid.de")


def test_a_side_compressed_with_xz_is_named_with_how_to_read_it(tmp_path):
    for split in ("train", "valid", "test"):
        for lang in ("en", "de"):
            (tmp_path / f"{split}.{lang}").write_text("A dog runs.\nTwo men.\n")
    (tmp_path / "train.en").rename(tmp_path / "train.en.xz")
    config = get("sample").override(dataset="files", source_lang="en", target_lang="de")
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=tmp_path, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "no train.en", "it holds train.en.xz", "plain text or .gz", "xz -d train.en.xz")


def test_a_corpus_copied_onto_itself_once_is_warned_about(tmp_path):
    """cat train.en train.en > train.en.new: exactly half the pairs repeat the other half."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:100]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:100]
    pairs = list(dict.fromkeys(zip(en, de)))
    text = {"train": pairs + pairs, "valid": [], "test": []}
    files = {split: (tmp_path / f"{split}.en", tmp_path / f"{split}.de") for split in text}
    said = []
    data.note_overlap(text, files, said.append)
    says(said[0], "warning", f"{len(pairs)} of the {2 * len(pairs)} pairs", "copied onto itself")


def test_a_side_that_holds_both_sides_is_refused(tmp_path):
    """A source file made with `paste` (each line: the sentence, a tab, its translation) holds
    the target word for word: refused, naming the file, the line and both sides, before any
    training. A few pairs where one side contains the other (names, numbers) pass."""
    en = [f"A man number {i} rides a horse." for i in range(20)]
    de = [f"Ein Mann Nummer {i} reitet ein Pferd." for i in range(20)]
    pasted = _write(tmp_path / "train.en", [f"{e}\t{d}" for e, d in zip(en, de)])
    with pytest.raises(data.DataError) as error:
        read_parallel(pasted, _write(tmp_path / "train.de", de))
    says(error, str(pasted), "line 1", "Ein Mann Nummer 0", "train.de", "20 of the 20",
         "one side")
    some = _write(tmp_path / "some.en", en[:15] + ["Berlin Mitte"] * 5)
    pairs, _ = read_parallel(some, _write(tmp_path / "some.de", de[:15] + ["Berlin"] * 5))
    assert len(pairs) == 20


def test_a_target_side_shifted_by_one_line_is_refused(tmp_path):
    """The target file with its first line moved to the end (a line lost, another added): no
    pair translates itself any more, and the lengths of paired lines stop going together.
    Refused, naming both files and their first pair; the same lines in line pass."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:300]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:300]
    src = _write(tmp_path / "train.en", en)
    with pytest.raises(data.DataError) as error:
        read_parallel(src, _write(tmp_path / "shifted.de", de[1:] + de[:1]))
    says(error, "train.en", "shifted.de", "out of line", "300 pairs", en[0][:20], "check the files")
    pairs, _ = read_parallel(src, _write(tmp_path / "train.de", de))
    assert len(pairs) == 300


def test_files_out_of_line_from_the_middle_are_refused_naming_where(tmp_path):
    """A German line moved from line 151 to the end of 300: the whole files are out of line,
    and the refusal names where they go out of line, not their first pair, which is fine."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:300]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:300]
    with pytest.raises(data.DataError) as error:
        read_parallel(_write(tmp_path / "train.en", en),
                      _write(tmp_path / "lost.de", de[:150] + de[151:] + de[150:151]))
    says(error, "out of line near line 1")
    near = int(re.search(r"near line (\d+)", str(error.value))[1])
    assert abs(near - 151) <= data.SHIFT_STRETCH and en[0][:20] not in str(error.value)


@pytest.mark.parametrize("lost_at", [1500, 1900, 1960, 1985, 1990])
def test_a_line_lost_near_the_end_of_a_side_is_refused_where_it_was_lost(tmp_path, lost_at):
    """One German line taken out and put back at the end: the files stay in line as a whole
    (most pairs still translate each other), but not from that line on, where each German
    line goes with the next English one, even when only the last ten or so lines are out of
    line. Refused, naming the line; the files in line pass."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:2000]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:2000]
    src = _write(tmp_path / "train.en", en)
    lost = de[:lost_at] + de[lost_at + 1:] + [de[lost_at]]
    with pytest.raises(data.DataError) as error:
        read_parallel(src, _write(tmp_path / "lost.de", lost))
    says(error, "train.en", "lost.de", "out of line near line", "next or previous",
         "check the files there")
    near = int(re.search(r"near line (\d+)", str(error.value))[1])
    assert abs(near - lost_at) <= data.SHIFT_STRETCH             # within a stretch of it
    assert len(read_parallel(src, _write(tmp_path / "train.de", de))[0]) == 2000


def test_the_tail_check_refuses_no_clean_tail_and_finds_most_shifts_of_ten_lines():
    """What TAIL_STRAY and TAIL_BETTER were set for, on the real corpora: windows of 2,000
    pairs ending all along Multi30k (German and French) and newstest2014 are never refused,
    and the same windows with a line lost ten lines before their end mostly are."""
    multi30k = full_corpus("multi30k", "train.en.gz") / "multi30k"
    sides = [(list(read_lines(multi30k / "train.en.gz")),
              list(read_lines(multi30k / f"train.{lang}.gz"))) for lang in ("de", "fr")]
    wmt14 = full_corpus("wmt14", "newstest2014.en") / "wmt14"
    sides.append((list(read_lines(wmt14 / "newstest2014.en")),
                  list(read_lines(wmt14 / "newstest2014.de"))))
    clean = found = windows = 0
    for en, other in sides:
        for end in range(2000, len(en) + 1, 211):
            src, tgt = en[end - 2000:end], other[end - 2000:end]
            clean += data.tail_out_of_line(list(zip(src, tgt))) is None
            lost = tgt[:-10] + tgt[-9:] + tgt[-10:-9]        # line -10 taken out, put at the end
            found += data.tail_out_of_line(list(zip(src, lost))) is not None
            windows += 1
    assert clean == windows and found >= 0.8 * windows, (clean, found, windows)


@pytest.mark.parametrize("copied_from", [1000, 1400, 1900])
def test_a_stretch_of_targets_copied_from_the_source_is_refused(tmp_path, copied_from):
    """The German side from some line on the English copied over: too few pairs for the
    whole-file check (under half), but a whole stretch of them. Refused at its first line."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:2000]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:2000]
    with pytest.raises(data.DataError) as error:
        read_parallel(_write(tmp_path / "train.en", en),
                      _write(tmp_path / "train.de", de[:copied_from] + en[copied_from:]))
    says(error, f"train.de, line {copied_from + 1}", "the same as", "not a copy")


@pytest.mark.parametrize("header", [("en", "de"), ("English", "German"), ("source", "target"),
                                    ("# src", "# tgt")])
def test_files_that_begin_with_the_names_of_their_columns_are_refused(tmp_path, header):
    """A table exported to text begins with a line naming its columns: that pair would be a
    training pair. Refused, naming both files and both names; one side's first line that
    merely looks like a name, with a sentence beside it, passes."""
    en = list(read_lines(SAMPLE / "train_sample.en.gz"))[:60]
    de = list(read_lines(SAMPLE / "train_sample.de.gz"))[:60]
    src = _write(tmp_path / "train.en", [header[0]] + en)
    with pytest.raises(data.DataError) as error:
        read_parallel(src, _write(tmp_path / "train.de", [header[1]] + de))
    says(error, "train.en", "train.de", "header", repr(header[0]), repr(header[1]),
         "first line of both")
    pairs, _ = read_parallel(src, _write(tmp_path / "train.de", ["Quelle"] + de))
    assert pairs[0] == (header[0].strip(), "Quelle")


@pytest.mark.parametrize("split", ["train", "val", "test_2016_flickr"])
@pytest.mark.parametrize("target", ["de", "fr"])
def test_the_in_line_threshold_lies_far_from_both_kinds_of_file(split, target):
    """The lengths of paired lines, in characters: close together line for line, apart once
    shifted by one line, in each split of the shipped sample; the threshold between them has
    room on both sides."""
    def r(src, tgt):
        return data.length_correlation(np.array([[len(s), len(t)] for s, t in zip(src, tgt)]))
    en = list(read_lines(SAMPLE / f"{split}_sample.en.gz"))
    tgt = list(read_lines(SAMPLE / f"{split}_sample.{target}.gz"))
    assert r(en, tgt) > 0.8 > data.MIN_LENGTH_CORRELATION
    assert r(en, tgt[1:] + tgt[:1]) < 0.2 < data.MIN_LENGTH_CORRELATION
    one_long = [" ".join(["word"] * 400) if i == 40 else s for i, s in enumerate(en)]
    assert r(one_long, tgt) > 0.8                # one line far too long is not a shift


def test_one_very_long_line_in_a_small_corpus_is_not_called_out_of_line(tmp_path):
    """300 pairs, one English line of 400 words: the length filter drops it, and counts it."""
    en = list(read_lines(SAMPLE / "val_sample.en.gz"))
    de = list(read_lines(SAMPLE / "val_sample.de.gz"))
    en[40] = " ".join(["word"] * 400)
    pairs, _ = read_parallel(_write(tmp_path / "train.en", en), _write(tmp_path / "train.de", de))
    assert len(pairs) == len(en)


def test_a_few_true_pairs_repeated_are_not_called_out_of_line(tmp_path):
    """200 lines drawn from 6 pairs that translate each other, a learner's toy corpus whose
    few lengths happen not to go together: too few different pairs to judge by."""
    toy = [("Thank you very much indeed.", "Obrigado."), ("Yes.", "Sim, claro que sim."),
           ("Good night, everyone.", "Boa noite."), ("Hi.", "Olá a todos vocês."),
           ("The cat sleeps on the mat.", "O gato dorme."), ("No.", "Não, obrigado.")]
    drawn = [toy[k] for k in np.random.default_rng(0).integers(0, len(toy), 200)]
    lengths = np.array([[len(s), len(t)] for s, t in drawn], dtype=np.float64)
    assert data.length_correlation(lengths) < data.MIN_LENGTH_CORRELATION
    pairs, _ = read_parallel(_write(tmp_path / "train.en", [s for s, _ in drawn]),
                             _write(tmp_path / "train.pt", [t for _, t in drawn]))
    assert len(pairs) == 200


def test_equal_lengths_share_their_mean_rank():
    assert data.mean_ranks(np.array([5.0, 3.0, 5.0, 1.0])).tolist() == [2.5, 1.0, 2.5, 0.0]


def test_copy_corpus_is_seeded_and_repeats_its_input():
    config = get("copy")
    a, b = load_corpus(config, log=quiet), load_corpus(config, log=quiet)
    other = load_corpus(config.override(seed=config.seed + 1), log=quiet)
    assert [s.tolist() for s, _ in a.train] == [s.tolist() for s, _ in b.train]
    assert [s.tolist() for s, _ in a.train] != [s.tolist() for s, _ in other.train]
    assert len(a.train) == config.copy_examples and len(a.valid) == len(a.test) > 0
    for src, tgt in a.train + a.valid + a.test:
        assert src.tolist() == tgt.tolist()
        assert 1 <= len(src) <= config.copy_len and src.min() >= 4
        assert src.max() < config.vocab_size
    assert a.test_src == a.test_ref == [a.tokenizer.decode(s) for s, _ in a.test]
    assert a.tokenizer.encode(a.test_src[0]) == a.test[0][0].tolist()


def test_too_long_pairs_dropped_from_train_and_valid_counted_never_from_test():
    config = get("copy").override(max_sentence_len=6)       # keeps 1..5 symbols + EOS
    full = load_corpus(get("copy"), log=quiet)
    cut = load_corpus(config, log=quiet)
    for split in ("train", "valid"):
        expected = sum(len(s) + 1 > 6 for s, _ in getattr(full, split))
        assert expected > 0
        assert cut.stats[split]["too_long"] == expected
        assert len(getattr(cut, split)) == len(getattr(full, split)) - expected
        assert cut.stats[split]["kept"] == len(getattr(cut, split))
    assert len(cut.test) == len(full.test) and cut.stats["test"]["too_long"] == 0
    assert max(len(s) for s, _ in cut.test) > 5


# --- Multi30k: locating, downloading, checksums ------------------------------------------------

@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No data location; downloads come from a local folder standing in for the server."""
    server = tmp_path / "server"
    server.mkdir()
    monkeypatch.delenv(data.DATA_ENV, raising=False)
    monkeypatch.setattr(data, "MULTI30K_URL", server.as_uri() + "/{name}")
    return server, tmp_path / "cache"


def test_checksum_mismatch_is_an_error_and_keeps_nothing(offline):
    server, cache = offline
    for name in data.MULTI30K_SHA256:
        with gzip.open(server / name, "wt") as f:
            f.write("not the real file\n")
    with pytest.raises(ValueError, match="checksum mismatch for .*train.en.gz: expected sha256 "
                                         + data.MULTI30K_SHA256["train.en.gz"]):
        load_corpus(get("multi30k"), cache_dir=cache, log=quiet)
    assert list((cache / "multi30k").iterdir()) == []          # nor any temporary file


def test_a_file_the_server_does_not_have_is_not_called_a_network_problem(tmp_path,
                                                                         monkeypatch):
    """A 404 means the address is wrong, not that the machine is offline."""
    import urllib.error
    import urllib.request
    from annotated.base.files import download

    def not_found(url, timeout):
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
    monkeypatch.setattr(urllib.request, "urlopen", not_found)
    with pytest.raises(data.DataError) as error:
        download("http://example.org/gone.tgz", tmp_path / "gone.tgz")
    says(error, "gone.tgz", "404", "not at that address")
    assert "network" not in str(error.value) and not (tmp_path / "gone.tgz").exists()


def test_a_damaged_cached_file_is_kept_until_a_verified_download_replaces_it(offline):
    """Offline, nothing replaces it: the file stays, and the error says what to set."""
    server, cache = offline
    (cache / "multi30k").mkdir(parents=True)
    (cache / "multi30k" / "train.en.gz").write_bytes(b"truncated")
    logs = []
    with pytest.raises(FileNotFoundError) as error:
        load_corpus(get("multi30k"), cache_dir=cache, log=logs.append)
    says(error, str(cache / "multi30k" / "train.en.gz"), "other sentences", "--data-dir",
         data.DATA_ENV)
    says(next(line for line in logs if "published" in line), "train.en.gz", "downloading")
    assert (cache / "multi30k" / "train.en.gz").read_bytes() == b"truncated"


@pytest.mark.slow
def test_a_cached_file_with_the_published_text_in_another_gzip_is_used_offline(offline,
                                                                                tmp_path):
    """The same sentences compressed another way (gzip -9, a new timestamp) are the file."""
    server, cache = offline
    location = full_corpus("multi30k", "train.en.gz") / "multi30k"
    (cache / "multi30k").mkdir(parents=True)
    for name in [f"{stem}.{lang}.gz" for stem in data.MULTI30K_SPLITS.values()
                 for lang in ("en", "de")]:
        text = gzip.decompress((location / name).read_bytes())
        (cache / "multi30k" / name).write_bytes(gzip.compress(text, compresslevel=9, mtime=7))
    corpus = load_corpus(get("multi30k").override(vocab_size=1000), cache_dir=cache, log=quiet)
    assert len(corpus.train) == 29_000


@pytest.mark.parametrize("change", ["German is English", "German reordered", "French as German",
                                    "one word changed"])
def test_a_multi30k_data_location_must_hold_the_published_sentences(tmp_path, change):
    """A copy of Multi30k whose German side is not the published one would train a wrong
    model without a word: it is refused, naming the file and the fix."""
    source = full_corpus("multi30k", "train.en.gz") / "multi30k"
    folder = tmp_path / "data" / "multi30k"
    shutil.copytree(source, folder)
    german = gzip.decompress((source / "train.de.gz").read_bytes()).decode().splitlines()
    german = {"German is English": gzip.decompress((source / "train.en.gz").read_bytes())
              .decode().splitlines(),
              "German reordered": german[1:] + german[:1],
              "French as German": gzip.decompress((source / "train.fr.gz").read_bytes())
              .decode().splitlines(),
              "one word changed": [german[0].replace("Männer", "Frauen")] + german[1:]}[change]
    (folder / "train.de.gz").write_bytes(gzip.compress("".join(line + "\n" for line in german)
                                                       .encode(), mtime=0))
    with pytest.raises(data.DataError) as error:
        load_corpus(get("multi30k"), data_dir=tmp_path / "data", cache_dir=tmp_path / "cache",
                    log=quiet)
    says(error, "train.de.gz", "published Multi30k sentences", "dataset=files")


def test_data_dir_without_the_files_names_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_corpus(get("multi30k"), data_dir=tmp_path, cache_dir=tmp_path, log=quiet)
    says(error, "train.en.gz", f"{tmp_path}/multi30k", f"in {tmp_path}", "--data-dir", data.DATA_ENV)


# --- Multi30k: the real data (shared folder, or downloaded) ------------------------------------

@pytest.fixture(scope="module")
def multi30k(tmp_path_factory):
    """The full Multi30k with a small (1,000) vocabulary, from the shared data folder."""
    location = full_corpus("multi30k", "train.en.gz")
    cache, logs = tmp_path_factory.mktemp("cache"), []
    corpus = load_corpus(get("multi30k").override(vocab_size=1000), data_dir=location,
                         cache_dir=cache, log=logs.append)
    return corpus, cache, logs, location


def test_multi30k_splits_and_raw_test_text(multi30k):
    corpus, *_ = multi30k
    assert {split: (s["read"], s["empty"], s["kept"]) for split, s in corpus.stats.items()} == {
        "train": (29_000, 0, 29_000), "valid": (1_014, 0, 1_014), "test": (1_000, 0, 1_000)}
    assert len(corpus.test_src) == len(corpus.test_ref) == len(corpus.test) == 1_000
    tok = corpus.tokenizer
    assert tok.vocab_size == 1000
    for (src, tgt), en, de in zip(corpus.test, corpus.test_src, corpus.test_ref):
        assert tok.decode(src) == en and tok.decode(tgt) == de     # lossless on the test set


def test_multi30k_padding_fraction_at_most_ten_percent(multi30k):
    corpus, *_ = multi30k
    lengths = lengths_of(corpus.train)
    batches = make_batches(lengths, get("multi30k").max_tokens, seed=1234, epoch=0)
    src_frac, tgt_frac = padding_fraction(lengths, batches)
    assert src_frac <= 0.10 and tgt_frac <= 0.10, (src_frac, tgt_frac)


def test_multi30k_tokenizer_cached_and_length_filter_counted(multi30k):
    corpus, cache, logs, location = multi30k
    says(next(line for line in logs if line.startswith("tokenizer:")), "training",
         "1,000-token")
    logs = []
    short = load_corpus(get("multi30k").override(vocab_size=1000, max_sentence_len=16),
                        data_dir=location, cache_dir=cache, log=logs.append)
    assert any("tokenizer: reusing" in line for line in logs)
    assert short.tokenizer.to_bytes() == corpus.tokenizer.to_bytes()
    too_long = sum(len(s) + 1 > 16 or len(t) + 1 > 16 for s, t in corpus.train)
    assert too_long > 0 and short.stats["train"]["too_long"] == too_long
    assert len(short.train) == 29_000 - too_long and len(short.test) == 1_000


def test_multi30k_folder_itself_is_accepted(multi30k):
    corpus, cache, _, location = multi30k
    folder = data.folder_holding("multi30k", list(data.MULTI30K_SHA256), location)
    again = load_corpus(get("multi30k").override(vocab_size=1000), data_dir=folder,
                        cache_dir=cache, log=quiet)
    assert again.test_src == corpus.test_src


# --- the shipped sample, and where a relative data location is read from ------------------------

def test_shipped_sample_loads_offline_whatever_the_data_location(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_ENV, str(tmp_path / "nothing here"))
    monkeypatch.setattr(data, "MULTI30K_URL", "http://unreachable.invalid/{name}")
    corpus = load_corpus(get("multi30k").override(dataset="multi30k_sample", vocab_size=1000),
                         cache_dir=tmp_path / "cache", log=quiet)
    assert {split: s["kept"] for split, s in corpus.stats.items()} == {
        "train": 3_000, "valid": 300, "test": 300}
    assert corpus.test_src[0] == "A man in an orange hat starring at something."


def test_shipped_sample_is_the_first_lines_of_multi30k():
    folder = full_corpus("multi30k", "train.fr.gz") / "multi30k"
    for split, stem in data.MULTI30K_SPLITS.items():
        for lang in ("en", "de", "fr"):
            sample = list(read_lines(data.SAMPLE / f"{data.SAMPLE_SPLITS[split]}.{lang}.gz"))
            full = list(read_lines(folder / f"{stem}.{lang}.gz"))
            assert len(sample) == (3_000 if split == "train" else 300)
            assert sample == full[:len(sample)], (split, lang)


def test_relative_data_location_is_read_where_it_was_set(tmp_path, monkeypatch):
    """A Jupyter kernel runs in the notebook's folder, not where ANNOTATED_DATA_DIR was set."""
    (tmp_path / "data").mkdir()
    (tmp_path / "chapters" / "here").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "chapters")
    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv(data.DATA_ENV, "data")
    assert data.data_location() == tmp_path / "data"
    assert data.data_location("here") == tmp_path / "chapters" / "here"    # a flag: from cwd
    monkeypatch.delenv(data.DATA_ENV)
    assert data.data_location() is None


# --- WMT14: preparation on toy archives, then loading ------------------------------------------

def _tgz(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            raw = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


def _sgml(setid, lang, docs):
    lines = [f'<{setid} setid="newstest2014" srclang="any" trglang="{lang}">']
    for docid, segs in docs:
        lines.append(f'<doc sysid="ref" docid="{docid}" genre="news" origlang="en">')
        lines += [f'<seg id="{i}">{html.escape(seg)}</seg>' for i, seg in enumerate(segs, 1)]
        lines.append("</doc>")
    return "\n".join(lines + [f"</{setid}>"]) + "\n"


TEST_EN = [("d1", ["Tom & Jerry say \"hi\".", "1 < 2 isn't news."]), ("d2", ["Short."])]
TEST_DE = [("d1", ["Tom & Jerry sagen \"hallo\".", "1 < 2 ist nichts Neues."]), ("d2", ["Kurz."])]


def toy_wmt14(folder, europarl_de="Haus eins.\nHaus zwei.\n\n"):
    """The five statmt.org archives in miniature, with the members prepare() looks for."""
    folder.mkdir(parents=True, exist_ok=True)
    _tgz(folder / "training-parallel-europarl-v7.tgz", {
        "training/europarl-v7.de-en.en": "House one.\nHouse two.\nHouse three.\n",
        "training/europarl-v7.de-en.de": europarl_de,
        "training/europarl-v7.fr-en.en": "Not this one.\n"})
    _tgz(folder / "training-parallel-commoncrawl.tgz", {
        "commoncrawl.de-en.en": "A web\rpage.\nAnother one.\n",
        "commoncrawl.de-en.de": "Eine Web\rseite.\nNoch eine.\n"})
    _tgz(folder / "training-parallel-nc-v9.tgz", {
        "training/news-commentary-v9.de-en.en": "News " * 30 + "\n",
        "training/news-commentary-v9.de-en.de": "Nachrichten.\n"})
    _tgz(folder / "dev.tgz", {"dev/newstest2013.en": "Dev one.\nDev two.\n",
                              "dev/newstest2013.de": "Dev eins.\nDev zwei.\n"})
    _tgz(folder / "test-full.tgz", {
        "test-full/newstest2014-deen-src.en.sgm": _sgml("srcset", "en", TEST_EN),
        "test-full/newstest2014-deen-ref.de.sgm": _sgml("refset", "de", TEST_DE)})
    return {name: (folder / name).as_uri() for name in URLS}


def test_prepare_wmt14_on_local_archives_then_load(tmp_path, toy_sizes):
    urls = toy_wmt14(tmp_path / "server")
    out = tmp_path / "wmt14"
    manifest = prepare(out, urls, log=quiet)
    assert list(read_lines(out / "train.en")) == [
        "House one.", "House two.", "House three.", "A web\rpage.", "Another one.", "News " * 30]
    assert list(read_lines(out / "train.de"))[:4] == ["Haus eins.", "Haus zwei.", "",
                                                      "Eine Web\rseite."]
    assert manifest["corpora"] == {"europarl": 3, "commoncrawl": 2, "news-commentary": 1}
    assert list(read_lines(out / "newstest2013.de")) == ["Dev eins.", "Dev zwei."]
    assert list(read_lines(out / "newstest2014.en")) == [s for _, d in TEST_EN for s in d]
    assert list(read_lines(out / "newstest2014.de")) == [s for _, d in TEST_DE for s in d]
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == manifest
    for name, info in manifest["archives"].items():
        assert info["sha256"] == sha256_file(out / "downloads" / name)
    assert manifest["outputs"]["newstest2014.en"]["lines"] == 3
    assert not (out / "extracted").exists()

    config = get("base").override(vocab_size=60, max_sentence_len=12)
    corpus = load_corpus(config, data_dir=tmp_path, cache_dir=tmp_path / "cache", log=quiet)
    assert corpus.stats["train"] == {"read": 6, "empty": 1, "too_long": 1, "kept": 4}
    assert corpus.stats["valid"]["kept"] == 2
    assert corpus.test_src == [s for _, d in TEST_EN for s in d] and len(corpus.test) == 3


def test_prepare_wmt14_rejects_misaligned_corpora(tmp_path, toy_sizes):
    urls = toy_wmt14(tmp_path / "server", europarl_de="Nur eins.\n")
    with pytest.raises(ValueError) as error:
        prepare(tmp_path / "out", urls, log=quiet)
    says(error, "training-parallel-europarl-v7.tgz", "europarl-v7.de-en.en", "3 lines",
         "europarl-v7.de-en.de", "has 1", "delete")
    assert ".extracted" not in str(error.value)


@pytest.mark.parametrize("corpus, archive", [("train", "training-parallel-europarl-v7.tgz"),
                                             ("newstest2013", "dev.tgz"),
                                             ("newstest2014", "test-full.tgz")])
def test_archives_that_are_not_the_published_ones_are_refused_before_any_file(
        tmp_path, toy_sizes, monkeypatch, corpus, archive):
    """statmt.org publishes no checksums: the corpora's published sizes are checked."""
    from annotated.data import prepare_wmt14
    least, exactly = prepare_wmt14.PUBLISHED[corpus]
    monkeypatch.setitem(prepare_wmt14.PUBLISHED, corpus, (least + 1, exactly))
    urls = toy_wmt14(tmp_path / "server")
    with pytest.raises(ValueError) as error:
        prepare(tmp_path / "out", urls, log=quiet)
    says(error, archive, corpus, f"{least + 1:,}", "not the published", "delete")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["downloads"]


def test_sgml_alignment_is_checked(tmp_path):
    (tmp_path / "src.sgm").write_text(_sgml("srcset", "en", TEST_EN))
    (tmp_path / "ref.sgm").write_text(_sgml("refset", "de", [TEST_DE[0], ("d3", ["Kurz."])]))
    with pytest.raises(ValueError) as error:
        aligned_sgml(tmp_path / "src.sgm", tmp_path / "ref.sgm")
    says(error, "segment 3", "('d2', '1')", "('d3', '1')")


def test_missing_archive_member_lists_the_archive(tmp_path, toy_sizes):
    urls = toy_wmt14(tmp_path / "server")
    _tgz(tmp_path / "server" / "dev.tgz", {"dev/newstest2012.en": "x\n"})
    with pytest.raises(ValueError) as error:
        prepare(tmp_path / "out", urls, log=quiet)
    says(error, "dev.tgz", "newstest2013.en, newstest2013.de", "dev/newstest2012.en")


def test_a_segment_runs_to_its_line_s_last_closing_tag_and_an_unclosed_one_is_skipped(
        tmp_path):
    """A line of many opening tags and no closing one (70,000 of them) is read in one pass
    and gives no segment; entities are unescaped."""
    (tmp_path / "src.sgm").write_text(
        '<doc docid="d1">\n<seg id="1">A &amp; B</seg>\n' + '<seg id="2">x' * 70_000 +
        '\n<seg id=3>C </seg> D</seg>\n</doc>\n', encoding="utf-8")
    assert read_sgml(tmp_path / "src.sgm") == (["A & B", "C </seg> D"],
                                               [("d1", "1"), ("d1", "3")])


def test_sgml_round_trip_on_real_newstest2014(tmp_path):
    path = full_corpus("wmt14", "newstest2014.en") / "wmt14" / "newstest2014.en"
    lines = list(read_lines(path))
    (tmp_path / "src.sgm").write_text(_sgml("srcset", "en", [("all", lines)]), encoding="utf-8")
    assert read_sgml(tmp_path / "src.sgm")[0] == [line.strip() for line in lines]


def bad_corpus(tmp_path, train_en: bytes):
    """A user's corpus whose English training file is `train_en`, the rest from the sample."""
    location = user_corpus(tmp_path / "data", target="de")
    (location / "train.en.gz").write_bytes(train_en)
    return location


@pytest.mark.parametrize("content,names", [
    (gzip.compress("A dog.\n".encode() * 399 + b"\xff\xfe broken\n", mtime=0),
     ("train.en.gz", "line 400", "not UTF-8", "convert")),
    (gzip.compress("A dog.\n".encode() * 400, mtime=0)[:-30],
     ("train.en.gz", "after line", "cut short")),
    (gzip.compress(b"\n" * 400, mtime=0), ("train.en.gz", "train.de", "no sentence pair")),
    (gzip.compress("A dog.\n".encode("utf-16") * 400, mtime=0),
     ("train.en.gz", "line 1", "UTF-16", "convert", "iconv -f utf-16")),
    (gzip.compress(gzip.compress("A dog.\n".encode() * 400, mtime=0), mtime=0),
     ("train.en.gz", "gzip-compressed again", "decompress it twice")),
    (gzip.compress(bz2.compress("A dog.\n".encode() * 400), mtime=0),
     ("train.en.gz", "bzip2-compressed again", "bzip2 -dc")),
], ids=["not UTF-8", "cut short", "no pairs", "UTF-16", "gzip twice", "bzip2 in gzip"])
def test_a_bad_input_file_is_one_error_naming_the_file_and_the_line(tmp_path, content, names):
    location = bad_corpus(tmp_path, content)
    config = get("multi30k").override(dataset="files", vocab_size=500)
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=location, cache_dir=tmp_path / "cache", log=quiet)
    says(error, *names)


# --- other language pairs: English-French, and any corpus of the user's ---------------------------

def test_english_french_is_the_same_corpus_with_another_target(tmp_path):
    config = get("multi30k").override(dataset="multi30k_sample", target_lang="fr",
                                      vocab_size=1000)
    corpus = load_corpus(config, cache_dir=tmp_path, log=quiet)
    assert corpus.test_src[0] == "A man in an orange hat starring at something."
    assert corpus.test_ref[0].startswith("Un homme")
    assert len(corpus.train) == 3_000


def test_lowercase_lowercases_every_split_and_keeps_the_raw_references_for_cased_bleu(tmp_path):
    config = get("multi30k").override(dataset="multi30k_sample", vocab_size=1000, lowercase=True)
    corpus = load_corpus(config, cache_dir=tmp_path, log=quiet)
    decode = corpus.tokenizer.decode
    assert decode(corpus.train[0][1]) == "zwei junge weiße männer sind im freien in der nähe " \
                                         "vieler büsche."
    assert decode(corpus.test[0][0]) == corpus.test_src[0].lower()
    assert corpus.test_ref[0].startswith("Ein Mann mit")           # as written: cased BLEU
    assert all(decode(t) == decode(t).lower() for _, t in corpus.valid)


def test_a_users_own_corpus_is_read_by_naming_the_folder_and_the_languages(tmp_path):
    folder = user_corpus(tmp_path / "mine")
    config = get("multi30k").override(dataset="files", source_lang="en", target_lang="fr",
                                      vocab_size=500)
    corpus = load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (400, 300, 300)
    assert corpus.test_ref[0].startswith("Un homme")
    with pytest.raises(data.DataError) as error:
        (folder / "test.fr").unlink()
        load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "has test.en.gz", "no test.fr", "add test.fr")    # the side that is missing
    (folder / "test.FR").write_text("Un homme.\n")                  # there, but for case
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "no test.fr", "test.FR", "case-sensitive", "rename it test.fr")
    (folder / "test.FR").unlink()
    (folder / "test.en.gz").unlink()
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "test.{en,fr}")
    with pytest.raises(data.DataError, match="give --data-dir DIR"):
        load_corpus(config, data_dir=None, cache_dir=tmp_path / "cache", log=quiet)


def test_scripts_without_spaces_get_a_vocabulary_that_round_trips(tmp_path):
    """Chinese has no spaces between words and thousands of characters: the BPE model keeps
    99.95% of the characters (tokenizer.coverage) and decodes what it encodes."""
    rng = np.random.default_rng(0)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 300)]
    lines = ["".join(rng.choice(chars, size=rng.integers(5, 15))) + "。" for _ in range(2000)]
    assert tokenizer_module.coverage("en", "zh") == 0.9995
    assert tokenizer_module.coverage("en", "fr") == 1.0
    tok = tokenizer_module.load_or_train([_write(tmp_path / "train.zh", lines)], 600,
                                         tmp_path / "cache", "zh", log=quiet,
                                         character_coverage=tokenizer_module.coverage("zh"))
    for line in lines[:50]:
        assert tok.decode(tok.encode(line)) == line


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", ["sides swapped", "German named zh", "Russian named zh"])
def test_a_training_side_in_another_language_than_its_setting_is_refused(tmp_path, case):
    """The model would learn another pair than the one named: the sides swapped in every
    split (a German->English model called English->German), or German text in files named
    for Chinese. Refused before a tokenizer is trained, naming the training file and the
    setting; the languages named right pass (the other tests)."""
    folder = user_corpus(tmp_path / "mine", target="de")
    langs = dict(source_lang="en", target_lang="de")
    if case == "sides swapped":
        for stem in ("train", "dev", "test"):
            en = list(read_lines(next(folder.glob(f"{stem}.en*"))))
            for p in folder.glob(f"{stem}.en*"):
                p.unlink()
            (folder / f"{stem}.de").rename(folder / f"{stem}.en")
            _write(folder / f"{stem}.de", en)
        names = ("train.en", "reads as de", "source_lang=en")
    else:
        for stem in ("train", "dev", "test"):
            text = (folder / f"{stem}.de").read_text()
            if case == "Russian named zh":
                text = "".join("Мужчина в оранжевой шляпе смотрит на что-то номер "
                               f"{i}.\n" for i in range(text.count("\n")))
            (folder / f"{stem}.zh").write_text(text)
            (folder / f"{stem}.de").unlink()
        langs["target_lang"] = "zh"
        names = ("train.zh", "target_lang=zh") + (
            ("reads as de",) if case == "German named zh" else ("hardly any", "script"))
    config = get("multi30k").override(dataset="files", vocab_size=500, **langs)
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    says(error, *names, "Check the files", "the languages")
    assert not (tmp_path / "cache" / "tokenizers").exists()


def test_a_split_in_another_language_than_its_side_is_refused(tmp_path):
    """A valid.fr that holds German: validation would measure nothing. Refused before a
    tokenizer is trained, naming the file and both languages."""
    folder = user_corpus(tmp_path / "mine")
    config = get("multi30k").override(dataset="files", source_lang="en", target_lang="fr",
                                      vocab_size=500)
    german = list(read_lines(SAMPLE / "val_sample.de.gz"))[:400]
    (folder / "dev.fr").write_text("".join(line + "\n" for line in german))
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "dev.fr", "reads as de", "train.fr", "as fr")
    assert not (tmp_path / "cache" / "tokenizers").exists()


@pytest.mark.parametrize("lines", [100, 150])
def test_a_stretch_of_a_training_side_in_another_language_is_refused_where_it_is(tmp_path,
                                                                                  lines):
    """French for lines 201-300 (or more) of a train.de of 400: the file reads as German as a
    whole, and the French lines translate their English, so no other check sees them. Refused
    before a tokenizer is trained, naming the file and the lines."""
    folder = user_corpus(tmp_path / "mine", target="de")
    german = (folder / "train.de").read_text().splitlines()
    french = list(read_lines(SAMPLE / "train_sample.fr.gz"))[:400]
    _write(folder / "train.de", german[:200] + french[200:200 + lines] + german[200 + lines:])
    config = get("multi30k").override(dataset="files", source_lang="en", target_lang="de",
                                      vocab_size=500)
    with pytest.raises(data.DataError) as error:
        load_corpus(config, data_dir=folder, cache_dir=tmp_path / "cache", log=quiet)
    says(error, "train.de", "lines 201-300", "read as fr", "as de")
    assert not (tmp_path / "cache" / "tokenizers").exists()


def test_a_data_location_with_a_space_at_its_end_shows_the_space(tmp_path):
    from annotated.base.errors import DataError
    from annotated.data.corpus import data_location
    with pytest.raises(DataError) as error:
        data_location(f"{tmp_path} ")
    says(str(error.value), repr(f"{tmp_path} "), "not there", "space")


def test_a_folder_in_place_of_a_corpus_file_is_named_a_folder(tmp_path):
    from annotated.data.corpus import folder_holding
    (tmp_path / "multi30k" / "train.en.gz").mkdir(parents=True)
    with pytest.raises(FileNotFoundError) as error:
        folder_holding("multi30k", ["train.en.gz"], tmp_path)
    says(str(error.value), "train.en.gz (a folder there, not a file)")


def test_a_file_one_line_longer_by_a_blank_last_line_names_that_line(tmp_path):
    """An editor's empty line at the end: the user would look for a missing sentence."""
    from annotated.base.errors import DataError
    from annotated.base.files import check_aligned
    (tmp_path / "valid.en").write_text("A dog.\nA cat.\n")
    (tmp_path / "valid.de").write_text("Ein Hund.\nEine Katze.\n\n")
    with pytest.raises(DataError) as error:
        check_aligned(2, 3, tmp_path / "valid.en", tmp_path / "valid.de")
    says(str(error.value), "2 lines", "3", "valid.de, line 3, is blank", "delete it")
    (tmp_path / "valid.de").write_text("Ein Hund.\nEine Katze.\nEin Vogel.\n")
    with pytest.raises(DataError) as error:
        check_aligned(2, 3, tmp_path / "valid.en", tmp_path / "valid.de")
    assert "blank" not in str(error.value)
