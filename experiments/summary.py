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
import argparse
import json

from annotated.base.cli import command
from annotated.base.errors import DataError
from annotated.base.files import atomic_open
from experiments.folders import ROOT
from experiments.report import markdown_table

README = ROOT / "README.md"
RESULTS = ROOT / "results"
MARKERS = {"results": ("<!-- the results table: python -m experiments.summary --write -->",
                       "<!-- end of the results table -->"),
           "commands": ("<!-- the commands' table: python -m experiments.summary --write -->",
                        "<!-- end of the commands' table -->"),
           "gpu": ("<!-- the GPU table: python -m experiments.summary --write -->",
                   "<!-- end of the GPU table -->")}
# (what the row is, the results file whose first test2016 decoding it shows, its cased score
# is shown: False for a model that writes lowercase, where cased BLEU says nothing)
ROWS = [
    ("English->German, `multi30k_tiny` with `P_drop=0.2 vocab_size=6000`, two processes, "
     "chosen on val (ships in `annotated/pretrained/`)", "multi30k_tiny.json", True),
    ("the same on lowercased text (`lowercase=true`, not in the paper)",
     "multi30k_tiny_lowercase.json", False),
    ("English->German, the `multi30k` preset, one process, the paper's settings",
     "multi30k.json", True),
    ("English->French, the first row's settings with `target_lang=fr`",
     "multi30k_tiny_en_fr.json", True),
]


def table() -> str:
    """The table of Multi30k test2016 scores, from results/*.json and results/published.json."""
    rows = []
    for what, name, cased in ROWS:
        first = next(iter(json.loads((RESULTS / name).read_text())["test2016"].values()))
        rows.append([what, f"{first['lowercase_bleu']:.2f}",
                     f"{first['bleu']:.2f}" if cased else "(writes lowercase)"])
    published = json.loads((RESULTS / "published.json").read_text())["multi30k_test2016"]
    for pair, entries in published.items():
        for entry in entries:
            rows.append([f"{entry['system'].split(':')[0]}, {pair} (published)",
                         f"{entry['bleu']:.2f}", "not reported"])
    return "\n".join(markdown_table(["model", "test2016 lowercased BLEU",
                                     "test2016 sacreBLEU (cased)"], rows))


def commands_table() -> str:
    """The two commands' install and run times and sizes, from results/install.json."""
    measured = json.loads((RESULTS / "install.json").read_text())["commands"]
    what = {"(1)": ("the package and the chapters", "training, then three test sentences "
                    "translated"),
            "(2)": ("everything: the chapters, the website, the tests", "every test")}
    rows = [[f"{mark} {what[mark][0]}", minutes(r["install_s"]),
             f"{minutes(r['run_s'])}: {what[mark][1]}", f"{r['venv_bytes'] / 2**30:.1f} GB",
             r["packages"]] for mark, r in measured.items()]
    return "\n".join(markdown_table(["command", "install", "then", "size of `.venv/`",
                                     "packages"], rows))


def gpu_table() -> str:
    """The base and big models' training step on one GPU at the paper's batch (the fastest of
    its modes: eager, compiled, CUDA graphs), and the paper's schedule on 8 such GPUs (an estimate)."""
    measured = json.loads((RESULTS / "gpu_train.json").read_text())
    schedule = json.loads((RESULTS / "gpu_schedule.json").read_text())["models"]
    rows = []
    for name, plan in schedule.items():
        case = min((c for c in measured["cases"] if c["case"] == name), key=lambda c: c["step_s"])
        rows.append([name, f"{case['source_tokens']:,} + {case['target_tokens']:,}",
                     f"{case['step_s'] * 1000:.1f} ms" + mode_label(case),
                     f"{case['tokens_per_s']:,}", f"{case['MFU']:.3f}",
                     f"{case['peak_memory_GiB']:g} GiB",
                     f"{plan['paper_steps']:,} steps: about {plan['hours']['per_gpu_share']:g} h "
                     f"(paper: {plan['paper_hours']:g} h on 8 x P100)"])
    return "\n".join(markdown_table(["model", "tokens a step", "step", "tokens/s", "MFU (bf16)",
                                     "peak memory", "on 8 such GPUs (estimate)"], rows))


def mode_label(case: dict) -> str:
    """How a case of gpu_train.json ran: ' (compiled)', ' (compiled, CUDA graphs)' or ''."""
    if case.get("cuda_graphs"):                     # not recorded before CUDA graphs existed
        return " (compiled, CUDA graphs)"
    return " (compiled)" if case["compile"] else ""


def minutes(seconds: int) -> str:
    return f"{seconds} s" if seconds < 90 else f"{seconds / 60:.1f} min"


TABLES = {"results": table, "commands": commands_table, "gpu": gpu_table}


def readme_table(text: str, name: str = "results") -> str:
    """The table README.md holds between the markers of `name`."""
    begin, end = MARKERS[name]
    if begin not in text or end not in text:
        raise DataError(f"{README} lacks the markers {begin!r} and {end!r} around its {name} "
                        f"table; put them back")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.summary",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    if not args.write:
        print("\n\n".join(render() for render in TABLES.values()))
        return
    readme = README.read_text(encoding="utf-8")
    for name, render in TABLES.items():
        readme_table(readme, name)                          # the markers are there
        begin, end = MARKERS[name]
        before, rest = readme.split(begin, 1)
        readme = f"{before}{begin}\n{render()}\n{end}{rest.split(end, 1)[1]}"
    with atomic_open(README, "w") as f:
        f.write(readme)
    print(f"wrote the tables into {README}")


if __name__ == "__main__":
    main()
