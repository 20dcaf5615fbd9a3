"""The random streams a training run draws from, saved in each checkpoint and restored by
--resume, so that a resumed run continues exactly as the uninterrupted one would have."""
import random

import numpy as np
import torch


def rng_state() -> dict:
    """Every random stream training may draw from, as plain data (python, numpy, torch, CUDA)."""
    np_state = np.random.get_state(legacy=False)
    return {
        "python": random.getstate(),
        "numpy": {"key": np_state["state"]["key"].tolist(), "pos": np_state["state"]["pos"],
                  "has_gauss": np_state["has_gauss"], "gauss": np_state["gauss"]},
        "torch": torch.get_rng_state(),
        # this process's GPU only: touching the others would open a context on each of them
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None,
    }


def set_rng_state(state: dict) -> None:
    """Undo `rng_state`: the streams continue exactly where they were saved."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state({"bit_generator": "MT19937",
                         "state": {"key": np.array(n["key"], dtype=np.uint32), "pos": n["pos"]},
                         "has_gauss": n["has_gauss"], "gauss": n["gauss"]})
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])
