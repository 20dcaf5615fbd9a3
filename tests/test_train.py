"""The training command: overrides, the copy task, exact resume, NaN stop, a Multi30k run."""
import json
import math
import re
import shutil
from pathlib import Path

import pytest
import torch
from conftest import says, user_corpus

from annotated import configs, train
from annotated.configs import merged
from annotated.data import corpus as data
from annotated.data.corpus import DATA_ENV
from annotated.evaluate import main as evaluate_main
from annotated.store import checkpoint_file
from annotated.training import loop, state
from annotated.training.step import evaluate
from annotated.translate import main as translate_main

# A tiny copy run: 200 pairs make about 8 global batches, so 10 steps cross an epoch boundary.
ROOT = Path(__file__).resolve().parent.parent
TINY_RUN = ["copy_examples=200", "max_tokens=300", "N=1", "d_model=16", "d_ff=32", "h=2",
            "d_k=8", "d_v=8", "log_every=1", "eval_every=1000", "ckpt_every=1000"]


@pytest.fixture(autouse=True)
def one_thread():
    """These models are tiny: one thread is as fast as two on an idle machine, and on a busy
    one two threads that wait for each other at every operation run ten times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run(out, *args):
    train.main(["--run-dir", str(out), *map(str, args)])


def metrics(out, split):
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [m for m in lines if m["split"] == split]


def test_unknown_config_key_is_an_error_listing_the_valid_keys(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, "--config", "copy", "colour=red", "N=1")
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.startswith("error: ")
    says(err.strip(), "colour", "valid keys", "d_model, d_ff")
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_run_folder_is_never_mixed_up(tmp_path, capsys):
    with pytest.raises(SystemExit):
        run(tmp_path, "--resume")
    says(capsys.readouterr().err.strip(), "--resume", "no checkpoint", str(tmp_path))
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    with pytest.raises(SystemExit):
        run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN, "seed=7")
    says(capsys.readouterr().err.strip(), str(tmp_path), "another config",
         "seed (1234 there, 7 here)", "--resume", "--run-dir")
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000001.pt"]


def test_the_first_command_after_a_resume_that_changed_a_setting_says_to_resume(tmp_path,
                                                                                capsys):
    """train_steps changed by a --resume: the first command no longer names the run's config,
    and the run is not another one: it is told to go on with --resume."""
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    run(tmp_path, "--resume", "--max-steps", 2, "train_steps=50")
    with pytest.raises(SystemExit):
        run(tmp_path, "--config", "copy", "--max-steps", 3, *TINY_RUN)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    says(line, str(tmp_path), "train_steps (50 there, 1000 here)", "--resume may change",
         "pass --resume")
    assert "another config" not in line


def test_the_same_command_twice_continues_the_run(tmp_path, capsys):
    """A repeated command finds its own run: it goes on to --max-steps, or has nothing to do."""
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    run(tmp_path, "--config", "copy", "--max-steps", 3, *TINY_RUN)
    assert "resumed from step 2" in capsys.readouterr().out
    run(tmp_path, "--config", "copy", "--max-steps", 3, *TINY_RUN)
    says(next(line for line in capsys.readouterr().out.splitlines() if "already" in line),
         "step 3", "--max-steps")
    assert [m["step"] for m in metrics(tmp_path, "train")] == [1, 2, 3]
    with (tmp_path / "metrics.jsonl").open("a") as f:       # logged after the last checkpoint
        f.write(json.dumps({"step": 4, "split": "train", "loss": 1.0}) + "\n")
    run(tmp_path, "--config", "copy", "--max-steps", 5, *TINY_RUN)
    assert [m["step"] for m in metrics(tmp_path, "train")] == [1, 2, 3, 4, 5]
    assert metrics(tmp_path, "train")[3]["loss"] != 1.0             # step 4 logged again


def test_a_run_stopped_by_its_time_limit_says_so_and_how_to_go_on(tmp_path, capsys):
    run(tmp_path, "--config", "copy", "--max-minutes", 0.001, *TINY_RUN)
    line = next(line for line in capsys.readouterr().out.splitlines() if "stopped by" in line)
    says(line, "--max-minutes 0.001", "short of 1,000 steps", "--resume")
    assert len(checkpoint_file.checkpoints(tmp_path)) == 1           # saved where it stopped


def test_a_run_ends_by_showing_the_model_at_work_and_what_comes_next(tmp_path, capsys,
                                                                    monkeypatch):
    monkeypatch.chdir(ROOT)
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    out = capsys.readouterr().out
    assert "The model at work on 3 sentences of the test set" in out and out.count("  reference  ") == 3
    assert f"the checkpoint         {tmp_path / 'ckpt_0000001.pt'}" in out
    assert "python -m annotated.translate --checkpoint" in out
    assert "jupyter lab chapters/" in out
    monkeypatch.chdir(tmp_path)                  # from another folder: where the chapters are
    run(tmp_path / "elsewhere", "--config", "copy", "--max-steps", 1, *TINY_RUN)
    assert f"jupyter lab {ROOT / 'chapters'}/" in capsys.readouterr().out


def test_a_training_run_on_a_cpu_keeps_freed_memory(tmp_path, monkeypatch):
    """annotated.training.machine: glibc keeps each step's large tensors for the next one."""
    calls = []
    monkeypatch.setattr(loop, "keep_freed_memory", lambda: calls.append("kept") or True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)      # a CPU run on any machine
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    assert calls == ["kept"]


