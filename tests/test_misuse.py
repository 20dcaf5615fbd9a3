"""A tired user and a hostile file: every command refuses what means nothing in one line, and
never loses, replaces or mixes up what the user had.

The probes come in families: every number option of every command (NaN, infinite, negative,
zero, huge); data files (empty, all too long, a byte-order mark, Windows line ends, tiny);
interruption (Ctrl-C, a reader that stops reading, closed or full standard streams, a killed
write); and what a run folder, an output path or a site folder may hold that is not the
command's own.
"""
import errno
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path

import pytest
from conftest import says
import torch
from test_faults import error_line, exits_with_error, save, snapshot

import annotated.base.files as files
from annotated import checkpoint as checkpoint_command
from annotated import configs, evaluate, train, translate
from annotated.base.errors import DataError
from annotated.configs import merged
from annotated.data import prepare_wmt14
from annotated.inference.bleu import report, tokenizer_for
from annotated.data.corpus import load_corpus
from annotated.model import EncoderDecoder
from annotated.store import checkpoint_file
from annotated.training import machine
from annotated.training.run_dir import read_metrics, rotate
from benchmarks import decode_speed, gpu_train, train_throughput
from experiments import (multi30k, multi30k_budget, multi30k_metric, multi30k_paired,
                         multi30k_sweep, pretrained, table3_small)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "annotated" / "pretrained" / "multi30k_en_de.pt"
TINY_RUN = ["copy_examples=200", "max_tokens=300", "N=1", "d_model=16", "d_ff=32", "h=2",
            "d_k=8", "d_v=8", "log_every=1", "eval_every=1000", "ckpt_every=1000"]
HUGE = "1" + "0" * 30

# (command, the arguments before the one probed, option, the values it must refuse)
NUMBER_OPTIONS = [
    (train.main, ["--config", "copy"], "--max-steps", ["0", "-3", "nan", "1.5"]),
    (train.main, ["--config", "copy"], "--max-minutes", ["nan", "inf", "-1", "0"]),
    (train.main, ["--config", "copy"], "--threads", ["0", "-1", HUGE, "nan"]),
    (translate.main, ["--checkpoint", str(SHIPPED)], "--beam-size", ["0", "nan", HUGE]),
    (translate.main, ["--checkpoint", str(SHIPPED)], "--alpha", ["nan", "inf", "-1", "400"]),
    (translate.main, ["--checkpoint", str(SHIPPED)], "--max-extra", ["-1", "1000000000"]),
    (translate.main, ["--checkpoint", str(SHIPPED)], "--batch-tokens", ["0", "-5", HUGE]),
    (checkpoint_command.main, ["average", "--out", "x.pt", "runs"], "--last", ["0", "-1", "nan"]),
    (multi30k.main, [], "--max-minutes", ["nan", "inf", "-1", "0"]),
    (multi30k.main, [], "--nproc", ["0", "nan"]),
    (multi30k.main, [], "--average", ["0", "-2"]),
    (multi30k.main, [], "--beam-size", ["0", HUGE]),
    (multi30k.main, [], "--alpha", ["nan", "-0.5", "inf"]),
    (multi30k.main, [], "--limit", ["0", "2"]),
    (multi30k_sweep.main, [], "--max-minutes", ["nan", "-1"]),
    (multi30k_sweep.main, [], "--limit", ["0"]),
    (multi30k_budget.main, [], "--limit", ["0", "nan"]),
    (table3_small.main, [], "--steps", ["0", "nan"]),
    (table3_small.main, [], "--seeds", ["0"]),
    (pretrained.main, [str(SHIPPED)], "--alpha", ["nan", "-1"]),
    (pretrained.main, [str(SHIPPED)], "--limit", ["0", "3"]),
    (multi30k_metric.main, ["--checkpoint", str(SHIPPED)], "--alpha", ["inf"]),
    (multi30k_paired.main, [], "--limit", ["0"]),
    (train_throughput.main, [], "--threads", ["0", "nan"]),
    (train_throughput.main, [], "--repeats", ["0"]),
    (decode_speed.main, [], "--sentences", ["0"]),
    (decode_speed.main, [], "--max-extra", ["-1", HUGE]),
    (gpu_train.main, ["--device", "cpu"], "--tokens", ["0", "nan"]),
    (gpu_train.main, ["--device", "cpu"], "--repeats", ["1"]),
    (configs.main, [], "--vocab", ["nan", "0", HUGE]),
]


@pytest.mark.parametrize("main,before,option,values", NUMBER_OPTIONS,
                         ids=[f"{m.__module__}{o}" for m, _, o, _ in NUMBER_OPTIONS])
def test_every_number_option_refuses_what_means_nothing_in_one_line(main, before, option,
                                                                    values, capsys):
    for value in values:
        with pytest.raises(SystemExit) as exit_:
            main([*before, f"{option}={value}"])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and "Traceback" not in err, (value, err)
        last = err.splitlines()[-1]
        assert f"error: argument {option}: " in last and re.search("must be|expected|allowed",
                                                                   last), err


def test_an_unknown_preset_given_to_a_benchmark_is_a_usage_error(capsys):
    from benchmarks import padding
    with pytest.raises(SystemExit) as exit_:
        padding.main(["--config", "nope"])
    assert exit_.value.code == 2
    says(capsys.readouterr().err.strip().splitlines()[-1], "--config", "'nope'", "multi30k")


@pytest.mark.parametrize("main,argv,named", [
    (train.main, ["--config", "copy", "--max-steps", "2", "--max-steps=3"], "--max-steps"),
    (translate.main, ["--checkpoint", "a.pt", "--greedy", "--greedy"], "--greedy"),
    (checkpoint_command.main, ["average", "--last", "1", "--out", "a.pt", "--out", "b.pt", "r"],
     "--out"),
    (multi30k_paired.main, ["--system", "a", "a.pt", "4", "0.6", "--system", "b", "b.pt", "4",
                            "0.6", "--limit", "3", "--limit", "4"], "--limit")])
def test_an_option_given_twice_is_refused_not_the_last_one_kept(main, argv, named, capsys):
    """argparse keeps the last of two values without a word; every command refuses instead
    (a repeatable option such as --system still repeats)."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    says(capsys.readouterr().err.splitlines()[-1], named, "given twice", "once")


@pytest.mark.parametrize("main,argv,option,value", [
    (train.main, ["--config", "copy", "--run-dir", "-x"], "--run-dir", "-x"),
    (translate.main, ["--checkpoint", "a.pt", "--out", "-y.de"], "--out", "-y.de")])
def test_a_value_starting_with_a_dash_is_told_how_to_give_it(main, argv, option, value,
                                                             capsys):
    """argparse says "expected one argument" of `--run-dir -x`: the line says -x was read as
    an option, and the form that gives it as a value."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    says(capsys.readouterr().err.splitlines()[-1], f"'{value}' was read as an option",
         f"{option}={value}")


@pytest.mark.parametrize("main,argv,named", [
    (train.main, ["--bogus"], "--bogus"),
    (checkpoint_command.main, ["average", "run"], "--out"),
    (evaluate.main, ["--hyp", "h"], "--ref")])
