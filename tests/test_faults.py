"""Fault injection: the command-line tools never lose a user's work. Each test damages a file,
fills the disk, points an output at an input, or the like, and checks two things: the user's
files are byte for byte what they were, and the command says what went wrong in one line."""
import errno
import io
import os

import pytest
from conftest import says
import torch
from test_corpus import toy_wmt14

import annotated.data.corpus as data
import annotated.data.tokenizer as tk
from annotated import checkpoint as checkpoint_command
from annotated import configs
from annotated.base.errors import CheckpointError
from annotated.base.files import atomic_open
from annotated.data.prepare_wmt14 import prepare
from annotated.data.tokenizer import CopyTokenizer, load_or_train, train_bpe
from annotated.evaluate import main as evaluate_main
from annotated.model import EncoderDecoder
from annotated.store import checkpoint_file
from annotated.training.run_dir import rotate
from annotated.translate import main as translate_main

TINY = dict(N=1, d_model=16, d_ff=32, h=2, d_k=8, d_v=8)
CONFIG = configs.get("copy").override(**TINY)


def save(path, seed=0, step=1, config=CONFIG, tokenizer=None, **options):
    torch.manual_seed(seed)
    tokenizer = tokenizer or CopyTokenizer(11)
    return checkpoint_file.save(path, model=EncoderDecoder(config, tokenizer.vocab_size),
                                config=config, tokenizer=tokenizer, step=step, **options)


def run_dir(folder, steps=(1, 2, 3)):
    """A run folder with a checkpoint at each of `steps`."""
    return [save(folder / checkpoint_file.checkpoint_name(s), step=s) for s in steps]


def snapshot(folder):
    """Every file under `folder` and its bytes."""
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def damage(path, position):
    """Change one bit of one byte of a file (a negative position counts from the end)."""
    content = bytearray(path.read_bytes())
    content[position] ^= 0x01
    path.write_bytes(bytes(content))