def test_a_checkpoint_holds_the_training_state_under_its_own_names(tmp_path):
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    saved = checkpoint_file.load(tmp_path / checkpoint_file.checkpoint_name(2))
    assert set(saved["training"]) == {"optimizer", "scheduler", "scaler", *state.SAVED}
    resumed = state.TrainState.from_checkpoint({**saved, "file": "ckpt_0000002.pt"})
    assert (resumed.step, resumed.run_id, resumed.resumed_from) == (2, saved["run_id"],
                                                                     "ckpt_0000002.pt")
    for name in state.SAVED:                    # read back as saved, no name changed on the way
        assert getattr(resumed, name) == saved["training"][name], name
    assert len(resumed.recent_losses) == 2 and resumed.first_loss == resumed.recent_losses[0]


@pytest.fixture(scope="module")
def copy_run(tmp_path_factory):
    """The `copy` preset trained as it is (eps_ls = 0): about a minute of one core."""
    out = tmp_path_factory.mktemp("copy") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    run(out, "--config", "copy")
    torch.set_num_threads(threads)
    return out


@pytest.mark.slow
def test_copy_task_trains_to_near_zero_loss(copy_run):
    """Its final validation is what the recipe promises for every seed and thread count, not a
    lucky last training step."""
    tmp_path = copy_run
    final = metrics(tmp_path, "valid")[-1]
    assert final["step"] == configs.get("copy").train_steps
    assert final["loss"] < 0.01 and final["accuracy"] == 1.0, final
    logged = metrics(tmp_path, "train")
    assert logged[0]["loss"] > 1.0                                    # it did start from chance
    assert set(logged[-1]) == {"step", "split", "loss", "nll", "ppl", "accuracy", "lr",
                               "tokens_per_s", "elapsed"}
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000500.pt",
                                                                  "ckpt_0001000.pt"]
    assert set(final) == {"step", "split", "loss", "nll", "ppl", "accuracy"}
    for record in logged[-1], final:                   # the perplexity is exp of the nll
        assert record["ppl"] == pytest.approx(math.exp(record["nll"]), rel=1e-12)


def test_resume_refuses_changes_to_the_model_or_its_data_and_says_what_it_changes(tmp_path,
                                                                                 capsys):
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    for change, field in [("N=2", "N (1 there, 2 here)"),
                          ("max_tokens=600", "max_tokens (300 there, 600 here)"),
                          ("P_drop=0.5", "P_drop (0.0 there, 0.5 here)")]:
        with pytest.raises(SystemExit) as exit_:
            run(tmp_path, "--resume", "--max-steps", 2, change)
        assert exit_.value.code == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err
        says(err.strip(), "error:", "--resume", field, "--run-dir")
    run(tmp_path, "--resume", "--max-steps", 2, "lr_factor=0.1", "log_every=5")
    out = capsys.readouterr().out
    says(next(line for line in out.splitlines() if "changing" in line), "--resume",
         "lr_factor (0.25 there, 0.1 here)", "log_every (1 there, 5 here)")
    assert "resumed from step 1" in out