def test_a_mistake_in_the_command_line_is_one_line_with_where_to_read_the_usage(
        main, argv, named, capsys):
    """No usage block above it: the mistake is the one line, with --help named."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    says(err, named, "error:", "--help")


@pytest.mark.parametrize("item", ["P_drop=nan", "lr_factor=inf", "alpha=inf", "N=1000000",
                                  "seed=" + HUGE, "max_extra=1000000000", "beam_size=0",
                                  "d_model=" + HUGE, "P_drop=0.1 P_drop=0.2",
                                  "copy_examples=100000000",
                                  "copy_examples=1000000 copy_len=1000"])
def test_every_key_value_setting_refuses_what_means_nothing_before_any_work(item, tmp_path,
                                                                           capsys):
    exits_with_error(train.main, ["--config", "copy", "--run-dir", str(tmp_path / "run"),
                                  *item.split(" ")])
    assert error_line(capsys).startswith(("error: config: ", "error: P_drop is given twice"))
    assert not (tmp_path / "run").exists()


# --- the run folder belongs to one run --------------------------------------------------------

def run(out, *args):
    train.main(["--run-dir", str(out), "--threads", "1", *map(str, args)])


def run_fails(out, *args):
    """run(), which must end with exit code 1."""
    exits_with_error(lambda argv: run(*argv), [out, *args])


def test_a_checkpoint_of_another_run_in_a_run_folder_is_refused_and_nothing_is_deleted(
        tmp_path, capsys):
    """A newer checkpoint of another run, of the same config, copied into a run folder: the
    same command, and --resume, refuse to continue either run; nothing is deleted."""
    run(tmp_path / "mine", "--config", "copy", "--max-steps", 2,
        *merged(TINY_RUN, ["ckpt_every=1"]))
    run(tmp_path / "other", "--config", "copy", "--max-steps", 5,
        *merged(TINY_RUN, ["seed=7", "ckpt_every=5"]))
    shutil.copy(tmp_path / "other" / "ckpt_0000005.pt", tmp_path / "mine")
    before = snapshot(tmp_path / "mine")
    for extra in ([], ["--resume"]):
        args = extra or ["--config", "copy", *merged(TINY_RUN, ["ckpt_every=1"])]
        run_fails(tmp_path / "mine", "--max-steps", 9, *args)
        says(error_line(capsys, alone=False), "2 different runs", "ckpt_0000001.pt",
             "ckpt_0000002.pt", "ckpt_0000005.pt", "move")
        assert snapshot(tmp_path / "mine") == before


@pytest.mark.parametrize("foreign", [[1, 2, 3], {"w": torch.zeros(2)}],
                         ids=["a-list", "weights-alone"])
def test_a_torch_file_that_is_no_checkpoint_in_a_run_folder_is_one_line_everywhere(
        tmp_path, capsys, foreign):
    """Another program's torch file under a checkpoint's name, newer than the run's own: each
    command that scans the folder names it and what to do, and nothing is deleted."""
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    torch.save(foreign, tmp_path / "ckpt_0009999.pt")
    before = snapshot(tmp_path)
    commands = [(run_fails, [tmp_path, "--max-steps", 9, "--resume"]),
                (run_fails, [tmp_path, "--max-steps", 9, "--config", "copy", *TINY_RUN])]
    for command, argv in commands:
        command(*argv)
        says(error_line(capsys), "ckpt_0009999.pt", "not an annotated-transformer checkpoint",
             "move it out", "ckpt_0000002.pt")
    for argv in (["average", "--last", "2", str(tmp_path), "--out", str(tmp_path / "a.pt")],
                 ["verify", str(tmp_path)]):
        exits_with_error(checkpoint_command.main, argv)
        says(error_line(capsys, alone=False), "ckpt_0009999.pt",
             "not an annotated-transformer checkpoint", "ckpt_0000002.pt")
    assert snapshot(tmp_path) == before


def test_rotation_never_deletes_a_checkpoint_of_another_run(tmp_path):
    ours = [save(tmp_path / checkpoint_file.checkpoint_name(s), step=s, run_id="a" * 16)
            for s in (1, 2, 3)]
    theirs = save(tmp_path / checkpoint_file.checkpoint_name(9), step=9, run_id="b" * 16)
    assert rotate(tmp_path, 1, run_id="a" * 16) == ours[:2]
    assert checkpoint_file.checkpoints(tmp_path) == [ours[2], theirs]


def test_a_renamed_checkpoint_is_not_resumed_from_the_step_inside_it(tmp_path, capsys):
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    (tmp_path / "ckpt_0000002.pt").rename(tmp_path / "ckpt_0000100.pt")
    run_fails(tmp_path, "--resume", "--max-steps", 200)
    says(error_line(capsys), "ckpt_0000100.pt", "step 2", "ckpt_0000002.pt")


def test_a_hand_edited_metrics_line_is_refused_on_resume_and_by_the_results_scripts(
        tmp_path, capsys):
    """Lines the trainer did not write, before the last: an edit, not a crash. The resume and
    the results scripts name the first one alike; with the lines deleted, the run goes on."""
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    good = (tmp_path / "metrics.jsonl").read_text()
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"note": "looked good"}\n[1, 2]\n')
    with pytest.raises(Exception) as error:
        read_metrics(tmp_path)
    says(error, "metrics.jsonl", "line 4", "metrics line")
    with pytest.raises(SystemExit):
        run(tmp_path, "--resume", "--max-steps", 3)
    says(error_line(capsys), "metrics.jsonl", "line 4", "metrics line", "delete the line")
    (tmp_path / "metrics.jsonl").write_text(good)
    run(tmp_path, "--resume", "--max-steps", 3)
    assert [m["step"] for m in read_metrics(tmp_path, "train")] == [1, 2, 3]


@pytest.mark.parametrize("value", ["Infinity", "NaN", "-Infinity"])
def test_a_metrics_line_holding_a_number_that_is_not_finite_is_not_read(tmp_path, value):
    """The trainer stops a run before such a loss: a line holding one was edited, and its
    number would reach a results file."""
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "split": "train", "loss": 2.5}\n'
        f'{{"step": 2, "split": "valid", "loss": {value}, "bleu": 3.0}}\n')
    with pytest.raises(DataError) as error:
        read_metrics(tmp_path)
    says(error, "metrics.jsonl", "line 2", "restore or delete")


@pytest.mark.parametrize("ckpt_every, names", [
    (2, ["moved to", "run.moved", "--run-dir " + "{moved}", "--resume"]),
    (1000, ["moved to", "run.moved", "before any checkpoint", "nothing to resume",
            "start the run again"])], ids=["after a checkpoint", "before any checkpoint"])
def test_a_run_folder_moved_while_training_is_named_with_how_to_go_on(tmp_path, capsys,
                                                                      monkeypatch, ckpt_every,
                                                                      names):
    """`mv run run.moved` after step 2: the next write finds the folder gone, and no second
    folder is begun in its place. The line names where it went (found through the lock file
    it holds open), and --resume only if it holds a checkpoint."""
    from annotated.store import checkpoint_file as files
    from annotated.training.run_dir import RunDir
    record = RunDir.record

    def moved_after_step_2(folder, entry):
        if entry.get("step") == 3 and (tmp_path / "run").is_dir():
            (tmp_path / "run").rename(tmp_path / "run.moved")
        return record(folder, entry)
    monkeypatch.setattr(RunDir, "record", moved_after_step_2)
    run_fails(tmp_path / "run", "--config", "copy", "--max-steps", 4, *TINY_RUN[:-1],
              f"ckpt_every={ckpt_every}")
    line = says(error_line(capsys), str(tmp_path / "run"),
                *[name.format(moved=tmp_path / "run.moved") for name in names])
    assert ("--resume" in line) == (ckpt_every == 2)
    assert not (tmp_path / "run").exists()
    assert len(files.checkpoints(tmp_path / "run.moved")) == (ckpt_every == 2)


def test_a_lock_file_deleted_while_training_stops_the_run_before_a_second_can_mix_in(
        tmp_path, capsys, monkeypatch):
    """`rm run/.lock` lets a second trainer lock the folder with a file of its own: the first
    finds its lock gone at its next write and stops, naming the file."""
    from annotated.training.run_dir import RunDir
    record = RunDir.record

    def lock_deleted_after_step_2(folder, entry):
        if entry.get("step") == 3 and (tmp_path / "run" / ".lock").exists():
            (tmp_path / "run" / ".lock").unlink()
        return record(folder, entry)
    monkeypatch.setattr(RunDir, "record", lock_deleted_after_step_2)
    run_fails(tmp_path / "run", "--config", "copy", "--max-steps", 4, *TINY_RUN[:-1])
    says(error_line(capsys), str(tmp_path / "run" / ".lock"), "deleted or replaced",
         "another training process", "--resume")
    assert max(entry["step"] for entry in map(json.loads, (tmp_path / "run" / "metrics.jsonl")
                                              .read_text().splitlines())) < 3


def test_a_run_stopped_before_its_first_metrics_line_is_told_to_resume(tmp_path):
    """Its checkpoints show that the trainer wrote the folder: not 'not a training run'."""
    with pytest.raises(DataError) as error:
        read_metrics(tmp_path)
    says(error, "metrics.jsonl", "not written by python -m annotated.train")
    (tmp_path / "ckpt_0000005.pt").write_bytes(b"")
    with pytest.raises(DataError) as error:
        read_metrics(tmp_path)
    says(error, "holds checkpoints", "first metrics", "--resume")
    assert "not written by" not in str(error.value)


# --- outputs: special files, links, a folder, the same input twice ----------------------------

def test_an_output_that_is_a_device_a_pipe_or_a_link_is_written_through_never_replaced(
        tmp_path, monkeypatch):
    replaced = []
    real_replace = os.replace

    def guarded(src, dst):                   # a regression must not replace the real /dev/null
        assert Path(dst).is_file() or not Path(dst).exists(), f"would replace {dst}"
        replaced.append(Path(dst))
        real_replace(src, dst)
    monkeypatch.setattr(files.os, "replace", guarded)
    with files.atomic_open("/dev/null", "w") as f:
        f.write("gone\n")
    assert Path("/dev/null").is_char_device() and replaced == []

    fifo, got = tmp_path / "pipe", []
    os.mkfifo(fifo)
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with files.atomic_open(fifo, "w") as f:
        f.write("through the pipe\n")
    reader.join(timeout=30)
    assert got == ["through the pipe\n"] and fifo.is_fifo()

    target, link = tmp_path / "real.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    link.symlink_to(target)
    with files.atomic_open(link, "w") as f:
        f.write("new\n")
    assert link.is_symlink() and target.read_text() == "new\n" and replaced == [target]


def test_translate_and_half_write_to_dev_null_and_leave_it_a_device(tmp_path):
    (tmp_path / "in.txt").write_text("a dog runs .\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    os.devnull])
    checkpoint_command.main(["half", str(SHIPPED), "--out", os.devnull])
    assert Path(os.devnull).is_char_device()


def test_a_checkpoint_option_naming_a_folder_says_it_is_a_folder(tmp_path, capsys):
    save(tmp_path / "ckpt_0000003.pt", step=3)
    exits_with_error(translate.main, ["--checkpoint", str(tmp_path)])
    says(error_line(capsys), str(tmp_path), "a folder", str(tmp_path / "ckpt_0000003.pt"))


def test_a_checkpoint_that_is_a_loop_of_links_or_a_broken_link_is_named_as_one(tmp_path,
                                                                                capsys):
    """Not "there is no file or folder": the name is there, as a link."""
    (tmp_path / "a.pt").symlink_to("b.pt")
    (tmp_path / "b.pt").symlink_to("a.pt")
    (tmp_path / "gone.pt").symlink_to("nowhere.pt")
    for name, names in (("a.pt", ["loop of links"]), ("gone.pt", ["a link to nowhere.pt"])):
        exits_with_error(translate.main, ["--checkpoint", str(tmp_path / name)])
        says(error_line(capsys), str(tmp_path / name), *names, "the checkpoint file itself")


def test_a_text_file_named_like_a_checkpoint_is_called_text(tmp_path, capsys):
    """Not "corrupt (KeyError: 101)", torch.load's word for a file it cannot read."""
    (tmp_path / "notes.pt").write_text("hello world\nmore\n")
    for main, argv in [(translate.main, ["--checkpoint", str(tmp_path / "notes.pt")]),
                       (checkpoint_command.main, ["verify", str(tmp_path / "notes.pt")])]:
        exits_with_error(main, argv)
        text = says(error_line(capsys, alone=False), str(tmp_path / "notes.pt"), "not a checkpoint",
                    "holds text", "'hello world'", "annotated.train")
        assert "Error" not in text


