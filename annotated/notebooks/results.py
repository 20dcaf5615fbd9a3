"""Chapter 8's, chapter 9's and the appendix's results: the files that the experiment scripts wrote into
results/ (each records the command that wrote it), read here and laid out as the short tables
the two chapters show, one function per table. The chapters compute and draw; which file holds
a number, and where in it, is said here.

    read, attention_example      a results file; one sentence's attention maps
    decoding_table, signature    Tables 8.1 and 8.2: a model's test2016 scores, one row a decoding
    published_table              Table 8.3: the shipped model beside the published result
    examples_table               Tables 8.4 and A.8: test sentences and their translations
    paper_table1, recipe         Table 8.5, the paper's Table 1; the commands for WMT 2014
    cost_table                   Table 8.6: Table 2's cost, our FLOP count, the measured estimate
    run_mode, step_table         Table 9.3: the training steps timed on one GPU, and how each ran
    profile_table                Table 9.4: where the GPU's time goes in a compiled step
    candidate_label ... table3_table   the appendix's tables: the sweep and its comparisons,
                                 the second hour, the other seed, the bootstrap, the metric,
                                 English-French, Table 3 in full; command_settings
"""
import json
import re
import statistics

from IPython.display import Markdown

from annotated.notebooks.chapter import PACKAGE, section

#: The files the experiment scripts wrote, which chapter 8 and the appendix read.
RESULTS = PACKAGE.parent / "results"


def read(name: str) -> dict:
    """results/<name>: a JSON file written by an experiment script."""
    return json.loads((RESULTS / name).read_text())