def test_a_schedule_changed_on_resume_sets_the_rate_of_the_first_resumed_step(tmp_path):
    """--resume with lr_factor or warmup_steps changed: the next step already takes the new
    schedule's rate (the saved optimizer holds the old schedule's)."""
    from annotated.optim import noam_rate
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)           # d_model=16
    run(tmp_path, "--resume", "--max-steps", 3, "lr_factor=4", "warmup_steps=10")
    step3 = next(m for m in metrics(tmp_path, "train") if m["step"] == 3)
    assert math.isclose(step3["lr"], noam_rate(3, 16, 10, 4.0), rel_tol=1e-6)


def test_a_resume_that_lifts_a_cooled_down_rate_says_so_and_how_to_keep_the_checkpoints(
        tmp_path, capsys):
    """A finished cool-down continued with more train_steps: the rate jumps from 0 back up,
    which a note says, naming keep_last and the way to keep the cooled-down checkpoints. A
    resume before the cool-down begins says nothing of it."""
    run(tmp_path, "--config", "copy", *TINY_RUN, "train_steps=3", "cooldown_steps=2")
    capsys.readouterr()
    run(tmp_path, "--resume", "--max-steps", 4, "train_steps=6")
    note = next(line for line in capsys.readouterr().out.splitlines() if "cool-down" in line)
    says(note, "step 3", "0.00", "1.00", "keep_last=", "copy them out")
    run(tmp_path / "b", "--config", "copy", "--max-steps", 1, *TINY_RUN, "train_steps=6",
        "cooldown_steps=2")
    run(tmp_path / "b", "--resume", "--max-steps", 2, "train_steps=9")
    assert "cool-down" not in capsys.readouterr().out


def test_a_run_with_learned_positions_ends_on_sentences_they_cover(tmp_path, capsys):
    """Training drops the copy pairs longer than max_len; the closing look at the model picks
    test sentences it keeps too, instead of failing on a longer one after training."""
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN, "positional=learned",
        "max_len=8", "max_sentence_len=8")
    shown = capsys.readouterr().out
    assert "The model at work" in shown and checkpoint_file.checkpoints(tmp_path)
    inputs = [line.split(None, 1)[1] for line in shown.splitlines() if "input " in line]
    assert inputs and all(len(line.split()) + 1 <= 8 for line in inputs)


def test_a_change_given_to_a_resume_with_nothing_to_do_says_it_is_not_kept(tmp_path, capsys):
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    capsys.readouterr()
    run(tmp_path, "--resume", "--max-steps", 2, "lr_factor=0.5")
    note = next(line for line in capsys.readouterr().out.splitlines() if "no step" in line)
    says(note, "step 2", "give them again", "--resume")
    run(tmp_path, "--resume", "--max-steps", 3, "lr_factor=0.5")
    assert "no step will run" not in capsys.readouterr().out


def test_a_run_whose_test_sentences_are_all_too_long_still_says_what_comes_next(
        tmp_path, capsys, monkeypatch):
    """No test sentence as short as training keeps: one line says so, and the checkpoint and
    the commands that come next are shown all the same."""
    monkeypatch.setattr(configs.Config, "longest_sentence", lambda self: 1)
    run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN)
    out = capsys.readouterr().out
    says(next(line for line in out.splitlines() if "not shown" in line), "No test sentence",
         "training keeps")
    assert "Next:" in out and str(checkpoint_file.checkpoints(tmp_path)[-1]) in out
    assert "The model at work" not in out and "translate with it" not in out


def test_resume_continues_bit_for_bit(tmp_path):
    """k steps, stop, resume for k more == 2k uninterrupted, with dropout (RNG state),
    gradient accumulation and an epoch boundary after the resume point."""
    k, changes = 5, [*TINY_RUN, "P_drop=0.3", "accum_steps=2"]
    run(tmp_path / "a", "--config", "copy", "--max-steps", k, *changes)
    stopped = checkpoint_file.load(tmp_path / "a" / checkpoint_file.checkpoint_name(k))["training"]
    assert stopped["epoch"] == 0 and 0 < stopped["index"] == k
    run(tmp_path / "a", "--resume", "--max-steps", 2 * k)
    run(tmp_path / "b", "--config", "copy", "--max-steps", 2 * k, *changes)

    a = checkpoint_file.load(tmp_path / "a" / checkpoint_file.checkpoint_name(2 * k))
    b = checkpoint_file.load(tmp_path / "b" / checkpoint_file.checkpoint_name(2 * k))
    assert a["training"]["epoch"] == b["training"]["epoch"] == 1
    assert a["model"].keys() == b["model"].keys()
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    adam_a, adam_b = a["training"]["optimizer"]["state"], b["training"]["optimizer"]["state"]
    for i in adam_a:
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(adam_a[i][key], adam_b[i][key]), (i, key)
    # the resumed run's metrics continue those of the first part, without repeats
    assert [m["step"] for m in metrics(tmp_path / "a", "train")] == list(range(1, 2 * k + 1))
    assert metrics(tmp_path / "a", "train") != metrics(tmp_path / "b", "train")   # times differ
    for x, y in zip(metrics(tmp_path / "a", "train"), metrics(tmp_path / "b", "train")):
        assert x["loss"] == y["loss"]


