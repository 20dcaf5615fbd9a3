"""Data parallelism: 2 processes under torchrun (gloo, CPU) compute the same training as 1.

The global batch of a step is cut into the same micro-batches whether 2 ranks take one each
(world_size=2, accum_steps=1) or 1 process takes both (world_size=1, accum_steps=2), and the
loss is divided by the step's global target-token count in both cases. So the gradients agree
up to the order of the floating-point additions (the all-reduce vs accumulation in .grad).
Tolerance: 1e-6 relative to each tensor's largest entry, float32, after 4 Adam steps. (With two
summands the order cannot matter, and today the parameters come out identical; the tolerance
leaves room for a different all-reduce algorithm.)

Why not compare with one process computing the whole batch as ONE micro-batch: other padding
changes rounding, and the key biases b^K have an exactly zero true gradient (adding q.b^K to
every score of a query leaves its softmax unchanged), so their gradient is rounding noise of
about 1e-10, which Adam divides by its own size and turns into steps of the full learning rate.
Those biases then differ by ~1e-3 while every other weight agrees to ~1e-8.
"""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch
from conftest import ROOT, says

from annotated import configs
from annotated.configs import apply_overrides
from annotated.model import EncoderDecoder
from annotated.store import checkpoint_file

STEPS = 4
OVERRIDES = ["copy_examples=300", "max_tokens=300", "N=1", "d_model=16", "d_ff=32", "h=2",
             "d_k=8", "d_v=8", "lr_factor=0.5", "log_every=1", "eval_every=1000",
             "ckpt_every=1000"]


# CPU processes talking over gloo, also on a machine with GPUs (tests/test_cuda.py has NCCL)
CPU_ONLY = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}


