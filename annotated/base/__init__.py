"""The ground floor: what every other part of the package may use, and which uses nothing of
it.

    errors   the errors a user can cause, one class per kind
    files    reading text (plain or gzip, UTF-8, pipes), atomic writes that never replace what
             is not theirs, a set of files replaced all or nothing, output checks, checksums,
             downloads
    settings fields that carry their rule and their role beside them, and their checks
    cli      the convention every command follows: main(argv=None), one `error: ...` line
    threads  how many CPU threads a model of a given size runs on (the commands decide)
    signals  Ctrl-C, SIGTERM and SIGHUP held back while a file that must be whole is written,
             or raised as exceptions so that a command they stop unwinds
"""