def test_a_resume_on_another_number_of_cpu_threads_says_it_is_not_bit_exact(tmp_path, capsys):
    """Sums split over another number of threads add up in another order."""
    before = torch.get_num_threads()
    try:
        run(tmp_path, "--config", "copy", "--max-steps", 1, *TINY_RUN, "--threads", 1)
        run(tmp_path, "--resume", "--max-steps", 2, "--threads", 1)
        assert "bit-exact" not in capsys.readouterr().out
        run(tmp_path, "--resume", "--max-steps", 3, "--threads", 2)
    finally:
        torch.set_num_threads(before)
    note = next(line for line in capsys.readouterr().out.splitlines() if "bit-exact" in line)
    says(note, "1 CPU thread", "on 2", "--threads 1")


def test_a_run_resumed_between_two_metrics_lines_logs_the_line_it_would_have(tmp_path):
    """A checkpoint saved between metrics lines keeps the sums of the steps since the last
    line: resumed from step 6, the line at step 8 averages steps 5 to 8, as without the stop."""
    changes = merged(TINY_RUN, ["log_every=4", "ckpt_every=3"])
    run(tmp_path / "a", "--config", "copy", "--max-steps", 8, *changes)
    (tmp_path / "a" / checkpoint_file.checkpoint_name(8)).unlink()      # stopped after step 6
    run(tmp_path / "a", "--resume", "--max-steps", 8)
    run(tmp_path / "b", "--config", "copy", "--max-steps", 8, *changes)
    a, b = metrics(tmp_path / "a", "train"), metrics(tmp_path / "b", "train")
    assert [m["step"] for m in a] == [m["step"] for m in b] == [4, 8]
    for x, y in zip(a, b):
        assert (x["loss"], x["nll"], x["accuracy"]) == (y["loss"], y["nll"], y["accuracy"])


@pytest.mark.parametrize("field, value", [("epoch", -1), ("elapsed", float("nan")),
                                          ("recent_losses", [float("inf")]),
                                          ("window", [1.0, 2.0]), ("window", "sums")])
def test_a_training_state_a_run_never_saves_is_refused_on_resume(tmp_path, capsys, field,
                                                                  value):
    """A checkpoint edited by hand and saved again (its seal valid): one line naming the field."""
    run(tmp_path, "--config", "copy", "--max-steps", 2, *TINY_RUN)
    path = tmp_path / checkpoint_file.checkpoint_name(2)
    saved = checkpoint_file.load(path)
    saved["training"][field] = value
    checkpoint_file.atomic_save(saved, path)
    with pytest.raises(SystemExit):
        run(tmp_path, "--resume", "--max-steps", 3)
    says(capsys.readouterr().err.strip().splitlines()[-1], str(path), field, "edited",
         "another checkpoint")


def test_a_non_finite_loss_stops_the_run_naming_the_checkpoint_that_made_it(tmp_path, capsys):
    # A rate of 1e30 makes the first update throw the weights to ~1e26: the next forward pass
    # overflows, and the loss is no longer finite (or far above a uniform guess).
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, "--config", "copy", "--max-steps", 5,
            *merged(TINY_RUN, ["lr_factor=1e30", "ckpt_every=1"]))
    assert exit_.value.code == 1
    # step 2's loss came from the weights that step 1's update made, which ckpt_0000001.pt holds
    line = capsys.readouterr().err.splitlines()[-1]
    says(line, "error: step 2", "diverged", "none known", "ckpt_0000001.pt", "lr_factor",
         "new --run-dir")
    assert "--resume" not in line                  # no good checkpoint to go on from
    assert [p.name for p in checkpoint_file.checkpoints(tmp_path)] == ["ckpt_0000001.pt"]


