"""Training steps of the paper's base and big models on one GPU at the paper's batch (§5.1:
about 25,000 source and 25,000 target tokens a step), bf16 autocast, compiled and not:
tokens/s, step time, peak memory and model FLOP utilisation (MFU).

    python -m benchmarks.gpu_train [--only base big] [--modes eager compiled graphs]
        [--repeats 10] [--profile] [--out results/gpu_train.json]
    python -m benchmarks.gpu_train --device cpu --only copy --tokens 600    # a smoke test

The modes: eager; compiled (`compile=true`); graphs (`compile=true cuda_graphs=true`: the
compiled step replayed as CUDA graphs, each batch padded up to its bucket; see
annotated.training.buckets). A CPU run checks the script itself. results/ holds the GPU's
record, which cannot be measured again without a GPU: only a run that measures it (base and
big on a GPU, the paper's batch and vocabulary) may write there, by whatever path --out takes
(a link, '..', a hard link of the file).

A step is what `python -m annotated.train` does per step (benchmarks.train_throughput builds
it): the token-batched global batch through annotated.training.step.train_step (collate,
forward, label-smoothed loss, backward), then the fused Adam update. Sentence lengths are
synthetic (16 to 48 subwords, the target within 3 of the source: news sentences) and the
vocabulary is the paper's 37,000 (§5.1); no data is read.

    MFU = useful FLOPs of the step / step time / the GPU's dense bf16 peak (its datasheet)

with the useful FLOPs from annotated.training.flops.batch_training_flops over the real, unpadded
lengths (3 x the forward pass's matrix products; see that module). The measured peak of a large
bf16 matrix product on the same GPU is recorded too, as a second yardstick.

Each model is also timed at the share of one GPU among eight (25,000 / 8 tokens a side), which
is what a step of the paper's 8-GPU setup asks of each GPU; experiments.gpu_schedule turns those
times into the wall time of the paper's training schedules. --profile adds, for each case, the
GPU time by kind of kernel (matrix products, attention, fused or elementwise work) and the time
the GPU sat idle, waiting for the CPU.

--out is checked before anything is measured, and rewritten whole (never half a file) after
every case, so a long run keeps what it has; its "complete" is true only once every case is.
"""
import gc
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

from annotated import configs
from annotated.base.cli import ArgumentParser, command, number, path
from annotated.base.errors import DataError, DeviceError
from annotated.base.files import atomic_open, check_output
from annotated.base.settings import at_least
from benchmarks.train_throughput import training_step
from experiments.folders import committed_file, relative
from experiments.machine import machine_record

VOCAB = 37_000
PAPER_BATCH = 25_000                 # tokens a side per step (§5.1)
GPUS = 8                             # the paper's machine (§5.2)
LENGTHS = (16, 48)
# Dense bf16 peak FLOP/s by GPU name (NVIDIA's datasheets, without sparsity).
PEAK_BF16 = {"H100 80GB HBM3": 989.4e12, "H100 SXM": 989.4e12, "H200": 989.4e12,
             "H100 PCIe": 756.0e12, "H100 NVL": 835.0e12, "A100": 312.0e12}


def datasheet_peak(name: str) -> float | None:
    return next((peak for key, peak in PEAK_BF16.items() if key in name), None)


def matmul_peak(n: int = 8192, repeats: int = 10) -> float:
    """The measured bf16 FLOP/s of an n x n x n product on random data (median of repeats)."""
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return 2 * n ** 3 / statistics.median(times)


