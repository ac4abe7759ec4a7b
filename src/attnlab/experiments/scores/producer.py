"""E3: why divide by sqrt(d_k) - score variance, effective tokens and softmax saturation, measured at init.

No training. Every score below comes out of the project's attention core
(`attnlab.nn.attention.attention`, scores kept with `keep=`), and every weight is
the softmax that core applies, so what is measured is what a fresh head does.

Output (results/<profile>/scores/result.json):

    variance          C3.1, one row per d: {d, n, var, std, sqrt_d, var_over_d, se_var, se_var_sample, z}
                      var/std of q.k over n independent pairs q, k ~ N(0, I_d). se_var is the standard error
                      of the sample variance under the normal-product model (see `variance_se`), se_var_sample
                      the same estimated from the sample's own fourth moment; z = (var - d) / se_var.
    se_method         one sentence saying how se_var and z were computed
    effective_tokens  C3.2, one row per d_k: {d_k, divided_mean, undivided_mean, divided_median,
                      undivided_median, undivided_frac_below_1_5, divided_mean_se, undivided_mean_se,
                      undivided_median_se}: exp(entropy) of a softmax row of n_keys scores (one query, n_keys
                      keys, all N(0, 1)), with and without the division; *_se the standard errors over rows
                      (a mean's sd / sqrt(n_rows), the median's a bootstrap over rows)
    undivided_256_frac_below_1_5   the fraction of undivided rows at d_k = 256 with fewer than 1.5 effective tokens
    saturation        C3.3, one row per d_k: {d_k, mass_divided, mass_undivided, frozen_divided,
                      frozen_undivided, max_weight_gt_0_99_undivided, max_diag_divided, max_diag_undivided,
                      mass_divided_se, mass_undivided_se}
                      mass = sum_i w_i (1 - w_i) = 1 - sum_i w_i^2 (the trace of the softmax Jacobian),
                      averaged over rows (mass_*_se: sd / sqrt(n_rows)); frozen_* = fraction of rows frozen by
                      `frozen_definition` (its error is binomial over the n_rows independent rows:
                      attnlab.stats.binomial_se, which the claims apply)
    frozen_definition the definition of a frozen row, in words
    mass_reference    1 - e / n_keys, the large-sample mass for unit-variance scores
    n_pairs, n_rows, n_keys, widths, frozen_threshold, seed, provenance
"""
from __future__ import annotations

import math
import statistics

import torch

from attnlab.nn.attention import attention
from attnlab.stats import bootstrap_se, mean_se

WIDTHS = [4, 16, 64, 256, 1024]
N_PAIRS = 20_000
N_ROWS = 2_000
N_KEYS = 64
CHUNK = 500  # rows per call of the core: 500 x 64 x 1024 floats of keys is 128 MB
FROZEN_DIAG = 0.01  # a row is frozen when every w_i (1 - w_i) is below this
FROZEN_DEFINITION = (
    "A row is frozen when every diagonal entry of its softmax Jacobian, dw_i/ds_i = w_i(1 - w_i), is below "
    f"{FROZEN_DIAG} (a twenty-fifth of its largest possible value, 0.25): no score can move its own weight by "
    "more than 1 % of a change in that score. With 64 keys this is exactly the same as the largest weight "
    "exceeding 0.9899 (64 weights all below 0.0101 cannot sum to one), within 0.0001 of the test C3.5 applies "
    "to a trained head: more than 0.99 of the row's weight on one token."
)


def dot_scores(q: torch.Tensor, k: torch.Tensor, scale: bool) -> torch.Tensor:
    """Scores of the attention core for one query per row against its keys.

    q: (N, d), k: (N, K, d) -> (N, K): q . k_j, divided by sqrt(d) when scale is set.
    """
    keep = {}
    v = q.new_zeros(q.size(0), 1, k.size(1), 1)  # values play no part in the scores
    attention(q[:, None, None, :], k[:, None], v, causal=False, scale=scale, keep=keep)
    return keep["scores"][:, 0, 0, :]


def softmax_rows(q: torch.Tensor, k: torch.Tensor, scale: bool) -> torch.Tensor:
    """The weights the attention core gives: (N, d), (N, K, d) -> (N, K), each row summing to one."""
    v = q.new_zeros(q.size(0), 1, k.size(1), 1)
    _, w = attention(q[:, None, None, :], k[:, None], v, causal=False, scale=scale)
    return w[:, 0, 0, :]


def variance_se(d: int, n: int) -> float:
    """Standard error of the sample variance of q.k over n pairs, q, k ~ N(0, I_d) independent.

    Each product q_i k_i has mean 0, variance 1 and fourth moment E[q^4] E[k^4] = 9, so the sum
    s = q.k has Var(s) = d and E[s^4] = 9d + 3d(d - 1) = 3d^2 + 6d. The unbiased sample variance
    then has Var = (mu4 - sigma^4 (n - 3) / (n - 1)) / n = (2d^2 + 6d + 2d^2 / (n - 1)) / n.
    """
    mu4, sigma4 = 3 * d * d + 6 * d, d * d
    return math.sqrt((mu4 - sigma4 * (n - 3) / (n - 1)) / n)


def variance(widths=WIDTHS, n: int = N_PAIRS, gen: torch.Generator | None = None) -> list[dict]:
    """C3.1: Var(q.k) for unit-normal q, k at each width, with a z-score against Var = d."""
    rows = []
    for d in widths:
        q = torch.randn(n, d, generator=gen)
        k = torch.randn(n, 1, d, generator=gen)
        s = dot_scores(q, k, scale=False)[:, 0].double()  # (n,) raw q.k
        var = s.var().item()
        centred = s - s.mean()
        m4 = (centred ** 4).mean().item()
        se_sample = math.sqrt(max(m4 - var * var * (n - 3) / (n - 1), 0.0) / n)
        se = variance_se(d, n)
        rows.append({"d": d, "n": n, "var": var, "std": math.sqrt(var), "sqrt_d": math.sqrt(d),
                     "var_over_d": var / d, "se_var": se, "se_var_sample": se_sample, "z": (var - d) / se})
    return rows


