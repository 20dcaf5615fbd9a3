"""Checkpoints: round trip, clear errors, no NaN written, rotation, averaging (§6.1), and a
process killed in the middle of a checkpoint write."""
import os
import random
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import says

from annotated import checkpoint as checkpoint_command
from annotated import configs, train
from annotated.base.errors import CheckpointError
from annotated.data.tokenizer import CopyTokenizer, Tokenizer, train_bpe
from annotated.masks import batch_masks
from annotated.model import EncoderDecoder
from annotated.store import checkpoint_file
from annotated.store.checkpoint_file import load_model
from annotated.training.rng import rng_state, set_rng_state
from annotated.training.run_dir import rotate

TINY = dict(N=1, d_model=16, d_ff=32, h=2, d_k=8, d_v=8)
TINY_RUN = ["copy_examples=200", "max_tokens=300", "N=1", "d_model=16", "d_ff=32", "h=2",
            "d_k=8", "d_v=8", "log_every=1000", "eval_every=1000"]


def tiny(seed=0):
    config = configs.get("copy").override(**TINY)
    torch.manual_seed(seed)
    return config, EncoderDecoder(config, 11), CopyTokenizer(11)


def save_tiny(path, seed=0, step=7):
    config, model, tokenizer = tiny(seed)
    checkpoint_file.save(path, model=model, config=config, tokenizer=tokenizer, step=step)
    return model


def same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_load_model_rebuilds_model_config_and_tokenizer(tmp_path):
    model = save_tiny(tmp_path / "c.pt")
    loaded, config, tokenizer = load_model(tmp_path / "c.pt")
    assert config == configs.get("copy").override(**TINY)
    assert isinstance(tokenizer, CopyTokenizer) and tokenizer.vocab_size == 11
    assert not loaded.training and same_weights(model, loaded)
    assert loaded.generator.weight is loaded.src_embed.lut.weight    # still tied after loading


def test_bpe_tokenizer_travels_inside_the_checkpoint(tmp_path):
    words = ["a dog runs", "the cat sleeps", "ein hund rennt", "die katze schläft"] * 20
    bpe = train_bpe([words], 40, tmp_path / "bpe.model")
    config = configs.get("copy").override(**TINY, dataset="multi30k", vocab_size=40)
    checkpoint_file.save(tmp_path / "c.pt", model=EncoderDecoder(config, 40), config=config,
                    tokenizer=bpe, step=1)
    _, _, tokenizer = load_model(tmp_path / "c.pt")
    assert isinstance(tokenizer, Tokenizer)
    assert tokenizer.to_bytes() == bpe.to_bytes()
    assert tokenizer.encode("the dog sleeps") == bpe.encode("the dog sleeps")


def test_rng_states_survive_the_file_and_continue_every_stream(tmp_path):
    draw = lambda: (random.random(), np.random.rand(), np.random.randn(), torch.rand(2).tolist())
    np.random.randn()                              # leaves a cached Gaussian in numpy's state
    torch.save(rng_state(), tmp_path / "rng.pt")
    expected = draw()
    draw()
    set_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    assert draw() == expected


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist") as refused:
        load_model(tmp_path / "nope.pt")
    says(str(refused.value), "holds no ckpt_*.pt", str(tmp_path))
    with pytest.raises(CheckpointError) as refused:              # no .pt: a run folder, maybe
        load_model(tmp_path / "run_stopped_early")
    says(str(refused.value), "no file or folder", "run_stopped_early")
    assert issubclass(CheckpointError, ValueError)
    with pytest.raises(CheckpointError) as refused:
        load_model(tmp_path / "gone" / "ckpt_0000010.pt")
    says(str(refused.value), "does not exist", f"no folder {tmp_path / 'gone'}")


