"""Table 1's third column, counted rather than quoted: the fewest layers a signal needs to go
from the first position of a sequence to the last (§4, "maximum path length").

One layer is a boolean matrix `sees[i, j]`: output position i reads input position j. The path
length is the number of such layers, stacked, after which the last position depends on the
first. A short path is what §4 argues makes long-range dependencies easy to learn.
"""
import numpy as np


def self_attention(n: int, layer: int) -> np.ndarray:
    """Every position reads every position: one layer connects any pair."""
    return np.ones((n, n), dtype=bool)


def restricted(n: int, layer: int, r: int = 8) -> np.ndarray:
    """Self-attention restricted to a neighbourhood of r positions centred on the query."""
    i, j = np.indices((n, n))
    return np.abs(i - j) <= r // 2


def convolution(n: int, layer: int, k: int = 5) -> np.ndarray:
    """A contiguous kernel of width k: each layer widens the reach by (k - 1) / 2 a side."""
    i, j = np.indices((n, n))
    return np.abs(i - j) <= (k - 1) // 2


def dilated_convolution(n: int, layer: int, k: int = 5) -> np.ndarray:
    """A causal kernel of width k with dilation k**layer (as in ByteNet and WaveNet): the reach
    grows k-fold per layer, so log_k(n) layers cover n positions."""
    i, j = np.indices((n, n))
    step = k ** layer
    return (i - j >= 0) & ((i - j) % step == 0) & ((i - j) // step < k)


def recurrent(n: int, layer: int) -> np.ndarray:
    """One step of a recurrence: h_t reads x_t and h_{t-1}. A signal moves one position per
    step, and the steps run one after another."""
    i, j = np.indices((n, n))
    return (i == j) | (i == j + 1)


LAYERS = {"self-attention": self_attention, "restricted self-attention (r = 8)": restricted,
          "dilated convolution (k = 5)": dilated_convolution,
          "contiguous convolution (k = 5)": convolution, "recurrent": recurrent}


def path_length(layer, n: int) -> int:
    """Layers of type `layer` (a function of n and the layer's index) needed before position
    n - 1 depends on position 0."""
    depends = np.zeros(n, dtype=bool)              # which positions depend on position 0 so far
    depends[0] = True
    for count in range(1, n + 1):
        depends = layer(n, count - 1) @ depends     # (n, n) @ (n,): one more layer
        if depends[n - 1]:
            return count
    raise ValueError(f"position {n - 1} never reads position 0 through {layer.__name__}")


def draw_path_lengths(lengths=(4, 8, 16, 32, 64, 128, 256, 512)):
    """Figure: the counted path length of every layer type against the sequence length n."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    for (name, layer), marker in zip(LAYERS.items(), "osD^v"):
        ax.plot(lengths, [path_length(layer, n) for n in lengths], marker=marker, label=name)
    ax.set(xscale="log", yscale="log", xlabel="sequence length n",
           ylabel="layers from position 1 to position n",
           title="Maximum path length (Table 1), counted on each layer's connections")
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.legend(fontsize=10)
    ax.grid(alpha=0.3)
    return fig
