"""Table 1's path-length column, counted on each layer type's connections, equals the paper's
orders of growth exactly."""
import math

import pytest
from conftest import says

from annotated.notebooks import path_length as pl

LENGTHS = [2, 3, 5, 16, 25, 100, 257]


@pytest.mark.parametrize("n", LENGTHS)
def test_self_attention_connects_any_two_positions_in_one_layer(n):
    assert pl.path_length(pl.self_attention, n) == 1


@pytest.mark.parametrize("n", LENGTHS)
def test_a_recurrence_needs_one_step_per_position(n):
    assert pl.path_length(pl.recurrent, n) == n - 1


@pytest.mark.parametrize("n", LENGTHS)
def test_contiguous_and_restricted_layers_grow_linearly_in_n(n):
    assert pl.path_length(pl.convolution, n) == math.ceil((n - 1) / 2)      # k = 5: 2 a side
    assert pl.path_length(pl.restricted, n) == math.ceil((n - 1) / 4)       # r = 8: 4 a side


@pytest.mark.parametrize("n", LENGTHS)
def test_dilated_convolutions_need_log_k_n_layers(n):
    # k**L positions are covered after L layers: the smallest L with k**L >= n
    assert pl.path_length(pl.dilated_convolution, n) == next(L for L in range(1, n + 1)
                                                            if 5 ** L >= n)


def test_a_layer_that_never_connects_the_ends_is_an_error():
    def isolated(n, layer):
        return pl.np.eye(n, dtype=bool)
    with pytest.raises(ValueError) as error:
        pl.path_length(isolated, 4)
    says(error, "never reads position 0", "isolated")
