"""The full encoder-decoder (§3, Figure 1), forward and backward, and the training loss.

    src -> E[src] * sqrt(d_model) + PE -> Dropout -> Encoder -> memory
    tgt_in -> E[tgt_in] * sqrt(d_model) + PE -> Dropout -> Decoder(memory) -> x W_gen^T
           -> log_softmax -> log p (batch, tgt_len, V)

Parameters live in one flat dict keyed by the PyTorch parameter names of annotated.make_model
("encoder.layers.0.self_attn.W_Q.weight", "src_embed.lut.weight", ...), so a model converts
with reference_numpy.params_from_torch and gradients compare key by key. With tied weights
(§3.4) PyTorch lists the shared matrix once, as "src_embed.lut.weight", and so does this dict:
the target embedding and the output projection then read that same entry, and its gradient is
the sum of the three uses. With separate vocabularies "tgt_embed.lut.weight" and
"generator.weight" are present and each gets its own gradient.

`dropout_masks` (None = dropout off) maps every dropout site, named like the nn.Dropout module
of annotated's model ("src_dropout", "encoder.layers.0.self_attn.dropout", ...), to its mask
(see reference_numpy.layers.dropout_forward); a site without a mask is an error naming it.
"""
from collections.abc import Mapping
from dataclasses import dataclass

from reference_numpy.decoder import decoder_backward, decoder_forward
from reference_numpy.embeddings import embedding_backward, embedding_forward
from reference_numpy.encoder import encoder_backward, encoder_forward
from reference_numpy.layers import (dropout_backward, dropout_forward, linear_backward,
                                    linear_forward, log_softmax_backward, log_softmax_forward,
                                    mask_for)
from reference_numpy.loss import label_smoothed_forward, label_smoothed_logits_backward
from reference_numpy.masks import padding_mask, target_mask
from reference_numpy.positional import learned_backward, learned_forward, sinusoidal_forward


@dataclass(frozen=True)
class Shape:
    """What the forward needs beyond the parameters: N layers, h heads, and which dict entries
    play the target embedding and the output projection."""
    N: int
    h: int
    tgt_table: str
    generator: str


def read_config(config, params) -> Shape:
    """Read N, h (and, when given, d_model, d_ff, d_k, d_v, positional) from an
    annotated.configs.Config or any object or dict with those names, and check them against
    the parameter shapes, so a config that does not describe these parameters is an error."""
    def get(key):
        return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)

    h = get("h")
    if h is None:
        raise ValueError("config needs h (the number of heads); it cannot be read off the weights")
    N = sum(1 for name in params if name.endswith(".self_attn.W_Q.weight")
            and name.startswith("encoder."))
    W_Q = params["encoder.layers.0.self_attn.W_Q.weight"]           # (h*d_k, d_model)
    W_V = params["encoder.layers.0.self_attn.W_V.weight"]           # (h*d_v, d_model)
    if W_Q.shape[0] % h or W_V.shape[0] % h:
        raise ValueError(f"h={h} does not divide the {W_Q.shape[0]} rows of W_Q and the "
                         f"{W_V.shape[0]} rows of W_V (h*d_k and h*d_v)")
    found = {"N": N, "d_model": W_Q.shape[1], "d_k": W_Q.shape[0] // h, "d_v": W_V.shape[0] // h,
             "d_ff": params["encoder.layers.0.ffn.W_1.weight"].shape[0],
             "positional": "learned" if "src_pos.embedding.weight" in params else "sinusoidal"}
    for key, value in found.items():
        if get(key) is not None and get(key) != value:
            raise ValueError(f"config has {key}={get(key)!r} but the parameters have "
                             f"{key}={value!r} (with h={h})")
    tgt_table = "tgt_embed.lut.weight"
    if tgt_table not in params:
        tgt_table = "src_embed.lut.weight"
    generator = "generator.weight" if "generator.weight" in params else tgt_table
    return Shape(N, h, tgt_table, generator)


def _positions_forward(params, name, x):
    """Sinusoids add a constant (cache None); learned positions add the rows of a table."""
    table = params.get(f"{name}.embedding.weight")
    return (sinusoidal_forward(x), None) if table is None else learned_forward(x, table)


