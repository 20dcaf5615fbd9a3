"""What the results scripts promise about the files around them: they never delete or replace
what they did not write, never put a smoke test or a training run among the committed files,
check their inputs before they make any folder, write their files all or nothing, and say in
their files what was actually done."""
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import says

from annotated import train
from annotated.base.cli import describe
from annotated.base.errors import DataError, RunDirError
from annotated.base.files import write_files
from annotated.store.checkpoint_file import atomic_save, average, checkpoints, half, load
from experiments import (install, multi30k, multi30k_budget, multi30k_metric, multi30k_paired,
                         multi30k_sweep, paper_tables, pretrained, scoring, table3_small)
from experiments.commands import check_no_trainer, start, wait_for
from experiments.folders import ROOT

RESULTS = ROOT / "results"
SHIPPED = ROOT / "annotated" / "pretrained"
TINY = ["dataset=multi30k_sample", "vocab_size=500", "N=1", "d_model=32", "d_ff=64", "h=2",
        "d_k=16", "d_v=16", "max_tokens=500"]


def run(module, *args):
    """The script's command line with these arguments (paths and numbers as text)."""
    module.main([str(a) for a in args])


def refused(module, *args, code=1, capsys) -> str:
    """Run a script that must stop with `code`; its one error line (the last line for
    argparse's usage errors), checked to carry no traceback."""
    with pytest.raises(SystemExit) as stopped:
        run(module, *args)
    assert stopped.value.code == code
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "Traceback" not in err and "error: " in lines[-1], err
    assert code == 2 or len(lines) == 1, err
    return lines[-1]


def committed_files() -> dict:
    """The committed results and the shipped model: each file's size and modification time."""
    files = [p for p in [*RESULTS.iterdir(), *SHIPPED.iterdir()] if p.is_file()]
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in files}


