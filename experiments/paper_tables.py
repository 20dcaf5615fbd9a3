"""Tables 1, 2 and 3 (parameter column) of the paper, recomputed from this project's code, with
the paper's Tables 1, 2 and 4 as published.

    python -m experiments.paper_tables [--quick] [--reuse-timings] [--out-dir results]

Writes paper_tables.md (every number with the command that produced it), table1_timings.json
(the measurements chapter 8 plots) and paper_tables.json (Table 2 as published and our FLOP
count of it, for chapter 8)
into runs/results/, or with --out-dir results over the committed files that chapter 8 reads.
--reuse-timings rewrites the tables from the timings already in the output folder (checked to be
Table 1's; the tables then name that file, and the torch version and threads they were measured
with). Nothing here is typed in by hand except the paper's own figures, which are quoted as such.

Table 1 compares the cost of one layer as the sequence length n and the width d vary. The
self-attention core (QK^T and the weighted sum of V) costs 4 n^2 d FLOPs; a recurrent layer
h_t = tanh(x_t W + h_{t-1} U + b) costs 4 n d^2, so in FLOPs they cross exactly at n = d. The
measured crossover also reflects the recurrent layer's n sequential steps, each a small matrix
product that a CPU (or GPU) runs far below its peak, while attention is a few large products.
We time torch.nn.RNN (whose input products are batched, hidden products sequential) against
`annotated.attention.attention`, with the same batch and threads.
"""
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch

from annotated import configs
from annotated.attention import attention
from annotated.base.cli import ArgumentParser, command
from annotated.base.errors import DataError
from annotated.base.files import write_files
from annotated.base.settings import shown
from annotated.training.flops import training_flops
from experiments.commands import invocation
from experiments.folders import add_out_dir, check_out_dir, committed_folder, relative

P100_TFLOPS = 9.5          # the paper's assumption for Table 2
AVG_SENTENCE = 27          # WMT14 en-de mean BPE tokens per sentence (approx., for the n^2 terms)

# The paper's own tables, quoted. Table 1 (§4): per layer, for sequence length n, width d,
# convolution kernel k and restricted-attention neighbourhood r.
TABLE1 = [("self-attention", "O(n^2 d)", "O(1)", "O(1)"),
          ("recurrent", "O(n d^2)", "O(n)", "O(n)"),
          ("convolutional", "O(k n d^2)", "O(1)", "O(log_k n)"),
          ("self-attention (restricted)", "O(r n d)", "O(1)", "O(n/r)")]
# Table 2 (§6.1): newstest2014 BLEU and training FLOPs (EN-DE, EN-FR), as printed; blank where
# the paper reports nothing.
TABLE2 = [("ByteNet", "23.75", "", "", ""),
          ("Deep-Att + PosUnk", "", "39.2", "", "1.0e20"),
          ("GNMT + RL", "24.6", "39.92", "2.3e19", "1.4e20"),
          ("ConvS2S", "25.16", "40.46", "9.6e18", "1.5e20"),
          ("MoE", "26.03", "40.56", "2.0e19", "1.2e20"),
          ("Deep-Att + PosUnk Ensemble", "", "40.4", "", "8.0e20"),
          ("GNMT + RL Ensemble", "26.30", "41.16", "1.8e20", "1.1e21"),
          ("ConvS2S Ensemble", "26.36", "41.29", "7.7e19", "1.2e21"),
          ("Transformer (base model)", "27.3", "38.1", "3.3e18", ""),
          ("Transformer (big)", "28.4", "41.8", "2.3e19", "")]