def test_the_same_checkpoint_twice_in_an_average_is_refused(tmp_path, capsys):
    ckpt = save(tmp_path / "ckpt_0000001.pt")
    os.link(ckpt, tmp_path / "again.pt")
    exits_with_error(checkpoint_command.main, ["average", "--out", str(tmp_path / "a.pt"),
                                               str(ckpt), str(tmp_path / "again.pt")])
    assert "is given twice" in error_line(capsys)
    assert not (tmp_path / "a.pt").exists()
    shutil.copy(ckpt, tmp_path / "copy.pt")                  # the same checkpoint, a copy
    exits_with_error(checkpoint_command.main, ["average", "--out", str(tmp_path / "a.pt"),
                                               str(ckpt), str(tmp_path / "copy.pt")])
    says(error_line(capsys), "copy.pt", "same checkpoint", str(ckpt), "step 1", "once")
    assert not (tmp_path / "a.pt").exists()


def test_paths_given_with_a_tilde_are_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    run("~/run", "--config", "copy", "--max-steps", 1, *TINY_RUN)
    assert (tmp_path / "run" / "ckpt_0000001.pt").is_file()


def test_the_old_hidden_flag_spellings_are_gone(tmp_path, capsys):
    exits_with_error(train.main, ["--config", "copy", "--out", str(tmp_path)], code=2)
    assert "unrecognized arguments: --out" in capsys.readouterr().err


# --- data files -------------------------------------------------------------------------------

def corpus(folder: Path, train_pairs, valid_pairs=None, newline="\n", bom=False) -> Path:
    """A user's corpus (dataset=files) in `folder`: train, valid and test in en and fr."""
    folder.mkdir(parents=True, exist_ok=True)
    splits = {"train": train_pairs, "valid": valid_pairs or train_pairs[:3],
              "test": train_pairs[:3]}
    for split, pairs in splits.items():
        for side, lang in enumerate(("en", "fr")):
            text = "".join(pair[side] + newline for pair in pairs)
            (folder / f"{split}.{lang}").write_bytes(("\ufeff" if bom else "").encode()
                                                     + text.encode())
    return folder


PAIRS = [(f"the cat number {i} sits on the mat", f"le chat numéro {i} est sur le tapis")
         for i in range(60)]
FILES = ["dataset=files", "source_lang=en", "target_lang=fr", "vocab_size=60", "N=1",
         "d_model=16", "d_ff=32", "h=2", "d_k=8", "d_v=8", "max_tokens=400", "log_every=1",
         "eval_every=1000", "ckpt_every=1000"]


@pytest.mark.parametrize("case,data,settings,names", [
    ("empty", ([], None), [], ("no sentence pair",)),
    ("all too long", (PAIRS, None), ["max_sentence_len=5"], ("train:", "no sentence pair")),
    ("valid too long", (PAIRS, [("one " * 40, "un " * 40)] * 3), ["max_sentence_len=30"],
     ("valid:", "no sentence pair")),
    ("vocabulary too large", (PAIRS[:2], None), ["vocab_size=5000"],
     ("5,000-token vocabulary",)),
])
def test_a_corpus_that_cannot_train_is_one_line_before_any_training(case, data, settings,
                                                                  names, tmp_path, capsys):
    location = corpus(tmp_path / "data", *data)
    exits_with_error(train.main, ["--config", "copy", "--run-dir", str(tmp_path / "run"),
                                  "--data-dir", str(location), "--cache-dir",
                                  str(tmp_path / "cache"), *merged(FILES, settings)])
    says(error_line(capsys, alone=False), *names)
    assert checkpoint_file.checkpoints(tmp_path / "run") == []


