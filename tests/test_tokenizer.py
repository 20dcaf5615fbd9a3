"""The shared BPE tokenizer, its cache, the copy task's tokenizer and the file helpers."""
import gzip
import io

import numpy as np
import pytest
import sentencepiece as spm
from conftest import says

import annotated.data.tokenizer as tk
from annotated.base.files import atomic_open, read_lines
from annotated.data.tokenizer import (BOS, EOS, PAD, UNK, CopyTokenizer, Tokenizer, load_or_train,
                                      train_bpe)

WORDS = {"en": "a man woman dog runs walks street green house with the through big small".split(),
         "de": "ein Mann Frau Hund läuft geht Straße grünen Haus mit dem durch großen kleinen".split()}


def sentences(lang, n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS[lang], size=rng.integers(3, 12))).capitalize() + "."
            for _ in range(n)]


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    """Training text of both languages, English gzipped and German plain."""
    folder = tmp_path_factory.mktemp("text")
    en, de = folder / "train.en.gz", folder / "train.de"
    with gzip.open(en, "wt", encoding="utf-8") as f:
        f.write("\n".join(sentences("en", 600, 0)) + "\n")
    de.write_text("\n".join(sentences("de", 600, 1)) + "\n", encoding="utf-8")
    return [en, de]


@pytest.fixture(scope="module")
def tokenizer(corpus_files, tmp_path_factory):
    return train_bpe(corpus_files, 120, tmp_path_factory.mktemp("model") / "bpe.model")


def test_special_ids_are_fixed(tokenizer):
    sp = tokenizer.sp
    assert (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD, UNK, BOS, EOS)
    assert tokenizer.vocab_size == 120


def test_round_trip_without_bos_eos(tokenizer):
    for text in sentences("de", 50, 7) + sentences("en", 50, 8):
        ids = tokenizer.encode(text)
        assert min(ids) > EOS                          # no PAD/UNK/BOS/EOS in known text
        assert tokenizer.decode(ids) == text
        assert tokenizer.decode([BOS, *ids, EOS, PAD, PAD]) == text
    assert tokenizer.encode_all(["Ein Hund.", "A dog."]) == [tokenizer.encode("Ein Hund."),
                                                              tokenizer.encode("A dog.")]
    assert UNK in tokenizer.encode("Ж")               # a character never seen in training


def test_bytes_and_file_round_trip(tokenizer, tmp_path):
    again = Tokenizer.from_bytes(tokenizer.to_bytes())
    tokenizer.save(tmp_path / "t.model")
    loaded = Tokenizer.load(tmp_path / "t.model")
    text = "Ein großen Hund läuft durch dem Haus."
    assert again.encode(text) == loaded.encode(text) == tokenizer.encode(text)


def test_training_is_deterministic_and_reads_gzip(corpus_files, tokenizer, tmp_path):
    texts = [list(read_lines(f)) for f in corpus_files]        # the same text, in memory
    again = train_bpe(texts, 120, tmp_path / "again.model")
    assert again.to_bytes() == tokenizer.to_bytes()


def test_model_with_other_special_ids_is_rejected():
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences("en", 200, 3)),
                                   model_writer=model, vocab_size=40, minloglevel=2)
    with pytest.raises(ValueError, match="pad/unk/bos/eos ids"):
        Tokenizer.from_bytes(model.getvalue())
    with pytest.raises(ValueError) as error:
        Tokenizer.from_bytes(b"hello")
    says(error, "not a tokenizer", "5 bytes")


def test_cache_reuses_and_retrains_when_inputs_change(corpus_files, tmp_path, monkeypatch):
    trained = []
    real = tk.train_bpe
    monkeypatch.setattr(tk, "train_bpe", lambda *a: trained.append(a) or real(*a))
    first = load_or_train(corpus_files, 120, tmp_path, "toy", log=lambda *a: None)
    second = load_or_train(corpus_files, 120, tmp_path, "toy", log=lambda *a: None)
    assert len(trained) == 1                                    # second load did not retrain
    assert second.to_bytes() == first.to_bytes()
    load_or_train(corpus_files, 100, tmp_path, "toy", log=lambda *a: None)
    assert len(trained) == 2                                    # other vocabulary size
    changed = tmp_path / "train.de"
    changed.write_text("\n".join(sentences("de", 600, 99)) + "\n", encoding="utf-8")
    load_or_train([corpus_files[0], changed], 120, tmp_path, "toy", log=lambda *a: None)
    assert len(trained) == 3                                    # other text
    assert len(list(tmp_path.glob("toy-bpe120-*.model"))) == 2


