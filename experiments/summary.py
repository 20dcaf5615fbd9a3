"""The README's tables, read from the results files: the one place the README's numbers come
from. Three tables: the results (results/*.json and published.json), the two commands' times
and sizes (results/install.json, written by experiments.install), and the base and big models
on a GPU (results/gpu_train.json and gpu_schedule.json, from benchmarks.gpu_train and
experiments.gpu_schedule).

    python -m experiments.summary              # print the tables
    python -m experiments.summary --write      # put them into README.md, between their markers

A test checks that README.md holds exactly these tables, so a results file that changes
without the README (or the other way round) fails the tests until this command is run.
"""

from annotated import configs
from annotated.base.cli import ArgumentParser, command, require_stdout, say_error
from annotated.base.errors import DataError
from annotated.base.files import read_lines, with_line_ends_of, write_files
from annotated.base.settings import POSITIVE, shown
from annotated.notebooks.results import run_mode
from experiments.folders import ROOT
from experiments.report import markdown_table, published
from experiments.results_files import (BLEU, BYTES, SECONDS, WHOLE, Cell, Record, fastest,
                                      cased_and_lowercased, gpu_timings, headline_row,
                                      shown_on_its_page, signature_of)

README = ROOT / "README.md"
RESULTS = ROOT / "results"
MARKERS = {"results": ("<!-- the results table: python -m experiments.summary --write -->",
                       "<!-- end of the results table -->"),
           "commands": ("<!-- the commands' table: python -m experiments.summary --write -->",
                        "<!-- end of the commands' table -->"),
           "gpu": ("<!-- the GPU table: python -m experiments.summary --write -->",
                   "<!-- end of the GPU table -->")}
# (what the row is, the results file whose first test2016 decoding it shows, its cased score
# is shown: False for a model that writes lowercase, where cased BLEU says nothing; the run the
# file must hold: its preset, then settings of its config)
SHIPPED = {"dataset": "multi30k", "source_lang": "en", "target_lang": "de", "P_drop": 0.2,
           "vocab_size": 6000, "lowercase": False}
ROWS = [
    ("English->German, `multi30k_tiny` with `P_drop=0.2 vocab_size=6000`, two processes, "
     "chosen on val (ships in `annotated/pretrained/`)", "multi30k_tiny.json", True,
     ("multi30k_tiny", SHIPPED)),
    ("the same on lowercased text (`lowercase=true`, not in the paper)",
     "multi30k_tiny_lowercase.json", False, ("multi30k_tiny", {**SHIPPED, "lowercase": True})),
    ("English->German, the `multi30k` preset, one process, the paper's settings",
     "multi30k.json", True, ("multi30k", {**SHIPPED, "P_drop": 0.1, "vocab_size": 8000})),
    ("English->French, the first row's settings with `target_lang=fr`",
     "multi30k_tiny_en_fr.json", True, ("multi30k_tiny", {**SHIPPED, "target_lang": "fr"})),
]

SHIPS_WITH = "multi30k_tiny.json"         # the row whose model ships, and its record
PRETRAINED = ROOT / "annotated" / "pretrained" / "multi30k_en_de.json"

# The column of a results page (experiments.multi30k's .md) that shows each score.
COLUMNS = {"bleu": "sacreBLEU", "lowercase_bleu": "lowercased BLEU"}


def table() -> str:
    """The table of Multi30k test2016 scores, from results/*.json and results/published.json."""
    rows, scored = [], {}                   # target language -> (reference tokens, record)
    for what, name, cased, run in ROWS:
        record = Record(RESULTS / name, "with the command that the .md beside it names: "
                                        "python -m experiments.multi30k ...")
        check_run(record, *run)
        first = headline_row(record, "test2016")      # the page's first row, by name
        check_whole_test_set(record, first, run[1]["target_lang"], scored)
        bleu, lower = cased_and_lowercased(record, "test2016", first)
        for key, value, case in (("lowercase_bleu", lower, "lc"), ("bleu", bleu, "mixed")):
            shown_on_its_page(record, value, ("test2016", first, key), COLUMNS[key])
            signature_of(record, "test2016", first, key.replace("bleu", "signature"), case=case)
        if name == SHIPS_WITH:
            check_shipped(record, lower, bleu)
        rows.append([what, f"{lower:.2f}", f"{bleu:.2f}" if cased else "(writes lowercase)"])
    for pair, entries in published(RESULTS).items():
        for system, bleu, _, _ in entries:
            rows.append([f"{system.split(':')[0]}, {'-'.join(pair)} (published)", f"{bleu:.2f}",
                         "not reported"])
    return "\n".join(markdown_table(["model", "test2016 lowercased BLEU",
                                     "test2016 sacreBLEU (cased)"], rows))


