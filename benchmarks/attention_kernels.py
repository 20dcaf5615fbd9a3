"""Which kernel F.scaled_dot_product_attention runs for each mask training can hand it, and how
long a forward and backward pass takes, on the CPU or a GPU.

    python -m benchmarks.attention_kernels [--device cpu|cuda] [--dtype bfloat16] [--threads 1]

The cases are those of annotated.training.decoder_states, against what the model's own forward
pass with annotated.masks gives: the decoder's self-attention with the full target mask
(batch, 1, T, T) (padding and causal: a tensor the kernel must read) or as is_causal with no
mask (a CausalBias); the encoder's with the broadcast padding mask (batch, 1, 1, S) as booleans
or as additive floats, or with no mask at all (a batch without padding: the fastest the kernel
can go). The kernel named is the one PyTorch picks for those arguments
(torch._fused_sdp_choice); timings are medians, taken in turn, so that noise hits all alike.
Shapes: the multi30k_tiny preset's on a CPU (4 heads of 32, sentences of 8 to 24 tokens,
2,048 tokens a batch, float32), the base model's on a GPU (8 heads of 64, 16 to 48 tokens, one
GPU's eighth of the paper's batch, bf16). `--dtype` changes the dtype: on a CPU in bfloat16
(amp=bf16) the fused kernel's backward is slow, and training computes eq. (1) spelled out
(annotated.attention.attention, its products bf16 matrix products) instead; the last two cases
time that.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend
from torch.nn.attention.bias import causal_upper_left

from annotated.attention import attention
from annotated.base.cli import ArgumentParser, command
from annotated.base.errors import DeviceError
from annotated.masks import subsequent_mask
from benchmarks.common import add_timing_arguments, interleaved_times, set_threads

SHAPES = {"cpu": (4, 32, (8, 24), 2048, torch.float32),     # h, d_k, lengths, tokens, dtype
          "cuda": (8, 64, (16, 48), 25_000 // 8, torch.bfloat16)}


def spelled_out(q, k, v, attn_mask=None):
    """Eq. (1) as annotated.attention writes it: matrix products, a mask tensor, a softmax."""
    return attention(q, k, v, attn_mask)[0]


def cases(device: str, dtype: torch.dtype | None = None, seed: int = 0) -> dict:
    """name: (q, k, v, the keyword arguments of the attention, the attention: by default
    F.scaled_dot_product_attention); `dtype`: other than the device's."""
    h, d_k, (lo, hi), tokens, dtype = SHAPES[device][:4] + (dtype or SHAPES[device][4],)
    gen = torch.Generator().manual_seed(seed)
    T = (lo + hi) // 2
    lengths = torch.randint(T - 4, T + 1, (tokens // T,), generator=gen)
    lengths[0] = T                                                # the batch's longest
    real = torch.arange(T)[None] < lengths[:, None]               # (batch, T)
    q, k, v = (torch.randn(len(lengths), h, T, d_k, generator=gen).to(device, dtype)
               .requires_grad_() for _ in range(3))
    padding = real[:, None, None, :].to(device)                   # (batch, 1, 1, T)
    target = padding & torch.ones(T, T, dtype=torch.bool, device=device).tril()
    additive = torch.zeros(padding.shape, dtype=dtype, device=device).masked_fill(
        ~padding, float("-inf"))
    return {"decoder, full target mask (b, 1, T, T)": (q, k, v, {"attn_mask": target}),
            "decoder, is_causal (CausalBias)": (q, k, v, {"attn_mask": causal_upper_left(T, T)}),
            "encoder, padding mask (b, 1, 1, S)": (q, k, v, {"attn_mask": padding}),
            "encoder, additive padding (b, 1, 1, S)": (q, k, v, {"attn_mask": additive}),
            "encoder, no padding, no mask": (q, k, v, {}),
            "decoder, eq. (1) spelled out, causal mask": (
                q, k, v, {"attn_mask": subsequent_mask(T, device)}, spelled_out),
            "encoder, eq. (1) spelled out, padding mask": (
                q, k, v, {"attn_mask": padding}, spelled_out)}


def kernel(q, k, v, kwargs, attend=F.scaled_dot_product_attention) -> str:
    """The backend PyTorch chooses for these arguments (a CausalBias as is_causal)."""
    if attend is spelled_out:
        return "matrix products"
    mask = kwargs.get("attn_mask")
    causal = type(mask).__name__ == "CausalBias"
    choice = torch._fused_sdp_choice(q, k, v, None if causal else mask, 0.0, causal)
    return SDPBackend(choice).name


def pass_of(device: str, case: tuple):
    """One forward and backward pass of `case` (q, k, v, kwargs[, the attention]), the output's
    gradient a tensor of its own, as in training (a sum's is one number broadcast, which slows
    some kernels' products)."""
    q, k, v, kwargs, attend = (*case, F.scaled_dot_product_attention)[:5]
    d_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(q)

    def run():
        attend(q, k, v, **kwargs).backward(d_out)
        if device == "cuda":
            torch.cuda.synchronize()
    return run


def parse_args(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks.attention_kernels",
                            description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"],
                        help="default: float32 on the CPU, bfloat16 on a GPU")
    add_timing_arguments(parser, repeats=20)
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise DeviceError("--device cuda: no CUDA GPU here; leave --device out for the CPU")
    threads = set_threads(args.threads)
    found = cases(args.device, getattr(torch, args.dtype) if args.dtype else None)
    q = next(iter(found.values()))[0]
    print(f"{args.device}, {threads} thread(s): {q.size(0)} sentences, {q.size(1)} heads of "
          f"{q.size(3)}, {q.size(2)} positions, {q.dtype}; forward and backward")
    times = interleaved_times({name: pass_of(args.device, case) for name, case in
                               found.items()}, args.repeats)
    for name, case in found.items():
        print(f"  {name:<44} {kernel(*case):<16} {times[name] * 1000:8.3f} ms")


if __name__ == "__main__":
    main()