# The training losses of a copy run (seed=2) as it learns: one batch in a few is far easier
# than the rest (0.39 among losses near 1.5).
NOISY_COPY_LOSSES = [
    2.12, 2.09, 2.09, 2.04, 2.01, 2.0, 2.02, 1.98, 1.96, 2.0, 1.98, 1.91, 1.97, 1.94, 1.83, 1.87,
    1.86, 1.4, 1.96, 1.96, 1.88, 1.75, 1.89, 1.84, 1.61, 1.69, 1.73, 1.24, 1.82, 1.77, 1.65, 1.54,
    1.17, 1.78, 1.6, 1.68, 1.5, 1.62, 1.23, 0.78, 0.39, 1.47, 1.87, 1.51, 1.46, 1.15, 1.44, 1.51,
    0.97, 0.79, 1.37, 1.04, 1.3, 0.99, 1.32, 0.79, 0.55, 1.33, 1.06, 0.33, 1.35, 0.6, 1.16, 0.75]


def test_a_lucky_batch_among_noisy_losses_is_no_divergence(tmp_path):
    from annotated.training.divergence import LossWatch
    watch = LossWatch(vocab_size=11)
    for step, loss in enumerate(NOISY_COPY_LOSSES, start=1):
        watch.check(loss, step, tmp_path)                     # raises Diverged if it stops
    from annotated.base.errors import Diverged
    with pytest.raises(Diverged) as stopped:                  # a real jump still stops it
        for step, loss in enumerate([3.0, 3.1, 3.2], start=len(NOISY_COPY_LOSSES) + 1):
            watch.check(loss, step, tmp_path)
    says(str(stopped.value), "3 steps in a row", "10th percentile", "diverged")


def test_a_diverging_run_stops_in_one_line_before_its_checkpoints_go_bad(tmp_path, capsys):
    """lr_factor=1000: the loss grows large but finite; the run stops on it (not on an
    OverflowError from the perplexity). No loss fell below a uniform guess's before the climb,
    so no checkpoint is known good: the line names the one that is not, and says to start
    again, not to resume."""
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, "--config", "copy", "--max-steps", 200, "--threads", 1,
            *merged(TINY_RUN, ["lr_factor=1000", "ckpt_every=1", "keep_last=1"]))
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = err.splitlines()[-1]
    says(line, "diverged", "lr_factor", "Last good checkpoint: none known",
         "ckpt_0000004.pt may hold diverged weights", "new --run-dir")
    assert "--resume" not in line
    assert metrics(tmp_path, "train")[-1]["loss"] < 3 * math.log(11)


@pytest.mark.slow
def test_a_run_that_starts_to_diverge_names_a_good_checkpoint_and_keeps_it(copy_run, tmp_path,
                                                                           capsys):
    """A converged copy run resumed at 40 times its learning rate, a checkpoint every step, the
    last 2 kept: the run stops as its loss jumps, and the checkpoint it names as the last good
    one is still on disk and still does better than a uniform guess on validation (loss below
    ln 11 = 2.40: what LossWatch promises of a good checkpoint, whose next training loss was
    below it), though rotation went on deleting older ones. How fast a run at this rate falls
    apart, in one step or over a few, turns on rounding, so the bound is the promise."""
    shutil.copytree(copy_run, tmp_path / "run")
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path / "run", "--resume", "--max-steps", 1300, "lr_factor=40", "ckpt_every=1",
            "keep_last=2")
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    good = re.search(r"Last good checkpoint: (\S+?\.pt)", err).group(1)
    model, config, _ = checkpoint_file.load_model(good)
    valid = data.load_corpus(config).valid
    assert evaluate(model, valid, config, torch.device("cpu"))["loss"] < math.log(11)