def everything_under(folder) -> set:
    return {p.relative_to(folder) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A tiny English->German run on the shipped sample (4 checkpoints) and its average."""
    folder = tmp_path_factory.mktemp("tiny") / "run"
    train.main(["--config", "multi30k", "--run-dir", str(folder), "--max-steps", "20",
                "--threads", "1", *TINY, "ckpt_every=5", "log_every=5", "eval_every=10"])
    atomic_save(average(checkpoints(folder)[-2:]), folder / "average.pt")
    return folder


# --- write_files: all or nothing, Ctrl-C held back -----------------------------------------------

def failing_at(real, name: str, nth: int):
    """os.replace, whose `nth` call on a file called `name` fails with EPERM."""
    calls = []

    def call(source, target, *args, **kwargs):
        if name in (os.path.basename(source), os.path.basename(target)):
            calls.append(source)
            if len(calls) == nth:
                raise PermissionError(errno.EPERM, "Operation not permitted", str(source))
        return real(source, target, *args, **kwargs)
    return call


@pytest.mark.parametrize("nth", [1, 2])     # the old file moved aside, the new one moved in
def test_results_files_stay_as_they_were_when_a_rename_fails(tmp_path, monkeypatch, nth):
    (tmp_path / "a.md").write_text("old a\n")
    (tmp_path / "b.json").write_text("old b\n")
    monkeypatch.setattr(os, "replace", failing_at(os.replace, "b.json", nth))
    with pytest.raises(OSError) as raised:
        write_files({tmp_path / "a.md": "new a\n", tmp_path / "b.json": "new b\n"})
    assert raised.value.filename == str(tmp_path / "b.json")        # the target, not a temp
    says(raised, "no file", "changed")
    assert (tmp_path / "a.md").read_text() == "old a\n"
    assert (tmp_path / "b.json").read_text() == "old b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.json"]


def test_ctrl_c_during_the_commit_of_results_files_lands_after_it(tmp_path, monkeypatch,
                                                                 ctrl_c):
    (tmp_path / "a.md").write_text("old a\n")
    (tmp_path / "b.json").write_text("old b\n")
    real, sent = os.replace, []

    def interrupted(source, target):
        if not sent:                           # Ctrl-C between the first and second rename
            sent.append(os.kill(os.getpid(), signal.SIGINT))
        return real(source, target)
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_files({tmp_path / "a.md": "new a\n", tmp_path / "b.json": "new b\n"})
    assert sent
    assert (tmp_path / "a.md").read_text() == "new a\n"
    assert (tmp_path / "b.json").read_text() == "new b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.json"]


@pytest.mark.parametrize("number, fix", [(errno.EPERM, "chattr -i -a"),
                                         (errno.EACCES, "chmod u+w"), (errno.EROFS, "read-only")])
def test_a_file_that_may_not_be_replaced_is_named_with_the_fix(tmp_path, monkeypatch, number,
                                                               fix):
    """An immutable README (chattr +i), an append-only log (chattr +a), a folder without write
    permission, a read-only mount: root passes the permission checks, so the refusal is
    simulated where it comes, naming the temporary file as the kernel does. The error names
    the file asked for, never the temporary one."""
    from annotated.base.files import atomic_open
    (tmp_path / "a.md").write_text("old a\n")

    def refused(source, target):
        raise OSError(number, os.strerror(number), str(source), None, str(target))
    monkeypatch.setattr(os, "replace", refused)

    def through_atomic_open():
        with atomic_open(tmp_path / "a.md", "w") as f:
            f.write("new a\n")
    for write in (lambda: write_files({tmp_path / "a.md": "new a\n"}), through_atomic_open):
        with pytest.raises(OSError) as error:
            write()
        line = describe(error.value)
        says(line, str(tmp_path / "a.md"), "no file was changed", fix)
        assert ".tmp" not in line
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md"]
        assert (tmp_path / "a.md").read_text() == "old a\n"


def test_results_files_that_cannot_be_written_leave_no_folder_behind(tmp_path):
    with pytest.raises(TypeError):
        write_files({tmp_path / "new" / "deep" / "a.md": "a\n", tmp_path / "new" / "b": 3.14})
    assert not (tmp_path / "new").exists()


# A results script's last step in a process of its own: write_files of new/b.json and a.md in
# FOLDER, which sends itself SIGNUM (as `kill` or `timeout` would) while the new files are
# written beside the old ones ("staging") or while they are moved in ("commit").
STOPPED_WRITE = """
import os, signal, sys
from pathlib import Path
for number in (signal.SIGTERM, signal.SIGHUP):           # as a terminal leaves them
    signal.signal(number, signal.SIG_DFL)
from annotated.base.cli import command
from annotated.base.files import write_files
folder, signum, moment = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
name = {"staging": "fsync", "commit": "replace"}[moment]

def send(*args, real=getattr(os, name), sent=[]):
    if not sent:
        sent.append(os.kill(os.getpid(), signum))
    return real(*args)

setattr(os, name, send)
command(lambda argv: write_files({folder / "new" / "b.json": "b\\n",
                                  folder / "a.md": "new a\\n"}))()
"""


@pytest.mark.parametrize("signum, moment", [(signal.SIGTERM, "staging"),
                                            (signal.SIGTERM, "commit"), (signal.SIGHUP, "commit")])
def test_sigterm_or_sighup_while_results_files_are_written(tmp_path, moment, signum):
    """SIGTERM or SIGHUP stops the write as Ctrl-C does, with the signal's own exit status:
    while the new files are being written, every old file stays as it was; once they are
    moved in, the move finishes first. No temporary file or folder is left either way."""
    (tmp_path / "a.md").write_text("old a\n")
    done = subprocess.run([sys.executable, "-c", STOPPED_WRITE, str(tmp_path), str(int(signum)),
                           moment], cwd=ROOT, capture_output=True, text=True, timeout=120)
    name = signal.Signals(signum).name
    assert (done.returncode, done.stderr) == (128 + signum, f"interrupted by {name}\n")
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    if moment == "staging":
        assert files == ["a.md"] and (tmp_path / "a.md").read_text() == "old a\n"
    else:
        assert files == ["a.md", "new", "new/b.json"]
        assert (tmp_path / "a.md").read_text() == "new a\n"


# --- the committed folders -----------------------------------------------------------------------

def smoke_tests(run_dir, model):
    """(script, its arguments) of each results script's --limit run into a committed folder."""
    return {
        "multi30k": (multi30k, ["--skip-train", "--config", "multi30k", "--run-dir", run_dir,
                                "--limit", 3, "--out-dir", RESULTS]),
        "multi30k_metric": (multi30k_metric, ["--checkpoint", model, "--limit", 10,
                                              "--out-dir", "results"]),
        "multi30k_paired": (multi30k_paired, ["--system", "a", model, 4, 0.6, "--system", "b",
                                              model, 1, 0, "--limit", 10, "--out-dir",
                                              RESULTS]),
        "pretrained": (pretrained, [model, "--limit", 8, "--out-dir", SHIPPED]),
        "table3_small": (table3_small, ["--rows", "base", "--limit", 3, "--out-dir", RESULTS,
                                        *TINY]),
        "multi30k_sweep": (multi30k_sweep, ["--limit", 2, "--out-dir", RESULTS, *TINY]),
        "multi30k_budget": (multi30k_budget, ["--device", "cpu", "--limit", 3, "--out-dir",
                                              RESULTS, *TINY]),
    }


@pytest.mark.parametrize("script", list(smoke_tests("run", "model")))
def test_a_smoke_test_never_writes_into_a_committed_folder(script, tiny_run, capsys,
                                                           monkeypatch):
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    module, args = smoke_tests(tiny_run, tiny_run / "average.pt")[script]
    before = committed_files()
    err = refused(module, *args, capsys=capsys)
    says(err, "smoke test", "--limit", "committed")
    assert committed_files() == before


def test_the_shipped_model_is_replaced_only_when_asked():
    assert pretrained.parse_args(["m.pt"]).out_dir == ROOT / "runs" / "pretrained"


@pytest.mark.parametrize("script,option", [(multi30k, "--run-dir"), (table3_small, "--runs-dir"),
                                           (multi30k_sweep, "--runs-dir"),
                                           (multi30k_budget, "--runs-dir")])
@pytest.mark.parametrize("folder", ["results/runs", "annotated/run"])
def test_a_training_run_never_lands_in_a_committed_folder(script, option, folder, tmp_path,
                                                          capsys, monkeypatch):
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    extra = ["--device", "cpu"] if script is multi30k_budget else []
    err = refused(script, option, ROOT / folder, "--out-dir", tmp_path / "out", *extra, *TINY,
                  capsys=capsys)
    assert f"{option} " in err and "committed" in err
    assert not (ROOT / folder).exists() and not (tmp_path / "out").exists()


# --- inputs before folders; an --out-dir that is no folder ---------------------------------------

def missing_inputs(tmp_path):
    """(script, arguments) whose input is missing, each with a deep --out-dir to be made."""
    out, nope = tmp_path / "new" / "deep" / "out", tmp_path / "nope"
    return {
        "multi30k, data": (multi30k, ["--data-dir", nope, "--run-dir", tmp_path / "new" / "run",
                                      "--out-dir", out, "--max-minutes", 0.01]),
        "multi30k, settings": (multi30k, ["--run-dir", tmp_path / "new" / "run", "--out-dir",
                                          out, *TINY, "N=0"]),
        "multi30k_metric": (multi30k_metric, ["--checkpoint", nope / "x.pt", "--out-dir", out]),
        "multi30k_paired": (multi30k_paired, ["--system", "a", nope / "x.pt", 4, 0.6,
                                              "--system", "b", nope / "x.pt", 4, 0.6,
                                              "--out-dir", out]),
        "pretrained": (pretrained, [nope / "x.pt", "--out-dir", out]),
        "table3_small": (table3_small, ["--rows", "base", "--data-dir", nope, "--runs-dir",
                                        tmp_path / "new" / "runs", "--out-dir", out]),
        "multi30k_sweep": (multi30k_sweep, ["--train", "--data-dir", nope, "--runs-dir",
                                            tmp_path / "new" / "runs", "--out-dir", out]),
        "multi30k_budget": (multi30k_budget, ["--train", "--device", "cpu", "--data-dir", nope,
                                              "--runs-dir", tmp_path / "new" / "runs",
                                              "--out-dir", out]),
        "paper_tables": (paper_tables, ["--reuse-timings", "--out-dir", out]),
    }


@pytest.mark.parametrize("script", list(missing_inputs(ROOT)))
def test_every_results_script_checks_its_inputs_before_making_any_folder(script, tmp_path,
                                                                         capsys, monkeypatch):
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("ANNOTATED_DATA_DIR", raising=False)
    module, args = missing_inputs(tmp_path)[script]
    refused(module, *args, capsys=capsys)
    assert everything_under(tmp_path) == set()


@pytest.mark.parametrize("target", ["a file", "/dev/null", "a broken link"])
@pytest.mark.parametrize("script", [paper_tables, multi30k_metric])
def test_an_out_dir_that_is_not_a_folder_is_refused_as_such(script, target, tmp_path,
                                                            tiny_run, capsys):
    out = tmp_path / "afile" if target == "a file" else "/dev/null"
    if target == "a file":
        (tmp_path / "afile").write_text("mine\n")
    if target == "a broken link":
        out = tmp_path / "link"
        out.symlink_to(tmp_path / "gone")
    args = ["--checkpoint", tiny_run / "average.pt"] if script is multi30k_metric else []
    err = refused(script, *args, "--out-dir", out, capsys=capsys)
    says(err, f"--out-dir {out}", *(["gone", "does not exist"] if target == "a broken link"
                                    else ["not a folder"]))
    if target == "a file":
        assert (tmp_path / "afile").read_text() == "mine\n"


@pytest.mark.parametrize("leads_to", ["a file outside", "no file yet"])
def test_a_link_in_the_out_dir_that_leads_outside_it_is_refused_before_any_work(
        leads_to, tiny_run, tmp_path, capsys):
    out, precious = tmp_path / "out", tmp_path / "precious.txt"
    out.mkdir()
    if leads_to == "a file outside":
        precious.write_text("mine\n")
    (out / "multi30k_tiny.json").symlink_to(precious)
    (out / "notes.txt").write_text("kept\n")
    (out / "inside.md").symlink_to(out / "notes.txt")        # a link inside the folder is fine
    err = refused(multi30k_metric, "--checkpoint", tiny_run / "average.pt", "--out-dir", out,
                  capsys=capsys)
    says(err, "multi30k_tiny.json", str(precious), "outside", "remove the link", "--out-dir")
    assert (precious.read_text() == "mine\n") if leads_to == "a file outside" \
        else not precious.exists()
    assert sorted(p.name for p in out.iterdir()) == ["inside.md", "multi30k_tiny.json",
                                                     "notes.txt"]


@pytest.mark.parametrize("script", [multi30k, table3_small])
def test_a_folder_named_like_a_results_file_is_refused_before_any_training(script, tmp_path,
                                                                          capsys):
    out = tmp_path / "out"
    (out / "multi30k_tiny.json").mkdir(parents=True)
    args = (["--run-dir", tmp_path / "run", "--max-minutes", 0.05, *TINY]
            if script is multi30k else ["--rows", "base", "--runs-dir", tmp_path / "runs"])
    err = refused(script, *args, "--out-dir", out, capsys=capsys)
    says(err, "multi30k_tiny.json", "not a file", "move it away", "--out-dir")
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


def test_a_file_given_as_the_run_to_score_is_named_a_file(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine\n")
    err = refused(multi30k, "--skip-train", "--run-dir", tmp_path / "notes.txt", "--out-dir",
                  tmp_path / "out", capsys=capsys)
    says(err, str(tmp_path / "notes.txt"), "is a file, not a folder", "--run-dir")


# --- experiments.multi30k: a run is trained once, and scored as it was trained -----------------------

def test_training_again_into_a_run_folder_that_holds_a_run_is_refused(tiny_run, tmp_path, capsys):
    shutil.copytree(tiny_run, tmp_path / "run")
    before = everything_under(tmp_path / "run")
    err = refused(multi30k, "--run-dir", tmp_path / "run", "--out-dir", tmp_path / "out",
                  "--max-minutes", 0.05, *TINY, capsys=capsys)
    says(err, str(tmp_path / "run"), "already holds", "--skip-train")
    assert everything_under(tmp_path / "run") == before and not (tmp_path / "out").exists()


def test_a_run_stopped_before_its_first_checkpoint_may_be_trained_again(tiny_run, tmp_path):
    """It left only its metrics log (and its lock): nothing --skip-train or --resume could
    use, so training afresh is the way on, and the trainer keeps that log aside."""
    (tmp_path / "run").mkdir()
    shutil.copy(tiny_run / "metrics.jsonl", tmp_path / "run")
    (tmp_path / "run" / ".lock").write_text("")
    multi30k.check_fresh_run(tmp_path / "run", "multi30k", TINY, None)


@pytest.mark.parametrize("unused", [["--max-minutes", "999"], ["--nproc", "7"], ["P_drop=0.9"],
                                    ["target_lang=fr"]])
def test_skip_train_refuses_settings_it_would_not_apply(unused, tiny_run, tmp_path, capsys):
    err = refused(multi30k, "--skip-train", "--run-dir", tiny_run, "--out-dir", tmp_path / "out",
                  *unused, code=2, capsys=capsys)
    says(err, "--skip-train", unused[0], "leave it out")
    assert not (tmp_path / "out").exists()


def test_skip_train_files_the_run_under_its_own_preset(tiny_run, tmp_path, capsys):
    shutil.copytree(tiny_run, tmp_path / "run")
    (tmp_path / "run" / "train.json").write_text(json.dumps(
        {"wall_minutes": 0.1, "command": "python -m annotated.train --config multi30k_tiny "
                                         "--run-dir run " + " ".join(TINY)}))
    assert multi30k.trained_preset(tmp_path / "run", None) == "multi30k_tiny"
    err = refused(multi30k, "--skip-train", "--config", "multi30k", "--run-dir", tmp_path / "run",
                  "--out-dir", tmp_path / "out", capsys=capsys)
    says(err, "--config multi30k_tiny")
    assert not (tmp_path / "out").exists()


def test_a_train_json_that_names_another_model_than_the_run_holds_is_refused(tiny_run,
                                                                             tmp_path, capsys):
    """An edited train.json would file the run's results under a preset it was not."""
    shutil.copytree(tiny_run, tmp_path / "run")
    (tmp_path / "run" / "train.json").write_text(json.dumps(
        {"wall_minutes": 0.1, "command": "python -m annotated.train --config multi30k_tiny "
                                         "--run-dir run N=1"}))
    err = refused(multi30k, "--skip-train", "--run-dir", tmp_path / "run", "--out-dir",
                  tmp_path / "out", capsys=capsys)
    says(err, str(tmp_path / "run" / "train.json"), "--config multi30k_tiny",
         "in the checkpoint", "edited", "restore it")
    assert not (tmp_path / "out").exists()


def test_skip_train_refuses_to_guess_the_preset_of_a_run_shaped_like_none(tiny_run, tmp_path,
                                                                          capsys):
    """No train.json, and a model of neither preset's shape: the files are not named after
    the default preset, as if they held its results."""
    err = refused(multi30k, "--skip-train", "--run-dir", tiny_run, "--out-dir", tmp_path / "out",
                  capsys=capsys)
    says(err, str(tiny_run), "no train.json", "N=1", "multi30k, multi30k_tiny", "--config")
    assert not (tmp_path / "out").exists()


def test_a_run_still_training_is_refused_before_its_checkpoints_are_averaged(tiny_run,
                                                                             tmp_path, capsys):
    """--skip-train scores a run's checkpoints; a trainer still at work there rotates them
    away meanwhile. Refused first, naming the trainer, as a second trainer would be."""
    import fcntl
    shutil.copytree(tiny_run, tmp_path / "run")
    with open(tmp_path / "run" / ".lock", "w") as lock:
        lock.write("4242\n")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX)
        err = refused(multi30k, "--skip-train", "--run-dir", tmp_path / "run", "--out-dir",
                      tmp_path / "out", "--limit", 3, capsys=capsys)
    says(err, str(tmp_path / "run"), "in use by a training process", "4242")
    assert not (tmp_path / "run" / "average.pt").exists() or \
        (tmp_path / "run" / "average.pt").read_bytes() == (tiny_run / "average.pt").read_bytes()


def test_a_copy_task_checkpoint_is_called_one_by_the_pretrained_script(tmp_path, capsys):
    train.main(["--config", "copy", "--run-dir", str(tmp_path / "copy"), "--max-steps", "1",
                "--threads", "1", "ckpt_every=1"])
    err = refused(pretrained, checkpoints(tmp_path / "copy")[-1], "--out-dir", tmp_path / "out",
                  "--limit", 8, capsys=capsys)
    says(err, "a copy-task model", "English->German on Multi30k")
    assert "trained on copy" not in err


def test_a_model_of_another_corpus_is_never_scored_as_multi30k(tmp_path, capsys):
    """A copy-task run would be scored on test2016 and filed as a Multi30k result, by
    multi30k --skip-train or by multi30k_metric."""
    train.main(["--config", "copy", "--run-dir", str(tmp_path / "copy"), "--max-steps", "2",
                "--threads", "1", "ckpt_every=2"])
    err = refused(multi30k, "--skip-train", "--run-dir", tmp_path / "copy", "--out-dir",
                  tmp_path / "out", "--limit", 3, capsys=capsys)
    says(err, "dataset=copy", "annotated.translate", "annotated.evaluate")
    newest = checkpoints(tmp_path / "copy")[-1]
    err = refused(multi30k_metric, "--checkpoint", newest, "--out-dir", tmp_path / "out",
                  "--limit", 10, capsys=capsys)
    says(err, str(newest), "dataset=copy", "annotated.evaluate")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text,names", [
    ('{"wall_minutes": 60.1, "comm', ["not valid JSON"]),
    ('{"wall_minutes": 60.1}', ["command", "missing"]),
    ('{"wall_minutes": NaN, "command": "python -m annotated.train"}', ["wall_minutes", "nan"])])