def synchronize(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(step, repeats: int, device: str) -> tuple[float, float, list[float]]:
    """(seconds of the first call, compilation included; median seconds a step after two more
    warm-up calls; every timed step)."""
    synchronize(device)
    start = time.perf_counter()
    step()
    synchronize(device)
    first = time.perf_counter() - start
    for _ in range(2):
        step()
    synchronize(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return first, statistics.median(times), times


def kernel_kind(name: str) -> str:
    name = name.lower()
    if any(k in name for k in ("fmha", "attention", "flash", "attn")):
        return "attention"
    if any(k in name for k in ("gemm", "xmma", "cutlass", "nvjet", "matmul", "sm90_", "wgmma")):
        return "matrix products"
    if name.startswith("triton"):
        return "fused (compiled)"
    if any(k in name for k in ("nccl", "memcpy", "memset")):
        return "copies"
    return "elementwise and reductions"


def profile(step, device: str, steps: int = 3) -> dict:
    """GPU time a step by kind of kernel, and how long the GPU waited (step time - busy)."""
    from torch.profiler import ProfilerActivity
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    synchronize(device)
    with torch.profiler.profile(activities=activities) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(device)
        wall = (time.perf_counter() - start) / steps
    kinds, top = {}, []
    for event in prof.key_averages():
        gpu = getattr(event, "self_device_time_total", None)
        if gpu is None:
            gpu = getattr(event, "self_cuda_time_total", 0)
        if gpu <= 0 or event.device_type != torch.autograd.DeviceType.CUDA:
            continue                        # CPU-side events; kernels are counted on their own
        seconds = gpu / 1e6 / steps
        kinds[kernel_kind(event.key)] = kinds.get(kernel_kind(event.key), 0.0) + seconds
        top.append((seconds, event.key[:90]))
    busy = sum(kinds.values())
    return {"step_s": round(wall, 5), "gpu_busy_s": round(busy, 5),
            "gpu_idle_s": round(max(wall - busy, 0.0), 5),
            "by_kind_s": {k: round(v, 5) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
            "top_kernels": [[round(s, 6), name] for s, name in sorted(top, reverse=True)[:12]]}


def measure(name: str, config, max_tokens: int, mode: str, args, peak: float | None) -> dict:
    """One case: the step timed and profiled, gradient accumulation doubled until it fits."""
    accum, device = 1, args.device
    while True:
        case = config.override(amp="bf16", compile=mode != "eager", cuda_graphs=mode == "graphs",
                               accum_steps=accum,
                               max_tokens=max(max_tokens, config.max_sentence_len))
        try:
            torch._dynamo.reset()
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            step, flops, (src, tgt), pairs = training_step(case, args.vocab, max_tokens, LENGTHS,
                                                           device=device)
            first, median, times = timed(step, args.repeats, device)
            break
        except torch.cuda.OutOfMemoryError:
            step = None
            gc.collect()
            torch.cuda.empty_cache()
            accum *= 2
            if mode == "graphs":
                raise DeviceError(f"{name}: out of GPU memory with CUDA graphs, which take one "
                                  f"micro-batch a step; measure it with --modes compiled")
            if accum > 64:
                raise
    result = {"case": name, "N": config.N, "d_model": config.d_model, "d_ff": config.d_ff,
              "h": config.h, "compile": mode != "eager", "cuda_graphs": mode == "graphs",
              "accum_steps": accum, "max_tokens": max_tokens,
              "pairs": pairs, "source_tokens": src, "target_tokens": tgt,
              "useful_flops": flops, "first_step_s": round(first, 2),
              "step_s": round(median, 5), "step_s_range": [round(min(times), 5),
                                                          round(max(times), 5)],
              "tokens_per_s": round((src + tgt) / median),
              "target_tokens_per_s": round(tgt / median),
              "peak_memory_GiB": round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
              if device == "cuda" else None,
              "TFLOPs": round(flops / median / 1e12, 1),
              "MFU": round(flops / median / peak, 3) if peak else None}
    if args.profile:
        result["profile"] = profile(step, device)
    del step
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def case_line(r: dict, mode: str) -> str:
    """One measured case, as printed; a CPU run has no peak memory or MFU to show."""
    memory = f"{r['peak_memory_GiB']} GiB, " if r["peak_memory_GiB"] is not None else ""
    mfu = f"MFU {r['MFU']}" if r["MFU"] is not None else "no MFU (no GPU peak to divide by)"
    return (f"{r['case']:<9} {mode:<8} accum {r['accum_steps']}: {r['pairs']} pairs "
            f"({r['source_tokens']:,}+{r['target_tokens']:,} tokens), "
            f"{r['step_s'] * 1000:.1f} ms/step, {r['tokens_per_s']:,} tokens/s, {memory}"
            f"{r['TFLOPs']} TFLOP/s, {mfu} (first step {r['first_step_s']} s)")


def machine(device: str) -> dict:
    record = machine_record()
    if device == "cuda":
        record["bf16_datasheet_peak_TFLOPs"] = (datasheet_peak(record["gpu"]) or 0) / 1e12 or None
    return record


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.gpu_train",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(configs.PRESETS), default=["base", "big"],
                        metavar="CONFIG", help="presets to time (default: base big)")
    parser.add_argument("--modes", nargs="+", choices=["eager", "compiled", "graphs"],
                        default=["eager", "compiled"], help="default: eager compiled")
    parser.add_argument("--tokens", type=number(at_least(1)), default=PAPER_BATCH,
                        help=f"tokens a side per step (default {PAPER_BATCH:,}, the paper's); "
                             f"each model is also timed at 1/{GPUS} of it")
    parser.add_argument("--vocab", type=number(at_least(5)), default=VOCAB,
                        help=f"shared vocabulary size (default {VOCAB:,}, the paper's)")
    parser.add_argument("--repeats", type=number(at_least(3)), default=10,
                        help="timed steps (median)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu only to check the script itself on a small preset")
    parser.add_argument("--profile", action="store_true", help="GPU time by kind of kernel")
    parser.add_argument("--out", type=path, help="write the measurements as JSON here, after "
                        "every case (\"complete\": true once all are measured)")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    if args.device == "cpu" and (big := [n for n in args.only if n in ("base", "big")]):
        raise DataError(f"--device cpu with --only {' '.join(big)}: a CPU only checks the "
                        f"script itself, and the paper's models at its batch would take hours; "
                        f"give a small preset, e.g. --device cpu --only copy --tokens 400 "
                        f"--vocab 11")
    least = GPUS * (LENGTHS[1] + 2)        # an eighth of the batch holds the longest pair
    if args.tokens < least:                 # with its start and end tokens
        raise DataError(f"--tokens {args.tokens:,}: each case also times an eighth of the "
                        f"batch (one of {GPUS} GPUs'), which must hold a sentence of up to "
                        f"{LENGTHS[1] + 2} tokens; give --tokens {least} or more")
    if args.out:
        check_record(args)
        check_output(args.out)                  # before any measurement, not after the first
        check_replaced(args.out)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise DeviceError("no CUDA GPU here; this benchmark measures one (CPU throughput: "
                          "python -m benchmarks.train_throughput)")
    info = machine(args.device)
    peak = datasheet_peak(info["gpu"]) if "gpu" in info else None
    if args.device == "cuda":
        info["bf16_matmul_measured_TFLOPs"] = round(matmul_peak() / 1e12, 1)
        print(f"{info['gpu']}, torch {info['torch']}, CUDA {info['cuda']}: bf16 peak "
              f"{info['bf16_datasheet_peak_TFLOPs']} TFLOP/s (datasheet), "
              f"{info['bf16_matmul_measured_TFLOPs']} measured (8192^3 product)", flush=True)
    cases = []
    words = sys.argv[1:] if argv is None else argv
    record = {"command": shlex.join(["python", "-m", "benchmarks.gpu_train", *words]),
              "machine": info, "vocab": args.vocab, "lengths": LENGTHS, "complete": False,
              "cases": cases}
    for name in args.only:
        for max_tokens, label in [(args.tokens, ""), (args.tokens // GPUS, f" 1/{GPUS}")]:
            for mode in args.modes:
                r = measure(name + label, configs.get(name), max_tokens, mode, args, peak)
                cases.append(r)
                print(case_line(r, mode), flush=True)
                if args.out:                 # after every case: a long run keeps what it has
                    save(record, args.out)
                if "profile" in r:
                    print(f"{'':<9} GPU busy {r['profile']['gpu_busy_s'] * 1000:.1f} ms of "
                          f"{r['profile']['step_s'] * 1000:.1f}: " + ", ".join(
                              f"{k} {v * 1000:.1f}" for k, v in r["profile"]["by_kind_s"].items()),
                          flush=True)
    if args.out:
        record["complete"] = True
        save(record, args.out)
        print(f"wrote {args.out}")


def not_the_record(args) -> str | None:
    """Why this run cannot be the GPU record that results/ holds (base and big on a GPU at the
    paper's batch and vocabulary), or None if it can."""
    if args.device == "cpu":
        return "a CPU run, which checks the script only"
    if not {"base", "big"} <= set(args.only):
        return f"--only {' '.join(args.only)}, not base and big"
    if args.tokens != PAPER_BATCH:
        return f"--tokens {args.tokens:,}, not the paper's {PAPER_BATCH:,}"
    if args.vocab != VOCAB:
        return f"--vocab {args.vocab:,}, not the paper's {VOCAB:,}"
    return None


def check_record(args) -> None:
    """Refuse an --out among the committed files, by whatever path (a link, '..', a hard link
    of the file), unless this run measures the record they hold: it cannot be measured again
    without a GPU."""
    committed, problem = committed_file(args.out), not_the_record(args)
    if committed is None or problem is None:
        return
    where = (f"is inside {relative(committed)}/" if committed.is_dir() else
             f"is another name (a hard link) of {relative(committed)}")
    raise DataError(f"--out {args.out} {where}, whose files are committed (results/ holds the "
                    f"GPU's measurements of base and big); this run is {problem}: give --out a "
                    f"file elsewhere, such as runs/gpu_train.json")


def check_replaced(out: Path) -> None:
    """Refuse an --out that holds a file other than a record of this script, which the
    measurements would replace."""
    if not out.is_file() or out.stat().st_size == 0:
        return
    try:
        held = json.loads(out.read_bytes())
        if isinstance(held, dict) and "cases" in held:
            return
    except (ValueError, OSError, RecursionError):
        pass
    raise DataError(f"--out {out} holds another file (not a record of benchmarks.gpu_train), "
                    f"which the measurements would replace; give a new file, such as "
                    f"runs/gpu_train.json")


def save(record: dict, out: Path) -> None:
    """The measurements so far, replacing `out` whole (never half a file); "complete" stays
    false until every case is measured, so a file left by an interrupted run says so."""
    with atomic_open(out, "w") as f:
        f.write(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
