"""E1: the prefix average, exactly - shuffle invariance and three equal ways to compute it."""
from __future__ import annotations


import torch

from attnlab.nn.attention import attention, causal_mask


def averaging_matrix(T: int) -> torch.Tensor:
    """Lower-triangular, row-normalised: row t averages positions 0..t."""
    A = causal_mask(T, T).float()
    return A / A.sum(1, keepdim=True)


def run(T: int = 6, d: int = 32, n_shuffle: int = 128, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_shuffle, d, generator=g)
    A = averaging_matrix(n_shuffle)
    shuffled = x[torch.randperm(n_shuffle, generator=g)]
    shuffle_diff = (A[-1] @ x - A[-1] @ shuffled).abs().max().item()

    x6 = torch.randn(T, d, generator=g)
    loop = torch.stack([x6[: t + 1].mean(0) for t in range(T)])
    matmul = averaging_matrix(T) @ x6
    zeros = torch.zeros(1, 1, T, 1)
    via_softmax, weights = attention(zeros, zeros, x6.view(1, 1, T, d), causal=True, scale=False)

    scores = torch.zeros(T, T).masked_fill(~causal_mask(T, T), float("-inf"))
    return {
        "T": T, "d": d, "n_shuffle": n_shuffle,
        "shuffle_max_abs_diff": shuffle_diff,
        "loop_vs_matmul_max_abs_diff": (loop - matmul).abs().max().item(),
        "loop_vs_softmax_max_abs_diff": (loop - via_softmax[0, 0]).abs().max().item(),
        "matrix": averaging_matrix(T).tolist(),
        "softmax_matrix_equals_averaging": bool(torch.allclose(weights[0, 0], averaging_matrix(T))),
        "float16_mask_is_inf": bool(torch.isneginf(scores.half()).sum().item() == T * (T - 1) // 2),
    }


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance

    a = cfg["averaging"]
    return provenance.measured(cfg, out_path,
                               lambda: run(T=a["T"], d=a["d"], n_shuffle=a["n_shuffle"], seed=cfg["seed"]))
