"""E9's derive module: each case's numbers from a result written by hand, a comparison not measured left out."""
from __future__ import annotations

from attnlab.experiments.equivalence import derive

E9 = {"cases": [
    {"name": "self", "t_q": 8, "t_k": 8, "max_abs_diff_mha": 1.5e-7, "max_abs_diff_sdpa": 0.0,
     "max_abs_diff_mha_vs_sdpa": 6e-8, "max_abs_err_vs_float64": {"project": 2e-7}, "mean_abs_output": 0.2},
    {"name": "cross", "t_q": 4, "t_k": 16, "max_abs_diff_mha": 3e-7, "max_abs_diff_sdpa": 1e-7,
     "mean_abs_output": 0.1}]}  # from before PyTorch's two paths were set against each other


def test_each_case_is_one_line_of_its_numbers():
    t = derive.cases_table(E9).set_index("case")
    assert t.loc["self", "mha"] == 1.5e-7 and t.loc["self", "err"] == 2e-7 and t.loc["self", "torch"] == 6e-8
    assert (t.loc["cross", "t_q"], t.loc["cross", "t_k"]) == (4, 16)
    assert t["torch"].isna().tolist() == [False, True] and t["err"].isna().tolist() == [False, True]


def test_a_comparison_is_a_line_where_measured_and_an_exact_zero_is_marked():
    long = derive.diff_long(E9)
    assert len(long) == 5  # three for the first case, two for the second
    zero = long[(long["case"] == "self") & (long["comparison"] == "max_abs_diff_sdpa")].iloc[0]
    assert zero["exact"] and zero["max_abs_diff"] == 0.0
    assert not long[long["case"] == "cross"]["exact"].any()
    assert derive.diff_long({"cases": []}).empty