def test_a_checkpoint_that_rotation_deleted_names_those_its_run_still_holds(tmp_path):
    """A live run keeps its newest keep_last checkpoints: the one asked for may be gone."""
    for step in (20, 30):
        (tmp_path / f"ckpt_{step:07d}.pt").write_bytes(b"")
    with pytest.raises(CheckpointError) as refused:
        load_model(tmp_path / "ckpt_0000010.pt")
    says(str(refused.value), "ckpt_0000010.pt does not exist", "ckpt_0000020.pt to "
         "ckpt_0000030.pt", "keep_last", f"the newest, {tmp_path / 'ckpt_0000030.pt'}")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_corrupt_file_is_a_clear_error(tmp_path, damage):
    path = tmp_path / "c.pt"
    save_tiny(path)
    data = path.read_bytes()
    path.write_bytes({"truncated": data[:len(data) // 2], "garbage": b"not a checkpoint" * 50,
                      "empty": b""}[damage])
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, str(path), "corrupt or truncated", "give a checkpoint" if damage != "truncated"
         else "another checkpoint")


def test_a_zip_of_other_files_is_named_as_such_not_as_damaged(tmp_path):
    path = tmp_path / "zip.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, str(path), "zip archive of other files", "'notes.txt'", "give a checkpoint")
    assert "copy it again" not in str(error.value)


@pytest.mark.parametrize("content, names", [(b"# notes\n", ["holds text", "give a checkpoint"]),
                                             (b"PK\x03\x04" + b"\0" * 64,
                                              ["corrupt or truncated", "another checkpoint"])])
def test_reading_the_header_of_a_file_that_is_no_checkpoint_is_one_error(tmp_path, content,
                                                                         names):
    """The scripts that read only a checkpoint's config (experiments.scoring) get one line."""
    from annotated.store.checkpoint_file import header
    path = tmp_path / "notes.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError) as error:
        header(path)
    says(error, str(path), *names)


def test_other_format_version_is_a_clear_error(tmp_path):
    path = tmp_path / "c.pt"
    save_tiny(path)
    payload = torch.load(path, weights_only=True)
    torch.save({**payload, "version": 99}, path)
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, "format version 99", "version 2")
    torch.save({"model": payload["model"]}, path)                  # a bare state_dict-like file
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, "annotated-transformer checkpoint", "a dict of 'model'", "annotated.train",
         "ckpt_*.pt")
    torch.save(payload["model"], path)                          # a model's weights alone
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, "not an annotated-transformer checkpoint", "tensors alone",
         f"'{next(iter(payload['model']))}'", "settings and tokenizer", "annotated.train")
    assert "[...]" not in str(error.value)
    torch.save(torch.nn.Linear(2, 2), path)                 # a whole model: whole, not ours
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, "not an annotated-transformer checkpoint", "whole model", "annotated.train")
    assert "corrupt" not in str(error.value)


def test_unknown_config_field_is_a_clear_error(tmp_path):
    path = tmp_path / "c.pt"
    save_tiny(path)
    payload = torch.load(path, weights_only=True)
    checkpoint_file.atomic_save({**payload, "config": {**payload["config"], "flux": 1}}, path)
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, "flux", "unknown", "newer version", "update")


def test_a_checkpoint_without_its_tokenizer_names_what_it_lacks_and_what_to_use(tmp_path):
    path = tmp_path / "c.pt"
    save_tiny(path)
    payload = torch.load(path, weights_only=True)
    checkpoint_file.atomic_save({k: v for k, v in payload.items() if k != "tokenizer"}, path)
    with pytest.raises(CheckpointError) as error:
        load_model(path)
    says(error, "lacks tokenizer", "another checkpoint of its run")


def test_non_finite_weights_are_never_written(tmp_path):
    path = tmp_path / "c.pt"
    good = save_tiny(path)
    config, model, tokenizer = tiny(seed=1)
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] = float("nan")
    with pytest.raises(CheckpointError, match="non-finite"):
        checkpoint_file.save(path, model=model, config=config, tokenizer=tokenizer, step=8)
    assert same_weights(load_model(path)[0], good)                  # the old file is intact
    assert list(tmp_path.iterdir()) == [path]                       # and no temporary is left