def test_windows_line_ends_and_a_byte_order_mark_read_as_plain_text(tmp_path):
    plain = corpus(tmp_path / "plain", PAIRS)
    other = corpus(tmp_path / "other", PAIRS, newline="\r\n", bom=True)
    for name in ("train.en", "valid.fr"):
        assert list(files.read_lines(other / name)) == list(files.read_lines(plain / name))


def test_a_byte_order_mark_in_the_references_does_not_lower_bleu(tmp_path, capsys):
    (tmp_path / "hyp").write_text("ein Hund läuft .\nzwei Katzen schlafen .\n")
    (tmp_path / "ref").write_text("ein Hund läuft .\nzwei Katzen schlafen .\n")
    (tmp_path / "ref-bom").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "ref").read_bytes())
    for ref in ("ref", "ref-bom"):
        evaluate.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / ref)])
        assert "sacreBLEU (cased, detokenized): BLEU = 100.00" in capsys.readouterr().out


# --- BLEU for languages written without spaces ------------------------------------------------

def test_chinese_is_scored_with_a_chinese_tokenizer_and_says_so(tmp_path, capsys):
    refs = ["我们今天去公园散步。", "这只猫在桌子上睡觉。", "他每天早上喝一杯咖啡。"]
    hyps = ["我们今天去公园散步。", "这只猫在桌子上睡觉。", "他每天早上喝一杯茶。"]
    (tmp_path / "hyp").write_text("".join(h + "\n" for h in hyps))
    (tmp_path / "ref").write_text("".join(r + "\n" for r in refs))
    evaluate.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref")])
    out = capsys.readouterr().out
    assert out.startswith("tokenizer: zh") and "tok:zh" in out
    score = float(re.search(r"sacreBLEU \(cased, detokenized\): BLEU = ([\d.]+)", out).group(1))
    assert score > 70                     # with 13a: each sentence one token, and about 0


@pytest.mark.parametrize("lang,text,expected", [
    ("zh", "", "zh"), ("de", "", "13a"), (None, "我们今天去公园散步。", "zh"),
    (None, "これは猫です。", "char"), (None, "สวัสดีครับ", "char"), (None, "Guten Tag", "13a"),
    ("ko", "", "13a")])
def test_the_bleu_tokenizer_follows_the_language(lang, text, expected):
    assert tokenizer_for(lang, [text]) == expected       # ja/ko: MeCab is not installed here


@pytest.mark.parametrize("lang", ["xx", "german", ""])
def test_a_language_code_that_names_no_language_is_refused(tmp_path, capsys, lang):
    """An unknown code would be scored with 13a without a word: refused, naming it."""
    (tmp_path / "ref").write_text("Ein Hund.\n")
    (tmp_path / "hyp").write_text("Ein Hund.\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"),
                       "--lang", lang])
    says(capsys.readouterr().err.strip().splitlines()[-1], "--lang", repr(lang), "such as de")
    assert capsys.readouterr().out == ""


def test_a_report_names_its_tokenizer_only_when_it_is_not_13a():
    assert not report(["a b c d"], ["a b c d"], "de").startswith("tokenizer")
    assert report(["我喜欢猫。"], ["我喜欢猫。"], "zh").startswith("tokenizer: zh")


# --- standard streams and interruption --------------------------------------------------------

def command(*args, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=ROOT, **options)