def row_stats(w: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-row measures of softmax weights w (N, K): effective tokens, Jacobian mass, frozen, max weight."""
    entropy = -torch.xlogy(w, w).sum(-1)  # 0 log 0 = 0: an exactly one-hot row has entropy 0
    diag = w * (1 - w)  # the softmax Jacobian's diagonal, dw_i/ds_i
    return {
        "effective": entropy.exp(),
        "mass": diag.sum(-1),  # = 1 - sum w^2
        "max_diag": diag.amax(-1),
        "frozen": diag.amax(-1) < FROZEN_DIAG,
        "max_weight": w.amax(-1),
    }


def rows_of_weights(widths=WIDTHS, n_rows: int = N_ROWS, n_keys: int = N_KEYS,
                    gen: torch.Generator | None = None) -> dict[int, dict[str, dict[str, torch.Tensor]]]:
    """For each d_k: the row statistics of n_rows softmax rows, divided and undivided, on the same q and keys."""
    out = {}
    for d_k in widths:
        parts = {"divided": [], "undivided": []}
        for start in range(0, n_rows, CHUNK):
            m = min(CHUNK, n_rows - start)
            q = torch.randn(m, d_k, generator=gen)
            k = torch.randn(m, n_keys, d_k, generator=gen)
            parts["divided"].append(row_stats(softmax_rows(q, k, scale=True)))
            parts["undivided"].append(row_stats(softmax_rows(q, k, scale=False)))
        out[d_k] = {name: {key: torch.cat([p[key] for p in chunks]) for key in chunks[0]}
                    for name, chunks in parts.items()}
    return out


def mean_error(x: torch.Tensor) -> float:
    """Standard error of the mean of one value per row, (N,): the rows are independent draws."""
    return mean_se(x.double().tolist())[1]


def median_error(x: torch.Tensor) -> float:
    """Standard error of the median of one value per row, (N,), by a bootstrap over the rows. The lower median,
    as torch.median takes it."""
    return bootstrap_se({"rows": x.tolist()}, lambda r: statistics.median_low(r["rows"]))


def run(seed: int = 0, widths=WIDTHS, n_pairs: int = N_PAIRS, n_rows: int = N_ROWS, n_keys: int = N_KEYS) -> dict:
    gen = torch.Generator().manual_seed(seed)
    var_rows = variance(widths, n_pairs, gen)
    stats = rows_of_weights(widths, n_rows, n_keys, gen)

    effective, saturation = [], []
    for d_k in widths:
        div, raw = stats[d_k]["divided"], stats[d_k]["undivided"]
        effective.append({
            "d_k": d_k,
            "divided_mean": div["effective"].mean().item(),
            "undivided_mean": raw["effective"].mean().item(),
            "divided_median": div["effective"].median().item(),
            "undivided_median": raw["effective"].median().item(),
            "undivided_frac_below_1_5": (raw["effective"] < 1.5).float().mean().item(),
            "divided_mean_se": mean_error(div["effective"]),
            "undivided_mean_se": mean_error(raw["effective"]),
            "undivided_median_se": median_error(raw["effective"]),
        })
        saturation.append({
            "d_k": d_k,
            "mass_divided": div["mass"].mean().item(),
            "mass_undivided": raw["mass"].mean().item(),
            "frozen_divided": div["frozen"].float().mean().item(),
            "frozen_undivided": raw["frozen"].float().mean().item(),
            "max_weight_gt_0_99_undivided": (raw["max_weight"] > 0.99).float().mean().item(),
            "max_diag_divided": div["max_diag"].mean().item(),
            "max_diag_undivided": raw["max_diag"].mean().item(),
            "mass_divided_se": mean_error(div["mass"]),
            "mass_undivided_se": mean_error(raw["mass"]),
        })
    at_256 = next((r["undivided_frac_below_1_5"] for r in effective if r["d_k"] == 256), None)
    return {
        "seed": seed, "widths": list(widths), "n_pairs": n_pairs, "n_rows": n_rows, "n_keys": n_keys,
        "variance": var_rows,
        "se_method": ("se_var is analytic: for q, k ~ N(0, I_d), E[(q.k)^4] = 3d^2 + 6d, so the sample variance "
                      "of n pairs has standard error sqrt((2d^2 + 6d + 2d^2/(n-1)) / n); z = (var - d) / se_var. "
                      "se_var_sample is the same formula with the sample's own fourth central moment: the "
                      "error the claims judge each variance with (se_var, the theory's, sets their band). "
                      "The softmax rows are independent draws: a mean over them has the standard error "
                      "sd / sqrt(rows), a median a bootstrap over the rows, and a fraction of them a binomial "
                      "error."),
        "effective_tokens": effective,
        "undivided_256_frac_below_1_5": at_256,
        "saturation": saturation,
        "frozen_definition": FROZEN_DEFINITION,
        "frozen_threshold": FROZEN_DIAG,
        "mass_reference": 1 - math.e / n_keys,
        "method": (f"C3.1: {n_pairs:,} pairs per width. C3.2 and C3.3: the same {n_rows:,} rows per d_k, each one "
                   f"query against {n_keys} keys, every entry N(0, 1); the divided and undivided rows share their "
                   "query and keys and differ only in the 1/sqrt(d_k) factor. Scores and weights come from "
                   "attnlab.nn.attention.attention (no mask)."),
    }


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance

    return provenance.measured(cfg, out_path, lambda: run(seed=cfg["seed"]))
