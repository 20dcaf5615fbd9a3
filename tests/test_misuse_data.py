"""A hostile run folder and hostile data: links and pipes where the run keeps its own files, a
log of an earlier run, a run that diverges before it learned anything, data changed under a
resumed run, corpora that are not what their names say, caches that lie. Each probe checks
that nothing outside what the command owns is written, and that a refusal is one line.

(tests/test_misuse.py holds the number options, interruptions and the first run-folder
probes; tests/test_misuse_streams.py the outputs, inputs and checkpoints.)
"""
import gzip
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import says
import torch
from test_faults import error_line, exits_with_error, snapshot
from test_misuse import FILES, PAIRS, TINY_RUN, corpus, run, run_fails

from annotated import train
from annotated.base.errors import DataError
from annotated.configs import get, merged
from annotated.data import corpus as data
from annotated.data import prepare_wmt14
from annotated.data.corpus import load_corpus
from annotated.data.tokenizer import train_bpe
from annotated.store import checkpoint_file
from annotated.training import machine
from annotated.training.step import evaluate

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def copy_run(folder, *settings, steps=2):
    run(folder, "--config", "copy", "--max-steps", steps, *merged(TINY_RUN, list(settings)))


# --- what a run folder holds that is not the run's own -----------------------------------------

@pytest.mark.parametrize("name", [".lock", "metrics.jsonl"])
def test_a_run_file_that_is_a_link_is_refused_and_its_target_untouched(tmp_path, capsys, name):
    copy_run(tmp_path / "run")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    (tmp_path / "run" / name).unlink()
    (tmp_path / "run" / name).symlink_to(notes)
    run_fails(tmp_path / "run", "--resume", "--max-steps", 3)
    assert "link" in error_line(capsys, alone=False)
    assert notes.read_text() == "my notes\n"


@pytest.mark.parametrize("what", ["a file", "a broken link", "a loop of links",
                                  "a pipe as its lock"])
def test_a_run_folder_that_is_not_a_folder_says_what_it_is(tmp_path, capsys, what):
    folder = tmp_path / "run"
    if what == "a file":
        folder.write_text("not a folder\n")
    elif what == "a broken link":
        folder.symlink_to(tmp_path / "nowhere")
    elif what == "a loop of links":
        folder.symlink_to(folder)
    else:
        folder.mkdir()
        os.mkfifo(folder / ".lock")
    run_fails(folder, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    words = {"a file": "is a file, not a folder", "a broken link": "which does not exist",
             "a loop of links": "a loop of links", "a pipe as its lock": "it is not a file"}[what]
    assert words in error_line(capsys, alone=False)


def test_a_run_folder_that_cannot_be_made_names_where_it_failed(tmp_path, capsys):
    """Nothing can be made under /proc, whoever runs the test: the parent is named, not the
    lock file the run never got to."""
    run_fails(Path("/proc/annotated-none/run"), "--config", "copy", "--max-steps", 1, *TINY_RUN)
    line = error_line(capsys, alone=False)
    says(line, "/proc/annotated-none", "--run-dir")
    assert ".lock" not in line


def test_things_named_like_checkpoints_that_are_not_files_are_not_checkpoints(tmp_path):
    copy_run(tmp_path)
    (tmp_path / "ckpt_0000009.pt").mkdir()
    os.mkfifo(tmp_path / "ckpt_0000010.pt")         # reading it would wait for ever
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000002.pt"]
    run(tmp_path, "--resume", "--max-steps", 3)
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000002.pt",
                                                                   "ckpt_0000003.pt"]


def test_max_steps_past_the_planned_length_is_done_with_a_note(tmp_path, capsys):
    run(tmp_path / "run", "--config", "copy", "--max-steps", 3,
        *merged(TINY_RUN, ["train_steps=2"]))
    says(next(line for line in capsys.readouterr().out.splitlines() if "note:" in line),
         "--max-steps 3", "train_steps=2", "--max-minutes")
    assert checkpoint_file.checkpoints(tmp_path / "run")[-1].name == "ckpt_0000003.pt"


