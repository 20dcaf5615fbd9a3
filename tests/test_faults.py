"""Fault injection: the command-line tools never lose a user's work. Each test damages a file,
fills the disk, points an output at an input, or the like, and checks two things: the user's
files are byte for byte what they were, and the command says what went wrong in one line."""
import errno
import os

import pytest
import torch

import annotated.tokenizer as tk
from annotated import checkpoint, configs
from annotated.tokenizer import CopyTokenizer, atomic_open, load_or_train

TINY = dict(N=1, d_model=16, d_ff=32, h=2, d_k=8, d_v=8)
CONFIG = configs.get("copy").override(**TINY)


def save(path, seed=0, step=1, config=CONFIG, tokenizer=None, **options):
    torch.manual_seed(seed)
    tokenizer = tokenizer or CopyTokenizer(11)
    return checkpoint.save(path, model=config.make_model(tokenizer.vocab_size), config=config,
                           tokenizer=tokenizer, step=step, **options)


def snapshot(folder):
    """Every file under `folder` and its bytes."""
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# --- atomic writes: the umask, a full disk ---------------------------------------------------

@pytest.fixture
def umask():
    def set_umask(mask):
        os.umask(mask)
    old = os.umask(0o022)
    yield set_umask
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_atomic_writes_honour_the_umask(tmp_path, umask, mask):
    umask(mask)
    with atomic_open(tmp_path / "f.txt", "w") as f:
        f.write("text")
    save(tmp_path / "c.pt")
    for name in ("f.txt", "c.pt"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~mask, name


class FullDisk:
    """A file on a disk that fills up after `room` bytes: write raises ENOSPC, as os.write
    would. Everything else goes to the real file."""

    def __init__(self, f, room):
        self.f, self.room = f, room

    def write(self, chunk):
        if len(chunk) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(chunk)
        return self.f.write(chunk)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def fill_disk(monkeypatch, room):
    """From now on, the files atomic_open writes can hold `room` bytes."""
    real = os.fdopen
    monkeypatch.setattr(tk.os, "fdopen", lambda *a, **k: FullDisk(real(*a, **k), room))


def test_full_disk_keeps_the_old_file_and_says_no_space_left(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    fill_disk(monkeypatch, 10)
    with pytest.raises(OSError, match=f"no space left on device while writing {path}") as error:
        with atomic_open(path) as f:
            f.write(b"more than ten bytes")
    assert error.value.errno == errno.ENOSPC
    assert snapshot(tmp_path) == {path.relative_to(tmp_path): b"old"}     # no temporary left


# --- a corrupt tokenizer cache, a missing GPU, empty or misaligned text ------------------------

def test_corrupt_cached_tokenizer_is_removed_and_retrained(tmp_path):
    (tmp_path / "train.en").write_text("a dog runs\nthe cat sleeps\n" * 20)
    (tmp_path / "train.de").write_text("ein hund rennt\ndie katze schläft\n" * 20)
    files, logs = [tmp_path / "train.en", tmp_path / "train.de"], []
    first = load_or_train(files, 30, tmp_path / "cache", "toy", log=logs.append)
    [model] = (tmp_path / "cache").glob("toy-bpe30-*.model")
    model.write_bytes(model.read_bytes()[:100])                      # cut short on disk
    again = load_or_train(files, 30, tmp_path / "cache", "toy", log=logs.append)
    assert any(f"the cached {model} cannot be loaded" in line and "removing it and training "
               "again" in line for line in logs)
    assert again.to_bytes() == first.to_bytes() == model.read_bytes()
