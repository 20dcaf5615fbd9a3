import gzip
import os
import signal
from pathlib import Path

import pytest
import torch

from annotated.base.files import read_lines
from annotated.data.corpus import DATA_ENV, SAMPLE, SAMPLE_SPLITS

# Tests are deterministic and single-threaded-friendly on the 2-core CI machine. The suite runs
# one worker process per core (pytest-xdist): each gets its share of the cores, at most 2.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1))
torch.set_num_threads(max(1, min(2, (os.cpu_count() or 1) // WORKERS)))

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


# Whole files whose every test trains, launches torchrun or runs a results script; the
# chapters' cells run whole notebooks. Single slow tests carry @pytest.mark.slow themselves.
SLOW_FILES = ("test_results.py", "test_distributed.py", "test_cuda.py")


def pytest_collection_modifyitems(items):
    """`pytest -m 'not slow'`, the fast tier for the development loop, leaves these out."""
    for item in items:
        if item.path.suffix == ".ipynb" or item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    """End the run with what it skipped, a line per reason naming the test files, so that a run
    that skipped a group (the browser tests without Chromium, the GPU tests without a GPU) does
    not read as every test."""
    groups = {}
    for report in terminalreporter.stats.get("skipped", []):
        if isinstance(report.longrepr, tuple):              # (file, line, "Skipped: why")
            why = report.longrepr[2].removeprefix("Skipped: ")
            groups.setdefault(why, []).append(Path(report.nodeid.split("::")[0]).name)
    for why, files in groups.items():
        terminalreporter.write_line(f"skipped {len(files)} test(s) in "
                                    f"{', '.join(dict.fromkeys(files))}: {why}")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def ctrl_c():
    """Ctrl-C raises KeyboardInterrupt, as in a terminal, whatever the test process inherited:
    a process started in the background (`cmd &`, nohup, a job runner) inherits SIGINT
    ignored, and Python then never installs its handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def says(message, *names) -> str:
    """Check a message by what it names, not by its wording: `message` (text, an exception, or
    what pytest.raises gives) must be one line that contains each of `names`, the problem's
    key words, the file or setting, and the fix's command or option. A sentence said another
    way passes; a message that stops naming the file, the setting or the fix fails. Returns
    the message's text."""
    if isinstance(getattr(message, "value", None), BaseException):
        message = message.value                                   # pytest.raises' ExceptionInfo
    text = str(message)
    assert text.strip() and "\n" not in text.strip(), f"not one line: {text!r}"
    missing = [str(name) for name in names if str(name) not in text]
    assert not missing, f"the message does not name {missing}: {text}"
    return text


def full_corpus(dataset: str, name: str) -> Path:
    """The folder holding a full corpus, for the few tests that need it: the data location if
    one is set, else the shared data folder beside the repository; the test is skipped with the
    reason when neither holds `dataset/name`."""
    for location in (os.environ.get(DATA_ENV), SHARED_DATA):
        if location and (Path(location) / dataset / name).is_file():
            return Path(location)
    pytest.skip(f"the full {dataset} corpus is not here: no {dataset}/{name} in {DATA_ENV} or "
                f"in {SHARED_DATA}")


def user_corpus(folder, target="fr", gz=True):
    """A user's corpus built from the sample: train/dev/test .en and .TARGET (German or French,
    as TARGET says; French under any other name), some gzipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, stem in [("train", "train"), ("valid", "dev"), ("test", "test")]:
        for lang, name in [("en", "en"), (target if target in ("de", "fr") else "fr", target)]:
            lines = list(read_lines(SAMPLE / f"{SAMPLE_SPLITS[split]}.{lang}.gz"))[:400]
            text = "".join(line + "\n" for line in lines).encode()
            path = folder / f"{stem}.{name}"
            if gz and lang == "en":
                (folder / f"{stem}.{name}.gz").write_bytes(gzip.compress(text))
            else:
                path.write_bytes(text)
    return folder


@pytest.fixture
def toy_sizes(monkeypatch):
    """prepare_wmt14 checks the published corpora's sizes; these are the toy archives' (see
    test_corpus.toy_wmt14)."""
    from annotated.data import prepare_wmt14
    monkeypatch.setattr(prepare_wmt14, "PUBLISHED", {
        "train": (6, False), "newstest2013": (2, True), "newstest2014": (3, True)})


def stop_at_import(folder, module: str, signum: int) -> dict:
    """The environment of a process that sends itself `signum` as it begins to import
    `module` (a sitecustomize.py in `folder`, with the stops at their defaults, as a terminal
    leaves them): for the moment a command is still starting, whatever the machine's speed."""
    (folder / "sitecustomize.py").write_text(
        "import importlib.abc, os, signal, sys\n"
        "class Stop(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        f"        if name == {module!r}:\n"
        "            sys.meta_path.remove(self)\n"
        f"            os.kill(os.getpid(), {int(signum)})\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "for number in (signal.SIGTERM, signal.SIGHUP):\n"
        "    signal.signal(number, signal.SIG_DFL)\n"
        "sys.meta_path.insert(0, Stop())\n")
    return {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"}
