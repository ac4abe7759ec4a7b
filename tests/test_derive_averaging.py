"""E1's derived numbers: the matrix as a table and as weights, the largest difference."""
from __future__ import annotations

from attnlab.experiments.averaging import derive

E1 = {"matrix": [[1.0, 0.0], [0.5, 0.5]]}


def test_the_matrix_has_a_row_per_query_and_a_column_per_key():
    t = derive.matrix(E1)
    assert t.columns.tolist() == ["", "s=0", "s=1"] and t.values.tolist() == [["t=0", 1.0, 0.0], ["t=1", 0.5, 0.5]]
    w = derive.weights(E1)
    assert list(zip(w["t"], w["s"], w["weight"])) == [(0, 0, 1.0), (0, 1, 0.0), (1, 0, 0.5), (1, 1, 0.5)]
    assert derive.matrix({}).empty and derive.weights({}).empty


def test_the_largest_difference_is_of_those_stated():
    assert derive.largest_difference({"shuffle_max_abs_diff": 1e-7, "loop_vs_matmul_max_abs_diff": 3e-7,
                                      "loop_vs_softmax_max_abs_diff": None}) == 3e-7
    assert derive.largest_difference({"shuffle_max_abs_diff": 0.0}) == 0.0
    assert derive.largest_difference({"float16_mask_is_inf": True}) is None