def test_a_damaged_train_json_is_one_line_before_the_run_is_scored(text, names, tiny_run,
                                                                    tmp_path, capsys):
    shutil.copytree(tiny_run, tmp_path / "run")
    (tmp_path / "run" / "train.json").write_text(text)
    before = everything_under(tmp_path / "run")
    err = refused(multi30k, "--skip-train", "--run-dir", tmp_path / "run", "--out-dir",
                  tmp_path / "out", "--limit", 3, capsys=capsys)
    says(err, str(tmp_path / "run" / "train.json"), *names, "delete it")
    assert everything_under(tmp_path / "run") == before and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_results_name_the_number_of_checkpoints_actually_averaged(tiny_run, tmp_path):
    """The results name the checkpoints averaged, the sentences scored and the corpus trained on."""
    shutil.copytree(tiny_run, tmp_path / "run")
    found = len(checkpoints(tmp_path / "run"))
    run(multi30k, "--skip-train", "--config", "multi30k", "--average", 50, "--run-dir",
        tmp_path / "run", "--out-dir", tmp_path / "out", "--limit", 3)
    result = json.loads((tmp_path / "out" / "multi30k.json").read_text())
    md = (tmp_path / "out" / "multi30k.md").read_text()
    assert len(result["average"]["checkpoints"]) == found
    assert f"average of {found}" in next(iter(result["test2016"])) and "of 50" not in md
    assert "## the test split of multi30k_sample (the first 3 of the 300 sentences)" in md
    title = md.splitlines()[0]                          # the corpus trained on, not Multi30k
    assert "dataset=multi30k_sample" in title and "Multi30k" not in title
    assert "published" not in md                  # nor beside the literature's test2016 scores


