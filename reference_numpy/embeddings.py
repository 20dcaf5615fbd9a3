"""Embeddings (§3.4): a lookup table whose rows are multiplied by sqrt(d_model).

Forward: e = sqrt(d_model) * E[tokens]. Backward: a lookup copies row E[w] to every position
holding token w, so E[w]'s gradient is sqrt(d_model) times the sum of the output gradients at
those positions; rows of tokens absent from the batch get zero. With tied weights (§3.4) the
same matrix E is also the target embedding and the pre-softmax projection: its gradient is
the sum of what the three uses contribute, which the model adds up (reference_numpy.model).
"""
import numpy as np


def embedding_forward(tokens, table):
    """tokens: (batch, seq) ids, table: (vocab, d_model) -> (batch, seq, d_model)."""
    scale = np.sqrt(table.shape[1])
    return table[tokens] * scale, (tokens, table.shape, scale)


def embedding_backward(dy, cache, dtable=None):
    """The gradient of the table, (vocab, d_model); token ids have no gradient. It is added
    into `dtable` when given (a tied matrix collects its three uses in one array), else into
    a new array of zeros. Returns the array."""
    tokens, table_shape, scale = cache
    if dtable is None:
        dtable = np.zeros(table_shape, dtype=dy.dtype)
    np.add.at(dtable, tokens.reshape(-1), dy.reshape(-1, table_shape[1]) * scale)  # scatter-add
    return dtable