def error_line(capsys, alone=True) -> str:
    """The command's error: one line starting "error: ", no traceback; with alone, the only
    line on stderr (else it may follow progress lines)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "Traceback" not in err and lines and lines[-1].startswith("error: "), err
    assert [line for line in lines if line.startswith("error")] == lines[-1:], err
    assert not alone or len(lines) == 1, err
    return lines[-1]


def exits_with_error(main, argv, code=1):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == code


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
    with pytest.raises(OSError) as error:
        with atomic_open(path) as f:
            f.write(b"more than ten bytes")
    says(error, "no space left", str(path), "free some space or write elsewhere")
    assert error.value.errno == errno.ENOSPC
    assert snapshot(tmp_path) == {path.relative_to(tmp_path): b"old"}     # no temporary left
    from annotated.base.cli import describe           # as a command says it: no [Errno 28]
    says(describe(error.value), "no space left", "free some space")
    assert not describe(error.value).startswith("[Errno")


def test_full_disk_during_checkpoint_save_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt_0000001.pt"
    path.write_bytes(b"the old checkpoint")
    fill_disk(monkeypatch, 1000)                    # torch.save fails, and hides why
    with pytest.raises(OSError) as error:
        save(path)
    says(error, "no space left", str(path))
    assert snapshot(tmp_path) == {path.relative_to(tmp_path): b"the old checkpoint"}


def test_full_disk_during_translation_keeps_the_old_output(tmp_path, capsys, monkeypatch):
    ckpt = save(tmp_path / "ckpt_0000001.pt")
    (tmp_path / "in.txt").write_text("4 5 6\n" * 50)
    (tmp_path / "out.txt").write_text("old translations\n")
    before = snapshot(tmp_path)
    fill_disk(monkeypatch, 100)
    exits_with_error(translate_main, ["--checkpoint", str(ckpt), "--input",
                                      str(tmp_path / "in.txt"), "--out",
                                      str(tmp_path / "out.txt"), "--max-extra", "1"])
    says(error_line(capsys, alone=False), "no space left", str(tmp_path / "out.txt"))
    assert snapshot(tmp_path) == before


# --- checkpoint integrity --------------------------------------------------------------------

def test_any_changed_byte_in_a_checkpoint_is_detected(tmp_path):
    path = save(tmp_path / "c.pt")
    good = path.read_bytes()
    seal = len(good) - checkpoint_file.SEAL_SIZE
    positions = [*range(0, seal, 509), *range(seal, len(good))]   # the seal: every byte
    for position in positions:
        path.write_bytes(good)
        damage(path, position)
        with pytest.raises(CheckpointError, match="corrupt or truncated"):
            checkpoint_file.verify(path)
    for cut in (1, checkpoint_file.SEAL_SIZE, checkpoint_file.SEAL_SIZE + 1, len(good) // 2):
        path.write_bytes(good[:-cut])
        with pytest.raises(CheckpointError, match="corrupt or truncated"):
            checkpoint_file.load(path)
    path.write_bytes(good + b"\n")
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        checkpoint_file.load(path)
    path.write_bytes(good)
    checkpoint_file.verify(path)                               # raises if it is not intact
    assert checkpoint_file.load(path)["step"] == 1


def test_a_checkpoint_saved_again_by_torch_save_is_told_as_such(tmp_path):
    path = save(tmp_path / "c.pt")
    torch.save(torch.load(path, weights_only=True), tmp_path / "resaved.pt")
    with pytest.raises(CheckpointError) as refused:
        checkpoint_file.load(tmp_path / "resaved.pt")
    says(str(refused.value), str(tmp_path / "resaved.pt"), "seal", "saved again", "torch.save",
         "atomic_save")


def test_damaged_checkpoint_is_refused_naming_the_one_to_use_instead(tmp_path):
    first, second, third = run_dir(tmp_path)
    damage(third, os.path.getsize(third) // 2)       # inside the weights: torch.load is silent
    damage(second, -1)
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError) as error:
        checkpoint_file.load_model(third)
    says(error, str(third), "corrupt or truncated", f"use {first}", "verifies")
    damage(first, 0)
    with pytest.raises(CheckpointError) as error:
        checkpoint_file.load(third)
    says(error, "no other checkpoint", str(tmp_path), "verifies")
    assert snapshot(tmp_path).keys() == before.keys()


def test_translate_refuses_a_damaged_checkpoint_in_one_line(tmp_path, capsys):
    first, second = run_dir(tmp_path, (1, 2))
    damage(second, os.path.getsize(second) // 2)
    before = snapshot(tmp_path)
    exits_with_error(translate_main, ["--checkpoint", str(second), "--input", "-"])
    says(error_line(capsys), str(second), "corrupt or truncated", f"use {first}")
    assert snapshot(tmp_path) == before


def test_average_refuses_a_damaged_checkpoint_and_names_the_ones_that_verify(tmp_path, capsys):
    """One damaged checkpoint among those to average: the line names it, and the fix is the
    average of the others, named, not one checkpoint used instead."""
    first, second, third = run_dir(tmp_path, (1, 2, 3))
    damage(second, -20)
    before = snapshot(tmp_path)
    exits_with_error(checkpoint_command.main, ["average", "--out", str(tmp_path / "avg.pt"),
                                               "--last", "3", str(tmp_path)])
    line = error_line(capsys)
    says(line, str(second), "corrupt or truncated", "leave it out of the average",
         f"{first.name}, {third.name}")
    assert "instead" not in line
    assert snapshot(tmp_path) == before


def test_resume_refuses_a_damaged_checkpoint_and_says_what_to_move(tmp_path, capsys):
    """The trainer takes no checkpoint name: the way on from the good one is to move the
    damaged one out of the run folder, and the message says so."""
    from annotated import train
    first, second = run_dir(tmp_path, (1, 2))
    damage(second, 100)
    before = snapshot(tmp_path)
    exits_with_error(train.main, ["--run-dir", str(tmp_path), "--resume"])
    says(error_line(capsys), str(second), "corrupt or truncated", "move", str(tmp_path),
         first.name)
    assert snapshot(tmp_path) == before
    first.unlink()                                 # the damaged one alone: the run starts over
    exits_with_error(train.main, ["--run-dir", str(tmp_path), "--resume"])
    says(error_line(capsys), str(second), "no other checkpoint", "move it out",
         "another --run-dir")


def test_verify_command_checks_every_checkpoint_of_a_run(tmp_path, capsys):
    first, second = run_dir(tmp_path, (1, 2))
    checkpoint_command.main(["verify", str(tmp_path)])
    assert capsys.readouterr().out == f"{first}: intact\n{second}: intact\n"
    damage(second, 10)
    exits_with_error(checkpoint_command.main, ["verify", str(first), str(second)])
    captured = capsys.readouterr()
    assert captured.out == f"{first}: intact\n"
    assert captured.err.startswith(f"error: checkpoint {second} is corrupt or truncated")


# --- rotation ---------------------------------------------------------------------------------

def test_rotation_never_deletes_the_newest_checkpoint_that_verifies(tmp_path):
    paths = run_dir(tmp_path, (1, 2, 3, 4))
    for p in paths[2:]:
        damage(p, -5)
    deleted = rotate(tmp_path, keep_last=2)
    assert deleted == paths[:1]
    assert checkpoint_file.checkpoints(tmp_path) == paths[1:]
    assert checkpoint_file.newest_intact(tmp_path) == paths[1]


def test_rotation_spares_the_checkpoints_it_is_told_to_keep(tmp_path):
    paths = run_dir(tmp_path, (1, 2, 3, 4))
    assert rotate(tmp_path, keep_last=1, keep=[paths[0]]) == paths[1:3]
    assert checkpoint_file.checkpoints(tmp_path) == [paths[0], paths[3]]


def test_rotation_of_a_checkpoint_gone_meanwhile_says_nothing(tmp_path, monkeypatch, capsys):
    """A file gone already (the run folder moved, a user deleted it) is what rotation wanted."""
    import warnings
    paths = run_dir(tmp_path, (1, 2, 3))
    paths[0].unlink()
    monkeypatch.setattr(checkpoint_file, "checkpoints", lambda folder: paths)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rotate(tmp_path, keep_last=1) == paths[1:2]
    assert capsys.readouterr().err == ""


# --- no command writes over a file it reads ---------------------------------------------------

@pytest.fixture
def translation(tmp_path):
    """A checkpoint, an input and references, and a snapshot of them."""
    ckpt = save(tmp_path / "ckpt_0000001.pt")
    (tmp_path / "in.txt").write_text("4 5 6\n7 8\n")
    (tmp_path / "ref.txt").write_text("4 5 6\n7 8\n")
    return ckpt, tmp_path / "in.txt", tmp_path / "ref.txt", snapshot(tmp_path)


def test_translate_refuses_to_write_over_its_input(translation, tmp_path, capsys):
    ckpt, source, _, _ = translation
    os.link(source, tmp_path / "same.txt")                         # the same file, by another name
    before = snapshot(tmp_path)
    for output in (source, tmp_path / "same.txt"):
        exits_with_error(translate_main, ["--checkpoint", str(ckpt), "--input", str(source),
                                          "--out", str(output)])
        says(error_line(capsys), "refusing", str(output), str(source), "reads")
    assert snapshot(tmp_path) == before


def test_translate_refuses_an_out_that_holds_its_input_s_text(translation, tmp_path,
                                                                  capsys):
    """The input's text in another file (test.en.gz beside test.en, a copy): kept, with one
    line each; an earlier translation is replaced."""
    import gzip
    ckpt, source, _, _ = translation
    (tmp_path / "in.txt.gz").write_bytes(gzip.compress(source.read_bytes()))
    (tmp_path / "in_copy.txt").write_bytes(source.read_bytes())
    for output in (tmp_path / "in.txt.gz", tmp_path / "in_copy.txt"):
        before = snapshot(tmp_path)
        exits_with_error(translate_main, ["--checkpoint", str(ckpt), "--input", str(source),
                                          "--out", str(output)])
        says(error_line(capsys), f"--out {output}", "the input's own text", "another --out")
        assert snapshot(tmp_path) == before
    (tmp_path / "earlier.txt").write_text("a\nb\n")
    translate_main(["--checkpoint", str(ckpt), "--input", str(source), "--out",
                    str(tmp_path / "earlier.txt")])
    assert (tmp_path / "earlier.txt").read_text() != "a\nb\n"


@pytest.mark.parametrize("which", ["checkpoint", "references"])
def test_translate_refuses_to_write_over_its_checkpoint_or_references(translation, tmp_path,
                                                                      capsys, which):
    ckpt, source, ref, before = translation
    output = ckpt if which == "checkpoint" else ref
    exits_with_error(translate_main, ["--checkpoint", str(ckpt), "--input", str(source),
                                      "--ref", str(ref), "--out", str(output)])
    says(error_line(capsys), "refusing", str(output))
    assert snapshot(tmp_path) == before


def test_translate_checks_its_output_before_any_work(translation, tmp_path, capsys):
    _, source, _, before = translation
    missing = tmp_path / "no-such-folder" / "out.txt"
    exits_with_error(translate_main, ["--checkpoint", str(tmp_path / "none.pt"), "--input",
                                      str(source), "--out", str(missing)])
    says(error_line(capsys), f"cannot write {missing}", f"no folder {missing.parent}")
    exits_with_error(translate_main, ["--checkpoint", str(tmp_path / "none.pt"), "--input",
                                      str(source), "--out", str(tmp_path)])
    says(error_line(capsys), f"cannot write {tmp_path}", "a folder", "the path of a file")
    assert snapshot(tmp_path) == before


def test_translate_output_dash_means_stdout(translation, tmp_path, capsys, monkeypatch):
    ckpt, source, _, before = translation
    monkeypatch.chdir(tmp_path)
    translate_main(["--checkpoint", str(ckpt), "--input", str(source), "--out", "-",
                    "--max-extra", "2"])
    assert capsys.readouterr().out.count("\n") == 2
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"4 5\n")))
    translate_main(["--checkpoint", str(ckpt), "--input", "-", "--max-extra", "2"])
    assert capsys.readouterr().out.count("\n") == 1
    assert snapshot(tmp_path) == before                              # no file named "-"


def test_average_refuses_to_write_over_one_of_its_inputs(tmp_path, capsys):
    paths = run_dir(tmp_path, (1, 2))
    (tmp_path / "avg.pt").symlink_to(paths[1])
    before = snapshot(tmp_path)
    for out in (paths[1], tmp_path / "avg.pt"):
        argv = ["average", "--out", str(out), *map(str, paths)]
        exits_with_error(checkpoint_command.main, argv)
        says(error_line(capsys), "refusing", str(out))
    exits_with_error(checkpoint_command.main, ["average", "--out", str(tmp_path / "avg.pt"), "--last",
                                       "2", str(tmp_path)])
    says(error_line(capsys), "refusing to write", str(paths[1]), "reads")
    assert snapshot(tmp_path) == before


def test_average_refuses_to_write_a_training_checkpoint(tmp_path, capsys):
    paths = run_dir(tmp_path, (1, 2))
    (tmp_path / "other").mkdir()
    other = save(tmp_path / "other" / "ckpt_0000009.pt")
    before = snapshot(tmp_path)
    for out in (other, tmp_path / "ckpt_0000003.pt"):
        exits_with_error(checkpoint_command.main, ["average", "--out", str(out), *map(str, paths)])
        says(error_line(capsys), "refusing", str(out), "ckpt_NNNNNNN.pt",
             "training checkpoint", "average.pt")
    assert snapshot(tmp_path) == before


def test_prepare_wmt14_never_deletes_files_it_did_not_create(tmp_path, toy_sizes):
    urls = toy_wmt14(tmp_path / "server")
    out = tmp_path / "wmt14"
    (out / "extracted").mkdir(parents=True)
    (out / "extracted" / "notes.txt").write_text("mine")
    (out / "notes.txt").write_text("mine too")
    prepare(out, urls, log=lambda *_: None)
    assert (out / "extracted" / "notes.txt").read_text() == "mine"
    assert (out / "notes.txt").read_text() == "mine too"
    assert sorted(p.name for p in out.iterdir()) == [
        "downloads", "extracted", "manifest.json", "newstest2013.de", "newstest2013.en",
        "newstest2014.de", "newstest2014.en", "notes.txt", "train.de", "train.en"]
    bad = toy_wmt14(tmp_path / "bad", europarl_de="Nur eins.\n")
    before = snapshot(tmp_path / "wmt14")
    with pytest.raises(ValueError) as error:
        prepare(tmp_path / "wmt14-bad", bad, log=lambda *_: None)
    says(error, "europarl-v7.de-en.en", "europarl-v7.de-en.de", "line-aligned")
    assert [p.name for p in (tmp_path / "wmt14-bad").iterdir()] == ["downloads"]
    assert snapshot(tmp_path / "wmt14") == before


# --- averaging: one model, one tokenizer, one run (unless told) --------------------------------

def test_checkpoints_of_one_run_share_a_run_id_and_another_run_has_its_own(tmp_path):
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
    a = [checkpoint_file.load(p)["run_id"] for p in run_dir(tmp_path / "a")]
    b = checkpoint_file.load(save(tmp_path / "b" / "ckpt_0000001.pt"))["run_id"]
    assert len(set(a)) == 1 and a[0] != b and len(b) == 16
    given = save(tmp_path / "b" / "ckpt_0000002.pt", run_id="given-by-the-trainer")
    assert checkpoint_file.load(given)["run_id"] == "given-by-the-trainer"


def test_average_refuses_checkpoints_of_different_runs_unless_told(tmp_path, capsys):
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
    a = save(tmp_path / "a" / "ckpt_0000005.pt", seed=1)
    b = save(tmp_path / "b" / "ckpt_0000005.pt", seed=2)
    out = tmp_path / "soup.pt"
    exits_with_error(checkpoint_command.main, ["average", "--out", str(out), str(a), str(b)])
    says(error_line(capsys), str(b), "another run", str(a), "--allow-different-runs")
    assert not out.exists()
    capsys.readouterr()
    checkpoint_command.main(["average", "--allow-different-runs", "--out", str(out), str(a), str(b)])
    says(capsys.readouterr().out.strip(), "averaged 2 checkpoints", str(a), str(b))  # told apart
    soup = checkpoint_file.load(out)
    runs = [checkpoint_file.load(p)["run_id"] for p in (a, b)]
    assert soup["averaged_runs"] == runs and soup["run_id"] not in runs
    assert soup["averaged_from"] == [a.name, b.name]


def test_average_refuses_different_configs_even_when_told(tmp_path, capsys):
    a = save(tmp_path / "a.pt")
    b = save(tmp_path / "b.pt", config=CONFIG.override(N=2), run_id=checkpoint_file.load(a)["run_id"])
    exits_with_error(checkpoint_command.main, ["average", "--allow-different-runs", "--out",
                                       str(tmp_path / "avg.pt"), str(a), str(b)])
    says(error_line(capsys), str(b), "different config", str(a), "N 2 vs 1", "leave one of them out")


def test_average_refuses_different_tokenizers_even_when_told(tmp_path, capsys):
    words = [["a dog runs", "the cat sleeps"] * 20, ["ein hund rennt", "die katze"] * 20]
    config = CONFIG.override(dataset="multi30k", vocab_size=30)
    bpe = [train_bpe([w], 30, tmp_path / f"bpe{i}.model") for i, w in enumerate(words)]
    a = save(tmp_path / "ckpt_0000001.pt", config=config, tokenizer=bpe[0])
    b = save(tmp_path / "ckpt_0000002.pt", config=config, tokenizer=bpe[1])
    exits_with_error(checkpoint_command.main, ["average", "--allow-different-runs", "--out",
                                       str(tmp_path / "avg.pt"), str(a), str(b)])
    says(error_line(capsys), str(b), "different tokenizer", str(a))


# --- a corrupt tokenizer cache, a missing GPU, empty or misaligned text ------------------------

@pytest.mark.slow
@pytest.mark.parametrize("damage", ["cut short", "cut where it still loads", "another model"])
def test_a_damaged_cached_tokenizer_is_removed_and_retrained(tmp_path, damage):
    """The cache holds each model's sha256: a model cut short (whether or not what is left
    still parses as a smaller model) or another model copied over it is never reused."""
    (tmp_path / "train.en").write_text("a dog runs\nthe cat sleeps\n" * 20)
    (tmp_path / "train.de").write_text("ein hund rennt\ndie katze schläft\n" * 20)
    files, logs = [tmp_path / "train.en", tmp_path / "train.de"], []
    first = load_or_train(files, 30, tmp_path / "cache", "toy", log=logs.append)
    [model] = (tmp_path / "cache").glob("toy-bpe30-*.model")
    other = train_bpe(files, 25, tmp_path / "other.model").to_bytes()
    model.write_bytes({"cut short": model.read_bytes()[:100],
                       "cut where it still loads": _loadable_prefix(model.read_bytes()),
                       "another model": other}[damage])
    again = load_or_train(files, 30, tmp_path / "cache", "toy", log=logs.append)
    says(next(line for line in logs if str(model) in line), "damaged", "training again")
    assert again.to_bytes() == first.to_bytes() == model.read_bytes()


def _loadable_prefix(model: bytes) -> bytes:
    """The longest proper prefix of a sentencepiece model that still loads as a model."""
    for end in range(len(model) - 1, 0, -1):
        try:
            tk.Tokenizer.from_bytes(model[:end])
            return model[:end]
        except ValueError:
            continue
    raise AssertionError("no prefix of the model loads")


def test_translate_on_cuda_without_a_gpu_says_cuda_is_not_available(translation, tmp_path,
                                                                    capsys, monkeypatch):
    ckpt, source, _, before = translation
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    exits_with_error(translate_main, ["--checkpoint", str(ckpt), "--input", str(source),
                                      "--device", "cuda"], code=2)       # a usage error
    says(capsys.readouterr().err.strip().splitlines()[-1], "--device", "device cuda", "CUDA",
         "not available", "use cpu")
    with pytest.raises(ValueError) as error:
        checkpoint_file.load_model(ckpt, map_location="cuda:0")
    says(error, "CUDA", "not available")
    assert snapshot(tmp_path) == before


def test_evaluate_on_two_empty_files_is_one_clear_error_line(tmp_path, capsys):
    (tmp_path / "hyp").write_text("")
    (tmp_path / "ref").write_text("")
    exits_with_error(evaluate_main, ["--hyp", str(tmp_path / "hyp"), "--ref",
                                     str(tmp_path / "ref")])
    says(error_line(capsys), str(tmp_path / "hyp"), str(tmp_path / "ref"), "empty")


def test_misaligned_corpus_fails_before_a_tokenizer_is_trained(tmp_path, monkeypatch):
    for stem in ("train", "newstest2013", "newstest2014"):
        for lang in ("en", "de"):
            (tmp_path / f"{stem}.{lang}").write_text("A line.\nAnother line.\n")
    (tmp_path / "newstest2014.de").write_text("Eine Zeile.\n")
    monkeypatch.setattr(data, "load_or_train", lambda *a: pytest.fail("trained a tokenizer"))
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as error:
        data.load_corpus(configs.get("base"), data_dir=tmp_path, cache_dir=tmp_path / "cache")
    says(error, "newstest2014.en has 2 lines", "newstest2014.de has 1")
    assert snapshot(tmp_path) == before


def test_a_soup_is_not_averaged_again_with_one_of_its_own_checkpoints(tmp_path, capsys):
    """The soup has a run id of its own; what it was made of is recorded by name and run."""
    a = save(tmp_path / "a" / "ckpt_0000005.pt", seed=1)
    b = save(tmp_path / "b" / "ckpt_0000005.pt", seed=2)
    soup = tmp_path / "soup.pt"
    checkpoint_command.main(["average", "--allow-different-runs", "--out", str(soup), str(a),
                             str(b)])
    exits_with_error(checkpoint_command.main, ["average", "--allow-different-runs", "--out",
                                               str(tmp_path / "again.pt"), str(soup), str(a)])
    says(error_line(capsys, alone=False), str(soup), "already an average", str(a), "twice")
    assert not (tmp_path / "again.pt").exists()


def test_average_refuses_models_trained_on_other_data_even_when_told(tmp_path, capsys):
    a = save(tmp_path / "a.pt", seed=1)
    b = save(tmp_path / "b.pt", seed=2, config=CONFIG.override(copy_len=5))
    exits_with_error(checkpoint_command.main, ["average", "--allow-different-runs", "--out",
                                               str(tmp_path / "avg.pt"), str(a), str(b)])
    says(error_line(capsys), str(b), "other data", "copy_len 5 vs", "leave one of them out")


def test_an_average_takes_the_newest_checkpoints_step_in_whatever_order_they_come(tmp_path):
    first, second, third = run_dir(tmp_path)
    made = [checkpoint_file.average(order)["step"] for order in
            ([first, second, third], [third, second, first], [second, third, first])]
    assert made == [3, 3, 3]


def test_a_folder_given_where_a_checkpoint_header_is_read_names_a_file_in_it(tmp_path):
    """The results scripts read a checkpoint's header before any weights."""
    first, second = run_dir(tmp_path, (1, 2))
    with pytest.raises(CheckpointError) as error:
        checkpoint_file.header(tmp_path)
    says(str(error.value), str(tmp_path), "a folder", "one checkpoint file", str(second))


def test_a_compressed_checkpoint_is_named_as_compressed_with_the_fix(tmp_path, capsys):
    import gzip
    path = save(tmp_path / "ckpt_0000001.pt")
    packed = tmp_path / "model.pt.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    exits_with_error(checkpoint_command.main, ["verify", str(packed)])
    says(error_line(capsys, alone=False), str(packed), "gzip-compressed", "decompress it first")


def test_a_checkpoint_out_named_as_compressed_is_refused(tmp_path, capsys):
    """The file would be a plain checkpoint under a .gz name."""
    path = save(tmp_path / "ckpt_0000001.pt")
    exits_with_error(checkpoint_command.main, ["half", str(path), "--out",
                                               str(tmp_path / "model.pt.gz")])
    says(error_line(capsys), "model.pt.gz", "gz-compressed", ".pt")
    assert not (tmp_path / "model.pt.gz").exists()