def check_run(record: Record, preset: str, settings: dict) -> None:
    """Refuse a results file that holds another run than its row describes (another preset, a
    setting changed, a model of another shape, a smoke test scored on a few sentences):
    copied over, or written by a command other than the one its .md names."""
    if "limited" in record.data:
        raise DataError(f"{record.path} is a smoke test ({record.data['limited']}), not the run "
                        f"the README shows; {record.fix}")
    found = {"preset": record.get("preset", kind=str)}
    config = record.get("config", kind=dict)
    shape = configs.get(preset).override(**{k: v for k, v in settings.items()
                                            if k != "lowercase"})
    expected = {"preset": preset, **{key: getattr(shape, key) for key in configs.SHAPE},
                **settings}
    found |= {key: config.get(key, False) if key == "lowercase" else config.get(key)
              for key in expected if key != "preset"}     # runs before lowercase had none
    differ = [f"{key}={found[key]!r} where the row shows {key}={value!r}"
              for key, value in expected.items() if found[key] != value]
    if differ:
        raise DataError(f"{record.path} holds another run than its README row: "
                        f"{'; '.join(differ)}; {record.fix}")


def check_shipped(record: Record, lower: float, bleu: float) -> None:
    """Refuse a README row that says its model ships in annotated/pretrained/ when the model
    there is another: its record (experiments.pretrained) must come from the checkpoints the
    row's results file averaged, and score what the row shows."""
    shipped = Record(PRETRAINED, "python -m experiments.pretrained CHECKPOINT --out-dir "
                                 "annotated/pretrained")
    sources = record.get("average", "checkpoints", kind=list)
    averaged = shipped.get("averaged_from", kind=list)
    for where, names, keys in ((record, sources, "average.checkpoints"),
                               (shipped, averaged, "averaged_from")):
        if not all(isinstance(name, str) for name in names):
            raise DataError(f"{where.path}: {keys} is {shown(names)}, not a list of checkpoint "
                            f"file names; {where.fix}")
    scores = [shipped.get("float32", key, rule=BLEU) for key in ("lowercase_bleu", "bleu")]
    if averaged == sources and scores != [lower, bleu]:      # one model, two sets of scores
        raise DataError(f"{record.path} and {PRETRAINED} describe the same model (averaged from "
                        f"the same checkpoints) with other scores: {lower!r} / {bleu!r} in "
                        f"{record.path.name}, {scores[0]!r} / {scores[1]!r} in "
                        f"{PRETRAINED.name}; one of them was changed by hand: restore it (git "
                        f"checkout FILE); else, for {record.path.name}, {record.fix}; for "
                        f"{PRETRAINED.name}, {shipped.fix}")
    if averaged != sources:
        raise DataError(f"{PRETRAINED} describes another model than its README row: it scores "
                        f"{scores[0]:.2f} / {scores[1]:.2f} (averaged from "
                        f"{', '.join(averaged)}), the row's "
                        f"{record.path.name} {lower:.2f} / {bleu:.2f} (from "
                        f"{', '.join(sources)}): ship the model the row scores, or score the "
                        f"shipped one's run into {record.path.name}; {shipped.fix}")


def check_whole_test_set(record: Record, first: str, target: str, scored: dict) -> None:
    """Refuse a row scored on part of test2016: the rows of one target language score the same
    references, so they count the same reference tokens."""
    tokens = record.get("test2016", first, "lowercase_ref_tokens", rule=POSITIVE)
    seen, other = scored.setdefault(target, (tokens, record))
    if tokens != seen:
        raise DataError(f"{record.path}: test2016 has {tokens:,} reference tokens here but "
                        f"{seen:,} in {other.path}, which scores the same references: one of "
                        f"the two scored only part of test2016, or was changed by hand. "
                        f"Restore the one changed (git checkout FILE), or score it again: for "
                        f"{record.path.name}, {record.fix}; for {other.path.name}, {other.fix}")


