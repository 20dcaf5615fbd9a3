"""One optimizer step (annotated.training.step): the global-token normalisation, and mixed
precision and torch.compile on a CPU, the code paths the 8-GPU recipe uses on GPUs."""
import os
import subprocess
import sys

import pytest
import torch
from conftest import says

from annotated import configs, train
from annotated.base.errors import ConfigError
from annotated.data.batching import collate
from annotated.data.tokenizer import PAD
from annotated.loss import label_smoothed_loss
from annotated.masks import batch_masks
from annotated.model import EncoderDecoder
from annotated.store import checkpoint_file
from annotated.training.step import evaluate, make_engine, train_step

TINY = ["copy_examples=200", "max_tokens=300", "max_sentence_len=64", "N=1", "d_model=16",
        "d_ff=32", "h=2", "d_k=8", "d_v=8", "log_every=1", "eval_every=1000", "ckpt_every=1000"]


def pairs_and_config(**changes):
    config = configs.get("copy").override(d_model=16, d_ff=32, h=2, d_k=8, d_v=8, P_drop=0.0,
                                          **changes)
    gen = torch.Generator().manual_seed(0)
    pairs = [(torch.randint(4, 20, (n,), generator=gen).numpy(),
              torch.randint(4, 20, (n + 2,), generator=gen).numpy()) for n in range(3, 10)]
    return pairs, config


def test_train_step_gradient_is_the_global_mean_in_the_model_dtype():
    """Accumulated micro-batches give the gradient of (summed smoothed loss) / (all target
    tokens), computed in float64 for a float64 model: a float32 token count would cost ~1e-8."""
    pairs, config = pairs_and_config(accum_steps=3)
    batch = list(range(len(pairs)))
    model = EncoderDecoder(config, 20).double()
    sums = train_step(make_engine(model, config, torch.device("cpu")), pairs, batch, config)
    ours = [p.grad.clone() for p in model.parameters()]

    model.zero_grad()
    src, tgt_in, tgt_out = collate(pairs, batch)                   # the whole batch at once
    stats = label_smoothed_loss(model(src, tgt_in, *batch_masks(src, tgt_in, PAD)), tgt_out,
                                pad=PAD, eps_ls=config.eps_ls)
    (stats.loss / stats.tokens).backward()
    assert sums.tokens == stats.tokens
    for mine, expected in zip(ours, (p.grad for p in model.parameters())):
        assert torch.allclose(mine, expected, rtol=1e-12, atol=1e-15)


def test_bf16_autocast_runs_the_step_on_cpu_with_float32_weights():
    pairs, config = pairs_and_config(amp="bf16")
    model = EncoderDecoder(config, 20)
    engine = make_engine(model, config, torch.device("cpu"))
    with engine.autocast():                                  # the matrix products are bf16
        assert model.generator(torch.zeros(1, 16)).dtype == torch.bfloat16
    sums = train_step(engine, pairs, list(range(len(pairs))), config)
    assert all(p.dtype == torch.float32 and torch.isfinite(p.grad).all()
               for p in model.parameters())
    torch.manual_seed(0)
    plain = EncoderDecoder(config.override(amp="none"), 20)
    plain.load_state_dict(model.state_dict())
    reference = train_step(make_engine(plain, config.override(amp="none"), torch.device("cpu")),
                           pairs, list(range(len(pairs))), config)
    assert abs(sums.loss / reference.loss - 1) < 0.02         # bf16: ~3 significant digits


def test_fp16_loss_scaling_needs_a_gpu():
    pairs, config = pairs_and_config(amp="fp16")
    with pytest.raises(ConfigError) as error:
        make_engine(EncoderDecoder(config, 20), config, torch.device("cpu"))
    says(error, "amp=fp16", "GPU")


@pytest.mark.parametrize("training", [True, False])
def test_evaluate_leaves_the_model_in_the_mode_it_found(training):
    pairs, config = pairs_and_config()
    model = EncoderDecoder(config, 20).train(training)
    result = evaluate(model, pairs, config, torch.device("cpu"))
    assert model.training is training and all(m.training is training for m in model.modules())
    assert result["loss"] > 0 and 0 <= result["accuracy"] <= 1


def run(out, *args):
    train.main(["--run-dir", str(out), "--threads", "1", *map(str, args)])


@pytest.mark.slow
def test_the_training_command_compiles_the_model_on_cpu(tmp_path):
    """compile=true (inductor on CPU): the same weights as eager, to float32 rounding. The key
    biases b^K are left out: their true gradient is exactly zero (q.b^K shifts every score of a
    query alike, which softmax ignores), so they follow rounding noise, which Adam scales up to
    full-size steps (see tests/test_distributed.py)."""
    run(tmp_path / "eager", "--config", "copy", "--max-steps", 3, *TINY)
    run(tmp_path / "compiled", "--config", "copy", "--max-steps", 3, *TINY, "compile=true")
    a = checkpoint_file.load(tmp_path / "eager" / checkpoint_file.checkpoint_name(3))["model"]
    b = checkpoint_file.load(tmp_path / "compiled" / checkpoint_file.checkpoint_name(3))["model"]
    for name in a:
        if not name.endswith("W_K.bias"):
            assert torch.allclose(a[name], b[name], rtol=1e-4, atol=1e-6), name


@pytest.mark.slow
def test_compile_without_a_cpp_compiler_is_one_line_before_training(tmp_path):
    """Inductor builds C++ on a CPU: with no compiler the run stops before it reads any data,
    naming compile=true and both ways out, instead of a traceback at step 1."""
    env = dict(os.environ, CXX=str(tmp_path / "no-such-g++"))
    done = subprocess.run([sys.executable, "-m", "annotated.train", "--config", "copy",
                           "--run-dir", str(tmp_path / "run"), "--max-steps", "1", "--threads",
                           "1", *TINY, "compile=true"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    for named in ("compile=true", "C++ compiler", "compile=false", "no-such-g++"):
        assert named in done.stderr, done.stderr
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
