"""Label smoothing (§5.4) and the statistics training logs.

With eps_ls = eps and a shared vocabulary of V entries, the target distribution for a token y
puts 1 - eps on y and spreads eps evenly over the V - 2 other classes that are not padding
(padding is never a valid prediction). The loss is the cross-entropy against that
distribution, averaged over the non-padding target positions:

    loss = -[(1 - eps) log p(y) + eps / (V - 2) * sum_{c != y, c != pad} log p(c)]

Perplexity is exp of the plain negative log-likelihood of y (no smoothing), so it measures
the model's confidence: smoothing raises it, because the model learns to keep eps of its mass
away from the answer, while accuracy and BLEU improve (Table 3 rows D3 and D4).
"""
from dataclasses import dataclass

import torch


@dataclass
class LossStats:
    """Sums over one batch's non-padding target tokens, so batches can be added up."""
    loss: torch.Tensor        # smoothed cross-entropy, summed (what is back-propagated, / tokens)
    nll: torch.Tensor         # -log p(y), summed
    correct: torch.Tensor     # y has the highest probability (argmax == y), counted
    tokens: torch.Tensor      # non-padding target tokens


def label_smoothed_loss(logits, target, *, pad: int, eps_ls: float) -> LossStats:
    """logits: (batch, tgt_len, V) or (n, V); target: the matching token ids."""
    V = logits.size(-1)
    # half-precision logits are lifted to float32; float64 stays float64 (reference tests)
    log_p = logits.to(torch.promote_types(logits.dtype, torch.float32))
    log_p = log_p.log_softmax(dim=-1).reshape(-1, V)                   # (n, V)
    target = target.reshape(-1)                                        # (n,)
    keep = target != pad
    log_p_y = log_p.gather(1, target[:, None]).squeeze(1)              # log p(y)
    others = log_p.sum(dim=1) - log_p_y - log_p[:, pad]                # sum over c != y, pad
    smoothed = -((1.0 - eps_ls) * log_p_y + eps_ls / (V - 2) * others)
    zero = torch.zeros((), dtype=log_p.dtype, device=log_p.device)
    return LossStats(
        loss=torch.where(keep, smoothed, zero).sum(),
        nll=torch.where(keep, -log_p_y, zero).sum(),
        # y is the argmax when no class is more probable: comparing with the row maximum is one
        # fast reduction, where argmax over V classes cost as much as the log-softmax itself
        correct=((log_p_y.detach() >= log_p.detach().amax(dim=1)) & keep).sum(),
        tokens=keep.sum(),
    )
