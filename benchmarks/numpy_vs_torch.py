"""Time the NumPy reference against PyTorch autograd: float64 forward + backward of the full
model (label-smoothed loss, dropout off) on the same few short sentences, same thread count.

    python -m benchmarks.numpy_vs_torch [--threads 1] [--repeats 5] [--sentences 4]

Prints, per configuration, the median time of each side and the ratio NumPy / PyTorch; the
target is a ratio of at most 3. PyTorch's threads are set with torch.set_num_threads. NumPy's
BLAS reads its thread count from the usual environment variables once, when NumPy loads: run as
a command, this script sets them first; main([...]) called in a process that has loaded NumPy
leaves its BLAS as it is (threadpoolctl, when installed, sets it in both cases). Both counts
are printed.
"""
import argparse
import os
import sys

BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def count(text: str) -> int:
    """A whole number from 1 to 1024 (annotated.base.cli.number would load NumPy's BLAS
    before BLAS_THREADS are set)."""
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 1024, got {text!r}")
    return int(text)


def threads_asked() -> str:
    """--threads as given, read before the imports below load NumPy's BLAS, which reads its
    thread count once; main parses every argument, and refuses a wrong one, after them."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--threads", default="1")
    given = early.parse_known_args()[0].threads
    return given if given.isdigit() else "1"


if __name__ == "__main__":
    for var in BLAS_THREADS:
        os.environ[var] = threads_asked()

import numpy as np  # noqa: E402
import torch  # noqa: E402

import reference_numpy as ref  # noqa: E402
from annotated import batch_masks, configs  # noqa: E402
from annotated.base.cli import ArgumentParser, command  # noqa: E402
from annotated.loss import label_smoothed_loss  # noqa: E402
from annotated.model import EncoderDecoder  # noqa: E402
from benchmarks.common import interleaved_times, set_threads  # noqa: E402


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.numpy_vs_torch",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=count, default=1, help="BLAS and torch threads")
    parser.add_argument("--repeats", type=count, default=5, help="timed runs per side (median)")
    parser.add_argument("--sentences", type=count, default=4, help="sentences in the batch")
    return parser.parse_args(argv)


PAD, BOS, EOS = 0, 2, 3
# (name, config, shared vocabulary size)
CASES = [("copy preset, V=1000", configs.get("copy"), 1000),
         ("multi30k preset, V=8000", configs.get("multi30k"), 8000),
         ("base, V=37000", configs.get("base"), 37_000)]


def blas_threads(threads: int) -> str:
    """What NumPy's BLAS will use, as threadpoolctl reports it, else the environment."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        return (f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')} "
                f"(no threadpoolctl)")
    threadpool_limits(threads)
    return ", ".join(f"{i['internal_api']}={i['num_threads']}" for i in threadpool_info())


def sentences(rng, vocab, n):
    """n short sentences of 8-14 words, padded: src, tgt_in, tgt_out (batch, len)."""
    lengths = rng.integers(8, 15, size=(n, 2))
    src_len, tgt_len = lengths.max(axis=0) + 1
    src, tgt_in, tgt_out = (np.full((n, L), PAD) for L in (src_len, tgt_len, tgt_len))
    for i, (a, b) in enumerate(lengths):
        src[i, :a + 1] = [*rng.integers(4, vocab, a), EOS]
        words = rng.integers(4, vocab, b)
        tgt_in[i, :b + 1], tgt_out[i, :b + 1] = [BOS, *words], [*words, EOS]
    return src, tgt_in, tgt_out


def compare(name, config, vocab, batch, repeats):
    """Time one loss-and-gradients step of each side on `batch` (src, tgt_in, tgt_out); prints
    the times, their ratio and how far apart the two losses are."""
    torch.manual_seed(0)
    model = EncoderDecoder(config, vocab).double().eval()        # eval: dropout off
    params = ref.params_from_torch(model)
    src, tgt_in, tgt_out = batch
    t_src, t_in, t_out = (torch.from_numpy(a) for a in batch)
    result = {}

    def numpy_step():
        result["numpy"] = ref.loss_and_grads(params, src, tgt_in, tgt_out, pad=PAD,
                                             eps_ls=config.eps_ls, config=config)[0]

    def torch_step():
        model.zero_grad(set_to_none=True)
        stats = label_smoothed_loss(model(t_src, t_in, *batch_masks(t_src, t_in, PAD)), t_out,
                                    pad=PAD, eps_ls=config.eps_ls)
        loss = stats.loss / stats.tokens
        loss.backward()
        result["torch"] = loss.item()

    t = interleaved_times({"numpy": numpy_step, "torch": torch_step}, repeats)
    tokens = int((src != PAD).sum() + (tgt_in != PAD).sum())
    print(f"{name:<26} {tokens:>7} {t['numpy']:>10.4f} {t['torch']:>10.4f} "
          f"{t['numpy'] / t['torch']:>6.2f}  {abs(result['numpy'] - result['torch']):>11.1e}")


@command
def main(argv=None):
    args = parse_args(argv)
    set_threads(args.threads)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, torch {torch.__version__}")
    print(f"threads: torch {torch.get_num_threads()}; numpy BLAS {blas_threads(args.threads)}")
    print(f"{'config':<26} {'tokens':>7} {'numpy (s)':>10} {'torch (s)':>10} {'ratio':>6}  "
          f"{'|loss diff|':>11}")
    rng = np.random.default_rng(0)
    for name, config, vocab in CASES:
        compare(name, config, vocab, sentences(rng, vocab, args.sentences), args.repeats)
    print("target: ratio (numpy / torch) <= 3")


if __name__ == "__main__":
    main()
