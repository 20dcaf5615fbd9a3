"""The chapters as a static website, built from the committed, executed notebooks.

    python -m book build [--out build/site]

See build.py for what the build does and conf.py for the Sphinx settings.
"""
import atexit
import sys
import warnings


def _not_a_command() -> None:
    """At exit: a module of the book run as a program (`python -m book.conf`) did nothing, and
    says so as every package of the project does (annotated.base.cli.not_a_command). This
    package does not import `annotated`, and torch with it, until then: `python -m book`
    handles a stop during its own imports."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name.startswith("book.") and spec.name != "book.__main__":
        from annotated.base.cli import not_a_command
        not_a_command()


atexit.register(_not_a_command)
# `python -m book.languages.en`: runpy warns that the package imported the module before it
# ran it; the module is no command, and the line above says so instead.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="runpy",
                        message=r"'book\.languages\.")
