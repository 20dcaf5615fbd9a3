"""The CUDA path, on a machine with an NVIDIA GPU; every test here is skipped without one.

What the CPU tests check through their CPU twins (gloo, CPU autocast, CPU compile) is checked
here on the GPU itself: a float32 training step equals the CPU's to rounding; bf16 and fp16
training track float32; compiled training equals eager; beam search translates as on the CPU;
and a one-process torchrun run over NCCL stops, resumes and continues bit for bit.
"""
import copy
import json
import os
import subprocess
import sys
from dataclasses import astuple
from pathlib import Path

import numpy as np
import pytest
import torch

from annotated import configs, train
from annotated.base.files import read_lines
from annotated.data.corpus import SAMPLE, SAMPLE_SPLITS
from annotated.inference.batched import translate_lines
from annotated.model import EncoderDecoder
from annotated.optim import make_optimizer
from annotated.store import checkpoint_file
from annotated.store.checkpoint_file import load_model
from annotated.training.step import make_engine, train_step

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here")

CPU, GPU = torch.device("cpu"), torch.device("cuda")
SHIPPED = Path(__file__).resolve().parent.parent / "annotated/pretrained/multi30k_en_de.pt"
# The sample preset, logged often; validation and checkpoints only at the end.
SAMPLE_RUN = ["--config", "sample", "log_every=10", "eval_every=10000", "ckpt_every=10000"]


@pytest.fixture(autouse=True)
def full_float32():
    """float32 matrix products in full float32 on the GPU (TF32 rounds inputs to 10 bits)."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(before)


def random_pairs(vocab: int, n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [tuple(rng.integers(4, vocab, rng.integers(3, 30)) for _ in "st") for _ in range(n)]


def test_a_float32_training_step_on_cuda_equals_the_cpu_step():
    """The same weights and batch: loss and every gradient agree to float32 rounding (the
    key biases b^K aside: their true gradient is exactly zero, so both devices return rounding
    noise), and the fused Adam update of the same gradients gives the same weights."""
    config = configs.get("sample").override(P_drop=0.0)        # no dropout: masks differ
    pairs, batch = random_pairs(2000), list(range(64))
    cpu_model = EncoderDecoder(config, 2000)
    gpu_model = copy.deepcopy(cpu_model).to(GPU)
    sums = {device: astuple(train_step(make_engine(model, config, device), pairs, batch, config))
            for device, model in [(CPU, cpu_model), (GPU, gpu_model)]}
    assert sums[CPU] == pytest.approx(sums[GPU], rel=1e-6, abs=0)
    for (name, p), q in zip(cpu_model.named_parameters(), gpu_model.parameters()):
        if not name.endswith("W_K.bias"):
            assert (q.grad.cpu() - p.grad).abs().max() <= 1e-5 * p.grad.abs().max(), name

    for q, p in zip(gpu_model.parameters(), cpu_model.parameters()):
        q.grad.copy_(p.grad)                                   # the very same gradients
    for model in (cpu_model, gpu_model):
        optimizer, scheduler = make_optimizer(model, config.d_model, config.warmup_steps)
        optimizer.step()
    for p, q in zip(cpu_model.parameters(), gpu_model.parameters()):
        assert torch.allclose(q.cpu(), p, rtol=1e-6, atol=1e-7)


def train_losses(out, *overrides, steps: int = 300, log_every: int = 10) -> list[float]:
    run = [f"log_every={log_every}" if a.startswith("log_every=") else a for a in SAMPLE_RUN]
    train.main(["--run-dir", str(out), *run, "--max-steps", str(steps), *overrides])
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [m["loss"] for m in lines if m["split"] == "train"]


@pytest.fixture(scope="module")
def float32_losses(tmp_path_factory):
    return train_losses(tmp_path_factory.mktemp("float32") / "run")


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_mixed_precision_training_tracks_float32_for_300_steps(tmp_path, amp, float32_losses):
    """From the same weights and batches, the training loss logged every 10 steps stays within
    BAND of the float32 run's, and both fall by more than FALL of where they started."""
    losses = train_losses(tmp_path / amp, f"amp={amp}")
    assert len(losses) == len(float32_losses) == 30
    gaps = [abs(a - b) / b for a, b in zip(losses, float32_losses)]
    worst = max(gaps)
    print(f"{amp}: largest relative gap {worst:.4f}, at step {10 * (1 + gaps.index(worst))}; "
          f"loss {losses[0]:.3f} -> {losses[-1]:.3f} (float32 {float32_losses[-1]:.3f})")
    assert worst <= BAND
    for run in (losses, float32_losses):
        assert run[-1] < (1 - FALL) * run[0]


