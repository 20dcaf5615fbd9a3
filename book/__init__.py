"""The chapters as a static website, built from the committed, executed notebooks.

    python -m book build [--out build/site]

See build.py for what the build does and conf.py for the Sphinx settings.
"""
