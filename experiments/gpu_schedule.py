"""The paper's training schedules in wall time on eight of today's GPUs: an estimate from the
measured steps of benchmarks.gpu_train, beside the paper's own hours on eight P100s (§5.2).

    python -m experiments.gpu_schedule [--timings results/gpu_train.json] [--out-dir results]

Writes gpu_schedule.json (the numbers chapter 8 and the README read) and gpu_schedule.md.

A step of the paper's setup gives each of its 8 GPUs 1/8 of the 25,000-token batch; the
gradients are then summed across GPUs (DistributedDataParallel overlaps that sum with the
backward pass). Two estimates bracket the truth:

- from the 1/8 step measured on one GPU: each GPU does exactly this work. The time between
  GPU kernels (the CPU launching them) is counted in full, the gradient sum not at all;
- from the full 25,000-token step on one GPU, divided by 8: perfect scaling, as if the small
  per-GPU batch ran as efficiently as the large one. The optimistic bound.

Neither was measured on eight GPUs; both are labelled estimates wherever they are shown.
"""
import json

from annotated.base.cli import ArgumentParser, command, path
from annotated.base.errors import DataError
from annotated.base.files import check_output, write_files
from experiments.commands import invocation
from experiments.folders import ROOT, add_out_dir, check_out_dir, committed_folder, relative
from experiments.results_files import Record, fastest, gpu_timings

# §5.2: one machine with 8 NVIDIA P100 GPUs.
PAPER = {"base": {"steps": 100_000, "step_s": 0.4, "hours": 12.0},
         "big": {"steps": 300_000, "step_s": 1.0, "hours": 3.5 * 24}}
GPUS = 8


def estimate(timings: Record) -> dict:
    """Per model: the paper's schedule, and both estimates of it in hours on 8 such GPUs."""
    models = {}
    for name, paper in PAPER.items():
        share, whole = fastest(timings, f"{name} 1/{GPUS}"), fastest(timings, name)
        hours = {"per_gpu_share": paper["steps"] * share["step_s"] / 3600,
                 "perfect_scaling": paper["steps"] * whole["step_s"] / GPUS / 3600}
        models[name] = {"paper_steps": paper["steps"], "paper_step_s": paper["step_s"],
                        "paper_hours": paper["hours"],
                        "share_step_s": share["step_s"], "share_compiled": share["compile"],
                        "full_step_s": whole["step_s"], "full_compiled": whole["compile"],
                        "hours": {k: round(v, 2) for k, v in hours.items()},
                        "speedup_over_paper": round(paper["hours"] / hours["per_gpu_share"], 1)}
    return models


def render(record: dict) -> str:
    m = record["machine"]
    lines = [f"# The paper's schedules on 8 x {m['gpu']} (an estimate)", "",
             f"`{record['command']}`, from `{record['timings']}` (measured with "
             f"`{record['timings_command']}`; torch {m['torch']}, CUDA {m['cuda']}).", "",
             "Not measured on eight GPUs: the step measured on one GPU, times the paper's steps. "
             "'Per-GPU share' times one GPU's 1/8 of the batch (gradient sum not counted); "
             "'perfect scaling' divides the full batch's step by 8.", "",
             "| model | steps (§5.2) | paper, 8 x P100 | step, 1/8 batch | estimate, per-GPU "
             "share | estimate, perfect scaling |", "|---|---|---|---|---|---|"]
    for name, r in record["models"].items():
        lines.append(f"| {name} | {r['paper_steps']:,} | {r['paper_hours']:g} h "
                     f"({r['paper_step_s']:g} s/step) | {r['share_step_s'] * 1000:.1f} ms | "
                     f"{r['hours']['per_gpu_share']:g} h | {r['hours']['perfect_scaling']:g} h |")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.gpu_schedule",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--timings", type=path, default=ROOT / "results" / "gpu_train.json",
                        help="benchmarks.gpu_train's output (default results/gpu_train.json)")
    add_out_dir(parser, smoke=None)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    out_dir = check_out_dir(args.out_dir)
    if (folder := committed_folder(out_dir)) not in (None, ROOT / "results"):
        raise DataError(f"--out-dir {args.out_dir} is inside {relative(folder)}/, the "
                        f"package's own files; give results/ or a folder outside the package")
    record_file = ROOT / "results" / "gpu_train.json"
    if folder is not None and relative(args.timings) != relative(record_file):
        raise DataError(f"--out-dir {args.out_dir} is results/, whose schedule is estimated from "
                        f"the GPU record published beside it, results/gpu_train.json, not from "
                        f"{args.timings}: give --timings results/gpu_train.json, or another "
                        f"--out-dir for an estimate of your own")
    outputs = [out_dir / "gpu_schedule.json", out_dir / "gpu_schedule.md"]
    for out in outputs if out_dir.is_dir() else ():     # made later if missing
        check_output(out, reads=[args.timings])     # the timings copied in under its name
    timings = gpu_timings(args.timings)
    record = {"command": invocation("experiments.gpu_schedule", argv),
              "timings": relative(args.timings),
              "timings_command": timings.get("command", kind=str),
              "machine": timings.get("machine", kind=dict), "gpus": GPUS,
              "models": estimate(timings)}
    write_files(dict(zip(outputs, [json.dumps(record, indent=1) + "\n", render(record)])))
    for name, r in record["models"].items():
        print(f"{name}: {r['paper_steps']:,} steps, about {r['hours']['per_gpu_share']:g} h "
              f"(perfect scaling {r['hours']['perfect_scaling']:g} h) on 8 x "
              f"{record['machine']['gpu']}; the paper: {r['paper_hours']:g} h on 8 x P100")
    print(f"wrote {', '.join(map(relative, outputs))}")


if __name__ == "__main__":
    main()