# Table 4 (§6.3): F1 on section 23 of the WSJ treebank.
TABLE4 = [("Vinyals & Kaiser et al. (2014)", "WSJ only, discriminative", 88.3),
          ("Petrov et al. (2006)", "WSJ only, discriminative", 90.4),
          ("Zhu et al. (2013)", "WSJ only, discriminative", 90.4),
          ("Dyer et al. (2016)", "WSJ only, discriminative", 91.7),
          ("Transformer (4 layers)", "WSJ only, discriminative", 91.3),
          ("Zhu et al. (2013)", "semi-supervised", 91.3),
          ("Huang & Harper (2009)", "semi-supervised", 91.3),
          ("McClosky et al. (2006)", "semi-supervised", 92.1),
          ("Vinyals & Kaiser et al. (2014)", "semi-supervised", 92.1),
          ("Transformer (4 layers)", "semi-supervised", 92.7),
          ("Luong et al. (2015)", "multi-task", 93.0),
          ("Dyer et al. (2016)", "generative", 93.3)]


def best_time(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def table1_measurements(lengths, widths, batch=2):
    rows = []
    with torch.no_grad():
        x = torch.randn(batch, lengths[0], widths[0])      # the process's one-time costs (its
        for _ in range(3):                                 # thread pool, the kernels' first
            attention(x, x, x)                             # calls) land in no cell
            torch.nn.RNN(widths[0], widths[0], batch_first=True)(x)
        for d in widths:
            rnn = torch.nn.RNN(d, d, batch_first=True)
            for n in lengths:
                x = torch.randn(batch, n, d)
                t_att = best_time(lambda: attention(x, x, x))
                t_rnn = best_time(lambda: rnn(x))
                rows.append(dict(n=n, d=d, attention_s=t_att, recurrent_s=t_rnn,
                                 attention_flops=4 * batch * n * n * d,
                                 recurrent_flops=4 * batch * n * d * d))
                print(f"  d={d:5d} n={n:5d}  attention {t_att * 1e3:9.2f} ms   "
                      f"recurrent {t_rnn * 1e3:9.2f} ms", file=sys.stderr)
    return rows


def crossover(rows, d):
    """Smallest measured n at which attention is slower than the recurrent layer (or None)."""
    for r in sorted((r for r in rows if r["d"] == d), key=lambda r: r["n"]):
        if r["attention_s"] > r["recurrent_s"]:
            return r["n"]
    return None


def table2_costs() -> dict:
    """For base and big: the paper's cost (hours x 8 GPUs x 9.5 TFLOPS), and our FLOPs per
    step and in total. The time on current GPUs is measured, not assumed: see
    benchmarks.gpu_train and experiments.gpu_schedule."""
    paper_hours = {"base": 12, "big": 3.5 * 24}
    costs = {}
    for name in ("base", "big"):
        c = configs.get(name)
        pairs = c.max_tokens / AVG_SENTENCE                 # sentence pairs per step
        per_step = pairs * training_flops(c, AVG_SENTENCE, AVG_SENTENCE, 37_000)
        costs[name] = dict(paper_flops=paper_hours[name] * 3600 * 8 * P100_TFLOPS * 1e12,
                           per_step=per_step, total=per_step * c.train_steps)
    return costs


def published_table2_rows() -> list[dict]:
    """Table 2 as published (TABLE2), one dict per system: BLEU and training cost in FLOPs for
    each pair, None where the paper reports nothing."""
    number = lambda text: float(text) if text else None
    return [dict(model=name, en_de_bleu=number(de), en_fr_bleu=number(fr),
                 en_de_flops=number(de_cost), en_fr_flops=number(fr_cost))
            for name, de, fr, de_cost, fr_cost in TABLE2]


def commands():
    return """```bash
# 1. data: WMT14 en-de training corpora, newstest2013 (dev), full newstest2014 (test)
python -m annotated.data.prepare_wmt14 --out-dir data/wmt14
# 2. train on one machine with 8 GPUs (25,000 + 25,000 tokens per step as in §5.1; fewer GPUs
#    compute the same global batch: in one piece where it fits, the fastest way (one 80 GB GPU),
#    or with accum_steps=8/GPUS in the same 8 pieces)
torchrun --nproc_per_node=8 -m annotated.train --config base --data-dir data --run-dir runs/base amp=bf16 compile=true
torchrun --nproc_per_node=8 -m annotated.train --config big  --data-dir data --run-dir runs/big  amp=bf16 compile=true
# 3. average the last checkpoints (§6.1: 5 for base, written every 10 minutes; 20 for big; the
#    presets also save every 1,000 steps, so on a fast GPU they span the last 5,000 or 20,000)
python -m annotated.checkpoint average --last 5  runs/base --out runs/base/average.pt
python -m annotated.checkpoint average --last 20 runs/big  --out runs/big/average.pt
# 4. translate newstest2014 with beam 4, alpha 0.6, max length input + 50, and score
python -m annotated.translate --checkpoint runs/base/average.pt --input data/wmt14/newstest2014.en \\
    --out runs/base/newstest2014.de
python -m annotated.evaluate --hyp runs/base/newstest2014.de --ref data/wmt14/newstest2014.de
```
Expected (paper, Table 2, tokenized BLEU with compound splitting): base 27.3, big 28.4 on
newstest2014; detokenized sacreBLEU is typically 0.7-1.5 lower (fairseq's big model: 29.3
tokenized vs 28.6 sacreBLEU). Expected time: the paper's 12 h (base) and 3.5 days (big) on
8 P100; on 8 current GPUs, the estimate of `results/gpu_schedule.md`, from one GPU's measured
step (`python -m experiments.gpu_schedule`)."""


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m experiments.paper_tables",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small Table 1 grid (seconds)")
    parser.add_argument("--reuse-timings", action="store_true",
                        help="rewrite the tables from OUT_DIR/table1_timings.json (no timing)")
    add_out_dir(parser, smoke="--quick")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    timings_file = args.out_dir / "table1_timings.json"
    reused = read_timings(timings_file) if args.reuse_timings else None
    check_out_dir(args.out_dir, smoke="--quick" if args.quick and reused is None else None)
    if reused is not None and grid(reused) != FULL_GRID and committed_folder(args.out_dir):
        raise DataError(f"--reuse-timings: {timings_file} was timed on another grid than Table "
                        f"1's (the --quick one, say), which {args.out_dir} does not publish; "
                        f"run without --reuse-timings to measure the full grid")
    timings = reused or measure_table1(args.quick)
    costs = table2_costs()
    text = render_markdown(timings, costs, invocation("experiments.paper_tables", argv),
                           reused=args.reuse_timings, timings_file=relative(timings_file))
    write_files({timings_file: json.dumps(timings, indent=1),
                 args.out_dir / "paper_tables.json": json.dumps(
                     dict(table2=costs, table2_published=published_table2_rows()), indent=1),
                 args.out_dir / "paper_tables.md": text})
    print(f"wrote {args.out_dir / 'paper_tables.md'}")


