"""The project's experiments: see docs/commands.md."""
import annotated  # noqa: F401  (`python -m` of a module here that is no command says so)
