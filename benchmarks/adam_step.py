"""The Adam update of annotated.optim (PyTorch's fused kernel) against plain torch.optim.Adam.

Both update the same parameters (multi30k_tiny with the sweep's 6,000-entry vocabulary) with
the same gradients, timed round-robin. The plain update runs about a dozen elementwise
operations per tensor; the fused one makes one pass. For a model this small the update is a
visible part of a training step on a CPU.

    python -m benchmarks.adam_step [--threads 1] [--repeats 20]

Target: the fused update takes at most half the time of the plain one.
"""

import torch

from annotated import configs
from annotated.base.cli import ArgumentParser, command
from annotated.model import EncoderDecoder
from annotated.optim import make_optimizer
from benchmarks.common import add_timing_arguments, interleaved_times, set_threads


def optimizers(vocab: int = 6000):
    """{name: zero-argument callable taking one update} for annotated.optim's Adam and plain
    Adam, each on its own copy of multi30k_tiny's parameters with random gradients."""
    config = configs.get("multi30k_tiny").override(vocab_size=vocab)
    builders = {
        "annotated.optim (fused)":
            lambda model: make_optimizer(model, config.d_model, config.warmup_steps)[0],
        "plain torch.optim.Adam":
            lambda model: torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9),
    }
    steps = {}
    for name, build in builders.items():
        torch.manual_seed(0)
        model = EncoderDecoder(config, vocab)
        for p in model.parameters():
            p.grad = torch.randn_like(p) * 1e-3
        optimizer = build(model)
        # The closure holds the optimizer itself: the LR scheduler wraps optimizer.step with only a
        # weak reference to it, so a bare bound method would let it be garbage-collected.
        steps[name] = lambda optimizer=optimizer: optimizer.step()
    return steps


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.adam_step",
                            description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser, repeats=20)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    print(f"threads: {set_threads(args.threads)}; target: fused / plain <= 0.50")
    times = interleaved_times(optimizers(), args.repeats, warmup=2)
    for name, seconds in times.items():
        print(f"{name:<24} {seconds * 1000:6.2f} ms per update")
    ratio = times["annotated.optim (fused)"] / times["plain torch.optim.Adam"]
    print(f"ratio fused / plain: {ratio:.2f} ({'met' if ratio <= 0.5 else 'MISSED'})")


if __name__ == "__main__":
    main()
