"""The GPU benchmark's own code, run on the CPU with a small preset (the GPU run is the
benchmark; this checks what it computes and writes)."""
import json

import pytest

from annotated import configs
from annotated.tools.flops import batch_training_flops
from benchmarks import gpu_train


def test_gpu_benchmark_times_each_case_and_counts_its_useful_flops(tmp_path):
    out = tmp_path / "gpu_train.json"
    gpu_train.main(["--device", "cpu", "--only", "copy", "--tokens", "400", "--vocab", "11",
                    "--repeats", "3", "--modes", "eager", "--out", str(out)])
    record = json.loads(out.read_text())
    assert record["command"].startswith("python -m benchmarks.gpu_train --device cpu")
    assert [c["case"] for c in record["cases"]] == ["copy", "copy 1/8"]
    for case in record["cases"]:
        assert case["source_tokens"] <= case["max_tokens"] and case["step_s"] > 0
        tokens = case["source_tokens"] + case["target_tokens"]
        assert case["tokens_per_s"] == pytest.approx(tokens / case["step_s"], rel=1e-3)
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