@pytest.mark.slow
def test_translate_with_stdin_closed_or_stdout_closed_or_full_is_one_line(tmp_path):
    base = ["annotated.translate", "--checkpoint", str(SHIPPED)]
    closed_in = command(*base, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    closed_out = command(*base, input=b"a dog\n", preexec_fn=lambda: os.close(1))
    with open("/dev/full", "wb") as full:
        full_out = subprocess.run([sys.executable, "-m", *base], input=b"a dog\n", stdout=full,
                                  stderr=subprocess.PIPE, timeout=300, cwd=ROOT)
    for done, words in [(closed_in, "stdin is closed"), (closed_out, "stdout is closed"),
                        (full_out, "No space left on device")]:
        err = done.stderr.decode()
        assert done.returncode == 1 and "Traceback" not in err and "Exception" not in err, err
        assert err.splitlines()[-1].startswith("error: ") and words in err


@pytest.mark.slow
def test_a_reader_that_stops_reading_ends_translation_quietly(tmp_path):
    """`| true` has gone before the first translation is written (`| head -1` after the first
    line): the write fails with a broken pipe, which ends the command as SIGPIPE would, with
    no error message and no traceback."""
    (tmp_path / "in.txt").write_text("a dog runs .\ntwo cats sleep .\n")
    shell = (f"{sys.executable} -m annotated.translate --checkpoint {SHIPPED} --input "
             f"{tmp_path / 'in.txt'} | true")
    done = subprocess.run(["bash", "-c", "set -o pipefail; " + shell], capture_output=True,
                          timeout=300, cwd=ROOT)
    err = done.stderr.decode()
    assert done.returncode == 141, err
    assert "Traceback" not in err and "Exception" not in err and "error" not in err, err


@pytest.mark.slow
def test_training_goes_on_without_a_stdout(tmp_path):
    args = ["annotated.train", "--config", "copy", "--max-steps", "3", *TINY_RUN]
    closed = command(*args, "--run-dir", str(tmp_path / "a"), preexec_fn=lambda: os.close(1))
    with open("/dev/full", "wb") as full:
        filled = subprocess.run([sys.executable, "-m", *args, "--run-dir", str(tmp_path / "b")],
                                stdout=full, stderr=subprocess.PIPE, timeout=300, cwd=ROOT)
    for done, run_dir in [(closed, "a"), (filled, "b")]:
        err = done.stderr.decode()
        assert done.returncode == 0 and "Traceback" not in err, err
        says(next(line for line in err.splitlines() if "stdout" in line), "warning", "stdout")
        assert (tmp_path / run_dir / "ckpt_0000003.pt").is_file()


@pytest.mark.slow
def test_training_goes_on_when_the_reader_of_its_output_goes_away(tmp_path):
    """`train ... 2>&1 | head -3`: both streams are one pipe, whose reader leaves after three
    lines; training ends its steps all the same, with its checkpoint."""
    process = subprocess.Popen(
        [sys.executable, "-m", "annotated.train", "--config", "copy", "--max-steps", "3",
         *TINY_RUN, "--run-dir", str(tmp_path / "run")], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT)
    for _ in range(3):
        process.stdout.readline()
    process.stdout.close()
    assert process.wait(timeout=300) == 0
    assert (tmp_path / "run" / "ckpt_0000003.pt").is_file()


@pytest.mark.slow
def test_ctrl_c_stops_training_in_one_line_and_the_run_resumes(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "annotated.train", "--config", "copy", "--run-dir",
         str(tmp_path), "--max-steps", "100000", *TINY_RUN[:-1], "ckpt_every=5"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # as from a shell
    deadline = time.time() + 120
    while not checkpoint_file.checkpoints(tmp_path) and time.time() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    err = process.communicate(timeout=60)[1].decode()
    last = err.splitlines()[-1]                  # "interrupted", and the steps a stop loses
    assert process.returncode == 130 and last.split(";")[0] == "interrupted", err
    assert last == "interrupted" or "--resume continues from it" in last, err
    assert "Traceback" not in err
    run(tmp_path, "--resume", "--max-steps", checkpoint_file.step_in_name(
        checkpoint_file.checkpoints(tmp_path)[-1]) + 1)


def test_a_killed_write_leaves_a_temporary_file_that_the_next_write_removes(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.txt.{files._HOST}.{dead.pid}.0123abcd.tmp"
    live = tmp_path / f".out.txt.{files._HOST}.{os.getpid()}.4567cdef.tmp"
    other = tmp_path / ".notes.tmp"
    for p in (stale, live, other):
        p.write_text("half\n")
    with files.atomic_open(tmp_path / "out.txt", "w") as f:
        f.write("done\n")
    assert not stale.exists() and live.exists() and other.exists()


def test_a_killed_writes_temporary_file_is_removed_by_a_write_of_any_file_in_its_folder(
        tmp_path):
    """Whatever the next write in the folder writes; and a process that was given the killed
    writer's id later (a container's next run often gets the same one) does not keep it."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".average.pt.{files._HOST}.{dead.pid}.0123abcd.tmp"
    reused = tmp_path / f".ckpt_0000005.pt.{files._HOST}.{os.getpid()}.89abcdef.tmp"
    for p in (stale, reused):
        p.write_text("half\n")
    os.utime(reused, (time.time() - 86400, time.time() - 86400))   # before this process began
    files.write_files({tmp_path / "other.md": "new\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.md"]


def test_a_temporary_file_of_another_machine_is_named_and_kept(tmp_path, capsys):
    """A shared folder, or an earlier container with another host name: whether that write
    still goes on cannot be told here, so the next command writing there names the file."""
    foreign = tmp_path / ".out.txt.another-host.12345.0123abcd.tmp"
    foreign.write_text("half\n")
    (tmp_path / "in.txt").write_text("a dog runs .\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"),
                    "--out", str(tmp_path / "out.txt")])
    says(next(line for line in capsys.readouterr().err.splitlines() if "note:" in line),
         foreign, "another-host", "delete it")
    assert foreign.exists() and (tmp_path / "out.txt").exists()


# --- the rest of the list ---------------------------------------------------------------------

def test_not_enough_memory_for_the_model_is_one_line_before_it_is_built(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setattr(machine, "available_memory", lambda device: (1000, "this machine"))
    run_fails(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    says(error_line(capsys, alone=False), "out of memory", "this machine", "0.0 GiB free",
         "d_model")


def test_a_memory_limit_on_the_process_counts_as_the_memory_free(monkeypatch):
    """`ulimit -v` (or a container's limit) leaves the process less than the machine's free
    memory: the check counts from the limit, and names it."""
    mapped = machine._kib("/proc/self/status", "VmSize")
    limit = mapped + 2**20
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (limit, limit))
    free, where = machine.available_memory(torch.device("cpu"))
    assert 0 < free <= 2**20 and "ulimit -v" in where
    unlimited = resource.RLIM_INFINITY
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (unlimited, unlimited))
    assert machine.available_memory(torch.device("cpu"))[0] > 2**20


def test_a_model_too_large_for_its_vocabulary_names_vocab_size_first(monkeypatch):
    config = configs.get("copy").override(vocab_size=10 ** 7)
    monkeypatch.setattr(machine, "available_memory", lambda device: (2**30, "this machine"))
    with pytest.raises(MemoryError) as error:
        machine.check_memory(config, 10 ** 7, torch.device("cpu"), corpus_tokens=10)
    says(error, "lower vocab_size", "% of the parameters", "1.0 GiB free")


def test_memory_running_out_during_training_is_one_line_naming_every_size(tmp_path, capsys,
                                                                         monkeypatch):
    """The estimate passed, but an allocation failed (another process took the memory): the
    CPU allocator's words are cut to the size it wanted, and the fix names vocab_size too."""
    from annotated.training import loop

    def allocation_fails(*args):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 2560000000 bytes. "
                           "Error code 12 (Cannot allocate memory)")
    monkeypatch.setattr(loop, "train_step", allocation_fails)
    run_fails(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    line = says(error_line(capsys, alone=False), "out of memory", "2.38 GiB", "max_tokens",
                "accum_steps", "d_model", "vocab_size")
    assert "err ==" not in line and "enforce" not in line


def test_a_batch_too_large_for_memory_names_max_tokens_and_counts_only_the_corpus(
        tmp_path, capsys, monkeypatch):
    """The activations of a huge batch, not the model, fill memory: the fix named first is
    max_tokens. A batch never holds more tokens than the corpus has."""
    config = configs.get("copy").override(max_tokens=10 ** 8)
    weights = 16 * config.parameter_count(14)
    monkeypatch.setattr(machine, "available_memory", lambda device: (weights + 10 ** 6, "x"))
    with pytest.raises(MemoryError) as error:
        machine.check_memory(config, 14, torch.device("cpu"), corpus_tokens=10 ** 7)
    says(error, "activations", "10,000,000 tokens", "max_tokens", "accum_steps")
    machine.check_memory(config, 14, torch.device("cpu"), corpus_tokens=10)   # fits


def test_learned_positions_shorter_than_an_input_are_one_line(tmp_path, capsys):
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN, "positional=learned",
        "max_len=12", "max_sentence_len=12")
    (tmp_path / "in.txt").write_text("4 5 6\n" + "4 " * 20 + "\n")
    exits_with_error(translate.main, ["--checkpoint", str(tmp_path / "ckpt_0000001.pt"),
                                      "--input", str(tmp_path / "in.txt")])
    says(error_line(capsys, alone=False), "line 2", "21 tokens", "learned positions", "12")


def test_preparing_wmt14_without_a_network_is_one_line(tmp_path, capsys, monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError(OSError(errno.ENETUNREACH, "Network is unreachable"))
    monkeypatch.setattr(files.urllib.request, "urlopen", offline)
    exits_with_error(prepare_wmt14.main, ["--out-dir", str(tmp_path / "wmt14")])
    message = error_line(capsys, alone=False)
    assert message.startswith("error: cannot download http") and "needs a network" in message


def test_shipping_a_model_with_a_wrong_data_location_changes_no_shipped_file(tmp_path, capsys):
    out = tmp_path / "pretrained"
    shutil.copytree(SHIPPED.parent, out, ignore=shutil.ignore_patterns("__pycache__"))
    before = snapshot(out)
    exits_with_error(pretrained.main, [str(SHIPPED), "--data-dir", str(tmp_path / "typo"),
                                       "--out-dir", str(out)])
    says(error_line(capsys), str(tmp_path / "typo"), "not there", "--data-dir")
    assert snapshot(out) == before


def test_results_files_are_written_all_or_nothing(tmp_path):
    (tmp_path / "a.md").write_text("old a\n")
    (tmp_path / "b.json").write_text("old b\n")
    with pytest.raises(TypeError):           # the second file cannot be written
        files.write_files({tmp_path / "a.md": "new a\n", tmp_path / "b.json": 3.14})
    assert (tmp_path / "a.md").read_text() == "old a\n"
    assert (tmp_path / "b.json").read_text() == "old b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.json"]



def test_a_full_disk_while_appending_metrics_names_the_metrics_file(tmp_path):
    from annotated.base.cli import describe
    from annotated.training.run_dir import RunDir
    folder = RunDir(tmp_path, say=lambda *_: None).open()
    (tmp_path / "metrics.jsonl").symlink_to("/dev/full")
    with pytest.raises(OSError) as error:
        folder.record({"step": 1, "split": "train", "loss": 1.0})
    folder.close()
    says(describe(error.value), str(tmp_path / "metrics.jsonl"), "No space left")


# --- probes beyond the outside tester's list: what a tired user or a hostile file does next ---

def test_a_file_size_limit_names_the_file_it_stopped(tmp_path):
    """`ulimit -f`: the write fails with EFBIG, whose error names no file."""
    process = subprocess.run(
        [sys.executable, "-m", "annotated.checkpoint", "half", str(SHIPPED), "--out",
         str(tmp_path / "h.pt")], capture_output=True, text=True, cwd=ROOT,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)))
    assert process.returncode == 1
    says(process.stderr.splitlines()[-1], str(tmp_path / "h.pt"), "file too large", "ulimit -f",
         "unchanged")
    assert list(tmp_path.iterdir()) == []                 # no part of it, no temporary file


def test_more_threads_than_cores_is_done_with_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})      # two cores
    before = torch.get_num_threads()
    try:
        for threads, noted in [(2, False), (3, True)]:
            train.main(["--config", "copy", "--run-dir", str(tmp_path / str(threads)),
                        "--max-steps", "1", "--threads", str(threads), *TINY_RUN])
            notes = [line for line in capsys.readouterr().err.splitlines() if "--threads" in line]
            assert bool(notes) == noted, notes
        says(notes[0], "--threads 3", "2 CPU core(s)", "slower", "--threads 2 or fewer")
    finally:
        torch.set_num_threads(before)


