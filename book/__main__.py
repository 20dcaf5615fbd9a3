"""`python -m book build [--out DIR] [--without-solutions]`: build the chapters' website
(default build/site/); --without-solutions leaves the exercises' worked solutions out of it,
for a course whose students should not see them.
`python -m book translations [--add-missing]`: list what the translations lack (exit 1 if
anything): English with no translation (prose, and the cells of the chapters' results tables),
translations whose English has changed since (with the difference), translations of English that
is gone, and Chinese that does not read as Chinese (book.chinese: a term's variant, English prose
left in); --add-missing appends an empty unit for each piece of English that has none, for a
translator to fill in.
`python -m book terms`: list every glossary term a chapter uses before linking it to its entry,
in every language, and every glossary entry that names another chapter than the one defining its
term (exit 1 if anything)."""
import contextlib
import sys

# torch and Sphinx take seconds to import, before @command can turn a stop into its one line:
# the project's package holds stops while it imports torch, and then while this imports the
# rest (command_starting), so that no library's import swallows one half-way
try:
    from annotated.base.signals import command_starting, starting_a_command
    with command_starting() if starting_a_command() else contextlib.nullcontext():
        import errno
        import time

        from annotated.base.cli import (ArgumentParser, command, path, require_stdout, say_error,
                                        unwritable_on_stdout)
        from annotated.base.errors import DataError
        from annotated.base.signals import stops_unwind
        from book import chinese, i18n, languages, terms
        from book.build import DEFAULT_OUT, build
except KeyboardInterrupt as stop:                      # Ctrl-C, or SIGTERM/SIGHUP (Stopped)
    signum = getattr(stop, "signum", None)
    print(f"interrupted by {stop}" if signum else "interrupted", file=sys.stderr)
    sys.exit(128 + signum if signum else 130)


# What the reports quote of the Chinese edition is written in this script.
CHINESE = "中文"


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m book", description=__doc__)
    parser.add_argument("command", choices=["build", "translations", "terms"],
                        help="build the static site, check the translations, or check the "
                             "glossary's terms in the chapters")
    parser.add_argument("--add-missing", action="store_true",
                        help="translations: add an empty unit for each untranslated piece")
    parser.add_argument("--without-solutions", action="store_true",
                        help="build: a site without the exercises' worked solutions (for a "
                             "course)")
    parser.add_argument("--out", type=path, default=DEFAULT_OUT,
                        help=f"output folder: empty, missing, or a site built here before, whose "
                             f"files (those that build wrote, as it wrote them) are replaced "
                             f"(default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    given = {"--add-missing": args.add_missing and args.command != "translations",
             "--without-solutions": args.without_solutions and args.command != "build",
             "--out": args.out != DEFAULT_OUT and args.command != "build"}
    if wrong := [option for option, misplaced in given.items() if misplaced]:
        parser.error(f"{', '.join(wrong)} is not an option of {args.command}: --add-missing "
                     f"goes with translations, --out and --without-solutions with build")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    languages.check()                         # a translation's words the build would fail on
    if args.command != "build":
        require_stdout(f"the {args.command} check's report")
    if hasattr(sys.stdout, "reconfigure"):      # reports quote the book's text: on a terminal
        sys.stdout.reconfigure(errors="backslashreplace")    # that cannot show it, escaped
    if args.command != "build" and unwritable_on_stdout(CHINESE):
        say_error(f"note: stdout's encoding, {sys.stdout.encoding}, cannot write Chinese: the "
                  f"report shows the Chinese edition's text escaped ({CHINESE[0]!a}); set "
                  f"PYTHONIOENCODING=utf-8 (or a UTF-8 locale) to read it")
    if args.command == "translations":
        with stops_unwind():                # --add-missing writes: SIGTERM stops as Ctrl-C
            return translations(args.add_missing)
    if args.command == "terms":
        return check_terms()
    start = time.time()
    try:
        index = build(args.out, with_solutions=not args.without_solutions)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise DataError(f"no space left on a disk the build writes to (that of the site, "
                        f"{args.out}, or the temporary folder's) while the site was made; the "
                        f"site that was there is unchanged: free some space, or choose another "
                        f"--out") from None
    print(f"built {index} in {time.time() - start:.0f} s; open it in a browser "
          f"(it needs no network)")


def translations(add: bool) -> None:
    """Print every missing, stale or orphaned unit of every language; exit 1 if there is one."""
    problems = 0
    for lang in languages.TRANSLATIONS:
        for source in i18n.sources():
            if add and (n := i18n.add_missing(source, lang)):
                print(f"{i18n.translation_file(source, lang).relative_to(i18n.ROOT)}: "
                      f"{n} empty unit(s) added")
            problems += printed(i18n.check(source, lang))
        if add and (n := i18n.add_missing_cells(lang)):
            print(f"{(i18n.BOOK / lang / i18n.TABLES).relative_to(i18n.ROOT)}: "
                  f"{n} empty unit(s) added")
        problems += printed(i18n.check_tables(lang))
        for line in i18n.orphan_files(lang) + (chinese.problems() if lang == "zh" else []):
            print(line)
            problems += 1
    print(f"{problems} translation problem(s)" if problems else "every translation is up to date")
    if problems:
        raise SystemExit(1)


def printed(report: i18n.Report) -> int:
    """Print a report's lines; return how many."""
    lines = report.missing + report.stale + report.orphans
    for line in lines:
        print(line)
    return len(lines)


def check_terms() -> None:
    """Print every problem of terms.problems(); exit 1 if there is one."""
    found = terms.problems()
    for line in found:
        print(line)
    print(f"{len(found)} term problem(s)" if found else
          "every term is linked where a chapter first uses it, and defined where the glossary says")
    if found:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
