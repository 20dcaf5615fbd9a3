"""Floating-point operations of the model, counted from its shapes (one multiply-add = 2 FLOPs).

Used for model FLOP utilisation (MFU) in the benchmarks and for Table 2 in chapter 8. We
count the matrix multiplies, which are all but a few percent of the work: the four attention
projections, the attention scores QK^T and the weighted sum of V (the n^2 terms of Table 1),
the two FFN layers and the output projection. Layer norms, softmax, dropout and embedding
look-ups are left out. A training step costs 3x the forward pass (the backward pass computes
two products for every one of the forward pass: gradients for inputs and for weights).
"""


def attention_flops(q_len: int, k_len: int, d_model: int, h: int, d_k: int, d_v: int) -> int:
    projections = 2 * q_len * d_model * h * d_k + 2 * k_len * d_model * h * (d_k + d_v) \
        + 2 * q_len * h * d_v * d_model                     # W^Q; W^K, W^V; W^O
    core = 2 * q_len * k_len * h * (d_k + d_v)              # QK^T and weights @ V (eq. 1)
    return projections + core


def forward_flops(config, src_len: int, tgt_len: int, vocab: int) -> int:
    """One sentence pair through the whole model, output projection included."""
    c = config
    ffn = lambda n: 2 * n * 2 * c.d_model * c.d_ff          # eq. (2): W_1 and W_2
    encoder = c.N * (attention_flops(src_len, src_len, c.d_model, c.h, c.d_k, c.d_v)
                     + ffn(src_len))
    decoder = c.N * (attention_flops(tgt_len, tgt_len, c.d_model, c.h, c.d_k, c.d_v)
                     + attention_flops(tgt_len, src_len, c.d_model, c.h, c.d_k, c.d_v)
                     + ffn(tgt_len))
    return encoder + decoder + 2 * tgt_len * c.d_model * vocab


def training_flops(config, src_len: int, tgt_len: int, vocab: int) -> int:
    """Forward + backward for one sentence pair."""
    return 3 * forward_flops(config, src_len, tgt_len, vocab)


def batch_training_flops(config, src_lens, tgt_lens, vocab: int) -> int:
    """Useful training FLOPs of a batch: real lengths, padding not counted."""
    return sum(training_flops(config, s, t, vocab) for s, t in zip(src_lens, tgt_lens))