def test_a_line_far_longer_than_any_trained_on_is_refused_before_decoding(tmp_path, capsys):
    """Decoding time grows with the square of a line's length: a line of thousands of tokens
    would run for a long time with no output."""
    (tmp_path / "in.txt").write_text("a dog runs .\n" + "dog " * 1100 + "\n")
    (tmp_path / "out.txt").write_text("mine\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.txt"), "--out", str(tmp_path / "out.txt")])
    says(error_line(capsys, alone=False), str(tmp_path / "in.txt"), "line 2", "1,101 tokens",
         "longest sentence", "256", "split it")
    assert (tmp_path / "out.txt").read_text() == "mine\n"


def test_a_copy_task_model_measures_long_lines_by_its_own_length(tmp_path, capsys):
    """The copy task trains on at most copy_len symbols, far below max_sentence_len: a line of
    200 is refused, and one of 20 warned about, by that length."""
    train.main(["--config", "copy", "--run-dir", str(tmp_path / "run"), "--max-steps", "1",
                "--threads", "1", *merged(TINY_RUN, ["ckpt_every=1"])])
    checkpoint = str(checkpoint_file.checkpoints(tmp_path / "run")[-1])
    longest = configs.get("copy").copy_len + 1
    (tmp_path / "long.txt").write_text(" ".join(["5"] * 200) + "\n")
    capsys.readouterr()
    exits_with_error(translate.main, ["--checkpoint", checkpoint, "--input",
                                      str(tmp_path / "long.txt")])
    says(error_line(capsys, alone=False), "line 1", "201 tokens", f"({longest})", "split it")
    (tmp_path / "longer.txt").write_text(" ".join(["5"] * 2 * longest) + "\n")
    translate.main(["--checkpoint", checkpoint, "--input", str(tmp_path / "longer.txt"),
                    "--out", str(tmp_path / "out.txt")])
    says(next(line for line in capsys.readouterr().err.splitlines() if "warning" in line),
         f"({longest} tokens)", "split them")


def test_a_note_with_a_section_sign_reaches_an_ascii_terminal_escaped(monkeypatch):
    """The notes of training before its first step cite the paper (§3.2.2): on a terminal
    that cannot write §, escaped, not a UnicodeEncodeError."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", out)
    config = configs.get("sample").override(h=3, d_k=16, d_v=16)
    train.note_head_widths(config, ["h=3"])
    out.flush()
    assert "(\\xa73.2.2)" in out.buffer.getvalue().decode("ascii")


def test_a_terminal_that_cannot_write_the_target_language_breaks_nothing(tmp_path):
    """PYTHONIOENCODING=ascii (or latin-1 with Chinese): training ends with the model at work,
    its characters escaped; translate refuses before any work, naming the encoding."""
    location = corpus(tmp_path / "data", PAIRS)
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "OMP_NUM_THREADS": "1"}
    trained = subprocess.run(
        [sys.executable, "-m", "annotated.train", "--config", "copy", "--run-dir",
         str(tmp_path / "run"), "--data-dir", str(location), "--cache-dir", str(tmp_path / "c"),
         "--max-steps", "2", "--threads", "1", *FILES], capture_output=True, text=True,
        cwd=ROOT, env=env)
    assert trained.returncode == 0 and "Traceback" not in trained.stderr, trained.stderr
    assert "reference  le chat num\\xe9ro" in trained.stdout and "Next:" in trained.stdout
    translated = subprocess.run(
        [sys.executable, "-m", "annotated.translate", "--checkpoint",
         str(checkpoint_file.checkpoints(tmp_path / "run")[-1])], input="the cat\n",
        capture_output=True, text=True, cwd=ROOT, env=env)
    assert translated.returncode == 1 and not translated.stdout
    says(translated.stderr.splitlines()[-1], "ascii", "fr translations", "PYTHONIOENCODING=utf-8",
         "--out")


def test_the_closing_advice_averages_only_the_checkpoints_there_are(tmp_path, capsys):
    for steps, every, average in [(1, 1000, None), (3, 1, "--last 2")]:
        train.main(["--config", "copy", "--run-dir", str(tmp_path / str(steps)), "--max-steps",
                    str(steps), "--threads", "1", *merged(TINY_RUN, [f"ckpt_every={every}"])])
        lines = [line for line in capsys.readouterr().out.splitlines() if "average" in line]
        assert [average in line for line in lines] == ([True] if average else []), lines


@pytest.mark.parametrize("free_checkpoints", [0.5, 2.5])
def test_a_disk_without_room_for_the_checkpoints_is_told_before_training(
        tmp_path, capsys, monkeypatch, free_checkpoints):
    """No room for one: refused before step 1, not found at the first save after the work.
    Room for fewer than keep_last + 1: a note, and the run goes on."""
    from annotated.training import run_dir
    config = configs.apply_overrides(configs.get("copy"), TINY_RUN)
    tokenizer = load_corpus(config, log=lambda *_: None).tokenizer      # saved with the weights
    size = 3 * 4 * sum(p.numel() for p in EncoderDecoder(config, 11).parameters()) \
        + len(tokenizer.to_bytes())
    real = shutil.disk_usage
    monkeypatch.setattr(run_dir.shutil, "disk_usage", lambda path: real(path)._replace(
        free=int(free_checkpoints * size)))
    argv = ["--config", "copy", "--run-dir", str(tmp_path / "run"), "--max-steps", "1",
            "--threads", "1", *TINY_RUN]
    if free_checkpoints < 1:
        exits_with_error(train.main, argv)
        says(capsys.readouterr().err.strip().splitlines()[-1], str(tmp_path / "run"), "MiB free",
             "first save", "--run-dir")
        assert not checkpoint_file.checkpoints(tmp_path / "run")
    else:
        train.main(argv)
        note = next(l for l in capsys.readouterr().out.splitlines() if "room for" in l)
        says(note, "room for 2 checkpoint(s)", "keep_last", "free some space")


def test_average_or_half_never_writes_over_a_file_that_is_not_a_checkpoint(tmp_path, capsys):
    """Another run's metrics.jsonl given as --out: its log stays."""
    ckpt = save(tmp_path / "a" / "ckpt_0000001.pt")
    log = tmp_path / "other" / "metrics.jsonl"
    log.parent.mkdir()
    log.write_text('{"step": 1, "loss": 2.0}\n')
    for argv, example in ((["average", "--last", "1", str(tmp_path / "a")], "average.pt"),
                          (["half", str(ckpt)], "model_fp16.pt")):
        exits_with_error(checkpoint_command.main, [*argv, "--out", str(log)])
        says(error_line(capsys), str(log), "holds text", "not a checkpoint", "another name",
             f"e.g. {example}")
    assert log.read_text() == '{"step": 1, "loss": 2.0}\n'