def read_timings(path: Path) -> dict:
    """Table 1's timings saved by an earlier run, for --reuse-timings: checked to be what
    measure_table1 writes (the threads, and rows of n, d and two positive times)."""
    if not path.is_file():
        raise DataError(f"--reuse-timings: no {path}; run without --reuse-timings to measure "
                        f"the timings")
    fix = "run without --reuse-timings to measure the timings again"
    try:
        timings = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise DataError(f"--reuse-timings: {path} is not valid JSON "
                        f"({e or 'nested too deep'}); {fix}") from None
    problem = timings_problem(timings)
    if problem:
        raise DataError(f"--reuse-timings: {path} {problem}, not Table 1's timings as this "
                        f"script writes them; {fix}")
    return timings


def timings_problem(timings) -> str | None:
    """What is wrong with a table1_timings.json's contents, or None if nothing is."""
    def count(x):
        return isinstance(x, int) and not isinstance(x, bool) and x > 0

    def seconds(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) \
            and x > 0
    if not isinstance(timings, dict):
        return f"holds a JSON {type(timings).__name__}"
    if not count(timings.get("threads")):
        return "has no number of threads"
    rows = timings.get("rows")
    if not isinstance(rows, list) or not rows:
        return "has no rows of timings"
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"has a row {i + 1} that is {shown(row)}, not an object"
        for key, good, what in (("n", count, "a count > 0"), ("d", count, "a count > 0"),
                                ("attention_s", seconds, "seconds > 0"),
                                ("recurrent_s", seconds, "seconds > 0")):
            if key not in row:
                return f"has a row {i + 1} without {key}"
            if not good(row[key]):
                return f"has rows[{i}].{key} = {shown(row[key])}, not {what}"
    return grid_problem([(row["n"], row["d"]) for row in rows])