def commands_table() -> str:
    """The two commands' install and run times and sizes, from results/install.json."""
    measured = Record(RESULTS / "install.json", "python -m experiments.install --out-dir results")
    what = {"(1)": ("the package and the chapters", "training, then three test sentences "
                    "translated"),
            "(2)": ("everything: the chapters, the website, the tests", "every test")}
    rows = []
    for mark, (name, then) in what.items():
        install_s, run_s, size, packages = (
            measured.get("commands", mark, key, rule=rule)
            for key, rule in (("install_s", SECONDS), ("run_s", SECONDS), ("venv_bytes", BYTES),
                              ("packages", WHOLE)))
        rows.append([f"{mark} {name}", minutes(install_s), f"{minutes(run_s)}: {then}",
                     f"{size / 2**30:.1f} GB", int(packages)])      # WHOLE: 122.0 is 122
    return "\n".join(markdown_table(["command", "install", "then", "size of `.venv/`",
                                     "packages"], rows))


def gpu_table() -> str:
    """The base and big models' training step on one GPU at the paper's batch (the fastest of
    its modes: eager, compiled, CUDA graphs), and the paper's schedule on 8 such GPUs (an estimate)."""
    measured = gpu_timings(RESULTS / "gpu_train.json")
    schedule = Record(RESULTS / "gpu_schedule.json",
                      "python -m experiments.gpu_schedule --out-dir results")
    rows = []
    gpu = measured.get("machine", "gpu", kind=Cell)
    if (named := schedule.get("machine", "gpu", kind=str)) != gpu:
        raise DataError(f"{schedule.path}: machine.gpu is {named!r}, but gpu_train.json, whose "
                        f"steps it takes, measured on {gpu!r}; {schedule.fix}")
    for name in schedule.get("models", kind=dict):
        case = fastest(measured, name)
        steps = schedule.get("models", name, "paper_steps", rule=POSITIVE)
        hours = schedule.get("models", name, "hours", "per_gpu_share", rule=POSITIVE)
        check_schedule(schedule, name, (fastest(measured, f"{name} 1/8")["step_s"],
                                        case["step_s"]), hours)
        paper_hours = schedule.get("models", name, "paper_hours", rule=POSITIVE)
        rows.append([name, f"{case['source_tokens']:,} + {case['target_tokens']:,}",
                     f"{case['step_s'] * 1000:.1f} ms" + mode_label(case),
                     f"{case['tokens_per_s']:,}", f"{case['MFU']:.3f}",
                     f"{case['peak_memory_GiB']:g} GiB",
                     f"{steps:,} steps: about {hours:g} h (paper: {paper_hours:g} h on 8 x P100)"])
    return "\n".join(markdown_table(["model", "tokens a step", f"step, one {gpu}", "tokens/s",
                                     "MFU (bf16)",
                                     "peak memory", "on 8 such GPUs (estimate)"], rows))


def check_schedule(schedule, name: str, measured: tuple[float, float], hours: float) -> None:
    """Refuse a schedule whose steps are not those gpu_train.json measured (`measured`: for an
    eighth of the batch, and for the whole batch), or whose hours are not those steps times the
    paper's steps (per GPU's share; perfectly scaled, the whole batch's step over 8 GPUs): a
    hand edit of either."""
    steps = schedule.get("models", name, "paper_steps", rule=POSITIVE)
    gpus = schedule.get("gpus", rule=POSITIVE)
    for key, what, taken in (("share_step_s", "the eighth", measured[0]),
                             ("full_step_s", "the whole batch", measured[1])):
        if (step_s := schedule.get("models", name, key, rule=POSITIVE)) != taken:
            raise DataError(f"{schedule.path}: models.{name}.{key} is {step_s}, but "
                            f"gpu_train.json measured {taken} s for {what}; {schedule.fix}")
    perfect = schedule.get("models", name, "hours", "perfect_scaling", rule=POSITIVE)
    for key, found, implied in (("per_gpu_share", hours, measured[0] * steps / 3600),
                                ("perfect_scaling", perfect, measured[1] * steps / gpus / 3600)):
        if abs(found - implied) > max(0.01, 0.02 * implied):
            raise DataError(f"{schedule.path}: models.{name}.hours.{key} is {found}, but its "
                            f"step and steps make {implied:.2f} h; {schedule.fix}")