def forward(params, src, tgt_in, config, *, pad, dropout_masks=None):
    """src: (batch, src_len), tgt_in: (batch, tgt_len) token ids -> log p (batch, tgt_len, V)
    and the cache for `backward`."""
    shape = read_config(config, params)
    src_mask, tgt_mask = padding_mask(src, pad), target_mask(tgt_in, pad)

    x, src_embed = embedding_forward(src, params["src_embed.lut.weight"])  # (batch, src_len, d)
    x, src_pos = _positions_forward(params, "src_pos", x)
    x, src_drop = dropout_forward(x, mask_for(dropout_masks, "src_dropout"))
    memory, encoder = encoder_forward(params, x, src_mask, shape.N, shape.h, dropout_masks)

    y, tgt_embed = embedding_forward(tgt_in, params[shape.tgt_table])     # (batch, tgt_len, d)
    y, tgt_pos = _positions_forward(params, "tgt_pos", y)
    y, tgt_drop = dropout_forward(y, mask_for(dropout_masks, "tgt_dropout"))
    y, decoder = decoder_forward(params, y, memory, src_mask, tgt_mask, shape.N, shape.h,
                                 dropout_masks)

    logits, generator = linear_forward(y, params[shape.generator])        # (batch, tgt_len, V)
    log_p, log_softmax = log_softmax_forward(logits)
    return log_p, (shape, src_embed, src_pos, src_drop, encoder, tgt_embed, tgt_pos, tgt_drop,
                   decoder, generator, log_softmax)


def backward(dlog_p, cache):
    """The gradient of every parameter, keyed like the params dict, from d loss / d log p."""
    return backward_from_logits(log_softmax_backward(dlog_p, cache[-1]), cache)


def backward_from_logits(dlogits, cache):
    """The same from d loss / d logits (batch, tgt_len, V), the gradient that a loss written
    against the logits hands over (reference_numpy.loss.label_smoothed_logits_backward)."""
    (shape, src_embed, src_pos, src_drop, encoder, tgt_embed, tgt_pos, tgt_drop, decoder,
     generator, _) = cache
    dy, dW_gen, _ = linear_backward(dlogits, generator)
    # A tied matrix collects its three uses in one array: this output projection, then the
    # target embedding, then the source embedding (each adds to what the previous left).
    grads = {shape.generator: dW_gen}

    dy, dmemory, decoder_grads = decoder_backward(dy, decoder)
    grads.update(decoder_grads)
    dy = dropout_backward(dy, tgt_drop)
    if tgt_pos is not None:
        dy, grads["tgt_pos.embedding.weight"] = learned_backward(dy, tgt_pos)
    grads[shape.tgt_table] = embedding_backward(dy, tgt_embed, grads.get(shape.tgt_table))

    dx, encoder_grads = encoder_backward(dmemory, encoder)
    grads.update(encoder_grads)
    dx = dropout_backward(dx, src_drop)
    if src_pos is not None:
        dx, grads["src_pos.embedding.weight"] = learned_backward(dx, src_pos)
    src_table = "src_embed.lut.weight"
    grads[src_table] = embedding_backward(dx, src_embed, grads.get(src_table))
    return grads


def log_probs(params, src, tgt_in, *, pad, config, dropout_masks=None):
    """The forward alone: log p(next token) at every target position, (batch, tgt_len, V)."""
    return forward(params, src, tgt_in, config, pad=pad, dropout_masks=dropout_masks)[0]


def loss_and_grads(params, src, tgt_in, tgt_out, *, pad, eps_ls, config, dropout_masks=None):
    """The label-smoothed loss (mean over non-padding target tokens, as annotated's training
    divides LossStats.loss by LossStats.tokens) and its gradient for every parameter. The
    backward starts at the logits with (softmax - q) / n, q the smoothed target distribution."""
    log_p, cache = forward(params, src, tgt_in, config, pad=pad, dropout_masks=dropout_masks)
    loss, loss_cache = label_smoothed_forward(log_p, tgt_out, pad, eps_ls)
    return loss, backward_from_logits(label_smoothed_logits_backward(loss_cache), cache)
