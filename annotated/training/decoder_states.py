"""The model's forward pass up to its output projection, as training runs it.

`DecoderStates(model)(src, tgt_in)` is `model.decode(model.encode(src, ...), ..., tgt_in, ...)`:
the decoder's output (batch, tgt_len, d_model), which training.output_loss projects and scores
a chunk at a time. It gives PyTorch's fused attention (F.scaled_dot_product_attention, through
annotated.attention.fast_attention) the masks that let it pick its fastest kernel:

- decoder self-attention: no mask tensor; the causal mask of §3.2.3 is handed over as a
  CausalBias, which F.scaled_dot_product_attention turns into `is_causal=True`. The padding of
  the target needs no mask: it only follows a sentence's real tokens, and a real position sees
  only itself and earlier ones, so no real position ever sees it. Padded positions do see one
  another (where annotated.masks.target_mask would hide them), but nothing they compute reaches
  a real position, and the loss leaves them out, so the loss and every gradient are those of
  the full mask. On a GPU this leaves every fused kernel open to PyTorch, flash attention
  included, which takes no mask tensor, only `is_causal`. On a CPU the fused kernel runs
  either way; `is_causal` spares it reading a (tgt_len x tgt_len) mask and the blocks above
  the diagonal.
- encoder self-attention and the decoder's attention over the source: the padding mask
  (batch, 1, 1, src_len) of annotated.masks, broadcast, never expanded. Here padding follows
  the keys that real queries see, so it must be masked: on a GPU only the kernels that take a
  mask can run (the memory-efficient one, cuDNN's), and on a CPU its fused kernel, for which a
  broadcast padding mask costs about as much as none.

`python -m benchmarks.attention_kernels` names the kernel PyTorch picks for each case and times
it; results/device_run.json holds its last run on a GPU.

One exception, `spelled_out=True`: on a CPU under bf16 autocast (amp=bf16), PyTorch's fused CPU
kernel is several times slower than eq. (1) spelled out, whose products run as bf16 matrix
products (`python -m benchmarks.attention_kernels --device cpu --dtype bfloat16` times both);
there every attention layer computes eq. (1) literally (MultiHeadAttention.fast = False), with
the causal mask as a tensor (annotated.masks.subsequent_mask).

Attention as eq. (1) spelled out (`MultiHeadAttention.fast = False`, `record_weights`) takes
mask tensors only: it is for the chapters and the reference tests, which call the model with
annotated.masks.batch_masks, not for training.
"""
from torch import nn
from torch.nn.attention.bias import causal_upper_left

from annotated.data.tokenizer import PAD
from annotated.masks import padding_mask, subsequent_mask
from annotated.multihead import MultiHeadAttention


class DecoderStates(nn.Module):
    """The decoder's output for a batch, (batch, tgt_len, d_model): `model`'s forward pass
    without the output projection, with the masks described above."""

    def __init__(self, model: nn.Module, spelled_out: bool = False):
        super().__init__()
        self.model, self.spelled_out = model, spelled_out
        if spelled_out:
            for layer in model.modules():
                if isinstance(layer, MultiHeadAttention):
                    layer.fast = False

    def forward(self, src, tgt_in):
        """src: (batch, src_len), tgt_in: (batch, tgt_len) token ids, padded with PAD."""
        # first of all: torch.compile cannot trace the making of a CausalBias, so its one
        # graph starts right after it instead of being cut in two
        causal = (subsequent_mask(tgt_in.size(1), tgt_in.device) if self.spelled_out else
                  causal_upper_left(tgt_in.size(1), tgt_in.size(1)))
        src_mask = padding_mask(src, PAD)                         # (batch, 1, 1, src_len)
        memory = self.model.encode(src, src_mask)
        return self.model.decode(memory, src_mask, tgt_in, causal)