# --- experiments.table3_small: its own folders only, its rows' own budget ----------------------------

@pytest.mark.parametrize("mine", [["notes.txt"], ["ckpt_0000020.pt"],
                                  [table3_small.ROW_RECORD, "notes.txt"]])
def test_table3_small_never_deletes_a_row_folder_it_did_not_make(mine, tiny_run, tmp_path,
                                                                 capsys):
    row = tmp_path / "runs" / "base"
    row.mkdir(parents=True)
    for name in mine:
        shutil.copy(tiny_run / "ckpt_0000020.pt", row / name)
    before = {p.name: p.read_bytes() for p in row.iterdir()}
    err = refused(table3_small, "--runs-dir", tmp_path / "runs", "--out-dir", tmp_path / "out",
                  "--rows", "base", "--seeds", 1, "--steps", 2, "--limit", 3, *TINY,
                  capsys=capsys)
    says(err, "refusing", str(row), "did not write")
    assert {p.name: p.read_bytes() for p in row.iterdir()} == before
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_table3_small_trains_a_row_afresh_in_the_folder_it_made(tmp_path, capsys):
    args = ["--runs-dir", tmp_path / "runs", "--out-dir", tmp_path / "out", "--rows", "base",
            "--seeds", 1, "--limit", 3, *TINY]
    run(table3_small, "--steps", 2, *args)
    capsys.readouterr()
    run(table3_small, "--steps", 3, *args)
    says(next(line for line in capsys.readouterr().out.splitlines() if "earlier run" in line),
         "row base", "--reuse was not given", "fresh run")
    assert sorted(p.name for p in (tmp_path / "runs" / "base").glob("ckpt_*")) == \
        ["ckpt_0000003.pt"]
    md = (tmp_path / "out" / "table3_small.md").read_text()
    assert ", 3 steps, then the row's change" in md and "the first 3 of the 300 sentences" in md