def table(header: list[str], rows: list[list], align: str = "") -> Markdown:
    """A Markdown table: `header`, then `rows` (cells as they are shown); `align` gives each
    column's alignment, l or r (default: the first left, the rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = [header, rule, *rows]
    return Markdown("\n".join("| " + " | ".join(map(str, line)) + " |" for line in lines))


def attention_example(stem: str, j: int) -> dict:
    """Sentence `j` of results/<stem>_attention.npz (experiments.multi30k): the source pieces
    (with "</s>"), the pieces fed to the decoder ("<s>" and the output but its last piece), the
    pieces it made (the output), and the maps of each kind, (layers, heads, queries, keys)."""
    import numpy as np
    maps = np.load(RESULTS / f"{stem}_attention.npz")
    out = [str(p) for p in maps[f"{j}_out_pieces"]]               # "<s>" + the output
    return dict(source=[str(p) for p in maps[f"{j}_src_pieces"]], fed=out[:-1], made=out[1:],
                **{kind: maps[f"{j}_{kind}"] for kind in ("encoder", "decoder", "cross")})


# ---- Chapter 8 ----

def decoding_table(run: dict) -> Markdown:
    """Tables 8.1 and 8.2: a model's test2016 scores (experiments.multi30k's JSON), one row per
    decoding, the model's own first: cased sacreBLEU and its change from the first row,
    tokenized BLEU (the paper's way) and the mean words of a translation; the references'
    mean words last."""
    first = next(iter(run["test2016"].values()))
    rows = []
    for decoding, s in run["test2016"].items():
        name = re.sub(r"\s*\(ckpt_\d+\.pt\)", "", decoding)        # the checkpoint's file name
        change = "" if s is first else f"{s['bleu'] - first['bleu']:+.2f}"
        rows.append([name, f"{s['bleu']:.2f}", change, f"{s['paper_bleu']:.2f}",
                     f"{s['mean_output_words']:.2f}"])
    rows.append(["the references", "", "", "", f"{run['reference_mean_words']:.2f}"])
    return table(["decoding", "sacreBLEU", "change", "tokenized BLEU", "words a sentence"], rows)


def signature(run: dict) -> Markdown:
    """sacreBLEU's signature of a model's cased test2016 scores, as a line of text."""
    first = next(iter(run["test2016"].values()))
    return Markdown(f"sacreBLEU's signature: `{first['signature']}`")


def tokens_published(system: str) -> tuple[int, int, int]:
    """(updates, tokens per GPU, GPUs) of a published run, from its description in
    published.json ("8,000 updates of 4,096 tokens on 2 GPUs")."""
    run = re.search(r"([\d,]+) updates of ([\d,]+) tokens on (\d+) GPUs", system)
    return tuple(int(g.replace(",", "")) for g in run.groups())


def published_table(shipped: dict, metric: dict, paired: dict, published: dict) -> Markdown:
    """Table 8.3: test2016 lowercased BLEU of the shipped model (with the 95% range of the
    paired bootstrap), the same translations scored the published way (Moses tokens), and the
    published Transformer-tiny; how each is tokenized, the reference tokens it counts and the
    tokens each model saw in training."""
    wu = published["multi30k_test2016"]["en-de"][0]
    ours = next(iter(shipped["test2016"].values()))
    low, high = paired["test2016"]["lowercased BLEU"]["baseline_interval"]
    assert paired["systems"][1]["checkpoint"].endswith("multi30k_en_de.pt")   # the shipped one
    steps = [m for m in shipped["metrics"] if m["split"] == "train"][-1]["step"]
    seen = steps * shipped["config"]["max_tokens"]                      # at most, a side
    updates, tokens, gpus = tokens_published(wu["system"])              # fairseq: per GPU
    rows = [["the shipped model", f"{ours['lowercase_bleu']:.2f} ({low:.2f} to {high:.2f})",
             "13a", f"{ours['lowercase_ref_tokens']:,}",
             f"{steps:,} x {shipped['config']['max_tokens']:,} = {seen / 1e6:.1f} million"],
            ["the same translations", f"{metric['moses']['lowercase_bleu']:.2f}", "Moses",
             f"{metric['moses']['ref_tokens']:,}", ""],
            [f"Transformer-tiny, {wu['source'].split(',')[0]}", f"{wu['bleu']:.2f}", "Moses",
             f"{wu['reference_tokens']:,}",
             f"{updates:,} x {tokens:,} x {gpus} = {updates * tokens * gpus / 1e6:.1f} million"]]
    return table(["system", "lowercased BLEU", "tokens", "reference tokens",
                  "training: steps x tokens"], rows, "lrlrr")


def examples_table(runs: dict, chosen: list[int]) -> Markdown:
    """Tables 8.4 and A.8: the test sentences `chosen` (indices of the runs' examples), each
    with the translation of every run of `runs` ({column name: experiments.multi30k's JSON}),
    then its reference."""
    first = next(iter(runs.values()))["examples"]
    rows = []
    for i in chosen:
        assert all(run["examples"][i]["source"] == first[i]["source"] for run in runs.values())
        rows.append([first[i]["source"], *[run["examples"][i]["translation"]
                                           for run in runs.values()], first[i]["reference"]])
    return table(["English", *runs, "reference"], rows, "l" * (len(runs) + 2))


def paper_table1() -> Markdown:
    """Table 8.5: the paper's Table 1 as published (§4), from paper_tables.md."""
    text = section((RESULTS / "paper_tables.md").read_text(), "Table 1")
    return Markdown(re.search(r"^\|.*?(?=\n\n)", text, re.S | re.M).group(0))


def recipe() -> Markdown:
    """The commands that train, average, decode and score base and big on WMT14, the code
    block of paper_tables.md's section on reproducing them, with DIR for the data folder (the
    chapter says what to expect, in its own words)."""
    text = section((RESULTS / "paper_tables.md").read_text(), "Reproducing")
    commands = re.search(r"```bash\n.*?\n```", text, re.S).group(0)
    return Markdown(re.sub(r"(?<=\s)data(?=[/\s])", "DIR", commands))


def cost_table(paper: dict, schedule: dict, measured: dict) -> Markdown:
    """Table 8.6, for base and big: the paper's training time (Table 2), our FLOP count as a
    share of the paper's cost, and on current GPUs (benchmarks.gpu_train,
    experiments.gpu_schedule): the MFU of the full batch's step measured on one GPU, that
    step times the paper's steps, and the estimate for eight GPUs."""
    rows = []
    for name, cost in paper["table2"].items():
        plan = schedule["models"][name]
        step = next(c for c in measured["cases"]          # the step the schedule took
                    if c["case"] == name and c["step_s"] == plan["full_step_s"])
        one_gpu = plan["full_step_s"] * plan["paper_steps"] / 3600
        rows.append([name, f"{plan['paper_hours']:g} h",
                     f"{cost['total'] / cost['paper_flops']:.0%}", f"{step['MFU']:.2f}",
                     f"{one_gpu:.1f} h", f"{plan['hours']['per_gpu_share']:g} h"])
    gpu = measured["machine"]["gpu"]
    return table(["model", "the paper: 8 P100s", "our FLOPs / the paper's cost", f"MFU, one {gpu}",
                  "one GPU, estimate", "8 GPUs, estimate"], rows)


def run_mode(case: dict) -> str:
    """How a case of benchmarks.gpu_train ran: "eager", "compiled" (torch.compile), or
    "compiled, CUDA graphs" (the compiled step replayed as CUDA graphs)."""
    if case.get("cuda_graphs"):                # not recorded before CUDA graphs existed
        return "compiled, CUDA graphs"
    return "compiled" if case["compile"] else "eager"


def step_table(measured: dict, schedule: dict) -> Markdown:
    """Table 9.3: each step benchmarks.gpu_train timed (its source tokens, time, throughput and
    MFU) and, beside the eighth that experiments.gpu_schedule took, the paper's steps on 8
    such GPUs (an estimate) and the paper's own hours."""
    rows = []
    for case in measured["cases"]:
        plan = schedule["models"][case["case"].split()[0]]
        used = case["case"].endswith("1/8") and case["step_s"] == plan["share_step_s"]
        rows.append([case["case"], run_mode(case), f"{case['source_tokens']:,}",
                     f"{case['step_s'] * 1000:.1f}", f"{case['tokens_per_s']:,}",
                     f"{case['MFU']:.3f}",
                     f"{plan['hours']['per_gpu_share']:g} h (paper: {plan['paper_hours']:g} h)"
                     if used else ""])
    return table(["step", "mode", "source tokens", "ms", "tokens/s", "MFU",
                  "8 GPUs, the paper's steps"], rows, "llrrrrr")


def profile_table(measured: dict) -> Markdown:
    """Table 9.4: each compiled step of benchmarks.gpu_train, profiled once: the GPU's time in
    each kind of kernel and the time it waits, in milliseconds of the profiled step, and the
    share of that step the GPU was busy."""
    kinds = ["matrix products", "attention", "fused (compiled)"]
    rows = []
    for case in (c for c in measured["cases"] if c["compile"]):
        profile = case["profile"]
        spent = profile["by_kind_s"]
        other = sum(s for kind, s in spent.items() if kind not in kinds)
        ms = [spent.get(kind, 0.0) for kind in kinds] + [other, profile["gpu_idle_s"],
                                                         profile["step_s"]]
        rows.append([case["case"], run_mode(case), *(f"{s * 1000:.1f}" for s in ms),
                     f"{profile['gpu_busy_s'] / profile['step_s']:.0%}"])
    return table(["step", "mode", "matrix products", "attention", "fused kernels",
                  "other element-wise", "GPU idle", "step", "GPU busy"], rows, "llrrrrrrr")


# ---- The appendix: the sweep that chose the shipped model ----

def candidate_label(run: dict) -> str:
    """A run of the sweep named by its preset and what it changes ("tiny, 2 processes,
    dropout 0.2, 6k subwords")."""
    from annotated.configs import get
    from annotated.optim import noam_rate
    preset = get(run["preset"])
    changes = dict(o.split("=", 1) for o in run["overrides"])
    words = ["tiny" if run["preset"] == "multi30k_tiny" else f"{run['preset']} preset"]
    if run.get("processes", 1) > 1:
        words.append(f"{run['processes']} processes")
    if "P_drop" in changes:
        words.append(f"dropout {changes['P_drop']}")
    if "vocab_size" in changes:
        words.append(f"{int(changes['vocab_size']) // 1000}k subwords")
    if changes.get("lowercase") == "true":
        words.append("lowercased")
    if "warmup_steps" in changes:                   # another schedule: name its peak rate
        warmup, factor = int(changes["warmup_steps"]), float(changes["lr_factor"])
        words.append(f"peak rate {noam_rate(warmup, preset.d_model, warmup, factor):.0e}")
    elif "lr_factor" in changes:
        words.append(f"learning rate x{float(changes['lr_factor']) / preset.lr_factor:.2g}")
    if "cooldown_steps" in changes:
        words.append("rate cooled to 0")
    if "seed" in changes:
        words.append(f"seed {changes['seed']}")
    return ", ".join(words)


def best(run: dict, **fixed) -> dict:
    """The row of a sweep run with the highest validation lowercased BLEU among the rows with
    these settings (average, beam, alpha)."""
    rows = [r for r in run["rows"] if all(r[k] == v for k, v in fixed.items())]
    return max(rows, key=lambda r: r["lowercase_bleu"])


def last_ppl(run: dict) -> float:
    """A sweep run's validation perplexity with its last checkpoint alone."""
    return next(r["val_ppl"] for r in run["rows"] if r["average"] == 1)


def lowercased(run: dict) -> bool:
    return "lowercase=true" in run["overrides"]


def sweep_table(sweep: dict) -> Markdown:
    """Table A.1: the sweep's candidates in the order tried, numbered: steps in the hour,
    validation perplexity with the last checkpoint, the best validation lowercased BLEU with
    the last checkpoint and with the average of the last 5 and 10, and the decoding of the
    best (checkpoints averaged, beam, alpha)."""
    counts = sorted({r["average"] for run in sweep["candidates"].values() for r in run["rows"]})
    rows = []
    for i, run in enumerate(sweep["candidates"].values(), start=1):
        top = best(run)
        rows.append([i, candidate_label(run), f"{run['steps']:,}", f"{last_ppl(run):.2f}",
                     *[f"{best(run, average=k)['lowercase_bleu']:.2f}" for k in counts],
                     f"{top['average']}, {top['beam']}, {top['alpha']}"])
    names = [f"last {k}" for k in counts]
    return table(["#", "candidate", "steps", "PPL", *names, "best at"], rows,
                 "llrr" + "r" * len(counts) + "l")


def comparisons_table(sweep: dict, pairs: list[tuple[str, int, int]]) -> Markdown:
    """Table A.2: for each (what changed, candidate a, candidate b) of `pairs`, the candidates
    numbered as in Table A.1: the steps of each in its hour, their validation perplexity with
    the last checkpoint (where their vocabulary and casing are the same), and a's gain in best
    validation BLEU and in BLEU with one decoding for all (the average of 5, beam 4,
    alpha 1.0)."""
    runs = list(sweep["candidates"].values())
    same = dict(average=5, beam=4, alpha=1.0)
    rows = []
    for what, a, b in pairs:
        ra, rb = runs[a - 1], runs[b - 1]
        comparable = (ra["config"]["vocab_size"] == rb["config"]["vocab_size"]
                      and lowercased(ra) == lowercased(rb))
        ppl = f"{last_ppl(ra):.2f} / {last_ppl(rb):.2f}" if comparable else ""
        xa, xb = best(ra)["lowercase_bleu"], best(rb)["lowercase_bleu"]
        ya, yb = best(ra, **same)["lowercase_bleu"], best(rb, **same)["lowercase_bleu"]
        rows.append([what, f"{a} / {b}", f"{ra['steps']:,} / {rb['steps']:,}", ppl,
                     f"{xa - xb:+.2f}", f"{ya - yb:+.2f}"])
    return table(["change", "a / b", "steps", "val. PPL", "best val. BLEU", "same decoding"],
                 rows, "lrrrrr")


def second_hour_table(sweep: dict, name: str) -> Markdown:
    """Table A.3: the candidate `name` (a candidate_label) after its hour, and its run
    continued past it: steps, minutes and the best validation BLEU for each number of
    checkpoints averaged."""
    run = next(r for r in sweep["candidates"].values() if candidate_label(r) == name)
    counts = sorted({r["average"] for r in run["rows"]})
    rows = [[what, f"{r['steps']:,}", r["minutes"],
             *[f"{best(r, average=k)['lowercase_bleu']:.2f}" for k in counts]]
            for what, r in [("after the hour", run),
                            *[("continued", r) for r in sweep["second_hour"].values()]]]
    return table(["run", "steps", "minutes",
                  *[f"last {k}" if k > 1 else "last checkpoint" for k in counts]], rows)


def seed_table(sweep: dict) -> Markdown:
    """Table A.4: each candidate trained again with another seed, beside its first run (the
    candidates numbered as in Table A.1): steps, validation perplexity of the average of 5,
    the best validation BLEU, the best with the last checkpoint alone, and the mean best of
    the two seeds."""
    from annotated.notebooks.training_plots import sweep_source
    number = {name: i for i, name in enumerate(sweep["candidates"], start=1)}
    rows = []
    for again in sweep["other_seed"].values():
        name = sweep_source(again, sweep["candidates"])
        first = sweep["candidates"][name]
        mean = statistics.mean(best(r)["lowercase_bleu"] for r in (first, again))
        for run, what in ((first, f"{number[name]}"), (again, f"{number[name]}, another seed")):
            ppl = next(r["val_ppl"] for r in run["rows"] if r["average"] == 5)
            rows.append([what, f"{run['steps']:,}", f"{ppl:.2f}",
                         f"{best(run)['lowercase_bleu']:.2f}",
                         f"{best(run, average=1)['lowercase_bleu']:.2f}",
                         f"{mean:.2f}" if run is first else ""])
    return table(["candidate", "steps", "val. perplexity, last 5", "best val. BLEU",
                  "best, last checkpoint", "mean of the two seeds"], rows)


def bootstrap_table(paired: dict) -> Markdown:
    """Table A.5: the paired bootstrap of the best lowercased candidate against the shipped
    model (experiments.multi30k_paired), on val and test2016: each one's lowercased BLEU and
    the difference, each with its 95% range, and the share of draws where the shipped model
    does as well or better."""
    rows = []
    for split in ("val", "test2016"):
        s = paired[split]["lowercased BLEU"]
        span = lambda key, sign="": "{:{s}.2f} to {:{s}.2f}".format(*s[key], s=sign)
        rows.append([split, f"{s['sentences']:,}", f"{s['bleu']:.2f} ({span('interval')})",
                     f"{s['baseline_bleu']:.2f} ({span('baseline_interval')})",
                     f"{s['difference']:+.2f} ({span('difference_interval', '+')})",
                     f"{s['p']:.1%}"])
    return table(["set", "sentences", "lowercased model", "shipped model", "difference",
                  "shipped as good or better"], rows)


def metric_table(metric: dict, published: dict) -> Markdown:
    """Table A.6: the shipped model's test2016 translations scored two ways (experiments.
    multi30k_metric), beside the reference tokens of the published evaluation."""
    wu = published["multi30k_test2016"]["en-de"][0]
    where = wu["source"].split(",")[0]                               # "Wu et al. (2021)"
    rows = [["sacreBLEU -lc on plain text (ours)", f"{metric['ours']['lowercase_bleu']:.2f}",
             f"{metric['ours']['lowercase_ref_tokens']:,}"],
            ["Moses-prepared text, BLEU on its tokens (the published way)",
             f"{metric['moses']['lowercase_bleu']:.2f}", f"{metric['moses']['ref_tokens']:,}"],
            [f"the published evaluation ({where})", "", f"{wu['reference_tokens']:,}"]]
    return table(["lowercased BLEU of the same translations", "score", "reference tokens"],
                 rows)


def en_fr_table(published: dict) -> Markdown:
    """Table A.7: test2016 cased sacreBLEU and lowercased BLEU of the shipped model's settings
    and of the multi30k preset trained on English-French, of the shipped model (German), and
    of general-purpose systems from public leaderboards."""
    rows = []
    ours = [("English→French", "the shipped model's settings", "multi30k_tiny_en_fr"),
            ("English→French", "the `multi30k` preset", "multi30k_en_fr"),
            ("English→German", "the shipped model", "multi30k_tiny")]
    for pair, what, name in ours:
        s = next(iter(read(f"{name}.json")["test2016"].values()))
        rows.append([pair, what, f"{s['bleu']:.2f}", f"{s['lowercase_bleu']:.2f}"])
    for pair, key in [("English→French", "en-fr"), ("English→German", "en-de")]:
        rows += [[pair, system["system"], system["bleu"], ""]
                 for system in published["leaderboards"][key]]
    return table(["pair", "system", "sacreBLEU (cased)", "lowercased BLEU"], rows, "llrr")


def table3_table(runs: dict) -> Markdown:
    """Table A.9: every run of Table 3 at small scale (experiments.table3_small's JSON): its
    validation perplexity, cased sacreBLEU and lowercased BLEU, the paper's perplexity and
    BLEU for the same row, and the minutes it trained."""
    rows = [[name, f"{r['ppl']:.2f}", f"{r['bleu']:.2f}", f"{r['lowercase_bleu']:.2f}",
             f"{r['paper_ppl']:.2f} / {r['paper_bleu']:.1f}", f"{r['minutes']:g}"]
            for name, r in runs.items()]
    return table(["run", "PPL", "sacreBLEU", "lowercased", "paper: PPL / BLEU", "minutes"],
                 rows)


def command_settings(command: str) -> dict[str, str]:
    """The settings (key=value) of a run's recorded command, as written."""
    return dict(word.split("=", 1) for word in command.split() if "=" in word)