def test_a_run_refused_before_its_first_file_leaves_no_run_folder(tmp_path, capsys):
    """A setting refused once the run folder is locked (fp16 on a CPU) leaves no folder holding
    only the lock; a folder that was there stays."""
    run_fails(tmp_path / "new", "--config", "copy", "--max-steps", 1, *TINY_RUN, "amp=fp16")
    says(error_line(capsys, alone=False), "amp=fp16", "GPU")
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    run_fails(tmp_path / "mine", "--config", "copy", "--max-steps", 1, *TINY_RUN, "amp=fp16")
    assert (tmp_path / "mine").is_dir()


def test_a_renamed_checkpoint_is_refused_by_average_last_and_named_by_verify(tmp_path, capsys):
    """--last N takes the newest checkpoints by name: a checkpoint renamed to a later step
    would be averaged in place of the newest. Average refuses the folder, as resume does, and
    verify names the file, by itself or in its folder."""
    from annotated import checkpoint as checkpoint_command
    copy_run(tmp_path / "run", "ckpt_every=1", steps=3)
    (tmp_path / "run" / "ckpt_0000002.pt").rename(tmp_path / "run" / "ckpt_0000009.pt")
    exits_with_error(checkpoint_command.main, ["average", "--last", "1", str(tmp_path / "run"),
                                               "--out", str(tmp_path / "average.pt")])
    says(error_line(capsys), "ckpt_0000009.pt", "step 2", "renamed", "ckpt_0000002.pt")
    assert not (tmp_path / "average.pt").exists()
    for given in (tmp_path / "run", tmp_path / "run" / "ckpt_0000009.pt"):
        exits_with_error(checkpoint_command.main, ["verify", str(given)])
        says(error_line(capsys, alone=False), "ckpt_0000009.pt", "step 2", "renamed")


def test_a_misnamed_checkpoint_is_never_advised_onto_a_name_that_exists(tmp_path, capsys):
    """An average copied in under a checkpoint's name is named as an average; a copy of a
    checkpoint whose own name is taken is to be moved out, not renamed over the original."""
    from annotated import checkpoint as checkpoint_command
    copy_run(tmp_path / "run", "ckpt_every=1", steps=3)
    checkpoint_command.main(["average", "--last", "2", str(tmp_path / "run"),
                             "--out", str(tmp_path / "average.pt")])
    shutil.copy(tmp_path / "average.pt", tmp_path / "run" / "ckpt_0000009.pt")
    run_fails(tmp_path / "run", "--resume", "--max-steps", 12)
    says(error_line(capsys, alone=False), "ckpt_0000009.pt", "an average", "move it out")
    shutil.copy(tmp_path / "run" / "ckpt_0000003.pt", tmp_path / "run" / "ckpt_0000009.pt")
    run_fails(tmp_path / "run", "--resume", "--max-steps", 12)
    line = says(error_line(capsys, alone=False), "ckpt_0000009.pt", "ckpt_0000003.pt", "move")
    assert "Give it its own name" not in line


def test_a_checkpoint_of_another_run_is_named_as_such_whatever_its_name(tmp_path, capsys):
    """Another run's checkpoint copied in under a step of this run's names is another run's,
    not a renamed one: the advice to rename it would mix the two runs."""
    copy_run(tmp_path / "run", steps=2)
    copy_run(tmp_path / "other", "seed=7", steps=3)
    shutil.copy(tmp_path / "other" / "ckpt_0000003.pt", tmp_path / "run" / "ckpt_0000008.pt")
    run_fails(tmp_path / "run", "--resume", "--max-steps", 9)
    line = says(error_line(capsys, alone=False), str(tmp_path / "run"), "2 different runs",
                "move")
    assert "renamed" not in line