def test_table3_small_states_the_budget_its_rows_were_trained_with(tmp_path):
    shutil.copy(RESULTS / "table3_small.json", tmp_path)
    run(table3_small, "--rows", "--steps", 7, "--out-dir", tmp_path)
    md = (tmp_path / "table3_small.md").read_text()
    assert ", 2000 steps, then the row's change" in md and "7 steps" not in md
    rows = json.loads((tmp_path / "table3_small.json").read_text())
    first = next(iter(rows))
    rows[first]["command"] = rows[first]["command"].replace("--max-steps 2000", "--max-steps 500")
    (tmp_path / "table3_small.json").write_text(json.dumps(rows))
    run(table3_small, "--rows", "--out-dir", tmp_path)
    md = (tmp_path / "table3_small.md").read_text()
    assert "the steps of its row (column steps)" in md and "| minutes | steps |" in md
    assert md.count(" | 2000 |") == len(rows) - 1 and md.count(" | 500 |") == 1


def test_table3_small_states_the_model_its_rows_were_trained_as(tmp_path):
    """Rows trained with the user's key=value (here d_ff=64): the text says so, not SMALL."""
    rows = json.loads((RESULTS / "table3_small.json").read_text())
    for record in rows.values():
        record["command"] = record["command"].replace("d_ff=512", "d_ff=64")
    (tmp_path / "table3_small.json").write_text(json.dumps(rows))
    run(table3_small, "--rows", "--out-dir", tmp_path)
    line = next(line for line in (tmp_path / "table3_small.md").read_text().splitlines()
                if "Every run" in line)
    assert "d_ff=64" in line and "d_ff=512" not in line


def committed_rows(**change) -> str:
    """results/table3_small.json with `change` made to its first row."""
    rows = json.loads((RESULTS / "table3_small.json").read_text())
    rows[next(iter(rows))].update(change)
    return json.dumps(rows)


def added_row(name: str) -> str:
    """results/table3_small.json with a copy of its first row under `name`."""
    rows = json.loads((RESULTS / "table3_small.json").read_text())
    rows[name] = dict(rows[next(iter(rows))])
    return json.dumps(rows)


@pytest.mark.parametrize("content,names", [
    ('{"base": ', ["is not valid JSON"]), ("[]", ["holds a JSON list"]),
    ("[" * 100_000 + "]" * 100_000, ["nests", "deeper"]),
    ('{"base": {}}', ["base", "not a non-empty object"]),
    ('{"base": {"paper_row": "base"}}', ["base.paper_ppl", "missing"]), ("{}", ["holds no rows"]),
    (committed_rows(bleu=float("nan")), ["base.bleu", "nan", "0 <= BLEU <= 100"]),
    (committed_rows(ppl=-3.0), ["base.ppl", "-3.0", ">= 1"]),
    (committed_rows(lowercase_bleu=-1), ["base.lowercase_bleu", "-1"]),
    (committed_rows(minutes="ten"), ["base.minutes", "'ten'"]),
    (committed_rows(bleu=99.0), ["base.bleu", "99.0", "lowercase_bleu", "only adds matches"]),
    (committed_rows(paper_row="A1"), ["'base'", "paper_row 'A1'"]),
    (committed_rows(signature="nrefs:1|case:mixed|eff:no|tok:intl|smooth:exp|version:2.6.0"),
     ["base.signature", "tok:intl", "tok:13a"]),
    (added_row("Z: bogus"), ["'Z: bogus'", "none of this script's rows", "base, seed N"])])
