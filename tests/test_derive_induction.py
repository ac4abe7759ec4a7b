"""S10's derive module: the numbers its page shows, from small hand-made results."""
from __future__ import annotations

from attnlab.experiments.induction import derive


def test_the_icl_windows_sit_around_the_shares_of_the_length():
    assert derive.ICL_SHARES == (0.1, 0.9)
    assert derive.icl_windows(40) == (slice(3, 6), slice(35, 38))  # T // 40 = 1 neighbour each side of 4 and 36
    assert derive.icl_windows(10) == (slice(1, 2), slice(9, 10))  # one position each below T = 40


def test_the_length_read_is_the_control_sequences_or_a_declared_runs_context():
    cfg = {"induction": {"length": 48}}
    assert derive.read_length(cfg, "induction") == 48
    assert derive.read_length(cfg, "no-such-run") is None


def test_series_and_heads_are_the_recorded_scores():
    control = {"attn-only-2": {"layers": 2, "series": [{"step": 0, "induction": 0.1, "icl": -0.2},
                                                       {"step": 25, "induction": 0.6, "icl": -0.9}]}}
    s = derive.series(control, ["induction"])
    assert s.to_dict("records") == [{"model": 2, "step": 0, "score": "induction", "value": 0.1},
                                    {"model": 2, "step": 25, "score": "induction", "value": 0.6}]
    scores = {"prefix": [[0.1, 0.9]], "previous": [[0.8, 0.2]]}
    heads = derive.heads({"L9": scores})
    assert heads.prefix.tolist() == [0.1, 0.9] and heads["head"].tolist() == [1, 2] and heads.copying.isna().all()
    with_copying = derive.final_heads({"m": {"final": scores, "copying": [[0.5, 0.25]]}})
    assert with_copying.copying.tolist() == [0.5, 0.25]


def test_the_control_models_spec_and_training_are_the_profiles():
    cfg = {"train": {"steps": 10, "lr": 1e-3},
           "induction": {"vocab_size": 16, "length": 12, "train": {"steps": 400},
                         "model": {"mixer": "multihead", "d_model": 8, "n_heads": 2, "mlp": False}}}
    spec = derive.control_spec(cfg, n_blocks=2)
    assert (spec.vocab_size, spec.context, spec.n_blocks, spec.d_model) == (16, 12, 2, 8)
    assert derive.control_train(cfg) == {"steps": 400, "lr": 1e-3}


def test_jumps_name_only_the_models_whose_score_jumped():
    control = {"a": {"layers": 1, "induction_jump": {"step": None}}, "b": {"layers": 2, "induction_jump": {"step": 75}}}
    assert derive.jumps(control) == [(2, 75)]
    assert derive.jumps({"a": control["a"]}) == []
