"""An independent reference for annotated/: the same Transformer in plain NumPy, every
backward pass written by hand (no torch import anywhere in this package).

One module per module of annotated/, each component a pair `xxx_forward(...) -> (out, cache)`
and `xxx_backward(dout, cache) -> (input gradients, parameter gradients)`:

    layers       linear, ReLU, softmax, log-softmax, LayerNorm, dropout (the primitives)
    attention    eq. (1)                  multihead    §3.2.2
    feedforward  eq. (2)                  positional   §3.5 and Table 3 row E
    embeddings   §3.4                     sublayer     LayerNorm(x + Dropout(Sublayer(x)))
    encoder, decoder, model               §3.1, the full model and `loss_and_grads`
    loss         label smoothing §5.4     optim        Adam and the §5.3 schedule
    masks        True = attend            params       to and from a PyTorch model
    gradcheck    central finite differences, the check every backward here passes

Parameters are a dict keyed by the annotated model's parameter names.
"""
from reference_numpy.model import backward, forward, log_probs, loss_and_grads
from reference_numpy.optim import Adam, noam_rate, train_step
from reference_numpy.params import params_from_torch, params_to_torch

__all__ = ["forward", "backward", "log_probs", "loss_and_grads", "Adam", "noam_rate",
           "train_step", "params_from_torch", "params_to_torch"]