def test_a_damaged_table3_small_json_is_one_error_naming_it(content, names, tmp_path, capsys):
    (tmp_path / "table3_small.json").write_text(content)
    err = refused(table3_small, "--rows", "--out-dir", tmp_path, capsys=capsys)
    says(err, tmp_path / "table3_small.json", *names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table3_small.json"]


# --- experiments.multi30k_paired: a system's beam and alpha as --beam-size and --alpha ---------------

@pytest.mark.parametrize("beam,alpha,names", [
    ("100000000000", "0.6", ("beam_size = 100000000000", "1 <= beam_size <= 1,000")),
    ("0", "0.6", ("beam_size = 0",)),
    ("2.5", "0.6", ("beam_size = '2.5'", "not an int")),
    ("4", "nan", ("alpha = nan", "finite", "0 <= alpha <= 10")),
    ("4", "inf", ("alpha = inf", "finite")),
    ("4", "-1", ("alpha = -1.0",))])
def test_every_system_beam_and_alpha_follow_the_beam_size_and_alpha_rules(beam, alpha, names,
                                                                          capsys):
    err = refused(multi30k_paired, "--system", "A", "a.pt", beam, alpha, "--system", "B", "b.pt",
                  4, 0.6, code=2, capsys=capsys)
    says(err, "--system A", *names)


def test_a_system_whose_checkpoint_is_missing_is_named_by_its_system(tmp_path, capsys):
    err = refused(multi30k_paired, "--system", "A", tmp_path / "nofile.pt", 4, 0.6, "--system",
                  "B", SHIPPED / "multi30k_en_de.pt", 4, 0.6, "--out-dir", tmp_path / "out",
                  capsys=capsys)
    says(err, "--system A", str(tmp_path / "nofile.pt"), "no file", "checkpoint file")


# --- experiments.pretrained: what the name and the README say, and only its own files ----------------

def foreign_checkpoint(kind: str, model, folder):
    """A checkpoint the shipped file's name or README would misdescribe."""
    path = folder / f"{kind}.pt"
    if kind == "float16":
        atomic_save(half(model), path)
    else:
        payload = load(model)
        atomic_save({**payload, "config": {**payload["config"], "target_lang": "fr"}}, path)
    return path


@pytest.mark.parametrize("kind,says", [("en_fr", "holds a model of English->French"),
                                       ("float16", "holds float16 weights")])
def test_pretrained_ships_only_what_its_name_and_readme_say(kind, says, tiny_run, tmp_path,
                                                           capsys):
    model = foreign_checkpoint(kind, tiny_run / "average.pt", tmp_path)
    err = refused(pretrained, model, "--limit", 8, "--out-dir", tmp_path / "out", capsys=capsys)
    assert says in err and not (tmp_path / "out").exists()


def test_a_model_of_the_sample_never_replaces_the_shipped_one(tiny_run, capsys):
    before = committed_files()
    err = refused(pretrained, tiny_run / "average.pt", "--out-dir", SHIPPED, capsys=capsys)
    says(err, "multi30k_sample", "the full Multi30k")
    assert committed_files() == before


@pytest.mark.parametrize("mine", ["README.md", "multi30k_en_de.pt"])
def test_pretrained_never_replaces_files_it_did_not_write(mine, tiny_run, tmp_path, capsys):
    out = tmp_path / "myproject"
    out.mkdir()
    (out / mine).write_bytes(b"# mine\n")
    err = refused(pretrained, tiny_run / "average.pt", "--limit", 8, "--out-dir", out,
                  capsys=capsys)
    says(err, f"--out-dir {out}", mine)
    assert sorted(p.name for p in out.iterdir()) == [mine]
    assert (out / mine).read_bytes() == b"# mine\n"


def test_pretrained_rewrites_its_own_files_and_says_what_it_compared(tiny_run, tmp_path):
    for _ in range(2):                     # the second run replaces what the first wrote
        run(pretrained, tiny_run / "average.pt", "--limit", 8, "--out-dir", tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "On the first 8 of the 300 sentences of test2016" in readme
    assert "validation sweep" not in readme and "multi30k_sample" in readme


SWEPT = ("runs/sweep/tiny_2proc_p02_v6k/average.pt", 11152,          # the shipped model's run
         dict(N=4, d_model=128, d_ff=256, h=4, P_drop=0.2, vocab_size=6000, dataset="multi30k"))


@pytest.mark.parametrize("change,names", [
    (lambda r: r["candidates"]["tiny"]["rows"][0].update(lowercase_bleu=float("nan")),
     ["candidates.tiny.rows[0].lowercase_bleu", "nan"]),
    (lambda r: r["candidates"]["tiny_2proc"]["rows"][1].update(lowercase_bleu=-3),
     ["candidates.tiny_2proc.rows[1].lowercase_bleu", "-3"]),
    (lambda r: r["best"].pop("candidate"), ["best.candidate", "missing"])])
def test_the_shipped_models_readme_is_never_written_from_a_damaged_sweep_record(
        change, names, tmp_path, monkeypatch):
    """Which sweep candidate the shipped model is comes from results/multi30k_sweep.json:
    read checked, before any work, not taken as 'not from the sweep' when damaged."""
    sweep = tmp_path / "multi30k_sweep.json"
    record = json.loads(pretrained.SWEEP.read_text())
    change(record)
    sweep.write_text(json.dumps(record))
    monkeypatch.setattr(pretrained, "SWEEP", sweep)
    with pytest.raises(DataError) as error:
        pretrained.provenance(*SWEPT)
    says(error, str(sweep), *names, "python -m experiments.multi30k_sweep")


def test_the_shipped_models_readme_names_its_sweep_candidate():
    assert pretrained.provenance(*SWEPT) in (SHIPPED / "README.md").read_text()


# --- experiments.multi30k_metric: says what a smoke test scored --------------------------------------

def test_a_smoke_test_says_it_scored_the_first_sentences(tiny_run, tmp_path):
    run(multi30k_metric, "--checkpoint", tiny_run / "average.pt", "--limit", 10, "--out-dir",
        tmp_path)
    md = (tmp_path / "multi30k_metric.md").read_text()
    assert "translated the first 10 of the 300 sentences of test2016" in md


# --- experiments.paper_tables: reused timings are Table 1's, and say where they come from ------------

@pytest.mark.parametrize("content,says", [("[]", "holds a JSON list"),
                                          ("{}", "has no number of threads"),
                                          ('{"threads": 1, "rows": [1, 2]}', "has a row 1"),
                                          ("NaN", "holds a JSON float"),
                                          ('{"threads": 1, "rows": []}', "has no rows"),
                                          ('{"threads": 1, "rows": [{"n": 8, "d": 4, '
                                           '"attention_s": -1.0, "recurrent_s": 1}]}',
                                           "has rows[0].attention_s = -1.0, not seconds > 0")])
def test_reused_timings_must_be_table1s(content, says, tmp_path, capsys):
    (tmp_path / "table1_timings.json").write_text(content)
    err = refused(paper_tables, "--reuse-timings", "--out-dir", tmp_path, capsys=capsys)
    assert f"{tmp_path / 'table1_timings.json'} {says}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table1_timings.json"]


def test_reused_quick_timings_are_never_published_into_the_committed_results(tmp_path, capsys,
                                                                              monkeypatch):
    """--quick is refused for results/, and so are its timings reused: the grid says which."""
    quick = [{"n": n, "d": d, "attention_s": 1.0, "recurrent_s": 1.0}
             for n in paper_tables.QUICK_GRID[0] for d in paper_tables.QUICK_GRID[1]]
    (tmp_path / "table1_timings.json").write_text(json.dumps({"threads": 1, "rows": quick}))
    monkeypatch.setattr(paper_tables, "committed_folder", lambda folder: folder)  # as results/
    err = refused(paper_tables, "--reuse-timings", "--out-dir", tmp_path, capsys=capsys)
    says(err, str(tmp_path / "table1_timings.json"), "grid", "without --reuse-timings")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table1_timings.json"]


def test_a_quick_grids_table_says_its_crossovers_are_rough(tmp_path):
    """--quick times a small grid in seconds: on a busy machine its crossovers move, and its
    table says so; the full grid's does not."""
    rows = [{"n": n, "d": d, "attention_s": 1.0, "recurrent_s": 1.0}
            for n in paper_tables.QUICK_GRID[0] for d in paper_tables.QUICK_GRID[1]]
    for timings, rough in (({"threads": 1, "rows": rows}, True),
                           (json.loads((RESULTS / "table1_timings.json").read_text()), False)):
        text = "\n".join(paper_tables.table1_markdown(timings))
        assert ("--quick" in text and "busy" in text) == rough, text


def test_reused_timings_say_where_and_with_what_they_were_measured(tmp_path):
    timings = json.loads((RESULTS / "table1_timings.json").read_text())
    (tmp_path / "table1_timings.json").write_text(json.dumps(
        {**timings, "threads": 7, "torch": "1.0-then"}))
    run(paper_tables, "--reuse-timings", "--out-dir", tmp_path)
    md = (tmp_path / "paper_tables.md").read_text()
    assert f"(torch 1.0-then, 7 threads; Table 1 timings reused from " \
           f"`{tmp_path / 'table1_timings.json'}`)" in md
    assert "results/table1_timings.json" not in md


# --- experiments.multi30k_sweep: its own options, and damaged records --------------------------------

def test_a_sweep_with_no_runs_says_to_train_them(tmp_path, capsys):
    err = refused(multi30k_sweep, "--runs-dir", tmp_path / "runs", "--limit", 2, "--out-dir",
                  tmp_path / "out", *TINY, capsys=capsys)
    assert "--skip-train" not in says(err, "--train")
    assert "--run-dir" not in err and not (tmp_path / "out").exists()


KEY = {"newest": "ckpt_0000020.pt", "sentences": 2}


def sweep_entry(**change) -> dict:
    """A val_sweep.json with one row, `change` made to it."""
    row = dict(average=1, val_ppl=30.5, beam=4, alpha=0.6, lowercase_bleu=20.1, bleu=19.8)
    return {"key": KEY, "entry": {"preset": "multi30k_tiny", "overrides": [], "steps": 20,
                                  "minutes": 0.1, "config": {}, "rows": [{**row, **change}]}}


@pytest.mark.parametrize("content", ['{"key": ', json.dumps({"key": KEY}), "[]", "NaN",
                                     json.dumps({"key": KEY, "entry": {}}),
                                     json.dumps({"key": KEY, "entry": {"rows": [{}]}}),
                                     json.dumps(sweep_entry(bleu=-2)),
                                     json.dumps(sweep_entry(val_ppl=float("nan")))])
def test_a_damaged_val_sweep_json_is_scored_again(content, tmp_path, capsys):
    kept = tmp_path / "val_sweep.json"
    kept.write_text(content)
    assert scoring.kept_scores(kept, KEY) == {}
    says(capsys.readouterr().out.strip(), "val_sweep.json", "damaged", "scoring")


def test_a_whole_val_sweep_json_is_kept(tmp_path, capsys):
    kept = tmp_path / "val_sweep.json"
    kept.write_text(json.dumps(sweep_entry()))
    assert list(scoring.kept_scores(kept, KEY)) == [(1, 4, 0.6)]
    assert capsys.readouterr().out == ""


def test_a_damaged_sweep_record_is_an_error_only_when_it_holds_what_is_gone(tiny_run, tmp_path,
                                                                            capsys):
    record = tmp_path / "multi30k_sweep.json"
    record.write_text("{")
    runs = {"here": tiny_run}
    assert multi30k_sweep.recorded_candidates(record, runs) == {}
    assert "is damaged" in capsys.readouterr().out
    with pytest.raises(DataError) as error:
        multi30k_sweep.recorded_candidates(record, {**runs, "gone": tmp_path / "gone"})
    says(error, "only scores", "gone (gone)")


# --- experiments.multi30k_budget: a GPU script -------------------------------------------------------

def test_the_budget_script_without_a_gpu_refuses_unless_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    err = refused(multi30k_budget, "--train", "--runs-dir", tmp_path / "runs", "--out-dir",
                  tmp_path / "out", *TINY, capsys=capsys)
    assert err.startswith("error: no CUDA GPU here") and "--device cpu" in err
    assert everything_under(tmp_path) == set()


def test_the_budget_script_scores_no_run_short_of_its_steps(tmp_path, capsys, monkeypatch):
    """A run stopped part way (--max-minutes) is not scored as if it were done: one line
    naming each run's step and the fix, and no results."""
    monkeypatch.setattr(multi30k_budget, "CANDIDATES", {"a": ["P_drop=0.1"]})
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    runs = tmp_path / "runs"
    run(multi30k_budget, "--train", "--device", "cpu", "--nproc", 1, "--runs-dir", runs,
        "--max-minutes", 1e-9, "--limit", 3, "--out-dir", tmp_path / "out", *TINY,
        "train_steps=4")
    capsys.readouterr()
    err = refused(multi30k_budget, "--device", "cpu", "--runs-dir", runs, "--limit", 3,
                  "--out-dir", tmp_path / "out", *TINY, "train_steps=4", capsys=capsys)
    says(err, "a_en_de at step 1", "a_en_fr at step 0", "train_steps=4", "--train")
    assert not (tmp_path / "out").exists()


def test_the_budget_script_takes_nproc_only_for_the_cpu_max_minutes_only_to_train(tmp_path,
                                                                                 capsys):
    err = refused(multi30k_budget, "--nproc", 2, "--runs-dir", tmp_path / "runs", code=2,
                  capsys=capsys)
    says(err, "--nproc", "--device cpu")
    err = refused(multi30k_budget, "--max-minutes", 5, "--device", "cpu", "--runs-dir",
                  tmp_path / "runs", code=2, capsys=capsys)
    says(err, "--max-minutes", "--train")
    assert everything_under(tmp_path) == set()


# --- experiments.install: the README's two commands ---------------------------------------------

@pytest.mark.parametrize("edit", [("# (1) install", "# 1. install"), ("# (2)", "# two")])
def test_install_without_a_readme_command_is_one_line_before_any_work(edit, tmp_path, capsys,
                                                                     monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text().replace(*edit))
    monkeypatch.setattr(install, "README", readme)
    monkeypatch.setattr(install, "LOG", tmp_path / "runs" / "log.txt")
    err = refused(install, "--out-dir", tmp_path / "out", capsys=capsys)
    says(err, readme, edit[0].split()[1], "git checkout -- README.md")
    assert everything_under(tmp_path) == {readme.relative_to(tmp_path)}


# --- the budget's trainers: none outlives the script, none is written over ------------------------

BUDGET_CALL = ["--train", "--device", "cpu", "--nproc", "1", "--only", "published", "--limit", "3",
               *TINY, "train_steps=100000"]


def trainer_at_work(run) -> bool:
    try:
        check_no_trainer(run)
    except RunDirError:
        return True
    return False


def until(condition, seconds: float) -> bool:
    """Whether `condition()` became true within `seconds`."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.2)
    return True


def end_trainer(run) -> None:
    """Kill a trainer still at work in `run` (the pid its lock names): a failing test leaves
    none behind."""
    if trainer_at_work(run):
        os.kill(int((run / ".lock").read_text()), signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 is followed on Linux")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_stopped_budget_script_leaves_no_trainer_and_the_next_call_keeps_its_log(signum,
                                                                                   tmp_path):
    runs = tmp_path / "runs"
    call = [sys.executable, "-m", "experiments.multi30k_budget", *BUDGET_CALL, "--runs-dir",
            str(runs), "--out-dir", str(tmp_path / "out")]
    run, log = runs / "published_en_de", runs / "published_en_de.log"
    script = subprocess.Popen(call, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert until(lambda: trainer_at_work(run), 240), "the trainer did not start"
        script.send_signal(signum)
        _, err = script.communicate(timeout=120)
        if signum == signal.SIGTERM:
            assert (script.returncode, err.splitlines()[-1]) == (143, "interrupted by SIGTERM")
            assert not trainer_at_work(run)               # it waited for its trainer to end
        assert until(lambda: not trainer_at_work(run), 60), "the trainer outlived the script"
    finally:
        script.kill()
        script.wait(timeout=60)
        end_trainer(run)
    first = log.read_text()
    again = subprocess.run([*call, "--max-minutes", "1e-9"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    text = log.read_text()
    assert text.startswith(first) and text.count("\n=== ") == 2 and "--max-minutes" in text


def test_a_run_folder_a_trainer_is_at_work_in_is_refused_before_its_log_is_touched(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(multi30k_budget.torch.cuda, "is_available", lambda: False)
    run = tmp_path / "runs" / "published_en_de"
    run.mkdir(parents=True)
    with open(run / ".lock", "w") as lock:         # what a trainer holds while at work
        lock.write("4242\n")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX)
        err = refused(multi30k_budget, *BUDGET_CALL, "--runs-dir", tmp_path / "runs",
                      "--out-dir", tmp_path / "out", capsys=capsys)
    says(err, str(run), "pid 4242", "kill 4242")
    assert sorted(p.name for p in run.parent.iterdir()) == ["published_en_de"]


def test_each_training_call_is_appended_to_its_log(tmp_path):
    run = tmp_path / "runs" / "a"
    for word in ("first", "second"):
        wait_for({"a": start("a", run, ["python", "-c", f"print('{word}')"])}, {"a": run})
    text = (tmp_path / "runs" / "a.log").read_text()
    assert text.count("\n=== ") == 2 and text.index("first") < text.index("second")


def test_the_budget_report_names_the_settings_every_run_had():
    """The user's key=value take the place of the budget's and the candidate's own."""
    assert multi30k_budget.own_settings("p02_v6k", []) == "P_drop=0.2 vocab_size=6000"
    assert multi30k_budget.own_settings("p02_v6k", ["P_drop=0.1"]) == "vocab_size=6000"
    assert "P_drop" not in multi30k_budget.own_settings("published", ["P_drop=0.1"])


def test_a_run_is_never_scored_under_settings_it_was_not_trained_with(tiny_run):
    """The sweep and the budget file each run's scores with its config: the one its checkpoint
    holds, and other settings given now are refused rather than recorded."""
    newest = checkpoints(tiny_run)[-1]
    trained = scoring.config_from(load(newest), newest)
    assert scoring.trained_as(tiny_run, newest, trained.override(log_every=7)) == trained
    with pytest.raises(DataError) as error:
        scoring.trained_as(tiny_run, newest, trained.override(N=3, d_model=64, h=2))
    says(error, str(tiny_run), "N=1 there, 3 now", "d_model", "--train")


def test_a_run_on_the_shipped_sample_never_fills_the_committed_results(tiny_run, tmp_path,
                                                                       capsys, monkeypatch):
    """Its scores are on the sample's test split, not test2016: chapter 8 would read them as
    Multi30k's."""
    monkeypatch.setattr(multi30k, "committed_folder", lambda folder: folder)   # as results/
    err = refused(multi30k, "--skip-train", "--config", "multi30k", "--run-dir", tiny_run,
                  "--out-dir", tmp_path / "results", capsys=capsys)
    says(err, "dataset=multi30k_sample", str(tmp_path / "results"), "scratch folder")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("argv", [["--steps", "2"], ["max_extra=2"]])
def test_rows_trained_otherwise_never_join_the_committed_table3(argv, capsys):
    """One row of another budget or settings would sit among rows trained alike."""
    before = {p.name: p.read_bytes() for p in RESULTS.iterdir()}
    with pytest.raises(SystemExit) as exit_:
        table3_small.main(["--rows", "A1", "--out-dir", str(RESULTS), *argv])
    says(capsys.readouterr().err.strip(), "--out-dir", "'base'", "2,000 steps", "A1",
         "trained alike", "write elsewhere")
    assert exit_.value.code == 1
    assert {p.name: p.read_bytes() for p in RESULTS.iterdir()} == before
