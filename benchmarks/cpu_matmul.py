"""Training's matrix products on the CPU: torch's BLAS against oneDNN (annotated.training.onednn).

The products of one multi30k_tiny training step (d_model 128, d_ff 256, the sweep's 6,000-entry
vocabulary, 2,048 tokens a side): each linear layer's forward product and its two backward
ones, and those of one chunk of the output projection in training.output_loss. Each is timed
round-robin through torch (F.linear and `@`, which run the BLAS) and through oneDNN; a step's
total weighs each product by how often one step computes it.

    python -m benchmarks.cpu_matmul [--threads 1] [--repeats 20]

Target: one step's products together at least as fast through oneDNN as through the BLAS
(ratio BLAS / oneDNN >= 1.0); training uses oneDNN on a CPU.
"""
import torch
import torch.nn.functional as F

from annotated import configs
from annotated.base.cli import ArgumentParser, command
from annotated.base.errors import DeviceError
from annotated.training import onednn
from annotated.training.output_loss import CPU_CHUNK
from benchmarks.common import add_timing_arguments, interleaved_times, set_threads

VOCAB, TOKENS = 6000, 2048


def products() -> dict:
    """{name: (times one step computes it, (a, b)) for a @ b}: the step's products."""
    config = configs.get("multi30k_tiny")
    d, d_ff, N, n = config.d_model, config.d_ff, config.N, TOKENS
    rows = CPU_CHUNK // VOCAB
    layers = {"d_model -> d_model": (d, d, N * 4 + N * 8),     # attention: W_Q, W_K, W_V, W_O
              "d_model -> d_ff": (d, d_ff, 2 * N), "d_ff -> d_model": (d_ff, d, 2 * N)}
    found = {}
    for name, (d_in, d_out, count) in layers.items():
        x, w, dy = torch.randn(n, d_in), torch.randn(d_out, d_in), torch.randn(n, d_out)
        found[f"{name}: forward"] = (count, (x, w.T))
        found[f"{name}: d input"] = (count, (dy, w))
        found[f"{name}: d weight"] = (count, (dy.T, x))
    h, w, dz = torch.randn(rows, d), torch.randn(VOCAB, d), torch.randn(rows, VOCAB)
    chunks = -(-n // rows)
    found["output chunk: logits"] = (chunks, (h, w.T))
    found["output chunk: d hidden"] = (chunks, (dz, w))
    found["output chunk: d W^T"] = (chunks, (h.T, dz))
    return found


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.cpu_matmul",
                            description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser, repeats=20)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    if not onednn.AVAILABLE:
        raise DeviceError("this torch was built without oneDNN (torch.backends.mkldnn): "
                          "training uses its BLAS, and there is nothing to compare")
    print(f"threads: {set_threads(args.threads)}; target: BLAS / oneDNN >= 1.0 over a step")
    totals = {"BLAS": 0.0, "oneDNN": 0.0}
    for name, (count, (a, b)) in products().items():
        times = interleaved_times({"BLAS": lambda: F.linear(a, b.T),
                                   "oneDNN": lambda: onednn.matmul(a, b)}, args.repeats)
        for library, seconds in times.items():
            totals[library] += count * seconds
        print(f"{name:<28} x{count:<3} BLAS {times['BLAS'] * 1e3:7.3f} ms, oneDNN "
              f"{times['oneDNN'] * 1e3:7.3f} ms: {times['BLAS'] / times['oneDNN']:.2f}x")
    ratio = totals["BLAS"] / totals["oneDNN"]
    print(f"one step's products: BLAS {totals['BLAS'] * 1e3:.0f} ms, oneDNN "
          f"{totals['oneDNN'] * 1e3:.0f} ms: {ratio:.2f}x ({'met' if ratio >= 1.0 else 'MISSED'})")


if __name__ == "__main__":
    main()
