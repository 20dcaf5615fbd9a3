"""The GPU benchmark's own code, run on the CPU with a small preset (the GPU run is the
benchmark; this checks what it computes and writes), and the schedule estimate made from it."""
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from conftest import says

from annotated import configs
from annotated.base.errors import ConfigError
from annotated.training import onednn
from annotated.training.flops import batch_training_flops
from benchmarks import (adam_step, attention_kernels, common, cpu_allocator, cpu_matmul,
                        decode_speed, device_run, exercise_checks, gpu_train,
                        train_step_vs_nn_transformer, train_throughput)
from experiments import folders, gpu_schedule

RESULTS = Path(__file__).resolve().parent.parent / "results"


def test_gpu_benchmark_times_each_case_and_counts_its_useful_flops(tmp_path):
    out = tmp_path / "gpu_train.json"
    gpu_train.main(["--device", "cpu", "--only", "copy", "--tokens", "400", "--vocab", "11",
                    "--repeats", "3", "--modes", "eager", "--out", str(out)])
    record = json.loads(out.read_text())
    assert record["command"].startswith("python -m benchmarks.gpu_train --device cpu")
    assert record["complete"] is True
    assert [c["case"] for c in record["cases"]] == ["copy", "copy 1/8"]
    for case in record["cases"]:
        assert case["source_tokens"] <= case["max_tokens"] and case["step_s"] > 0
        tokens = case["source_tokens"] + case["target_tokens"]
        rounding = 5e-6 / case["step_s"]          # step_s is rounded to 10 microseconds,
        assert case["tokens_per_s"] == pytest.approx(tokens / case["step_s"],   # tokens/s to 1
                                                     rel=1e-3 + rounding, abs=0.5)
    config = configs.get("copy")
    assert record["cases"][0]["useful_flops"] > batch_training_flops(config, [1], [1], 11)


@pytest.mark.parametrize("name,peak", [("NVIDIA H100 80GB HBM3", 989.4e12),
                                       ("NVIDIA H200", 989.4e12), ("NVIDIA H100 PCIe", 756e12),
                                       ("Some other GPU", None)])
def test_mfu_is_taken_against_the_datasheet_peak_of_the_gpu_named(name, peak):
    assert gpu_train.datasheet_peak(name) == peak


