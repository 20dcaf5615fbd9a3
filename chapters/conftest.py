"""pytest settings for the chapters, run with nbval (see pyproject.toml's addopts)."""
from pathlib import Path


def pytest_configure(config):
    """Resolve the sanitize file that addopts names (chapters/sanitize.cfg) against the
    project's folder, so that the chapters check the same from any current folder."""
    given = config.getoption("nbval_sanitize_with", default=None)
    if given and not Path(given).is_absolute() and not Path(given).exists():
        config.option.nbval_sanitize_with = str(Path(config.rootpath) / given)
