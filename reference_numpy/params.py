"""Moving parameters between an annotated PyTorch model and the reference's flat dict.

Duck-typed on purpose: nothing here imports torch. A tied matrix appears once, under the first
name `named_parameters()` gives it ("src_embed.lut.weight"), exactly as PyTorch lists it.
"""
import numpy as np


def params_from_torch(model):
    """{name: float64 array} for every distinct parameter, copied (later changes to the model
    do not show through)."""
    return {name: np.array(p.detach().cpu().numpy(), dtype=np.float64)
            for name, p in model.named_parameters()}


def params_to_torch(params, model):
    """Copy the arrays back into `model`'s parameters, in their dtype and device; the dict
    must have exactly the model's parameter names and shapes. Returns the model."""
    named = dict(model.named_parameters())
    if set(named) != set(params):
        missing, extra = sorted(set(named) - set(params)), sorted(set(params) - set(named))
        raise KeyError(f"parameter names differ from the model's: missing {missing}, "
                       f"unexpected {extra}")
    for name, p in named.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: the model has shape {tuple(p.shape)}, the array "
                             f"{params[name].shape}")
        p.data.copy_(p.new_tensor(params[name]))
    return model
