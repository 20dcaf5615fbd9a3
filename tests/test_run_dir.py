"""The run folder (annotated.training.run_dir): one trainer at a time, found unwritable before
any work, and a metrics log that survives a crash in the middle of a line."""
import gc
import json

import pytest
from conftest import says

from annotated import train
from annotated.configs import merged
from annotated.training.run_dir import RunDir

TINY = ["--config", "copy", "--threads", "1", "copy_examples=200", "max_tokens=300",
        "max_sentence_len=64", "N=1", "d_model=16", "d_ff=32", "h=2", "d_k=8", "d_v=8",
        "log_every=1", "eval_every=1000", "ckpt_every=1000"]


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def test_a_second_trainer_on_the_same_folder_is_refused(tmp_path, capsys):
    first = RunDir(tmp_path / "run").open()            # another trainer holds the folder
    try:
        with pytest.raises(SystemExit) as exit_:
            train.main(["--run-dir", str(tmp_path / "run"), "--max-steps", "1", *TINY])
    finally:
        first.close()
    assert exit_.value.code == 1
    line = error_line(capsys)
    assert line.startswith(f"error: {tmp_path / 'run'} is in use by another training process")
    assert "choose another --run-dir" in line
    assert not list((tmp_path / "run").glob("ckpt_*"))


def test_resume_while_the_first_trainer_has_no_checkpoint_yet_says_the_folder_is_in_use(
        tmp_path, capsys):
    """Not 'no checkpoint to continue': its advice (start without --resume) would meet the
    lock."""
    first = RunDir(tmp_path / "run").open()
    try:
        with pytest.raises(SystemExit):
            train.main(["--run-dir", str(tmp_path / "run"), "--resume", "--max-steps", "1"])
    finally:
        first.close()
    line = error_line(capsys)
    assert "in use by another training process" in line and "no checkpoint yet" in line


def test_resume_beside_a_renamed_checkpoint_names_it_and_its_name(tmp_path, capsys):
    """A run's checkpoint kept as best.pt is not found by --resume: the message names the file
    and the name to give it back, not 'start a run there', which would start from nothing."""
    run = tmp_path / "run"
    train.main(["--run-dir", str(run), "--max-steps", "2", *TINY])
    (run / "ckpt_0000002.pt").rename(run / "best.pt")
    (run / "notes.pt").write_text("not a checkpoint")
    capsys.readouterr()
    with pytest.raises(SystemExit):
        train.main(["--run-dir", str(run), "--resume", "--max-steps", "3"])
    says(error_line(capsys), "no checkpoint", "best.pt", "step 2", "rename", "ckpt_0000002.pt")


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".lock").write_text("99999999\n")       # no process holds it
    train.main(["--run-dir", str(tmp_path / "run"), "--max-steps", "1", *TINY])
    says(next(line for line in capsys.readouterr().out.splitlines() if "lock" in line),
         str(tmp_path / "run"), "took over", "lock")


@pytest.mark.parametrize("lock", ["a folder", "a link"])
def test_a_lock_that_is_not_the_folders_own_file_is_named_with_its_fix(lock, tmp_path, capsys):
    (tmp_path / "run").mkdir()
    if lock == "a folder":
        (tmp_path / "run" / ".lock").mkdir()
    else:
        (tmp_path / "run" / ".lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SystemExit):
        train.main(["--run-dir", str(tmp_path / "run"), "--max-steps", "1", *TINY])
    says(error_line(capsys), str(tmp_path / "run" / ".lock"), f"is {lock}", "move it away")
    assert not (tmp_path / "elsewhere").exists()


def test_a_folder_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(SystemExit) as exit_:
        train.main(["--run-dir", str(tmp_path / "file" / "run"), "--max-steps", "1", *TINY])
    assert exit_.value.code == 1
    says(error_line(capsys), "cannot make", str(tmp_path / "file" / "run"), "Not a directory",
         "--run-dir")
    assert (tmp_path / "file").read_text() == "not a folder"


def test_a_metrics_line_cut_short_by_a_crash_is_repaired_on_resume(tmp_path, capsys):
    run = tmp_path / "run"
    train.main(["--run-dir", str(run), "--max-steps", "2", *TINY[:4],
                *merged(TINY[4:], ["ckpt_every=2"])])
    with (run / "metrics.jsonl").open("a") as f:
        f.write('{"step": 3, "split": "tr')                      # the crash, mid-line
    train.main(["--run-dir", str(run), "--resume", "--max-steps", "3"])
    says(next(line for line in capsys.readouterr().out.splitlines() if "line 4" in line),
         "metrics.jsonl", "metrics line", "dropped")
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 2, 3, 3]               # train 1, train and valid 2, train and valid 3


def test_a_resume_whose_metrics_log_is_gone_says_the_log_starts_again(tmp_path, capsys):
    run = tmp_path / "run"
    train.main(["--run-dir", str(run), "--max-steps", "2", *TINY[:4],
                *merged(TINY[4:], ["ckpt_every=2"])])
    (run / "metrics.jsonl").unlink()
    train.main(["--run-dir", str(run), "--resume", "--max-steps", "3"])
    says(next(line for line in capsys.readouterr().out.splitlines() if "missing" in line),
         "metrics.jsonl", "starts again after step 2", "not in it")
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [3, 3]