def mode_label(case: dict) -> str:
    """How a case of gpu_train.json ran, to follow its time: ' (compiled)', ' (compiled, CUDA
    graphs)' or '' (eager)."""
    mode = run_mode(case)
    return "" if mode == "eager" else f" ({mode})"


def minutes(seconds: int) -> str:
    return f"{seconds} s" if seconds < 90 else f"{seconds / 60:.1f} min"


TABLES = {"results": table, "commands": commands_table, "gpu": gpu_table}


def readme_table(text: str, name: str = "results") -> str:
    """The table README.md holds between the markers of `name`: each marker once, the
    beginning before the end; anything else is a DataError naming the marker."""
    begin, end = MARKERS[name]
    for marker in (begin, end):
        if text.count(marker) != 1:
            lines = [n for n, line in enumerate(text.split("\n"), 1) if marker in line]
            found = f"on lines {', '.join(map(str, lines))}" if lines else "nowhere"
            raise DataError(f"{README}: the marker {marker!r} of the {name} table must be there "
                            f"once, but is {found}; put the markers back around the table, "
                            f"once each (git checkout -- README.md restores them)")
    if text.index(end) < text.index(begin):
        raise DataError(f"{README}: the end of the {name} table ({end!r}) comes before its "
                        f"beginning ({begin!r}); put them back in order around the table "
                        f"(git checkout -- README.md restores them)")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def check_tables_apart(text: str) -> None:
    """Refuse markers of one table inside another's: writing one table would replace the
    other's markers with it, and later writes would go astray."""
    def line_of(at: int) -> int:
        return text.count("\n", 0, at) + 1
    spans = sorted((text.index(begin), text.index(end), name)
                   for name, (begin, end) in MARKERS.items())
    for (start, stop, name), (other_start, other_stop, other) in zip(spans, spans[1:]):
        if other_start < stop:
            raise DataError(f"{README}: the {other} table's markers (lines "
                            f"{line_of(other_start)}-{line_of(other_stop)}) are inside the "
                            f"{name} table's (lines {line_of(start)}-{line_of(stop)}); put each "
                            f"pair of markers around its own table, apart (git checkout -- "
                            f"README.md restores them)")


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.summary",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    return parser.parse_args(argv)


def readme_tables_stale() -> str | None:
    """Which of the README's tables differ from what the results files give ("the results
    table", ...), or None; None too for a README this cannot read (--write names why)."""
    try:
        readme = "\n".join(read_lines(README)) + "\n"
        stale = [name for name, render in TABLES.items() if readme_table(readme, name) != render()]
    except (DataError, OSError):
        return None
    return f"tables ({', '.join(stale)})" if stale else None


@command
def main(argv=None):
    args = parse_args(argv)
    if not args.write:
        require_stdout("the tables (or give --write)")
        print("\n\n".join(render() for render in TABLES.values()))
        if stale := readme_tables_stale():
            say_error(f"note: {README} shows other {stale} than these; python -m "
                      f"experiments.summary --write puts these there")
        return
    if not README.is_file():
        raise DataError(f"{README} is {'a folder' if README.is_dir() else 'missing'}, not the "
                        f"project's README, into which --write puts the tables; restore it "
                        f"(git checkout -- README.md)")
    readme = "\n".join(read_lines(README)) + "\n"        # its lines, whatever ends them
    for name in TABLES:
        readme_table(readme, name)                  # every marker there, before any table
    check_tables_apart(readme)
    was = readme
    for name, render in TABLES.items():
        begin, end = MARKERS[name]
        before, rest = readme.split(begin, 1)
        readme = f"{before}{begin}\n{render()}\n{end}{rest.split(end, 1)[1]}"
    if readme == was:
        print(f"{README}: the tables are already those of the results files")
        return
    write_files({README: with_line_ends_of(README, readme)})     # Windows line ends: kept
    print(f"wrote the tables into {README}")


if __name__ == "__main__":
    main()
