"""The CUDA path, on a machine with an NVIDIA GPU; every test here is skipped without one.

What the CPU tests check through their CPU twins (gloo, CPU autocast, CPU compile) is checked
here on the GPU itself: a float32 training step equals the CPU's to rounding; bf16 and fp16
training track float32; compiled training equals eager; beam search translates as on the CPU;
and a one-process torchrun run over NCCL stops, resumes and continues bit for bit. Training's
own pieces too: the fused output loss (annotated.training.output_loss) against the plain loss
in float32 and within a band in bf16, compiled (Triton) as eager; and training with CUDA graphs
(`cuda_graphs=true`) equal to compiled training without them.
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
from annotated.loss import label_smoothed_loss
from annotated.store.checkpoint_file import load_model
from annotated.training.output_loss import OutputLoss
from annotated.training.step import make_engine, train_step
from test_output_loss import BF16_GRADIENT, BF16_LOSS

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


def training_gaps(tmp_path, runs: dict) -> tuple[float, float, str]:
    """Two sample runs of 20 steps, dropout off, with the overrides of each of `runs` (label:
    overrides): the largest relative gap between their losses, and the largest relative drift
    between their weights after the 20 steps (the key biases b^K aside, as above), with the
    weight it is found in."""
    weights, losses = {}, {}
    for label, overrides in runs.items():
        out = tmp_path / label
        losses[label] = train_losses(out, "P_drop=0.0", *overrides, steps=20, log_every=1)
        weights[label] = checkpoint_file.load(out / checkpoint_file.checkpoint_name(20))["model"]
    first, second = runs
    assert len(losses[first]) == len(losses[second]) == 20
    loss_gap = max(abs(a - b) / a for a, b in zip(losses[first], losses[second]))
    drift = {name: ((a - weights[second][name]).norm() / a.norm()).item()
             for name, a in weights[first].items() if not name.endswith("W_K.bias")}
    worst = max(drift, key=drift.get)
    print(f"{first} against {second}: largest relative loss gap {loss_gap:.2e}; largest "
          f"relative weight drift {drift[worst]:.2e} ({worst})")
    return loss_gap, drift[worst], worst


def test_compiled_training_on_cuda_equals_eager(tmp_path):
    """compile=true on the GPU, dropout off (compiled kernels draw their own masks): the loss of
    each of 20 steps, and every weight after them, agree with eager to within what a different
    order of floating-point additions explains. Compiled kernels fuse and reorder sums, and
    Adam divides by sqrt(v), so bit equality is not the promise; the same training is."""
    loss_gap, drift, worst = training_gaps(tmp_path, {"eager": ["compile=false"],
                                                      "compiled": ["compile=true"]})
    assert loss_gap <= 1e-4
    assert drift <= 1e-2, worst             # a bias's 20 updates, its whole norm, drift most


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


def loss_and_grads(loss, generator, hidden, target):
    """The summed loss of `loss` (plain or fused, called alike) and the gradients of the
    hidden states and the projection."""
    generator.zero_grad()
    hidden.grad = None
    stats = loss(hidden, target, pad=0, eps_ls=0.1)
    (stats.loss / stats.tokens).backward()
    return stats.loss.item(), [hidden.grad.clone(), generator.weight.grad.clone()]


def base_sized_output(seed=0):
    """The base model's output layer (d_model 512, the paper's 37,000 words) and 4,000
    target positions, a tenth of them padding."""
    torch.manual_seed(seed)
    generator = torch.nn.Linear(512, 37_000, bias=False).to(GPU)
    torch.nn.init.normal_(generator.weight, 0.0, 512 ** -0.5)
    hidden = torch.randn(8, 500, 512, device=GPU).requires_grad_()
    target = torch.randint(4, 37_000, (8, 500), device=GPU)
    target[:, 450:] = 0
    return generator, hidden, target


@pytest.mark.parametrize("precision", ["float32", "bf16", "bf16 compiled"])
def test_the_fused_output_loss_on_cuda_equals_the_plain_loss(precision):
    """float32: the loss to 1e-5 and each gradient's norm to 1e-4 relative (the chunks add
    up in another order); bf16 autocast, eager and compiled: within the band of the CPU test
    (tests/test_output_loss.py), the softmax in float32 in both."""
    generator, hidden, target = base_sized_output()
    plain = lambda h, t, **kw: label_smoothed_loss(generator(h), t, **kw)
    fused = OutputLoss(generator, compile=precision.endswith("compiled"))
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision != "float32"):
        expected, grads0 = loss_and_grads(plain, generator, hidden, target)
        ours, grads = loss_and_grads(fused, generator, hidden, target)
    loss_band, gradient_band = (1e-5, 1e-4) if precision == "float32" else (BF16_LOSS,
                                                                           BF16_GRADIENT)
    gaps = [((g - g0).norm() / g0.norm()).item() for g, g0 in zip(grads, grads0)]
    print(f"{precision}: loss gap {abs(ours / expected - 1):.2e}, gradient gaps {gaps}")
    assert abs(ours / expected - 1) <= loss_band
    assert max(gaps) <= gradient_band


def test_training_with_cuda_graphs_equals_compiled_training(tmp_path):
    """cuda_graphs=true against compile=true alone, dropout off: the bounds of compiled against
    eager. The graphs' batches are padded up to their buckets, so the sums run in another
    order: the same training, not the same bits."""
    loss_gap, drift, worst = training_gaps(tmp_path, {
        "compiled": ["compile=true"], "graphs": ["compile=true", "cuda_graphs=true"]})
    assert loss_gap <= 1e-4
    assert drift <= 1e-2, worst


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