def test_a_metrics_line_edited_in_the_middle_is_refused_on_resume_not_dropped(tmp_path,
                                                                             capsys):
    """Only a last line can be a crash's; a bad line between good ones is an edit. The resume
    refuses it as the results scripts do, naming the line, and the log stays as it was."""
    run = tmp_path / "run"
    train.main(["--run-dir", str(run), "--max-steps", "2", *TINY[:4],
                *merged(TINY[4:], ["ckpt_every=2"])])
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join([lines[0], "not json at all\n", *lines[1:]]))
    before = (run / "metrics.jsonl").read_bytes()
    with pytest.raises(SystemExit):
        train.main(["--run-dir", str(run), "--resume", "--max-steps", "3"])
    says(error_line(capsys), "metrics.jsonl", "line 2", "not a metrics line",
         "restore or delete the line")
    assert (run / "metrics.jsonl").read_bytes() == before


def test_a_metrics_line_nested_past_pythons_depth_is_no_entry():
    """A damaged line is skipped as any other that is not the trainer's, not a traceback."""
    from annotated.training.run_dir import metrics_entry
    assert metrics_entry("[" * 100_000 + "]" * 100_000) is None
    assert metrics_entry('{"step": 3, "loss": 2.5}') == {"step": 3, "loss": 2.5}


@pytest.mark.parametrize("ckpt_every, stop_at, names", [
    (5, 8, ("interrupted", "steps 6 to 7", "ckpt_0000005.pt", "are lost", "--resume")),
    (6, 8, ("interrupted", "step 7 came", "ckpt_0000006.pt", "is lost", "--resume")),
    (1000, 8, ("interrupted", "no checkpoint was saved", "7 steps are lost", "ckpt_every")),
    (1000, 2, ("interrupted", "no checkpoint was saved", "one step is lost", "ckpt_every"))])
def test_a_stop_between_checkpoints_says_which_steps_are_lost(ckpt_every, stop_at, names,
                                                              tmp_path, capsys, monkeypatch):
    """Ctrl-C (or SIGTERM) at step `stop_at`: the stop line says what the newest checkpoint
    holds and which steps no checkpoint holds, one of them in the singular."""
    from annotated.training import loop
    calls, real = [], loop.train_step

    def stopped_at_step_8(*args):
        calls.append(1)
        if len(calls) == stop_at:
            raise KeyboardInterrupt
        return real(*args)
    monkeypatch.setattr(loop, "train_step", stopped_at_step_8)
    with pytest.raises(SystemExit) as stopped:
        train.main(["--run-dir", str(tmp_path / "run"), "--max-steps", "20",
                    *TINY[:-1], f"ckpt_every={ckpt_every}"])
    assert stopped.value.code == 130
    says(error_line(capsys), *names)


def test_a_stop_leaves_no_engine_alive_in_the_frames_it_carries(tmp_path, capsys, monkeypatch):
    """Under torchrun the engine holds DDP, whose last reference, dropped at interpreter exit
    after its process group, deadlocks gloo's worker thread (the stopped process never ends,
    and the others wait on it). The stop's traceback must not keep it alive."""
    from annotated.training import loop
    from annotated.training.step import Engine
    calls, real = [], loop.train_step

    def stopped_at_step_3(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)
    monkeypatch.setattr(loop, "train_step", stopped_at_step_3)
    with pytest.raises(SystemExit) as stopped:
        train.main(["--run-dir", str(tmp_path / "run"), "--max-steps", "20", *TINY[:-1]])
    assert stopped.value.code == 130 and stopped.value.__context__ is not None
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, Engine)]


def test_a_stop_just_after_a_checkpoint_is_written_still_names_it(tmp_path, capsys,
                                                                 monkeypatch):
    """The file is whole, the older ones not yet rotated away: the log says it was saved."""
    from annotated.training import loop

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(loop, "rotate", stopped)
    with pytest.raises(SystemExit):
        train.main(["--run-dir", str(tmp_path / "run"), "--max-steps", "20", *TINY[:-1],
                    "ckpt_every=3"])
    out = capsys.readouterr().out
    says(out.strip().splitlines()[-1], "step 3", "saved", "ckpt_0000003.pt", "before stopping")
    assert (tmp_path / "run" / "ckpt_0000003.pt").is_file()


def test_resume_with_a_file_for_the_run_folder_says_it_is_a_file(tmp_path, capsys):
    """Not "no checkpoint to continue; run without --resume", which then fails on the file."""
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(SystemExit) as stopped:
        train.main(["--run-dir", str(tmp_path / "metrics.jsonl"), "--resume"])
    assert stopped.value.code == 1
    says(capsys.readouterr().err.strip(), "metrics.jsonl", "is a file", "run folder")
