"""The full encoder-decoder (§3, Figure 1) and `make_model`.

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
from torch import nn

from annotated.decoder import Decoder
from annotated.embeddings import Embeddings
from annotated.encoder import Encoder
from annotated.multihead import MultiHeadAttention
from annotated.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding


class EncoderDecoder(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, N, d_model, d_ff, h, d_k, d_v, P_drop,
                 attn_dropout, ffn_dropout, positional, max_len, tie_embeddings):
        super().__init__()
        layer = dict(d_model=d_model, h=h, d_k=d_k, d_v=d_v, d_ff=d_ff, P_drop=P_drop,
                     attn_dropout=attn_dropout, ffn_dropout=ffn_dropout)
        self.encoder = Encoder(N, **layer)
        self.decoder = Decoder(N, **layer)
        self.src_embed = Embeddings(src_vocab, d_model)
        self.tgt_embed = self.src_embed if tie_embeddings else Embeddings(tgt_vocab, d_model)
        if positional == "sinusoidal":
            self.src_pos = SinusoidalPositionalEncoding(d_model)
            self.tgt_pos = SinusoidalPositionalEncoding(d_model)
        elif positional == "learned":
            self.src_pos = LearnedPositionalEncoding(d_model, max_len)
            self.tgt_pos = LearnedPositionalEncoding(d_model, max_len)
        else:
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', got {positional!r}")
        self.src_dropout = nn.Dropout(P_drop)    # §5.4: dropout on embeddings + PE, both stacks
        self.tgt_dropout = nn.Dropout(P_drop)
        self.generator = nn.Linear(d_model, tgt_vocab, bias=False)   # pre-softmax projection
        self._init_weights(d_model)
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


def make_model(src_vocab: int, tgt_vocab: int, N: int = 6, d_model: int = 512, d_ff: int = 2048,
               h: int = 8, P_drop: float = 0.1, d_k: int | None = None, d_v: int | None = None,
               attn_dropout: float = 0.0, ffn_dropout: float = 0.0,
               positional: str = "sinusoidal", max_len: int = 1024,
               tie_embeddings: bool | None = None) -> EncoderDecoder:
    """The Transformer of §3; defaults are the base model. P_drop is the dropout rate of §5.4.

    tie_embeddings: share one matrix for source and target embeddings and the output layer;
    by default exactly when the two vocabularies have the same size (a shared vocabulary).
    """
    if tie_embeddings is None:
        tie_embeddings = src_vocab == tgt_vocab
    if tie_embeddings and src_vocab != tgt_vocab:
        raise ValueError(f"tied embeddings need one shared vocabulary; got src_vocab={src_vocab}, "
                         f"tgt_vocab={tgt_vocab}")
    return EncoderDecoder(src_vocab, tgt_vocab, N, d_model, d_ff, h,
                          d_k, d_v, P_drop,
                          attn_dropout, ffn_dropout, positional, max_len, tie_embeddings)


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