def grid_problem(pairs: list) -> str | None:
    """What keeps the rows' (n, d) from being a grid, every length timed once at every width
    (a crossover "> n" claims every shorter length was timed), or None."""
    seen = {}
    for i, pair in enumerate(pairs):
        if pair in seen:
            return f"times n={pair[0]}, d={pair[1]} twice (rows[{seen[pair]}] and rows[{i}])"
        seen[pair] = i
    lengths, widths = sorted({n for n, _ in pairs}), sorted({d for _, d in pairs})
    for n, d in ((n, d) for d in widths for n in lengths):
        if (n, d) not in seen:
            return (f"has no row for n={n}, d={d}, though it times n={n} at another width "
                    f"(each length is timed at every width)")
    return None


#: Table 1's timing grid, (sequence lengths n, widths d): in full, and --quick's.
FULL_GRID = ((16, 32, 64, 128, 256, 512, 1024, 2048), (128, 512, 1024))
QUICK_GRID = ((16, 64, 256, 1024), (64, 256))


def grid(timings: dict) -> tuple:
    """The (lengths, widths) a table1_timings.json was timed on."""
    rows = timings["rows"]
    return tuple(sorted({r["n"] for r in rows})), tuple(sorted({r["d"] for r in rows}))


def measure_table1(quick: bool) -> dict:
    """Table 1's timings on this machine: the grid of (n, d), torch, the threads and the
    processor."""
    torch.manual_seed(0)
    lengths, widths = QUICK_GRID if quick else FULL_GRID
    return dict(threads=torch.get_num_threads(), torch=torch.__version__,
                machine=platform.processor() or platform.machine(),
                rows=table1_measurements(lengths, widths))


def render_markdown(timings: dict, costs: dict, command_line: str, reused: bool,
                    timings_file: str = "results/table1_timings.json") -> str:
    """paper_tables.md: the paper's tables as published and recomputed, each with how it was
    computed, and the WMT14 commands; `command_line` is the invocation that wrote it, and the
    timings (measured now, or `reused` from `timings_file`) say where they were measured."""
    version = (f"torch {timings['torch']}" if "torch" in timings
               else "torch version not recorded")
    lines = ["# The paper's tables, recomputed", "",
             f"Written by `{command_line}` "
             f"({version}, {timings['threads']} threads; Table 1 timings "
             f"{'reused from' if reused else 'measured into'} "
             f"`{timings_file}`). Do not edit by hand.", ""]
    lines += table1_markdown(timings, timings_file) + published_table2()
    lines += table2_markdown(costs) + table3_markdown() + published_table4()
    lines += ["", "## Reproducing base and big on WMT14 with 8 GPUs", "", commands(), ""]
    return "\n".join(lines)


def published_table2() -> list[str]:
    lines = ["## Table 2 as published: the Transformer beside earlier systems", "",
             "Quoted from the paper (§6.1): BLEU on newstest2014 and the training cost in "
             "FLOPs (training time x GPUs x the GPU's assumed sustained TFLOPS); blank where the "
             "paper reports nothing.", "",
             "| model | EN-DE BLEU | EN-FR BLEU | EN-DE cost (FLOPs) | EN-FR cost (FLOPs) |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {' | '.join(row)} |" for row in TABLE2]
    return lines + ["", "The paper gives one cost for each Transformer, for both pairs. The "
                    "English-French big model used P_drop = 0.1 instead of 0.3; the text of "
                    "§6.1 says 41.0 for it, Table 2 says 41.8.", ""]