def test_average_or_half_never_replaces_another_runs_checkpoint_or_a_hidden_file(tmp_path,
                                                                                capsys):
    """The shipped model, or another run's average, given as --out by mistake stays; a run's
    .lock is no place for a checkpoint. Writing again over this run's own average is fine."""
    ckpt = save(tmp_path / "a" / "ckpt_0000001.pt")
    theirs = save(tmp_path / "b" / "average.pt", seed=1)       # another run: its own run id
    before = theirs.read_bytes()
    (tmp_path / "a" / ".lock").write_text("")
    for argv in (["average", "--last", "1", str(tmp_path / "a")], ["half", str(ckpt)]):
        exits_with_error(checkpoint_command.main, [*argv, "--out", str(theirs)])
        says(error_line(capsys), str(theirs), "another run", "another name")
        exits_with_error(checkpoint_command.main, [*argv, "--out", str(tmp_path / "a" / ".lock")])
        says(error_line(capsys), ".lock", "another name")
    assert theirs.read_bytes() == before and (tmp_path / "a" / ".lock").read_text() == ""
    for _ in range(2):
        checkpoint_command.main(["average", "--last", "1", str(tmp_path / "a"), "--out",
                                 str(tmp_path / "a" / "average.pt")])


HOLDS_THE_FOLDER = """
import fcntl, os, shutil, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[4], "w").close()
time.sleep(float(sys.argv[3]))
shutil.copy(sys.argv[2], os.path.join(sys.argv[1], "average.pt"))
"""


def test_two_averages_onto_one_out_at_once_are_checked_one_after_the_other(tmp_path, capsys):
    """The second waits for the first, then checks --out as the first left it: another run's
    average written meanwhile is refused, not replaced."""
    ours = save(tmp_path / "a" / "ckpt_0000001.pt")
    theirs = save(tmp_path / "b" / "average.pt", seed=1)
    out = tmp_path / "out"
    out.mkdir()
    held = tmp_path / "held"
    first = subprocess.Popen([sys.executable, "-c", HOLDS_THE_FOLDER, str(out), str(theirs), "3",
                              str(held)])
    try:
        while not held.exists():
            time.sleep(0.05)
        exits_with_error(checkpoint_command.main, ["average", "--last", "1", str(ours.parent),
                                                   "--out", str(out / "average.pt")])
    finally:
        first.wait(timeout=60)
    err = capsys.readouterr().err
    says(err.splitlines()[0], "note", str(out), "waiting")
    says(err.splitlines()[-1], str(out / "average.pt"), "another run")
    assert (out / "average.pt").read_bytes() == theirs.read_bytes()


def test_an_average_whose_sources_are_gone_is_never_replaced(tmp_path, capsys):
    """Rotation deletes old checkpoints, so an earlier average of them cannot be made again:
    --out over it is refused, naming it and what is gone. Over an average whose sources are
    all still there, the new one replaces it with a note."""
    argv = ["--config", "copy", "--threads", "1",
            *merged(TINY_RUN, ["ckpt_every=1", "keep_last=3"])]
    run, out = tmp_path / "run", tmp_path / "average.pt"
    train.main([*argv, "--run-dir", str(run), "--max-steps", "3"])
    checkpoint_command.main(["average", "--last", "2", str(run), "--out", str(out)])
    capsys.readouterr()
    checkpoint_command.main(["average", "--last", "3", str(run), "--out", str(out)])
    says(capsys.readouterr().err, "note", str(out), "2 checkpoints", "replaces")
    (run / "ckpt_0000001.pt").unlink()
    before = out.read_bytes()
    exits_with_error(checkpoint_command.main, ["average", "--last", "2", str(run), "--out",
                                               str(out)])
    says(error_line(capsys), str(out), "3 checkpoints", "ckpt_0000001.pt is no longer",
         "another name")
    assert out.read_bytes() == before


def test_half_of_an_average_is_made_again_over_its_earlier_half(tmp_path, capsys):
    """The half names the file it halves: made again from that same file, it replaces its
    earlier version quietly, wherever the averaged checkpoints are."""
    argv = ["--config", "copy", "--threads", "1", *merged(TINY_RUN, ["ckpt_every=1"])]
    run = tmp_path / "run"
    train.main([*argv, "--run-dir", str(run), "--max-steps", "2"])
    checkpoint_command.main(["average", "--last", "2", str(run), "--out",
                             str(tmp_path / "avg.pt")])
    for _ in range(2):
        checkpoint_command.main(["half", str(tmp_path / "avg.pt"), "--out",
                                 str(tmp_path / "avg_half.pt")])
    assert "refusing" not in capsys.readouterr().err
    assert checkpoint_file.load(tmp_path / "avg_half.pt")["halved_from"] == "avg.pt"


def test_average_or_half_never_replaces_a_kept_copy_of_a_training_checkpoint(tmp_path, capsys):
    """A copy of a checkpoint kept by hand (rotation deleted the original) holds the state a
    run resumes from; an average or float16 weights written over it would lose it."""
    argv = ["--config", "copy", "--threads", "1", *merged(TINY_RUN, ["ckpt_every=1"])]
    train.main([*argv, "--run-dir", str(tmp_path / "run"), "--max-steps", "2"])
    kept = tmp_path / "keep.pt"
    shutil.copy(tmp_path / "run" / "ckpt_0000002.pt", kept)
    before = kept.read_bytes()
    for argv in (["average", "--last", "1", str(tmp_path / "run")],
                 ["half", str(tmp_path / "run" / "ckpt_0000002.pt")]):
        exits_with_error(checkpoint_command.main, [*argv, "--out", str(kept)])
        says(error_line(capsys), str(kept), "training checkpoint", "step 2", "another name")
    assert kept.read_bytes() == before


@pytest.mark.parametrize("command, kind", [("average", "an average"),
                                           ("half", "float16 weights")])
def test_an_average_or_halved_file_under_a_checkpoints_name_is_named_for_what_it_is(
        tmp_path, capsys, command, kind):
    argv = ["--config", "copy", "--threads", "1", *merged(TINY_RUN, ["ckpt_every=1"])]
    train.main([*argv, "--run-dir", str(tmp_path / "run"), "--max-steps", "2"])
    inputs = ["--last", "2", str(tmp_path / "run")] if command == "average" else [
        str(tmp_path / "run" / "ckpt_0000002.pt")]
    (tmp_path / "other").mkdir()
    checkpoint_command.main([command, *inputs, "--out", str(tmp_path / "made.pt")])
    shutil.copy(tmp_path / "made.pt", tmp_path / "other" / "ckpt_0000002.pt")
    capsys.readouterr()
    exits_with_error(train.main, [*argv, "--run-dir", str(tmp_path / "other"), "--max-steps", "3"])
    line = says(error_line(capsys), "ckpt_0000002.pt", kind, "move it out", "--run-dir")
    assert "--resume" not in line


def test_a_lock_file_holding_binary_bytes_is_taken_over(tmp_path, capsys):
    argv = ["--config", "copy", "--run-dir", str(tmp_path / "run"), "--threads", "1",
            *merged(TINY_RUN, ["ckpt_every=1"])]
    train.main([*argv, "--max-steps", "1"])
    (tmp_path / "run" / ".lock").write_bytes(b"PK\x03\x04\x80\xff" * 100)
    train.main([*argv, "--resume", "--max-steps", "2"])
    assert "took over the lock" in capsys.readouterr().out