def test_the_gpu_benchmark_without_a_gpu_is_one_error_line(capsys, monkeypatch):
    monkeypatch.setattr(gpu_train.torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as exit_:
        gpu_train.main([])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.startswith("error: no CUDA GPU here")
    assert err.count("\n") == 1


def test_a_gpu_benchmark_batch_too_small_for_its_eighth_names_tokens_before_measuring(
        capsys, monkeypatch):
    monkeypatch.setattr(gpu_train, "measure",
                        lambda *a, **k: pytest.fail("measured a batch too small"))
    with pytest.raises(SystemExit):
        gpu_train.main(["--device", "cpu", "--only", "copy", "--tokens", "399"])
    line = capsys.readouterr().err.strip()
    says(line, "--tokens 399", "eighth", "--tokens 400")
    assert "max_tokens" not in line


@pytest.mark.parametrize("where", ["a folder", "a missing folder"])
def test_the_gpu_benchmark_checks_its_out_file_before_measuring(where, tmp_path, capsys,
                                                                monkeypatch):
    monkeypatch.setattr(gpu_train, "measure",
                        lambda *a, **k: pytest.fail("measured before --out was checked"))
    out = tmp_path if where == "a folder" else tmp_path / "nope" / "gpu_train.json"
    with pytest.raises(SystemExit) as exit_:
        gpu_train.main(["--device", "cpu", "--only", "copy", "--tokens", "400", "--modes",
                        "eager", "--repeats", "3", "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.startswith(f"error: cannot write {out}: ")
    assert err.count("\n") == 1 and sorted(tmp_path.iterdir()) == []
    says(err, "a folder; give the path of a file" if where == "a folder" else "no folder")


def test_an_interrupted_gpu_benchmark_leaves_a_whole_file_that_says_it_is_incomplete(
        tmp_path, monkeypatch):
    out = tmp_path / "gpu_train.json"
    out.write_text('{"complete": true, "cases": ["an earlier run"]}\n')
    measured, real = [], gpu_train.measure

    def measure_once(*args):
        if measured:
            raise KeyboardInterrupt                    # Ctrl-C during the second case
        measured.append(1)
        return real(*args)
    monkeypatch.setattr(gpu_train, "measure", measure_once)
    with pytest.raises(SystemExit) as exit_:
        gpu_train.main(["--device", "cpu", "--only", "copy", "--tokens", "400", "--vocab", "11",
                        "--repeats", "3", "--modes", "eager", "--out", str(out)])
    assert exit_.value.code == 130
    record = json.loads(out.read_text())
    assert record["complete"] is False and [c["case"] for c in record["cases"]] == ["copy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu_train.json"]


def test_the_schedule_estimate_is_the_measured_step_times_the_papers_steps(tmp_path):
    """experiments.gpu_schedule, run again on the committed GPU timings, gives the committed
    estimate; each hour count is the paper's steps times a measured step."""
    gpu_schedule.main(["--out-dir", str(tmp_path)])
    written = json.loads((tmp_path / "gpu_schedule.json").read_text())
    committed = json.loads((RESULTS / "gpu_schedule.json").read_text())
    assert written["models"] == committed["models"]
    tables = [(folder / "gpu_schedule.md").read_text().splitlines() for folder in (tmp_path, RESULTS)]
    assert tables[0][3:] == tables[1][3:]          # all but the line naming the command
    base = written["models"]["base"]
    assert base["paper_steps"] == 100_000 and base["paper_hours"] == 12
    assert base["hours"]["per_gpu_share"] == round(100_000 * base["share_step_s"] / 3600, 2)
    assert base["hours"]["perfect_scaling"] < base["hours"]["per_gpu_share"]


def test_the_schedule_estimate_names_a_results_file_of_another_kind(tmp_path, capsys):
    with pytest.raises(SystemExit):
        gpu_schedule.main(["--timings", str(RESULTS / "multi30k.json"), "--out-dir",
                           str(tmp_path / "out")])
    line = says(capsys.readouterr().err.strip(), "multi30k.json", "not a record of "
                "benchmarks.gpu_train", "results/gpu_train.json")
    assert "git checkout" not in line


def test_the_schedule_estimate_never_writes_over_the_timings_it_reads(tmp_path, capsys):
    timings = tmp_path / "gpu_schedule.json"
    shutil.copy(RESULTS / "gpu_train.json", timings)
    with pytest.raises(SystemExit):
        gpu_schedule.main(["--timings", str(timings), "--out-dir", str(tmp_path)])
    says(capsys.readouterr().err.strip(), str(timings), "reads it", "another")
    assert timings.read_bytes() == (RESULTS / "gpu_train.json").read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [timings.name]


@pytest.mark.parametrize("timings", ["copy", "/dev/stdin"])
def test_the_committed_schedule_is_estimated_from_the_committed_record_only(tmp_path, capsys,
                                                                            timings):
    """results/gpu_schedule.* beside results/gpu_train.json must come from it: a copy (perhaps
    edited) or /dev/stdin would publish a source nobody can check. Refused, nothing written."""
    committed = {p: p.read_bytes() for p in RESULTS.glob("gpu_schedule.*")}
    shutil.copy(RESULTS / "gpu_train.json", tmp_path / "gt.json")
    given = str(tmp_path / "gt.json") if timings == "copy" else timings
    try:
        with pytest.raises(SystemExit):       # refused by the name given, before it is read
            gpu_schedule.main(["--timings", given, "--out-dir", str(RESULTS)])
    finally:
        for path, data in committed.items():
            assert path.read_bytes() == data
            path.write_bytes(data)
    says(capsys.readouterr().err.strip(), "results/gpu_train.json", given, "another --out-dir")


@pytest.mark.parametrize("record,names", [
    ({"complete": False, "machine": {"gpu": "H100"}, "cases": [{"case": "base"}]},
     ["stopped before its end", "a complete record", "results/gpu_train.json"]),
    ({"complete": True, "machine": {"cpu": "x86_64"}, "cases": [{"case": "copy"}]},
     ["CPU run"]),
    ({"complete": True, "command": "x", "machine": {"gpu": "H100"}, "cases": [{"case": "base"}]},
     ["no case 'base 1/8'", "--only base big"]),
    ({"complete": True, "command": "x", "machine": {"gpu": "H100"}, "cases": [
        {"case": f"{name}{share}", "step_s": -1} for name in ("base", "big")
        for share in ("", " 1/8")]}, ["cases[1].step_s", "-1"])])
def test_the_schedule_estimate_refuses_timings_that_are_not_a_whole_gpu_run(record, names,
                                                                             tmp_path, capsys):
    timings = tmp_path / "gpu_train.json"
    timings.write_text(json.dumps(record))
    with pytest.raises(SystemExit) as exit_:
        gpu_schedule.main(["--timings", str(timings), "--out-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and not (tmp_path / "out").exists()
    says(err.strip(), str(timings), *names, "python -m benchmarks.gpu_train")


def gpu_train_refusal(capsys, *args) -> str:
    """The one error line of gpu_train on the CPU with the copy preset and `args`."""
    with pytest.raises(SystemExit) as exit_:
        gpu_train.main(["--device", "cpu", "--only", "copy", "--tokens", "400", "--vocab", "11",
                        "--repeats", "3", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.count("\n") == 1
    return err


@pytest.mark.parametrize("out", ["results/gpu_train.json", "./results/../results/gpu_train.json",
                                 str(RESULTS / "gpu_train.json"), "results/new/gpu_train.json",
                                 "link/gpu_train.json", "linked.json"])
def test_a_cpu_run_of_the_gpu_benchmark_never_writes_into_results(out, tmp_path, capsys,
                                                                  monkeypatch):
    """By any path: relative, through '..', absolute, a new folder, a link to the folder or to
    the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").symlink_to(RESULTS)
    (tmp_path / "link").symlink_to(RESULTS)
    (tmp_path / "linked.json").symlink_to(RESULTS / "gpu_train.json")
    committed = (RESULTS / "gpu_train.json").read_bytes()
    err = gpu_train_refusal(capsys, "--modes", "eager", "--out", out)
    says(err, f"--out {out.removeprefix('./')}", "results/", "CPU run")
    assert (RESULTS / "gpu_train.json").read_bytes() == committed
    assert not (RESULTS / "new").exists()


@pytest.mark.parametrize("held", ["# a README\n", '{"not": "a record"}\n'])
def test_the_gpu_benchmark_never_replaces_a_file_that_is_not_its_record(held, tmp_path, capsys):
    out = tmp_path / "README.md"
    out.write_text(held)
    err = gpu_train_refusal(capsys, "--modes", "eager", "--out", str(out))
    says(err, str(out), "not a record of benchmarks.gpu_train", "new file")
    assert out.read_text() == held


def test_the_paper_s_models_on_a_cpu_are_refused_before_they_run(capsys):
    with pytest.raises(SystemExit) as exit_:
        gpu_train.main(["--device", "cpu"])
    says(capsys.readouterr().err.strip(), "--device cpu", "base big", "--only copy")
    assert exit_.value.code == 1


def test_a_hard_link_of_the_gpu_record_is_refused_as_the_record(tmp_path, capsys, monkeypatch):
    """A hard link is the file under another name: writing it would replace the record."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "gpu_train.json").write_text("the GPU's record\n")
    os.link(results / "gpu_train.json", tmp_path / "elsewhere.json")
    monkeypatch.setattr(folders, "COMMITTED", (results,))
    err = gpu_train_refusal(capsys, "--modes", "eager", "--out", str(tmp_path / "elsewhere.json"))
    says(err, "elsewhere.json", "hard link", "results/gpu_train.json", "CPU run")
    assert (results / "gpu_train.json").read_text() == "the GPU's record\n"


@pytest.mark.parametrize("args,names", [(["--only", "base", "--tokens", "2000"],
                                         ["--only base", "base and big"]),
                                        (["--tokens", "2000"], ["--tokens 2,000", "25,000"])])
def test_a_gpu_run_other_than_the_record_never_writes_into_results(args, names, capsys,
                                                                   monkeypatch):
    monkeypatch.setattr(gpu_train.torch.cuda, "is_available", lambda: True)
    committed = (RESULTS / "gpu_train.json").read_bytes()
    with pytest.raises(SystemExit) as exit_:
        gpu_train.main(["--out", str(RESULTS / "gpu_train.json"), *args])
    assert exit_.value.code == 1
    says(capsys.readouterr().err.strip(), "results/", *names)
    assert (RESULTS / "gpu_train.json").read_bytes() == committed


def test_the_graphs_mode_on_a_cpu_is_one_line(tmp_path, capsys):
    err = gpu_train_refusal(capsys, "--modes", "graphs", "--out", str(tmp_path / "t.json"))
    says(err, "cuda_graphs", "GPU")


def test_the_throughput_comparison_refuses_a_folder_that_is_not_the_project(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        train_throughput.main(["--against", str(tmp_path), "--only", "tiny_v6k"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.count("\n") == 1
    assert str(tmp_path) in err and "git worktree add" in err
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "train_throughput.py").write_text('print("hello")\n')
    with pytest.raises(SystemExit) as exit_:                # before any process starts
        train_throughput.main(["--against", str(tmp_path), "--only", "tiny_v6k"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.count("\n") == 1 and "Traceback" not in err
    says(err, "not this project's", "git worktree add")


@pytest.mark.parametrize("given, what", [("missing", "no such folder"), ("file", "a file")])
@pytest.mark.parametrize("module, option", [(train_throughput, "--against"),
                                            (device_run, "--before")])
def test_a_copy_to_compare_with_that_is_no_folder_is_named_as_such(tmp_path, capsys, given,
                                                                   what, module, option):
    place = tmp_path / given
    if given == "file":
        place.write_text("")
    with pytest.raises(SystemExit) as exit_:
        module.main([option, str(place)])
    assert exit_.value.code == 2
    says(capsys.readouterr().err.strip().splitlines()[-1], option, str(place), what)


@pytest.mark.slow
def test_the_throughput_comparison_steps_two_copies_in_turn(capfd):
    """This project against itself: both copies time their steps, and the ratio is printed."""
    train_throughput.main(["--threads", "1", "--repeats", "1", "--against", str(RESULTS.parent),
                           "--only", "tiny_v6k"])
    out, err = capfd.readouterr()
    line = out.splitlines()[-1]
    assert line.startswith("tiny_v6k  this code ") and "x as fast" in line
    assert line.count("ms/step") == 2 and "in CPU time" in line
    says(err, "note", "this copy of the project itself", "noise")     # said, not hidden


def test_the_comparison_gives_the_step_by_step_range_and_says_when_it_is_noise():
    """Steps of (seconds on the clock, CPU seconds), taken in turn: the range of the pairs'
    ratios is printed, and called noise when it holds 1; one step each is said to tell
    nothing, with the setting that does."""
    ours = [(1.0, 1.0), (1.0, 1.0), (1.0, 1.0)]
    says(train_throughput.spread(ours, [(0.9, 1), (1.1, 1), (1.0, 1)]), "0.90x to 1.10x",
         "within the noise")
    clear = train_throughput.spread(ours, [(1.2, 1), (1.3, 1), (1.25, 1)])
    assert "1.20x to 1.30x" in clear and "noise" not in clear
    says(train_throughput.spread(ours[:1], [(1.2, 1)]), "one step each", "noise", "--repeats")


@pytest.mark.slow
def test_under_amp_bf16_the_mfu_is_against_the_bf16_peak(capsys):
    """bf16 products run several times faster than float32's here: against float32's peak a
    bf16 step could read as an MFU above 1."""
    train_throughput.main(["--threads", "1", "--repeats", "1", "--only", "tiny_v6k", "--amp",
                           "bf16"])
    line = capsys.readouterr().out.strip().splitlines()[-1]
    says(line, "bf16 matmul peak", "MFU")
    assert float(line.rsplit("MFU ", 1)[1]) <= 1.0, line


def test_a_copy_whose_benchmark_fails_is_named_and_the_comparison_stops(tmp_path, capsys):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    (tmp_path / "benchmarks" / "train_throughput.py").write_text(
        'CASES = {}\ndef training_step(*args):\n    pass\nraise SystemExit("broken")\n')
    with pytest.raises(SystemExit) as exit_:
        train_throughput.main(["--against", str(tmp_path), "--only", "tiny_v6k", "--repeats",
                               "1", "--threads", "1"])
    assert exit_.value.code == 1
    says(capsys.readouterr().err.strip().splitlines()[-1], str(tmp_path), "ended",
         "its error is above")


def test_a_copy_that_prints_while_it_steps_is_named_with_what_it_printed(tmp_path, capsys):
    """The other copy's step writes its own line where the seconds of a step belong."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    (tmp_path / "benchmarks" / "train_throughput.py").write_text(
        'class Config:\n    max_tokens = 0\n    def override(self, **kw):\n        return self\n'
        'CASES = {"tiny_v6k": (Config(), 0, 0, None)}\n'
        'def training_step(*args):\n    return (lambda: print("stepping"),)\n')
    with pytest.raises(SystemExit) as exit_:
        train_throughput.main(["--against", str(tmp_path), "--only", "tiny_v6k", "--repeats",
                               "1", "--threads", "1"])
    assert exit_.value.code == 1
    says(capsys.readouterr().err.strip().splitlines()[-1], str(tmp_path), "'stepping'",
         "standard output", "git worktree add")


@pytest.mark.parametrize("out", [None, RESULTS])
def test_the_device_script_on_a_cpu_never_writes_into_results(out, capsys):
    before = {p.name: p.read_bytes() for p in RESULTS.iterdir()}
    with pytest.raises(SystemExit) as exit_:
        device_run.main(["--before", str(RESULTS.parent), "--device", "cpu",
                         *(["--out-dir", str(out)] if out else [])])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--out-dir" in err and "results/" in err
    assert {p.name: p.read_bytes() for p in RESULTS.iterdir()} == before


def test_the_device_script_needs_a_copy_of_the_code_to_compare_with(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        device_run.main(["--before", str(tmp_path), "--device", "cpu", "--out-dir",
                         str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.count("\n") == 1
    assert str(tmp_path) in err and "git archive" in err and not (tmp_path / "out").exists()


def test_the_device_script_names_what_a_copy_of_the_code_lacks(tmp_path, capsys):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "gpu_train.py").write_text("")
    with pytest.raises(SystemExit):
        device_run.main(["--before", str(tmp_path), "--device", "cpu", "--out-dir",
                         str(tmp_path / "out")])
    says(capsys.readouterr().err.strip(), "annotated/__init__.py", "experiments/__init__.py",
         "git archive")


def test_the_device_script_without_a_gpu_says_so_before_any_stage(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.setattr(device_run.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device_run, "run_stage", lambda *a: pytest.fail("a stage ran"))
    with pytest.raises(SystemExit) as exit_:
        device_run.main(["--before", str(RESULTS.parent), "--out-dir", str(tmp_path)])
    says(capsys.readouterr().err.strip(), "no CUDA GPU", "--device cpu")
    assert exit_.value.code == 1 and not list(tmp_path.iterdir())


def test_the_device_script_exits_1_when_a_stage_fails(tmp_path, capsys, monkeypatch):
    outcomes = iter([0, 0, 1, 0, "timed out"])
    monkeypatch.setattr(device_run, "run_stage",
                        lambda *a: {"command": "c", "exit": next(outcomes), "seconds": 1.0})
    with pytest.raises(SystemExit) as exit_:
        device_run.main(["--before", str(RESULTS.parent), "--device", "cpu", "--out-dir",
                         str(tmp_path)])
    assert exit_.value.code == 1
    lines = capsys.readouterr().out.splitlines()
    says(next(line for line in lines if line.startswith("schedule:")), "exit 1")


def test_the_schedule_is_never_written_among_the_package_s_files(capsys):
    with pytest.raises(SystemExit) as exit_:
        gpu_schedule.main(["--out-dir", str(RESULTS.parent / "annotated" / "pretrained")])
    says(capsys.readouterr().err.strip(), "annotated/", "package", "results/")
    assert exit_.value.code == 1
    assert not (RESULTS.parent / "annotated" / "pretrained" / "gpu_schedule.json").exists()


@pytest.mark.slow
def test_the_device_script_runs_every_stage_on_a_cpu(tmp_path):
    """The CPU self-check: this code against itself on the copy preset, the schedule of the
    committed GPU timings, the CUDA tests (skipped); each stage's command and exit recorded."""
    out = tmp_path / "out"
    device_run.main(["--before", str(RESULTS.parent), "--device", "cpu", "--out-dir", str(out)])
    record = json.loads((out / "device_run.json").read_text())
    assert list(record["stages"]) == device_run.STAGES
    assert all(stage["exit"] == 0 for stage in record["stages"].values()), record
    assert "FLASH_ATTENTION" in record["stages"]["attention"]["output_end"]
    assert "skipped" in record["stages"]["tests"]["output_end"]
    for name in ("gpu_train.json", "gpu_train_before.json"):
        timings = json.loads((out / name).read_text())
        assert timings["complete"] and [c["case"] for c in timings["cases"]] == ["copy",
                                                                                 "copy 1/8"]
    assert json.loads((out / "gpu_schedule.json").read_text())["models"] == \
        json.loads((RESULTS / "gpu_schedule.json").read_text())["models"]


@pytest.mark.parametrize("module", [adam_step, attention_kernels, cpu_allocator, cpu_matmul,
                                    decode_speed, exercise_checks, train_step_vs_nn_transformer,
                                    train_throughput])
def test_a_thread_count_torch_cannot_take_is_refused_before_any_work(module, capsys):
    with pytest.raises(SystemExit) as exit_:
        module.main(["--threads", "100000"])
    assert exit_.value.code == 2
    says(capsys.readouterr().err.strip().splitlines()[-1], "--threads", "100000", "1,024")


@pytest.mark.parametrize("default", [None, 1], ids=["one a core", "one"])
def test_bench_threads_that_torch_cannot_take_is_one_line(monkeypatch, default):
    """Also where a benchmark times on one thread unless told otherwise (exercise_checks)."""
    monkeypatch.setenv("BENCH_THREADS", "100000")
    with pytest.raises(ConfigError) as error:
        common.set_threads(None, default)
    says(error, "BENCH_THREADS", "100000", "1 <= threads <= 1,024")


def test_bench_threads_is_taken_where_a_benchmark_defaults_to_one_thread(monkeypatch):
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("BENCH_THREADS", "2")
        assert common.set_threads(None, default=1) == 2
        monkeypatch.delenv("BENCH_THREADS")
        assert common.set_threads(None, default=1) == 1
    finally:
        torch.set_num_threads(before)


def test_more_threads_than_cores_is_said(capsys):
    before = torch.get_num_threads()
    try:
        assert common.set_threads(common.cores() + 1) == common.cores() + 1
    finally:
        torch.set_num_threads(before)
    says(capsys.readouterr().err.strip(), f"{common.cores() + 1} threads",
         f"{common.cores()} cores", f"--threads {common.cores()}")
    common.set_threads(1)
    torch.set_num_threads(before)
    assert capsys.readouterr().err == ""


def test_timings_that_vary_between_repeats_are_noted_as_noise():
    """Repeats within 1.5x of each other: no note; one far slower (a busy machine, or a call
    that does too little): a note naming the contender and how far apart its repeats are."""
    assert common.noise_note({"cached": [1.0, 1.1, 1.2], "uncached": [3.0, 3.3, 3.1]}) is None
    note = common.noise_note({"cached": [1.0, 2.5, 1.1], "uncached": [3.0, 3.1, 3.2]})
    says(note, "cached", "2.5x", "noise", "--repeats")
    assert common.noise_note({"cached": [1.0], "uncached": [9.0]}) is None    # one repeat
    calls = []
    times = common.times_in_turn({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                 repeats=2, warmup=1)
    assert calls == ["a", "b", "a", "b", "a", "b"] and [len(t) for t in times.values()] == [2, 2]


def test_decode_speed_refuses_a_checkpoint_that_cannot_read_its_english(tmp_path, capsys):
    """A copy-task model given as --checkpoint is named as one, not blamed on line 1 of the
    benchmark's own newstest2014."""
    from annotated import train
    train.main(["--config", "copy", "--run-dir", str(tmp_path / "run"), "--max-steps", "1",
                "--threads", "1", "ckpt_every=1"])
    (tmp_path / "data" / "wmt14").mkdir(parents=True)
    for lang in ("en", "de"):
        (tmp_path / "data" / "wmt14" / f"newstest2014.{lang}").write_text("Gutach: a town.\n")
    capsys.readouterr()
    with pytest.raises(SystemExit):
        decode_speed.main(["--checkpoint", str(tmp_path / "run" / "ckpt_0000001.pt"),
                           "--data-dir", str(tmp_path / "data"), "--sentences", "2",
                           "--threads", "1"])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "copy task" in line and "ckpt_0000001.pt" in line and "English" in line


def test_decode_speed_on_a_few_lines_of_newstest_names_them_not_a_setting(tmp_path, capsys):
    """Three lines cannot teach its 16,000-piece BPE: the refusal names the file and its lines,
    not the vocab_size of training, which this benchmark has not."""
    (tmp_path / "wmt14").mkdir()
    for lang in ("en", "de"):
        (tmp_path / "wmt14" / f"newstest2014.{lang}").write_text("Gutach: a town.\n" * 3)
    with pytest.raises(SystemExit):
        decode_speed.main(["--data-dir", str(tmp_path), "--sentences", "2", "--threads", "1"])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    says(line, "newstest2014.en", "3 lines", "too few", "--checkpoint")
    assert "vocab_size" not in line


@pytest.mark.parametrize("made, what", [(None, "not there"), ("file", "a file")])
def test_decode_speed_names_a_data_location_that_is_no_folder(tmp_path, capsys, made, what):
    location = tmp_path / "data"
    if made:
        location.write_text("")
    with pytest.raises(SystemExit):
        decode_speed.main(["--data-dir", str(location), "--threads", "1"])
    says(capsys.readouterr().err.strip(), str(location), what, "--data-dir")


def test_decode_speed_decodes_a_checkpoint_as_it_was_scored(tmp_path, capsys):
    """The shipped model's own beam and alpha, not the random model's 4 and 0.6."""
    from annotated.pretrained import MULTI30K_EN_DE
    from annotated.store.checkpoint_file import load
    config = load(MULTI30K_EN_DE)["config"]
    (tmp_path / "wmt14").mkdir()
    for lang in ("en", "de"):
        (tmp_path / "wmt14" / f"newstest2014.{lang}").write_text("A dog runs.\nTwo men.\n")
    decode_speed.main(["--checkpoint", str(MULTI30K_EN_DE), "--data-dir", str(tmp_path),
                       "--sentences", "2", "--threads", "1"])
    says(capsys.readouterr().out.splitlines()[0],
         f"beam {config['beam_size']}, alpha {config['alpha']}")


def test_a_batch_too_large_to_decode_is_refused_before_any_work(capsys):
    with pytest.raises(SystemExit) as exit_:
        decode_speed.main(["--sentences", "99999999"])
    assert exit_.value.code == 2
    says(capsys.readouterr().err.strip().splitlines()[-1], "--sentences", "500", "99999999")


def test_a_timing_on_a_busy_machine_says_so_in_its_first_line(monkeypatch):
    """A load average above the cores: the times are shared; at rest, nothing is said."""
    monkeypatch.setattr(common, "cores", lambda: 2)
    monkeypatch.setattr(common.os, "getloadavg", lambda: (3.9, 3.0, 2.0))
    says(common.busy(), "busy", "load average 3.9 on 2 cores", "slower")
    monkeypatch.setattr(common.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert common.busy() == ""


@pytest.mark.skipif(not onednn.AVAILABLE, reason="this torch has no oneDNN")
def test_cpu_matmul_times_each_product_of_a_step_through_both_libraries(capsys):
    before = torch.get_num_threads()
    try:
        cpu_matmul.main(["--threads", "1", "--repeats", "1"])
    finally:
        torch.set_num_threads(before)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 + len(cpu_matmul.products())
    for line, name in zip(lines[1:], cpu_matmul.products()):
        says(line, name, "BLAS", "oneDNN", "x")
    says(lines[-1], "one step's products", "BLAS", "oneDNN")
