import torch

from attnlab.experiments.averaging.producer import averaging_matrix, run


def test_three_prefix_means_agree_and_order_is_invisible():
    r = run(seed=3)
    assert r["shuffle_max_abs_diff"] < 1e-6
    assert r["loop_vs_matmul_max_abs_diff"] < 1e-6
    assert r["loop_vs_softmax_max_abs_diff"] < 1e-6
    assert r["softmax_matrix_equals_averaging"] and r["float16_mask_is_inf"]


def test_the_six_by_six_matrix():
    A = averaging_matrix(6)
    expected = torch.tensor([[1 / (t + 1) if j <= t else 0.0 for j in range(6)] for t in range(6)])
    assert torch.equal(A.triu(1), torch.zeros(6, 6))
    torch.testing.assert_close(A, expected)
    assert run()["matrix"] == A.tolist()


def test_a_real_order_dependence_would_be_seen():
    """The shuffle test can fail: a position-weighted summary changes when the tokens are shuffled."""
    x = torch.randn(128, 32, generator=torch.Generator().manual_seed(0))
    w = torch.linspace(0, 1, 128)
    shuffled = x[torch.randperm(128, generator=torch.Generator().manual_seed(1))]
    assert (w @ x - w @ shuffled).abs().max() > 1e-3
