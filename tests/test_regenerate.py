"""chapters/regenerate.py's arguments and checks, mostly with nothing executed: every way to ask
for something it cannot do as asked is refused in one line before any chapter runs, a chapter
that fails in full mode is one line naming it, and a stop while one runs is one line too."""
import importlib.util
import subprocess
from pathlib import Path

import pytest
from conftest import says

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def regenerate(monkeypatch):
    """The script as a module, with the two ways it runs a chapter recorded, not run."""
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "chapters" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ran = []
    monkeypatch.setattr(module, "refresh", lambda nb, chosen: module.ran.append(nb.name))

    def executed(command, **kwargs):
        module.ran.append(Path(command[-1]).name)
        return subprocess.CompletedProcess(command, module.exit_code)
    module.exit_code = 0
    monkeypatch.setattr(module, "executed", executed)
    module.fetched = []                   # Multi30k fetched into the cache: recorded, not done
    monkeypatch.setattr(module, "corpus_files", lambda *args, **kw: module.fetched.append(1))
    monkeypatch.delenv("ANNOTATED_DATA_DIR", raising=False)
    return module


def refusal(regenerate, argv, capsys) -> tuple[int, str]:
    """The exit code and the one line of a refused command (argparse's follows its usage)."""
    with pytest.raises(SystemExit) as stopped:
        regenerate.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return stopped.value.code, err.strip().splitlines()[-1]