def test_a_lowercased_tokenizer_lowercases_what_it_reads_wherever_it_is_loaded(
        corpus_files, tokenizer, tmp_path):
    lower = train_bpe(corpus_files, 120, tmp_path / "lower.model", lowercase=True)
    carried = Tokenizer.from_bytes(lower.to_bytes())        # as a checkpoint carries it
    for text in sentences("de", 50, 7) + ["EIN GROSSEN Hund läuft durch die STRASSE. Straße."]:
        ids = carried.encode(text)
        assert ids == carried.encode(text.lower()) == lower.encode(text)
        assert carried.decode(ids) == text.lower()           # ß stays ß
    assert tokenizer.decode(tokenizer.encode("Ein Hund.")) == "Ein Hund."   # the default: cased


def test_cache_keeps_lowercased_and_cased_tokenizers_apart(corpus_files, tmp_path):
    cased = load_or_train(corpus_files, 120, tmp_path, "toy", log=lambda *a: None)
    lower = load_or_train(corpus_files, 120, tmp_path, "toy", log=lambda *a: None, lowercase=True)
    again = load_or_train(corpus_files, 120, tmp_path, "toy", log=lambda *a: None)
    assert lower.decode(lower.encode("Ein Hund.")) == "ein hund."
    assert cased.decode(cased.encode("Ein Hund.")) == again.decode(again.encode("Ein Hund.")) \
        == "Ein Hund."
    assert len(list(tmp_path.glob("toy-bpe120-*.model"))) == 2


def test_copy_tokenizer():
    tok = CopyTokenizer(11)
    assert tok.encode("4 10 7") == [4, 10, 7]
    assert tok.decode([BOS, 4, 10, 7, EOS, PAD]) == "4 10 7"
    assert tok.decode([5, UNK]) == "5 ⁇"
    again = Tokenizer.from_bytes(tok.to_bytes())
    assert isinstance(again, CopyTokenizer) and again.vocab_size == 11
    with pytest.raises(ValueError) as error:
        tok.encode("4 11 3")
    says(error, "4..10", "\"4 9 5\"", "'11' in '4 11 3'")
    with pytest.raises(ValueError) as error:    # words, not ints
        tok.encode("hello world")
    says(error, "'hello'", "'hello world'")


def test_read_lines_splits_on_newline_only_and_names_bad_bytes(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("one\r\ntwo\rstill two\u2028too\nthree".encode())
    assert list(read_lines(path)) == ["one", "two\rstill two\u2028too", "three"]
    path.write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(ValueError) as error:
        list(read_lines(path))
    says(error, "t.txt, line 2", "not UTF-8")


def test_atomic_open_keeps_the_old_file_on_error(tmp_path):
    path = tmp_path / "f.bin"
    with atomic_open(path) as f:
        f.write(b"old")
    with pytest.raises(RuntimeError):
        with atomic_open(path) as f:
            f.write(b"half of the new")
            raise RuntimeError("crash while writing")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]       # no temporary file left


def test_what_reading_the_training_text_raises_is_not_called_a_vocabulary_problem(tmp_path):
    """sentencepiece turns an exception of the sentences it is fed into a RuntimeError: a file
    that is not UTF-8, or a stop (SIGTERM) while the vocabulary is learned, must reach the
    user as itself, not as 'cannot learn a vocabulary'."""
    import signal
    from annotated.base.errors import DataError
    from annotated.base.signals import Stopped
    (tmp_path / "bad.txt").write_bytes(b"hello world\n\xff\xfe bad\n")
    with pytest.raises(DataError) as error:
        train_bpe([tmp_path / "bad.txt"], 50, tmp_path / "m.model")
    says(error, "bad.txt", "line 2", "UTF-8")

    def stopped_while_read():
        yield "a b c"
        raise Stopped(signal.SIGTERM)
    with pytest.raises(Stopped):
        train_bpe([stopped_while_read()], 20, tmp_path / "m.model")
    assert not (tmp_path / "m.model").exists()