def test_a_folder_under_the_name_of_a_checkpoint_to_save_is_refused_before_training(
        tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ckpt_0000004.pt").mkdir()
    run_fails(tmp_path / "run", "--config", "copy", "--max-steps", 4,
              *merged(TINY_RUN, ["ckpt_every=2"]))
    says(error_line(capsys, alone=False), str(tmp_path / "run" / "ckpt_0000004.pt"), "a folder",
         "step 4", "move it away", "--run-dir")
    assert checkpoint_file.checkpoints(tmp_path / "run") == []          # not after 2 steps


def test_a_read_only_metrics_log_is_refused_before_training(tmp_path, capsys, monkeypatch):
    """Root may write a read-only file, so os.access is told what it tells any other user."""
    copy_run(tmp_path)
    metrics = tmp_path / "metrics.jsonl"
    metrics.chmod(0o444)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: (
        False if Path(p) == metrics and mode & os.W_OK else real(p, mode, **k)))
    run_fails(tmp_path, "--resume", "--max-steps", 4)
    says(error_line(capsys, alone=False), str(metrics), "read-only", "chmod u+w", "--run-dir")
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000002.pt"]


@pytest.mark.parametrize("run_dir", ["results", "results/new", ".", "link"])
def test_a_run_folder_among_committed_files_is_refused(tmp_path, capsys, run_dir):
    """A git repository with results/ committed: training there (or through a link to it)
    would put checkpoints and logs among the committed files; runs/ does not hold any."""
    repo = tmp_path / "repo"
    (repo / "results").mkdir(parents=True)
    (repo / "results" / "table.json").write_text("{}\n")
    (tmp_path / "link").symlink_to(repo / "results")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "results/table.json"], check=True)
    folder = tmp_path / "link" if run_dir == "link" else repo / run_dir
    before = snapshot(repo / "results")
    run_fails(folder, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    says(error_line(capsys, alone=False), str(folder), "committed", str(repo),
         "results/table.json", "--run-dir")
    assert snapshot(repo / "results") == before
    copy_run(repo / "runs" / "a", steps=1)
    assert checkpoint_file.checkpoints(repo / "runs" / "a")


def test_a_fresh_run_keeps_the_log_of_an_earlier_run_it_finds(tmp_path, capsys):
    copy_run(tmp_path)
    earlier = (tmp_path / "metrics.jsonl").read_text()
    for p in checkpoint_file.checkpoints(tmp_path):
        p.unlink()
    copy_run(tmp_path, "seed=7", steps=1)
    assert "kept as metrics.earlier-1.jsonl" in capsys.readouterr().out
    assert (tmp_path / "metrics.earlier-1.jsonl").read_text() == earlier


def test_an_old_checkpoint_that_cannot_be_deleted_does_not_stop_training(tmp_path,
                                                                         monkeypatch, capsys):
    """One note line on stderr, not Python's warning with its source line."""
    import warnings
    real_unlink = Path.unlink

    def stuck(self, missing_ok=False):
        if self.name == "ckpt_0000001.pt":
            raise PermissionError(1, "Operation not permitted", str(self))
        real_unlink(self, missing_ok=missing_ok)
    monkeypatch.setattr(Path, "unlink", stuck)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        copy_run(tmp_path, "ckpt_every=1", "keep_last=1", steps=3)
    notes = [line for line in capsys.readouterr().err.splitlines() if "could not delete" in line]
    says(notes[0], "note", "ckpt_0000001.pt", "Operation not permitted", "training goes on")
    assert (tmp_path / "ckpt_0000003.pt").is_file()


# --- settings that cannot mean what they say ----------------------------------------------------

def test_steps_past_a_cooldown_are_refused(tmp_path, capsys):
    run_fails(tmp_path, "--config", "copy", "--max-steps", 8, *TINY_RUN, "train_steps=4",
              "cooldown_steps=2")
    says(error_line(capsys), "--max-steps 8", "train_steps=4", "cooldown", "raise train_steps")
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_value_pasted_by_mistake_is_not_echoed_whole(tmp_path, capsys):
    exits_with_error(train.main, ["--config", "copy", "--run-dir", str(tmp_path),
                                  "N=" + "9" * 100_000])
    assert len(error_line(capsys)) < 300


def test_a_batch_whose_activations_alone_fill_the_memory_is_refused(tmp_path, capsys,
                                                                    monkeypatch):
    """The weights of a tiny model fit; the activations one batch keeps for the backward pass
    do not, and the kernel would kill the run without a word. The fix named first is the
    batch's size. (The output layer's scores are computed a chunk at a time: with a huge
    vocabulary they are not what fills memory.)"""
    monkeypatch.setattr(machine, "available_memory", lambda device: (400_000, "this machine"))
    run_fails(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    says(error_line(capsys, alone=False), "activations", "300 tokens", "lower max_tokens")


# --- divergence: what "last good" means ---------------------------------------------------------

def valid_loss(path) -> float:
    model, config, _ = checkpoint_file.load_model(path)
    return evaluate(model, load_corpus(config, log=lambda *_: None).valid, config,
                    torch.device("cpu"))["loss"]


def test_a_run_that_diverges_before_it_learns_names_no_worse_than_a_guess_as_good(tmp_path,
                                                                                  capsys):
    """A learning rate far too high from the first step: the loss climbs above a uniform
    guess's (ln 11) without one big jump. A checkpoint is good only once the loss after it
    is below that guess, so the one named is no worse than guessing; and a resume of the
    diverged folder names the same one."""
    with pytest.raises(SystemExit):
        copy_run(tmp_path, "lr_factor=300", "ckpt_every=1", "keep_last=2", steps=300)
    err = capsys.readouterr().err
    named = err.split("Last good checkpoint: ")[1].split(";")[0].split(".pt")[0]
    if named != "none known":
        assert valid_loss(named + ".pt") < math.log(11) + 0.1
    with pytest.raises(SystemExit):
        run(tmp_path, "--resume", "--max-steps", 300)
    says(capsys.readouterr().err.splitlines()[-1], "Last good checkpoint", named)


# --- the data under a resumed run ---------------------------------------------------------------

def files_run(folder, location, *settings, steps=2):
    run(folder, "--config", "copy", "--data-dir", location, "--cache-dir",
        folder.parent / "cache", "--max-steps", steps, *merged(FILES, list(settings)))


@pytest.mark.parametrize("split", ["train", "valid"])
def test_a_resume_on_changed_data_is_refused(tmp_path, capsys, split):
    """Two target lines swapped: the vocabulary is the same, the pairs are not."""
    location = corpus(tmp_path / "data", PAIRS)
    files_run(tmp_path / "run", location)
    lines = (location / f"{split}.fr").read_text().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]
    (location / f"{split}.fr").write_text("".join(lines))
    run_fails(tmp_path / "run", "--resume", "--max-steps", 3)
    says(error_line(capsys, alone=False), f"{split} pairs", "differ", str(tmp_path / "run"))


def test_a_resume_on_an_edited_training_line_names_the_training_files(tmp_path, capsys):
    """A training sentence replaced: the tokenizer built from the files differs (other words),
    and the refusal names the training files, not a tokenizer the user never touched."""
    location = corpus(tmp_path / "data", PAIRS)
    files_run(tmp_path / "run", location)
    lines = (location / "train.en").read_text().splitlines(keepends=True)
    lines[0] = "Zebras quickly juggle xylophones near quiet vivid jetties.\n"
    (location / "train.en").write_text("".join(lines))
    run_fails(tmp_path / "run", "--resume", "--max-steps", 3)
    says(error_line(capsys, alone=False), "train.*", "edited", str(tmp_path / "run"))


def test_a_resume_whose_saved_data_location_moved_says_where_it_came_from(tmp_path, capsys):
    location = corpus(tmp_path / "data", PAIRS)
    files_run(tmp_path / "run", location)
    location.rename(tmp_path / "moved")
    run_fails(tmp_path / "run", "--resume", "--max-steps", 3)
    says(error_line(capsys, alone=False), str(location), "saved", "--data-dir")
    run(tmp_path / "run", "--resume", "--max-steps", 3, "--data-dir", tmp_path / "moved")
    says(next(line for line in capsys.readouterr().out.splitlines() if "note:" in line),
         str(tmp_path / "moved"), str(location))          # read from here, not from there


def test_a_resume_given_another_corpus_names_the_folder_it_read_before(tmp_path, capsys):
    """--data-dir pointing at another corpus, not a moved one: the refusal says the folder
    given is not the run's, and names that one, not only that a file was edited."""
    location = corpus(tmp_path / "data", PAIRS)
    files_run(tmp_path / "run", location)
    other = corpus(tmp_path / "other", PAIRS)
    (other / "train.en").write_text((other / "train.en").read_text().replace("a", "ä"))
    run_fails(tmp_path / "run", "--resume", "--max-steps", 3, "--data-dir", other)
    says(error_line(capsys, alone=False), f"--data-dir {other} is not {location}",
         "where this run read its data")


# --- corpora that are not what they say -------------------------------------------------------

@pytest.mark.parametrize("case,names", [
    ("both plain and gzip", ("train.en", "train.en.gz", "keep one")),
    ("the same text both sides", ("train.en", "train.fr", "same text")),
    ("a symlink loop", ("Symlink loop",)),
    ("no such user", ("no such user",)),
    ("a corpus file that is a folder", ("train.en", "a folder")),
    ("a corpus file that is a loop of links", ("train.fr", "loop")),
    ("a corpus file that links to a device", ("train.fr", "not a regular file")),
    ("two validation pairs", ("valid.en/valid.fr", "dev.en/dev.fr", "valid", "keep one")),
    ("a file of NUL bytes", ("train.fr", "NUL bytes", "not a text file")),
])
def test_a_data_location_that_cannot_be_read_as_one_corpus_is_one_line(tmp_path, capsys,
                                                                      monkeypatch, case,
                                                                      names):
    location = corpus(tmp_path / "data", PAIRS)
    if case == "both plain and gzip":
        (location / "train.en.gz").write_bytes(gzip.compress((location / "train.en")
                                                             .read_bytes(), mtime=0))
    elif case == "the same text both sides":
        shutil.copy(location / "train.en", location / "train.fr")
    elif case == "a symlink loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        location = tmp_path / "a"
    elif case == "no such user":
        monkeypatch.setenv(data.DATA_ENV, "~nosuchuser/data")
        location = None
    elif case == "a corpus file that is a folder":
        (location / "train.en").unlink()
        (location / "train.en").mkdir()
    elif case == "a corpus file that links to a device":
        (location / "train.fr").unlink()
        (location / "train.fr").symlink_to("/dev/null")
    elif case == "two validation pairs":
        for lang in ("en", "fr"):
            shutil.copy(location / f"valid.{lang}", location / f"dev.{lang}")
    elif case == "a file of NUL bytes":
        (location / "train.fr").write_bytes(b"\0" * 20_000)
    else:
        (location / "train.fr").unlink()
        (location / "train.fr").symlink_to(location / "train.fr")
    run_fails(tmp_path / "run", "--config", "copy", "--cache-dir", tmp_path / "cache",
              *(["--data-dir", location] if location else []), *FILES)
    says(error_line(capsys, alone=False), *names)


# Sides that carry no text: the tokenizer turns each into no token, or into UNK and word
# boundaries only; a control character inside a sentence is not such a side. (A NUL byte is
# never text: the file holding it is refused, test_a_nul_byte_anywhere_refuses_its_file.)
NO_TEXT = ["\x07\x1b\x7f", "\x7f" * 64, "   \t ", "\u200b", "\ufeff\u2060", "\u200d \x1b"]


def test_a_side_that_encodes_to_no_token_is_dropped_and_counted_in_every_split(tmp_path):
    """The tokenizer's ids decide: a side of control characters, whitespace or zero-width
    characters is dropped with its pair, from test too
    (its raw text with it), and the log counts them by reason."""
    pairs = [*PAIRS[:40], *[(side, f"le chat {i}") for i, side in enumerate(NO_TEXT)],
             ("the cat\x07 sits", NO_TEXT[1]), ("a\x07 cat", "un\x07 chat")]
    location = corpus(tmp_path / "data", pairs)
    for split in ("valid", "test"):
        for side, lang in enumerate(("en", "fr")):
            text = "".join(pair[side] + "\n" for pair in [*PAIRS[:3], *pairs[40:]])
            (location / f"{split}.{lang}").write_text(text, encoding="utf-8")
    logs = []
    config = get("copy").override(**dict(item.split("=") for item in FILES[:3]), vocab_size=60)
    found = load_corpus(config, data_dir=location, cache_dir=tmp_path / "cache", log=logs.append)
    dropped = len(NO_TEXT) + 1
    for split, kept in (("train", 41), ("valid", 4), ("test", 4)):
        assert (found.stats[split]["empty"], found.stats[split]["kept"]) == (dropped, kept)
        line = next(line for line in logs if line.startswith(f"files {split}:"))
        says(line, f"{dropped} with a side that encodes to no token dropped")
    assert found.test_src == [*(s for s, _ in PAIRS[:3]), "a\x07 cat"]
    assert found.test_ref == [*(t for _, t in PAIRS[:3]), "un\x07 chat"]


@pytest.mark.parametrize("damage", ["\x00" * 64 + "Le chat.", "Le\x00 chat.", "\x00" * 8192])
def test_a_nul_byte_anywhere_refuses_its_file(tmp_path, capsys, damage):
    """Text never holds a NUL byte; a crash leaves runs of them, at a file's end or in a hole in
    its middle: the file is refused, named with the line, before any tokenizer is trained."""
    location = corpus(tmp_path / "data", PAIRS)
    lines = (location / "train.fr").read_text(encoding="utf-8").split("\n")
    lines[7] = damage
    (location / "train.fr").write_text("\n".join(lines), encoding="utf-8")
    run_fails(tmp_path / "run", "--config", "copy", "--cache-dir", tmp_path / "cache",
              "--data-dir", location, *FILES)
    says(error_line(capsys, alone=False), "train.fr", "line 8", "NUL bytes", "write it again")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.model"))


def test_a_split_whose_every_pair_has_a_side_without_text_is_one_line(tmp_path):
    pairs = [(side, f"le chat {i}") for i, side in enumerate(NO_TEXT * 5)]
    location = corpus(tmp_path / "data", PAIRS[:40], valid_pairs=pairs)
    config = get("copy").override(**dict(item.split("=") for item in FILES[:3]), vocab_size=60)
    with pytest.raises(DataError) as error:
        load_corpus(config, data_dir=location, cache_dir=tmp_path / "cache", log=lambda _: None)
    says(error, location / "valid.en", location / "valid.fr", "no sentence pair",
         "encodes to no token", "check the files")


@pytest.mark.parametrize("where", ["cache", "cache/tokenizers"])
def test_a_file_where_the_cache_needs_a_folder_is_refused_before_any_tokenizer_is_trained(
        tmp_path, where):
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text("a file\n")
    with pytest.raises(DataError) as error:
        data.cache_folder(tmp_path / "cache")
    says(error, "cannot hold", str(where), "a file")


def test_a_multi30k_folder_that_lacks_a_file_names_it_and_plain_copies(tmp_path):
    folder = tmp_path / "multi30k"
    folder.mkdir()
    for stem in data.MULTI30K_SPLITS.values():
        for lang in ("en", "de"):
            (folder / f"{stem}.{lang}.gz").write_bytes(b"")
    (folder / "val.de.gz").unlink()
    (folder / "val.de").write_text("plain\n")
    (folder / "train.de.gz").unlink()
    (folder / "train.de.gz").symlink_to(tmp_path / "gone.gz")
    with pytest.raises(FileNotFoundError) as error:
        load_corpus(get("multi30k"), data_dir=tmp_path, cache_dir=tmp_path / "cache")
    says(error, "train.de.gz", "broken link", "val.de.gz", "val.de", "gzip it")


def test_sentencepiece_s_advice_to_use_its_own_options_is_not_passed_on(tmp_path):
    with pytest.raises(DataError) as error:
        sentences = ["".join(chr(0x4E00 + i) for i in range(k, k + 30))
                     for k in range(0, 600, 30)]
        train_bpe([sentences], 40, tmp_path / "m.model")
    assert "--character_coverage" not in says(error, "vocab_size")


def test_a_run_whose_test_sentences_are_all_long_still_shows_some(tmp_path, capsys):
    copy_run(tmp_path, "copy_len=40", "max_sentence_len=64", "max_tokens=2000", steps=1)
    assert "The model at work on 3 sentences of the test set" in capsys.readouterr().out


# --- preparing WMT14 next to a user's files ------------------------------------------------------

def test_preparing_wmt14_never_writes_over_a_user_s_corpus(tmp_path, capsys):
    (tmp_path / "train.en").write_text("my own corpus\n")
    exits_with_error(prepare_wmt14.main, ["--out-dir", str(tmp_path)])
    says(error_line(capsys), "train.en", "not written")
    assert (tmp_path / "train.en").read_text() == "my own corpus\n"


def test_a_damaged_wmt14_archive_is_one_line_saying_to_delete_it(tmp_path):
    (tmp_path / "bad.tgz").write_bytes(b"not an archive")
    with pytest.raises(DataError) as error:
        prepare_wmt14.extract(tmp_path / "bad.tgz", ["x"], tmp_path)
    says(error, "bad.tgz", "not a complete", "delete it")


def test_prepare_wmt14_with_a_file_as_its_folder_is_one_line(tmp_path, capsys):
    (tmp_path / "out").write_text("a file\n")
    exits_with_error(prepare_wmt14.main, ["--out-dir", str(tmp_path / "out")])
    says(error_line(capsys), str(tmp_path / "out"), "a file", "folder")


# --- a trainer with its standard streams closed -------------------------------------------------

@pytest.mark.slow
def test_training_goes_on_with_stderr_closed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "annotated.train", "--config", "copy",
                           "--run-dir", str(tmp_path), "--max-steps", "2", *TINY_RUN],
                          capture_output=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "OMP_NUM_THREADS": "1"},
                          preexec_fn=lambda: os.close(2))
    assert done.returncode == 0 and (tmp_path / "ckpt_0000002.pt").is_file(), done.stdout