# Arguments that cannot be done as asked: the exit code (2 for argparse's refusals) and words.
REFUSED = {
    "--cells with other chapters": (["--cells", "08:1,2", "05"], 2,
                                    "give no chapter numbers with it (here 05)"),
    "--cells with --listings": (["--cells", "08:1", "--listings"], 2, "give one"),
    "a negative cell index": (["--cells", "01:999,-5"], 2, "cell indices count from 0, got -5"),
    "a cell index past the end": (["--cells", "01:1,999"], 1,
                                  "01_scaled_dot_product_attention.ipynb has cells 0 to"),
    "a markdown cell": (["--cells", "01:0"], 1, "cell 0 is a markdown cell"),
    "an unknown chapter": (["05", "99"], 1, "no chapter 99 in chapters/"),
    "an unknown chapter for --cells": (["--cells", "8:1"], 1, "no chapter 8 in chapters/"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_arguments_it_cannot_follow_are_refused_before_any_chapter_runs(regenerate, capsys,
                                                                        case):
    argv, expected, words = REFUSED[case]
    code, message = refusal(regenerate, argv, capsys)
    assert code == expected and words in message
    assert regenerate.ran == []


# ANNOTATED_DATA_DIR as set up in tmp_path, and whether full mode may start with it.
DATA_LOCATIONS = {"a missing folder": ("missing", None, False),
                  "a folder without Multi30k": ("empty", "", False),
                  "the dataset's folder": ("data", "", True),
                  "the folder holding multi30k/": ("data", "multi30k", True)}


@pytest.mark.parametrize("case", DATA_LOCATIONS)
def test_full_mode_checks_the_data_location_before_any_chapter_runs(regenerate, tmp_path,
                                                                   monkeypatch, capsys, case):
    name, dataset, usable = DATA_LOCATIONS[case]
    if dataset is not None:
        (tmp_path / name / dataset).mkdir(parents=True, exist_ok=True)
        if usable:
            for file in regenerate.MULTI30K:
                (tmp_path / name / dataset / file).write_bytes(b"")
    monkeypatch.setenv("ANNOTATED_DATA_DIR", str(tmp_path / name))
    if usable:
        regenerate.main(["06"])
        assert regenerate.ran == ["06_training.ipynb"]
        return
    code, message = refusal(regenerate, ["06"], capsys)
    assert code == 1
    says(message, "error:", f"ANNOTATED_DATA_DIR={tmp_path / name}", "unset it")
    assert regenerate.ran == []


def test_without_a_data_location_multi30k_is_fetched_before_the_chapters_that_read_it(
        regenerate, capsys, monkeypatch):
    """No network and no data: one line before chapter 6 starts, not its kernel's tracebacks.
    Chapters that do not read Multi30k run without it."""
    regenerate.main(["01"])
    assert regenerate.fetched == [] and regenerate.ran == ["01_scaled_dot_product_attention.ipynb"]

    def offline(*args, **kwargs):
        raise FileNotFoundError("multi30k: downloading failed (no network). Without internet, "
                                "point --data-dir or ANNOTATED_DATA_DIR at a folder")
    monkeypatch.setattr(regenerate, "corpus_files", offline)
    regenerate.ran.clear()
    code, message = refusal(regenerate, ["01", "06", "09"], capsys)
    assert code == 1 and regenerate.ran == []
    says(message, "06, 09", "Multi30k", "no network", "ANNOTATED_DATA_DIR")


def test_a_chapter_that_fails_in_full_mode_is_one_line_naming_it(regenerate, capsys):
    regenerate.exit_code = 1
    code, message = refusal(regenerate, ["06", "09"], capsys)
    assert code == 1 and message.startswith("error: chapters/06_training.ipynb failed in full "
                                            "mode (exit code 1; its error is above)")
    assert regenerate.ran == ["06_training.ipynb"]          # chapter 9 did not start


def test_the_appendix_is_chosen_as_a_and_a_chapters_solutions_as_s(regenerate):
    chosen = regenerate.chosen_notebooks(["A", "08", "S02"])
    assert [p.relative_to(ROOT / "chapters").as_posix() for p in chosen] == [
        "08_results.ipynb", "appendix_experiment_log.ipynb", "solutions/02_masking.ipynb"]
    every = regenerate.chosen_notebooks([])
    assert len(every) == 10 + len(list((ROOT / "chapters" / "solutions").glob("*.ipynb")))


def test_the_script_run_by_its_path_is_a_command_that_holds_stops_while_it_starts(
        monkeypatch):
    """`python chapters/regenerate.py`: annotated/__init__ imports inside command_starting, so
    a Ctrl-C while torch loads is one line, as for `python -m annotated.train`."""
    import types
    from annotated.base.signals import starting_a_command
    program = types.ModuleType("__main__")
    program.__spec__, program.__file__ = None, str(ROOT / "chapters" / "regenerate.py")
    monkeypatch.setattr("sys.argv", ["chapters/regenerate.py"])
    monkeypatch.setitem(__import__("sys").modules, "__main__", program)
    assert starting_a_command()
    program.__file__ = str(ROOT / "tests" / "conftest.py")      # not a script of the project's
    assert not starting_a_command()


STOPS = {"SIGTERM to the script": ("SIGTERM", False, 143, "interrupted by SIGTERM"),
         "Ctrl-C at the terminal (to its whole group)": ("SIGINT", True, 130, "interrupted")}


@pytest.mark.slow
@pytest.mark.parametrize("stop", STOPS.values(), ids=STOPS.keys())
def test_a_stop_while_a_chapter_runs_ends_it_in_one_line_and_leaves_the_notebook(tmp_path, stop):
    """A stop while --cells runs a chapter's scratch copy: one line and nothing else (no
    traceback of the notebook's client, which runs in its own group), the stop's exit code,
    and the notebook untouched."""
    import os
    import signal
    import sys
    import time
    name, to_group, code, line = stop
    nb = ROOT / "chapters" / "08_results.ipynb"
    before = nb.read_bytes()
    process = subprocess.Popen([sys.executable, "chapters/regenerate.py", "--cells", "08:1"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, stdin=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdout.readline().startswith("running 08_results.ipynb")
    time.sleep(3)                                  # the scratch copy's kernel is running
    if to_group:
        os.killpg(process.pid, getattr(signal, name))
    else:
        process.send_signal(getattr(signal, name))
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err.splitlines()) == (code, [line]), err
    assert nb.read_bytes() == before