def test_short_multi30k_run_lowers_the_validation_loss(tmp_path, monkeypatch):
    """Real sentences, offline: the Multi30k sample shipped with the package."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    small = ["dataset=multi30k_sample", "vocab_size=1000", "N=1", "d_model=64", "d_ff=128",
             "h=4", "d_k=16", "d_v=16", "max_tokens=1500", "warmup_steps=100", "lr_factor=2",
             "eval_every=10", "log_every=10", "ckpt_every=1000"]
    run(tmp_path / "run", "--config", "multi30k", "--cache-dir", tmp_path / "cache",
        "--max-steps", 30, *small)
    losses = [m["loss"] for m in metrics(tmp_path / "run", "valid")]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2], losses
    assert losses[-1] < math.log(1000) - 1.0                        # well below chance


def test_resume_reads_the_data_from_where_the_run_started(tmp_path, monkeypatch):
    """--resume without --data-dir finds the corpus the run was started with, offline."""
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.setattr(data, "MULTI30K_URL", "http://unreachable.invalid/{name}")
    user_corpus(tmp_path / "data", target="de")
    tiny = ["dataset=files", "vocab_size=500", "N=1", "d_model=16", "d_ff=32", "h=2", "d_k=8", "d_v=8",
            "max_tokens=300", "log_every=1", "eval_every=1000", "ckpt_every=1000"]
    cache = ["--cache-dir", tmp_path / "cache"]
    run(tmp_path / "run", "--config", "multi30k", "--data-dir", tmp_path / "data", *cache,
        "--max-steps", 1, *tiny)
    run(tmp_path / "run", "--resume", *cache, "--max-steps", 2)
    assert [m["step"] for m in metrics(tmp_path / "run", "train")] == [1, 2]


def test_a_users_corpus_trains_translates_and_scores_with_the_same_commands(tmp_path, capsys):
    """Any parallel corpus, no code: a folder of train/dev/test files and two language codes."""
    folder = user_corpus(tmp_path / "en-fr")
    run(tmp_path / "run", "--config", "multi30k", "--data-dir", folder, "--cache-dir",
        tmp_path / "cache", "--max-steps", 3, "dataset=files", "source_lang=en",
        "target_lang=fr", "vocab_size=300", "N=1", "d_model=32", "d_ff=64", "h=2", "d_k=16",
        "d_v=16", "max_tokens=600", "eval_every=3", "ckpt_every=3", "log_every=1")
    ckpt = checkpoint_file.checkpoints(tmp_path / "run")[-1]
    translate_main(["--checkpoint", str(ckpt), "--input", str(folder / "test.en.gz"),
                    "--out", str(tmp_path / "test.hyp"), "--max-extra", "3", "--greedy"])
    evaluate_main(["--hyp", str(tmp_path / "test.hyp"), "--ref", str(folder / "test.fr")])
    out = capsys.readouterr().out
    assert "files: 400 training pairs" in out and "sacreBLEU (cased, detokenized)" in out
    assert len((tmp_path / "test.hyp").read_text().splitlines()) == 300


def test_torchruns_processes_times_threads_past_the_cores_get_a_note(monkeypatch, capsys):
    """Two processes of --threads 2 on two cores: each is within the cores, all are not."""
    from annotated.base import threads
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "0")
    threads.use_threads(10, 2)
    says(capsys.readouterr().err.strip(), "2 processes", "4 threads", "2 CPU core(s)",
         "--threads 1")
    monkeypatch.setenv("LOCAL_RANK", "1")                    # said once, by the first process
    threads.use_threads(10, 2)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")              # one thread each is too many:
    monkeypatch.setenv("LOCAL_RANK", "0")                    # fewer processes, not threads
    threads.use_threads(10, 1)
    note = capsys.readouterr().err.strip()
    says(note, "3 processes", "2 CPU core(s)", "--nproc_per_node=2")
    assert "give --threads" not in note


def test_a_resumed_run_that_diverges_names_the_checkpoint_it_resumed_from_as_good(tmp_path):
    """Resumed with settings that then diverge (lr_factor=100): the checkpoint it resumed
    from trained well, so it is the good one to go back to, not "none known, start again"."""
    from annotated.training.divergence import Diverged, LossWatch
    for step in (10, 20):
        (tmp_path / f"ckpt_{step:07d}.pt").write_bytes(b"")
    watch = LossWatch(200, pending=tmp_path / "ckpt_0000020.pt")
    watch.checked = 3                                       # its first loss was judged fine
    with pytest.raises(Diverged) as stopped:
        watch._stop("step 23: training loss is nan", tmp_path)
    says(str(stopped.value), "Last good checkpoint: ckpt_0000020.pt", "--resume")
    assert "none known" not in str(stopped.value) and "after it" not in str(stopped.value)