def test_an_output_in_a_folder_where_no_file_can_be_made_names_it_not_a_temporary(tmp_path,
                                                                                  capsys,
                                                                                  monkeypatch):
    """/proc passes the permission check and takes no new file, whoever runs the test: named
    before any sentence is decoded."""
    monkeypatch.setattr(translate, "translate_lines", lambda *a, **k: pytest.fail("decoded"))
    for main, argv in [(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                         str(tmp_path / "in.txt"), "--out", "/proc/t.txt"]),
                       (checkpoint_command.main, ["half", str(SHIPPED), "--out", "/proc/h.pt"])]:
        (tmp_path / "in.txt").write_text("a dog runs .\n")
        exits_with_error(main, argv)
        text = says(error_line(capsys, alone=False), argv[-1], "folder /proc", "another --out")
        assert ".tmp" not in text


def test_a_key_with_no_value_or_an_unknown_case_is_one_line(tmp_path, capsys):
    for item, names in [("P_drop=", ("P_drop= has no value", "P_drop=VALUE")),
                        ("n=2", ("unknown", "key(s) n", "valid keys: N, d_model")),
                        ("=5", ("'=5'", "key", "missing", "P_drop=0.3")),
                        ("P_drop", ("'P_drop'", "no =", "P_drop=0.3"))]:
        exits_with_error(train.main, ["--config", "copy", "--run-dir", str(tmp_path), item])
        says(error_line(capsys), *names)


def test_a_run_folder_without_config_or_resume_asks_for_one_of_them(tmp_path, capsys):
    exits_with_error(train.main, ["--run-dir", str(tmp_path / "run")], code=2)
    says(capsys.readouterr().err.splitlines()[-1], f"--run-dir {tmp_path / 'run'}",
         "--config NAME", "--resume")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("where", ["a file", "missing"])
def test_a_data_location_that_is_a_file_or_missing_is_one_line_naming_it(tmp_path, capsys,
                                                                        monkeypatch, where):
    location = tmp_path / "data"
    if where == "a file":
        location.write_text("not a folder\n")
    monkeypatch.setenv("ANNOTATED_DATA_DIR", str(location))
    exits_with_error(train.main, ["--config", "multi30k", "--run-dir", str(tmp_path / "run"),
                                  "--cache-dir", str(tmp_path / "cache")])
    says(error_line(capsys), str(location), "ANNOTATED_DATA_DIR",
         "not a folder" if where == "a file" else "not there")


def test_a_cache_location_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "cache").write_text("not a folder\n")
    exits_with_error(train.main, ["--config", "sample", "--run-dir", str(tmp_path / "run"),
                                  "--cache-dir", str(tmp_path / "cache"), "--max-steps", "1"])
    assert str(tmp_path / "cache") in error_line(capsys, alone=False)


def test_a_cache_that_cannot_be_written_is_one_line_before_the_tokenizer_is_trained(
        tmp_path, capsys, monkeypatch):
    """A read-only home: no folder can be made under /proc, whoever runs the test."""
    monkeypatch.delenv("ANNOTATED_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", "/proc")
    exits_with_error(train.main, ["--config", "sample", "--run-dir", str(tmp_path / "run"),
                                  "--max-steps", "1"])
    out = capsys.readouterr()
    says(out.err.splitlines()[-1], "/proc/.cache", "cannot write", "--cache-dir")
    assert "training a" not in out.out + out.err


def test_a_cache_under_a_folder_the_user_may_not_enter_names_the_fix(tmp_path, capsys,
                                                                      monkeypatch):
    """HOME=/root for another user: even looking for the cache is denied (simulated: the
    tests may run as root, whom permissions do not stop)."""
    import pathlib
    locked, exists = tmp_path / "home", pathlib.Path.exists

    def denied(path, *args, **kwargs):
        if path.is_relative_to(locked) and path != locked:
            raise PermissionError(13, "Permission denied", str(path))
        return exists(path, *args, **kwargs)
    monkeypatch.setattr(pathlib.Path, "exists", denied)
    exits_with_error(train.main, ["--config", "sample", "--run-dir", str(tmp_path / "run"),
                                  "--cache-dir", str(locked / ".cache"), "--max-steps", "1"])
    says(error_line(capsys), str(locked / ".cache"), "Permission denied", "--cache-dir",
         "ANNOTATED_CACHE_DIR")


def test_a_folder_given_as_hypotheses_is_one_line(tmp_path, capsys):
    (tmp_path / "ref").write_text("a\n")
    exits_with_error(evaluate.main, ["--hyp", str(tmp_path), "--ref", str(tmp_path / "ref")])
    says(error_line(capsys), str(tmp_path), "a folder", "give a file")


def test_a_tab_in_an_input_line_translates_and_a_control_character_is_refused(tmp_path,
                                                                             capsys):
    """A tab is a space to the tokenizer; a bell or a terminal's colour code is no text, and
    would be read as a word: refused, naming the first line, before anything is written."""
    (tmp_path / "in.txt").write_bytes(b"a dog\truns .\n\tthe end .\n")
    translate.main(["--checkpoint", str(SHIPPED), "--input", str(tmp_path / "in.txt"), "--out",
                    str(tmp_path / "out.txt"), "--greedy"])
    assert len((tmp_path / "out.txt").read_text().split("\n")) == 3      # 2 lines and the end
    capsys.readouterr()
    (tmp_path / "in.txt").write_bytes(b"a dog runs .\na dog\x07 runs .\n\x1b[31mred\x1b[0m\n")
    exits_with_error(translate.main, ["--checkpoint", str(SHIPPED), "--input",
                                      str(tmp_path / "in.txt"), "--out", str(tmp_path / "o2.txt")])
    says(error_line(capsys), "U+0007", "line 2", "spaces")
    assert not (tmp_path / "o2.txt").exists()


def test_setting_h_alone_notes_that_h_times_d_k_left_d_model(capsys):
    sample = configs.get("sample")
    train.note_head_widths(sample.override(h=5), ["h=5"])
    says(capsys.readouterr().out, "h=5", "d_k=32", "160", "d_model=128", "d_k and d_v")
    train.note_head_widths(sample.override(h=8, d_k=16, d_v=16), ["h=8", "d_k=16", "d_v=16"])
    train.note_head_widths(sample.override(h=4, d_k=32, d_v=32), ["h=4"])
    assert capsys.readouterr().out == ""


def test_a_warmup_longer_than_the_run_is_noted(tmp_path, capsys):
    """warmup_steps above train_steps: the learning rate never reaches its peak (§5.3); a
    note says so, and a warmup inside the run has none."""
    found = {}
    for warmup in (100, 2):
        train.main(["--config", "copy", "--run-dir", str(tmp_path / str(warmup)), "--max-steps",
                    "1", *TINY_RUN, "train_steps=10", f"warmup_steps={warmup}"])
        found[warmup] = [line for line in capsys.readouterr().out.splitlines()
                         if "warmup_steps" in line]
    assert len(found[100]) == 1 and found[2] == []
    says(found[100][0], "note", "warmup_steps=100", "train_steps=10", "peak")


def test_a_learning_rate_too_small_to_learn_is_noted(tmp_path, capsys):
    """lr_factor=1e-30 gives a peak rate of about 1e-32: the run would go through its steps
    and learn nothing. A note names the peak and the paper's factor; the presets get none."""
    found = {}
    for factor in ("1e-30", "1"):
        train.main(["--config", "copy", "--run-dir", str(tmp_path / factor), "--max-steps", "1",
                    *TINY_RUN, f"lr_factor={factor}"])
        found[factor] = [line for line in capsys.readouterr().out.splitlines()
                         if "learning rate peaks" in line]
    assert len(found["1e-30"]) == 1 and found["1"] == []
    says(found["1e-30"][0], "note", "lr_factor=1e-30", "will not learn", "lr_factor=1")