def test_rotation_keeps_the_newest_by_step_not_by_name(tmp_path):
    for step in (1, 2, 10, 100):
        save_tiny(tmp_path / checkpoint_file.checkpoint_name(step), step=step)
    deleted = rotate(tmp_path, keep_last=2)
    assert [p.name for p in deleted] == ["ckpt_0000001.pt", "ckpt_0000002.pt"]
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000010.pt",
                                                                 "ckpt_0000100.pt"]


def test_average_of_checkpoints_is_the_elementwise_mean(tmp_path, capsys):
    models = [save_tiny(tmp_path / checkpoint_file.checkpoint_name(s), seed=s, step=s) for s in (1, 2, 3)]
    out = tmp_path / "avg.pt"
    checkpoint_command.main(["average", "--out", str(out), "--last", "2", str(tmp_path)])
    assert "averaged 2 checkpoints" in capsys.readouterr().out
    averaged, _, _ = load_model(out)                                # a normal checkpoint
    for name, p in averaged.state_dict().items():
        a, b = models[1].state_dict()[name], models[2].state_dict()[name]
        assert torch.equal(p, ((a.double() + b.double()) / 2).float()), name
    assert checkpoint_file.load(out)["averaged_from"] == ["ckpt_0000002.pt", "ckpt_0000003.pt"]
    stored = checkpoint_file.load(out)["model"]                       # the tied matrix stored once
    assert stored["src_embed.lut.weight"].data_ptr() == stored["generator.weight"].data_ptr()
    with pytest.raises(SystemExit):
        checkpoint_command.main(["average", "--out", str(out), "--last", "5", str(tmp_path)])
    says(capsys.readouterr().err.strip(), str(tmp_path), "3 checkpoints", "--last 5", "--last 3 or fewer")


def test_averaging_a_run_that_has_saved_nothing_yet_names_the_run_training_there(tmp_path,
                                                                                 capsys):
    """A run folder whose lock a training process holds, before its first checkpoint: wait
    for it, not "train a run there first"."""
    import fcntl
    import os
    lock = open(tmp_path / ".lock", "w")
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(SystemExit):
            checkpoint_command.main(["average", "--out", str(tmp_path / "avg.pt"), "--last", "1",
                                     str(tmp_path)])
    finally:
        lock.close()
    says(capsys.readouterr().err.strip(), "0 checkpoints", f"pid {os.getpid()}", "wait")


def test_half_stores_float16_weights_that_load_as_float32_and_compute_alike(tmp_path, capsys):
    source = save_tiny(tmp_path / "model.pt").eval()
    out = tmp_path / "half.pt"
    checkpoint_command.main(["half", str(tmp_path / "model.pt"), "--out", str(out)])
    assert "float16 weights, no training state" in capsys.readouterr().out
    payload = checkpoint_file.load(out)                                  # sealed like any checkpoint
    assert payload["training"] is None and payload["halved_from"] == "model.pt"
    assert all(v.dtype == torch.float16 for v in payload["model"].values() if v.is_floating_point())
    tied = [payload["model"][k].data_ptr() for k in ("src_embed.lut.weight", "generator.weight")]
    assert tied[0] == tied[1]                                  # the tied matrix stored once
    halved, _, _ = load_model(out)
    for name, p in halved.state_dict().items():                     # float32, rounded once
        assert p.dtype == torch.float32 and torch.equal(p, source.state_dict()[name].half().float())
    src, tgt = torch.randint(4, 11, (2, 7)), torch.randint(4, 11, (2, 5))
    masks = batch_masks(src, tgt, pad=0)
    with torch.no_grad():
        a, b = source(src, tgt, *masks), halved(src, tgt, *masks)
    assert torch.allclose(a, b, atol=1e-2) and not torch.equal(a, b)
    with pytest.raises(SystemExit):                                  # never over its input
        checkpoint_command.main(["half", str(out), "--out", str(out)])


