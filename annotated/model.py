"""The full encoder-decoder (§3, Figure 1), built whole from a ModelConfig.

    EncoderDecoder(config, vocab)            from any ModelConfig, a run's Config included
    make_model(vocab, N=2, d_model=128)      the same, with ModelConfig's fields as keywords

    src tokens -> Embeddings * sqrt(d_model) + PE -> Dropout -> Encoder -> memory
    tgt tokens (shifted right) -> Embeddings * sqrt(d_model) + PE -> Dropout
                               -> Decoder(memory) -> Linear -> logits (softmax in the loss)

Weight sharing (§3.4): with one vocabulary for both languages, a single V x d_model matrix is
the source embedding, the target embedding and the pre-softmax projection; this is what the
paper's parameter counts assume. With separate vocabularies each of the three has its own.
The output projection has no bias (the paper's parameter counts include none).

Initialisation is not given in the paper. We use Xavier-uniform for the weight matrices,
zero biases, and N(0, d_model^-1/2) for the embedding, so that after the sqrt(d_model) scale
the embedded tokens have unit-size components like the positional encodings.
"""
from dataclasses import dataclass

import torch
from torch import nn

from annotated.base.errors import ConfigError
from annotated.base.settings import PROBABILITY, between, check_fields, one_of, setting
from annotated.decoder import Decoder
from annotated.embeddings import Embeddings
from annotated.encoder import Encoder
from annotated.multihead import MultiHeadAttention
from annotated.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding


@dataclass(frozen=True)
class ModelConfig:
    """The Transformer's shape and dropout, the columns of Table 3; the base model by default.
    Passed whole to EncoderDecoder. Each field says what it allows (sizes far beyond any model
    this code could train, but not beyond arithmetic) and whether it defines the weights'
    shapes (annotated.base.settings); annotated.configs.Config adds the rest of a run."""
    N: int = setting(6, between(1, 256), shape=True)               # layers in each stack
    d_model: int = setting(512, between(2, 2 ** 16), shape=True)
    d_ff: int = setting(2048, between(1, 2 ** 16), shape=True)     # inner layer of the FFN
    h: int = setting(8, between(1, 1024), shape=True)              # attention heads
    d_k: int | None = setting(None, between(1, 2 ** 16), shape=True)   # None: d_model / h
    d_v: int | None = setting(None, between(1, 2 ** 16), shape=True)   # None: d_model / h
    P_drop: float = setting(0.1, PROBABILITY)                      # §5.4
    attn_dropout: float = setting(0.0, PROBABILITY)  # not in the paper; tensor2tensor's was 0
    ffn_dropout: float = setting(0.0, PROBABILITY)   # likewise
    positional: str = setting("sinusoidal", one_of("sinusoidal", "learned"), shape=True)
    max_len: int = setting(1024, between(1, 10 ** 6), shape=True)  # bounds learned positions

    def __post_init__(self):
        for name in ("d_k", "d_v"):                  # §3.2.2: d_k = d_v = d_model / h
            if getattr(self, name) is None:
                object.__setattr__(self, name, max(1, self.d_model // self.h))
        check_fields(self)
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"config: d_model = {self.d_model} is odd; sinusoidal positions "
                              f"need an even d_model (sin and cos pairs, §3.5)")

    def parameter_count(self, vocab: int) -> int:
        """The model's parameter count with one shared vocabulary of `vocab`, from its shapes
        alone: nothing is allocated."""
        with torch.device("meta"):
            return count_parameters(EncoderDecoder(self, vocab))


class EncoderDecoder(nn.Module):
    """The Transformer of `config` (a ModelConfig: N, d_model, d_ff, h, d_k, d_v, the dropout
    rates, the positional encoding), over a vocabulary of src_vocab tokens, and tgt_vocab on
    the target side (default: the same, one shared vocabulary). tie_embeddings: one matrix for
    both embeddings and the output layer (§3.4); by default when the vocabulary is shared, that
    is when no tgt_vocab is given: two vocabularies of equal size are still two vocabularies."""

    def __init__(self, config: ModelConfig, src_vocab: int, tgt_vocab: int | None = None,
                 tie_embeddings: bool | None = None):
        super().__init__()
        shared = tgt_vocab is None
        c, tgt_vocab = config, src_vocab if shared else tgt_vocab
        tie_embeddings = shared if tie_embeddings is None else tie_embeddings
        if tie_embeddings and src_vocab != tgt_vocab:
            raise ValueError(f"tied embeddings need one shared vocabulary; got "
                             f"src_vocab={src_vocab}, tgt_vocab={tgt_vocab}")
        layer = dict(d_model=c.d_model, h=c.h, d_k=c.d_k, d_v=c.d_v, d_ff=c.d_ff,
                     P_drop=c.P_drop, attn_dropout=c.attn_dropout, ffn_dropout=c.ffn_dropout)
        self.encoder = Encoder(c.N, **layer)
        self.decoder = Decoder(c.N, **layer)
        self.src_embed = Embeddings(src_vocab, c.d_model)
        self.tgt_embed = self.src_embed if tie_embeddings else Embeddings(tgt_vocab, c.d_model)
        if c.positional == "sinusoidal":
            self.src_pos = SinusoidalPositionalEncoding(c.d_model)
            self.tgt_pos = SinusoidalPositionalEncoding(c.d_model)
        else:                                                        # "learned", Table 3 (E)
            self.src_pos = LearnedPositionalEncoding(c.d_model, c.max_len)
            self.tgt_pos = LearnedPositionalEncoding(c.d_model, c.max_len)
        self.src_dropout = nn.Dropout(c.P_drop)  # §5.4: dropout on embeddings + PE, both stacks
        self.tgt_dropout = nn.Dropout(c.P_drop)
        self.generator = nn.Linear(c.d_model, tgt_vocab, bias=False)   # pre-softmax projection
        self._init_weights(c.d_model)
        if tie_embeddings:
            self.generator.weight = self.tgt_embed.lut.weight

    def _init_weights(self, d_model):
        for name, p in self.named_parameters():
            if name.endswith("lut.weight"):
                nn.init.normal_(p, 0.0, d_model ** -0.5)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def encode(self, src, src_mask):
        """src: (batch, src_len) -> memory (batch, src_len, d_model)."""
        x = self.src_dropout(self.src_pos(self.src_embed(src)))
        return self.encoder(x, src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask, cache=None, start: int = 0):
        """tgt: (batch, tgt_len), tokens at positions start.. -> (batch, tgt_len, d_model)."""
        y = self.tgt_dropout(self.tgt_pos(self.tgt_embed(tgt), start))
        return self.decoder(y, memory, src_mask, tgt_mask, cache)

    def forward(self, src, tgt, src_mask, tgt_mask):
        """Logits (batch, tgt_len, tgt_vocab) for the next token at every target position."""
        return self.generator(self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask))

    def max_positions(self) -> int | None:
        """The most positions a sequence may have: None for sinusoids, max_len when learned."""
        pos = self.tgt_pos
        return pos.embedding.num_embeddings if isinstance(pos, LearnedPositionalEncoding) else None

    def new_cache(self):
        """Empty per-layer caches for incremental decoding (see annotated.decoder)."""
        return [{} for _ in self.decoder.layers]

    def attention_modules(self):
        """Every MultiHeadAttention, e.g. to set `.fast` or `.record_weights` on all of them."""
        return [m for m in self.modules() if isinstance(m, MultiHeadAttention)]


def make_model(src_vocab: int, tgt_vocab: int | None = None, tie_embeddings: bool | None = None,
               **settings) -> EncoderDecoder:
    """EncoderDecoder(ModelConfig(**settings), ...): the Transformer of §3 with `settings`, any
    fields of ModelConfig (N, d_model, d_ff, h, d_k, d_v, P_drop, ...); the base model by
    default, d_k = d_v = d_model / h unless given: `make_model(37000, N=2, d_model=128)`."""
    return EncoderDecoder(ModelConfig(**settings), src_vocab, tgt_vocab, tie_embeddings)


def count_parameters(model: nn.Module, embeddings: bool = True) -> int:
    """Distinct parameters (a tied matrix counts once); optionally without the embeddings
    and output projection, the count that does not depend on the vocabulary."""
    seen, total = set(), 0
    for name, p in model.named_parameters():           # named_parameters yields a tied tensor once
        if id(p) in seen:
            continue
        seen.add(id(p))
        if not embeddings and ("lut" in name or name.startswith("generator")):
            continue
        total += p.numel()
    return total

