"""The package's import surface: the paper at the top, the commands, the sub-packages."""
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import annotated

PAPER = {"attention", "masks", "multihead", "feedforward", "positional", "embeddings",
         "sublayer", "encoder", "decoder", "model", "loss", "optim", "configs"}
COMMANDS = {"train", "translate", "evaluate", "checkpoint"}
SUBPACKAGES = {"base", "data", "store", "training", "inference", "notebooks", "exercises",
               "pretrained"}


def test_the_top_level_is_the_paper_the_commands_and_the_subpackages():
    found = {m.name: m.ispkg for m in pkgutil.iter_modules(annotated.__path__)}
    assert {name for name, pkg in found.items() if not pkg} == PAPER | COMMANDS
    assert {name for name, pkg in found.items() if pkg} == SUBPACKAGES
    for name in PAPER:                        # each concept has its NumPy mirror (but configs)
        if name != "configs":
            assert importlib.util.find_spec(f"reference_numpy.{name}") is not None, name


def test_module_names_are_modules_and_exports_are_what_they_say():
    import annotated.masks
    assert annotated.masks.padding_mask is annotated.padding_mask      # a module, not shadowed
    assert callable(annotated.masks.batch_masks)
    for name in annotated.__all__:
        assert getattr(annotated, name) is not None, name
    assert annotated.configs.get("base").d_model == 512


@pytest.mark.slow
def test_every_command_has_main_with_argv_and_help():
    for name in COMMANDS:
        module = importlib.import_module(f"annotated.{name}")
        assert callable(module.main), name
        done = subprocess.run([sys.executable, "-m", f"annotated.{name}", "--help"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and f"python -m annotated.{name}" in done.stdout, name


ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(f"{path.parent.name}.{path.stem}" for folder in ("experiments", "benchmarks")
                 for path in (ROOT / folder).glob("*.py")
                 if '__name__ == "__main__"' in path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("module", SCRIPTS)
def test_every_experiment_and_benchmark_answers_help(module):
    """Each script's --help runs, as a user first meets it (its imports and parser included)."""
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and f"python -m {module}" in done.stdout, done.stderr[-500:]


def test_every_subpackage_imports_and_documents_its_modules():
    for package in SUBPACKAGES:
        module = importlib.import_module(f"annotated.{package}")
        for info in pkgutil.iter_modules(module.__path__):
            if info.name == "__main__":               # `python -m annotated.<package>`
                continue
            importlib.import_module(f"annotated.{package}.{info.name}")
            assert f"    {info.name}" in module.__doc__, (package, info.name)