# The child runs the real training command, but its second torch.save writes half of the
# checkpoint into the temporary file, says so, and hangs: the test kills it right there.
KILLED_IN_SAVE = r"""
import io, sys, time, torch
from annotated import train
from annotated.training.run_dir import rotate
from annotated.training.rng import rng_state, set_rng_state
real_save, calls = torch.save, []
def save_half_then_hang(obj, f, *args, **kwargs):
    calls.append(1)
    if len(calls) < 2:
        return real_save(obj, f, *args, **kwargs)
    buffer = io.BytesIO()
    real_save(obj, buffer)
    f.write(buffer.getvalue()[: buffer.tell() // 2])
    f.flush()                    # into the kernel, where SIGKILL cannot lose it
    open(sys.argv[1], "w").close()
    time.sleep(600)
torch.save = save_half_then_hang
train.main(sys.argv[2:])
"""


@pytest.mark.slow
def test_killed_during_checkpoint_write_leaves_previous_checkpoint_loadable(tmp_path):
    out, signal_file = tmp_path / "run", tmp_path / "half-written"
    command = [sys.executable, "-c", KILLED_IN_SAVE, str(signal_file), "--config", "copy",
               "--run-dir", str(out), "--max-steps", "4", "ckpt_every=2", *TINY_RUN]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.time() + 120
    while not signal_file.exists() and child.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert signal_file.exists(), child.stderr.read().decode() if child.poll() is not None else ""
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stderr.close()

    assert [p.name for p in checkpoint_file.checkpoints(out)] == ["ckpt_0000002.pt"]
    assert checkpoint_file.load(out / "ckpt_0000002.pt")["step"] == 2
    half = list(out.glob(".ckpt_0000004.pt.*.tmp"))
    assert len(half) == 1 and half[0].stat().st_size > 0
    threads = torch.get_num_threads()
    try:                                                             # picks up the good one
        train.main(["--run-dir", str(out), "--resume", "--max-steps", "4", "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    assert checkpoint_file.load(out / "ckpt_0000004.pt")["step"] == 4
    assert not list(out.glob(".ckpt_*.tmp"))                         # the half file is gone


def test_ctrl_c_during_a_checkpoint_write_waits_for_the_whole_file(tmp_path, monkeypatch,
                                                                   ctrl_c):
    """torch.save's writer is C++: Ctrl-C raised inside it would abort the process. It is held
    until the file is complete and in place, then stops the program as usual."""
    real_save = torch.save

    def save_pressing_ctrl_c(obj, f):
        signal.raise_signal(signal.SIGINT)               # pressed half way through the write
        real_save(obj, f)
    monkeypatch.setattr(checkpoint_file.torch, "save", save_pressing_ctrl_c)
    path = tmp_path / "ckpt_0000001.pt"
    with pytest.raises(KeyboardInterrupt):
        checkpoint_file.atomic_save({"step": 1, "w": torch.ones(3)}, path)
    monkeypatch.undo()
    assert torch.load(path, weights_only=True)["step"] == 1      # whole and in place
    assert checkpoint_file.SEAL in path.read_bytes()[-200:]     # sealed
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("kind", ["npz", "torch.save"])
def test_an_out_that_holds_another_programs_archive_is_named_as_what_it_is(kind, tmp_path,
                                                                           capsys):
    import numpy as np
    out = tmp_path / ("a.npz" if kind == "npz" else "weights.pt")
    if kind == "npz":
        np.savez(out, x=np.ones(3))
    else:
        torch.save({"w": torch.ones(3)}, out)
    before = out.read_bytes()
    with pytest.raises(SystemExit):
        checkpoint_command.main(["average", "--out", str(out), str(
            Path(__file__).resolve().parent.parent / "annotated/pretrained/multi30k_en_de.pt")])
    says(capsys.readouterr().err.strip(), str(out), "npz" if kind == "npz" else "torch.save",
         "not a checkpoint", "another name")
    assert out.read_bytes() == before