def launch(command, out, *extra):
    done = subprocess.run([*command, "--config", "copy", "--run-dir", str(out), "--max-steps",
                           str(STEPS), *OVERRIDES, *extra],
                          env=CPU_ONLY, timeout=300, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def weights(out):
    return checkpoint_file.load(out / checkpoint_file.checkpoint_name(STEPS))["model"]


def test_two_processes_train_like_one_on_the_same_global_batch(tmp_path):
    log = launch([sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc_per_node=2", "-m", "annotated.train"], tmp_path / "two")
    assert "2 process(es) on cpu" in log
    launch([sys.executable, "-m", "annotated.train"], tmp_path / "one", "accum_steps=2")
    two, one = weights(tmp_path / "two"), weights(tmp_path / "one")
    for name, p in one.items():
        assert (two[name] - p).abs().max().item() <= 1e-6 * p.abs().max().item(), name

    config = apply_overrides(configs.get("copy"), OVERRIDES)
    torch.manual_seed(config.seed)                  # what train.py starts from
    initial = EncoderDecoder(config, config.vocab_size).state_dict()
    moved = max((one[name] - p).abs().max().item() for name, p in initial.items())
    assert moved > 1e-3                             # the steps did change the weights


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_nodes_of_one_process_rendezvous_on_localhost_and_train_like_one(tmp_path):
    """The multi-node path of the 8-GPU recipe: `torchrun --nnodes=2`, each node one process,
    meeting at a master address (here 127.0.0.1); gloo in place of NCCL."""
    port, out = free_port(), tmp_path / "nodes"
    nodes = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1",
         f"--node_rank={rank}", "--master_addr=127.0.0.1", f"--master_port={port}",
         "-m", "annotated.train", "--config", "copy", "--run-dir", str(out), "--max-steps",
         str(STEPS), *OVERRIDES], env=CPU_ONLY,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    results = [node.communicate(timeout=300) for node in nodes]
    for node, (stdout, stderr) in zip(nodes, results):
        assert node.returncode == 0, stderr[-3000:]
    assert "2 process(es) on cpu" in results[0][0]
    launch([sys.executable, "-m", "annotated.train"], tmp_path / "one", "accum_steps=2")
    two, one = weights(out), weights(tmp_path / "one")
    for name, p in one.items():
        assert (two[name] - p).abs().max().item() <= 1e-6 * p.abs().max().item(), name


@pytest.mark.parametrize("environment, names", [
    ({"RANK": "0"}, ["RANK, MASTER_ADDR set", "not WORLD_SIZE", "unset RANK", "torchrun"]),
    ({"RANK": "abc", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
      "MASTER_PORT": "29500"}, ["RANK='abc'", "no process number"]),
    ({"RANK": "3", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
      "MASTER_PORT": "29500"}, ["RANK=3", "WORLD_SIZE=2"])], ids=["rank alone", "not a number",
                                                              "rank past the world"])
def test_torchruns_variables_left_or_wrong_are_one_line_before_any_rendezvous(
        environment, names, monkeypatch):
    """Not a rendezvous traceback, nor a wait for peers that never come. A MASTER_ADDR alone,
    exported for other tools, is no torchrun run."""
    from annotated.base.errors import DataError
    from annotated.training.distributed import TORCHRUN, torchrun_environment
    for name in TORCHRUN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    assert torchrun_environment() is False
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(DataError) as error:
        torchrun_environment()
    says(str(error.value), *names)


def by_hand(rank: int, port: int) -> dict:
    """The environment of process `rank` of two started without torchrun (by hand)."""
    return {**CPU_ONLY, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_a_stop_while_waiting_for_the_other_processes_ends_at_once(tmp_path, signum):
    """Torch waits for a job's processes in C++, where Python's signal handlers do not run:
    without the watcher a stop waited for torch's half-hour limit. Process 0 of two, started by
    hand, waits for a process 1 that never comes; the stop comes once it listens."""
    port = free_port()
    waiting = subprocess.Popen([sys.executable, "-m", "annotated.train", "--config", "copy",
                                "--run-dir", str(tmp_path / "run"), *OVERRIDES],
                               env=by_hand(0, port), stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):                             # until it holds the meeting point
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert waiting.poll() is None, waiting.stderr.read()
                time.sleep(0.1)
        waiting.send_signal(signum)
        err = waiting.communicate(timeout=60)[1]
    finally:
        waiting.kill()
    assert waiting.returncode == 128 + signum and err.strip().startswith("interrupted"), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists(), err


@pytest.mark.parametrize("rank, names", [
    (1, ["process 1 of 2", "nothing answers", "127.0.0.1", "MASTER_ADDR", "process 0"]),
    (0, ["process 0 of 2", "not all 2"])], ids=["no process 0", "no process 1"])
def test_processes_that_never_all_come_are_one_line_naming_the_missing(rank, names):
    """After RENDEZVOUS_S seconds (shortened here) the wait ends with what is missing and the
    two ways out, not torch's timeout traceback half an hour later."""
    code = ("import annotated.training.distributed as d; d.RENDEZVOUS_S = 2; "
            "d.init_distributed()")
    done = subprocess.run([sys.executable, "-c", code], env=by_hand(rank, free_port()),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    says(done.stderr, *names, "torchrun", "unset RANK")


def children_by_rank(parent: int) -> dict[int, int]:
    """{RANK: pid} of the training processes torchrun `parent` started, read from /proc."""
    found = {}
    for stat in os.listdir("/proc"):
        try:
            if not stat.isdigit() or int(open(f"/proc/{stat}/stat").read()
                                         .rpartition(")")[2].split()[1]) != parent:
                continue
            environ = open(f"/proc/{stat}/environ", "rb").read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue                                     # gone meanwhile, or not ours
        ranks = [line[5:] for line in environ if line.startswith(b"RANK=")]
        if ranks:
            found[int(ranks[0])] = int(stat)
    return found


@pytest.mark.skipif(not os.path.isfile("/proc/self/stat"), reason="reads /proc (Linux)")
def test_a_process_of_the_job_left_stopped_is_named_with_its_way_out(tmp_path):
    """A process stopped with SIGSTOP (or Ctrl-Z) holds the others inside torch, which said
    nothing until its half-hour timeout. The other process names it, once, and the way out;
    continued, the job goes on. STOPPED_NOTE_S is shortened here."""
    script = tmp_path / "train_noting_soon.py"
    script.write_text("import runpy\nimport annotated.training.distributed as d\n"
                      "d.STOPPED_NOTE_S = 2\nrunpy.run_module('annotated.train', "
                      "run_name='__main__')\n")
    err = tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        job = subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--standalone",
             "--nproc_per_node=2", str(script), "--config", "copy", "--run-dir",
             str(tmp_path / "run"), "--max-steps", "100000", *OVERRIDES],
            env={**CPU_ONLY, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
            stderr=stderr, start_new_session=True)
    try:
        metrics = tmp_path / "run" / "metrics.jsonl"
        deadline = time.monotonic() + 240
        while not (metrics.is_file() and metrics.stat().st_size) and time.monotonic() < deadline:
            assert job.poll() is None, err.read_text()[-3000:]
            time.sleep(0.2)
        rank1 = children_by_rank(job.pid)[1]
        os.kill(rank1, signal.SIGSTOP)
        while "has been stopped" not in err.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        os.kill(rank1, signal.SIGCONT)
        size = metrics.stat().st_size
        while metrics.stat().st_size == size and time.monotonic() < deadline:
            time.sleep(0.2)                              # the job goes on
        went_on = metrics.stat().st_size > size
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    notes = [line for line in err.read_text().splitlines() if "has been stopped" in line]
    assert len(notes) == 1, err.read_text()[-3000:]
    says(notes[0], "process 1 of 2", f"pid {rank1}", f"kill -CONT {rank1}", "Ctrl-C")
    assert went_on