BAND = 0.02       # relative gap allowed between mixed-precision and float32 training losses
FALL = 0.4        # the sample preset learns: 300 steps take its loss down by more than this


def test_compiled_training_on_cuda_equals_eager(tmp_path):
    """compile=true on the GPU, dropout off (compiled kernels draw their own masks): the loss of
    each of 20 steps, and every weight after them, agree with eager to within what a different
    order of floating-point additions explains. Compiled kernels fuse and reorder sums, and
    Adam divides by sqrt(v), so bit equality is not the promise; the same training is."""
    weights, losses = {}, {}
    for mode in ("eager", "compiled"):
        out = tmp_path / mode
        losses[mode] = train_losses(out, "P_drop=0.0", f"compile={mode == 'compiled'}",
                                    steps=20, log_every=1)
        weights[mode] = checkpoint_file.load(out / checkpoint_file.checkpoint_name(20))["model"]
    loss_gap = max(abs(a - b) / a for a, b in zip(losses["eager"], losses["compiled"]))
    drift = {name: ((a - weights["compiled"][name]).norm() / a.norm()).item()
             for name, a in weights["eager"].items() if not name.endswith("W_K.bias")}
    worst = max(drift, key=drift.get)
    print(f"largest relative loss gap {loss_gap:.2e}; largest relative weight drift "
          f"{drift[worst]:.2e} ({worst})")
    assert len(losses["eager"]) == 20
    assert loss_gap <= 1e-4
    assert drift[worst] <= 1e-2, worst      # a bias's 20 updates, its whole norm, drift most


def test_beam_search_on_cuda_translates_as_on_the_cpu_with_the_shipped_model():
    """The shipped model, beam 4: the same translations of the sample's 300 test sentences."""
    sentences = list(read_lines(SAMPLE / f"{SAMPLE_SPLITS['test']}.en.gz"))
    out = {}
    for device in ("cpu", "cuda"):
        model, config, tokenizer = load_model(SHIPPED, map_location=device)
        out[device] = translate_lines(model, tokenizer, sentences, beam_size=4,
                                      alpha=config.alpha)
    differ = [i for i, (a, b) in enumerate(zip(out["cpu"], out["cuda"])) if a != b]
    assert not differ, [(out["cpu"][i], out["cuda"][i]) for i in differ[:3]]


def torchrun(out, *args) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
         "-m", "annotated.train", "--run-dir", str(out), "--deterministic", *args],
        capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_one_process_nccl_run_stops_resumes_and_continues_exactly(tmp_path):
    """torchrun, one process, NCCL and DistributedDataParallel: 40 steps straight, and 20 steps,
    stopped, then resumed to 40, end with the same bits in every weight and the same losses."""
    straight = torchrun(tmp_path / "straight", *SAMPLE_RUN, "--max-steps", "40")
    assert "1 process(es) on cuda:0 (nccl)" in straight
    torchrun(tmp_path / "stopped", *SAMPLE_RUN, "--max-steps", "20")
    resumed = torchrun(tmp_path / "stopped", "--resume", "--max-steps", "40")
    assert "resumed from step 20" in resumed
    a = checkpoint_file.load(tmp_path / "straight" / checkpoint_file.checkpoint_name(40))
    b = checkpoint_file.load(tmp_path / "stopped" / checkpoint_file.checkpoint_name(40))
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    logs = [[json.loads(line) for line in (tmp_path / run / "metrics.jsonl").read_text()
             .splitlines()] for run in ("straight", "stopped")]
    assert [m["loss"] for m in logs[0] if m["split"] == "train"] == \
        [m["loss"] for m in logs[1] if m["split"] == "train"]