def published_table4() -> list[str]:
    lines = ["## Table 4 as published: English constituency parsing", "",
             "Quoted from the paper (§6.3): F1 on section 23 of the Wall Street Journal part of "
             "the Penn Treebank.", "", "| parser | training | WSJ 23 F1 |", "| --- | --- | --- |"]
    return lines + [f"| {name} | {how} | {f1} |" for name, how, f1 in TABLE4] + [""]


def table1_markdown(timings: dict,
                    timings_file: str = "results/table1_timings.json") -> list[str]:
    rows = timings["rows"]
    lengths = sorted({r["n"] for r in rows})
    machine = f"{timings['threads']} threads" + (f" of an {timings['machine']} CPU"
                                                  if timings.get("machine") else "")
    lines = ["## Table 1: self-attention vs recurrent layer", "",
             "As published (§4): per layer, for sequence length n, width d, kernel width k and "
             "a restricted neighbourhood of r positions. The path length is the most layers a "
             "signal crosses between any two positions.", "",
             "| layer type | complexity per layer | sequential operations | maximum path length |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {' | '.join(row)} |" for row in TABLE1]
    lines += ["", "FLOPs of the self-attention and recurrent cores cross at n = d; measured "
              f"(batch 2, best of 5 runs, {machine}):", "",
              "| d | measured crossover n (attention slower from here) | FLOP crossover n |",
              "| --- | --- | --- |"]
    for d in sorted({r["d"] for r in rows}):
        c = crossover(rows, d)
        lines.append(f"| {d} | {c if c else f'> {lengths[-1]}'} | {d} |")
    if grid(timings) != FULL_GRID:
        lines += ["", "These are a small grid's timings (`--quick`), each a few milliseconds: on "
                  "a machine busy with other work, a crossover can move by a row or more. The "
                  "full grid, timed on a quiet machine, is the one to compare with the paper."]
    return lines + ["", f"Raw timings: `{timings_file}`; chapter 8 plots them.", ""]


def table2_markdown(costs) -> list[str]:
    lines = ["## Table 2: training cost", "",
             f"The paper's cost = training time x 8 GPUs x {P100_TFLOPS} TFLOPS (P100). Ours = "
             "the matrix-multiply FLOPs of `annotated.training.flops.training_flops` for one step "
             f"of {configs.get('base').max_tokens:,} source and as many target tokens "
             f"(sentences of {AVG_SENTENCE} tokens, shared vocabulary 37,000), times the steps:",
             "", "| model | paper: hours x GPUs x 9.5 TFLOPS | our count: FLOPs per step | "
             "x steps = total | our total / paper's cost |", "| --- | --- | --- | --- | --- |"]
    for name, c in costs.items():
        lines.append(f"| {name} | {c['paper_flops']:.2e} | {c['per_step']:.2e} | "
                     f"{c['total']:.2e} | {c['total'] / c['paper_flops']:.0%} |")
    return lines + ["", "The paper's figure is an upper bound (a P100 never sustains its peak), "
                    "which is why it is larger than the FLOPs the model actually needs. The "
                    "time on current GPUs is measured, not assumed: `results/gpu_schedule.md` "
                    "(chapter 9).", ""]


def table3_markdown() -> list[str]:
    lines = ["## Table 3: parameter counts", "",
             "`python -m annotated.configs` (shared vocabulary of 37,000, one matrix for both "
             "embeddings and the output projection):", ""]
    return lines + configs.table3_params_table(37_000).splitlines()


if __name__ == "__main__":
    main()