def test_a_validation_or_test_split_copied_from_train_is_warned_about(tmp_path):
    location = corpus(tmp_path / "data", PAIRS[:40])
    for lang in ("en", "fr"):
        shutil.copy(location / f"train.{lang}", location / f"test.{lang}")
    logs = []
    config = get("copy").override(**dict(item.split("=") for item in FILES[:3]), vocab_size=60)
    load_corpus(config, data_dir=location, cache_dir=tmp_path / "cache", log=logs.append)
    warned = [line for line in logs if line.startswith("warning") and "test.en" in line]
    assert len(warned) == 1, logs
    says(warned[0], "test.en", "test.fr", "training pairs", "memory")


def test_a_training_corpus_copied_onto_itself_is_warned_about(tmp_path):
    location = corpus(tmp_path / "data", PAIRS[:40])
    for lang in ("en", "fr"):
        text = (location / f"train.{lang}").read_text(encoding="utf-8")
        (location / f"train.{lang}").write_text(text * 3, encoding="utf-8")
    logs = []
    config = get("copy").override(**dict(item.split("=") for item in FILES[:3]), vocab_size=60)
    load_corpus(config, data_dir=location, cache_dir=tmp_path / "cache", log=logs.append)
    says(next(line for line in logs if "repeat" in line), "train.en", "80 of the 120",
         "check the files")


def test_a_data_location_from_the_environment_on_resume_names_the_runs_own(tmp_path, capsys,
                                                                           monkeypatch):
    """ANNOTATED_DATA_DIR set in the shell, pointing elsewhere: the fix is to unset it or to
    give the run's own location, not to add files to the other corpus."""
    mine = corpus(tmp_path / "mine", PAIRS)
    run(tmp_path / "run", "--config", "sample", "--data-dir", mine, "--max-steps", 1, *FILES)
    (tmp_path / "other").mkdir()
    monkeypatch.setenv("ANNOTATED_DATA_DIR", str(tmp_path / "other"))
    capsys.readouterr()
    run_fails(tmp_path / "run", "--resume", "--max-steps", 2)
    says(error_line(capsys), "ANNOTATED_DATA_DIR", f"--data-dir {mine}", "unset")
