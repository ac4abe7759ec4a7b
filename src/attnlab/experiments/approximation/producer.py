"""S8 on a trained layer: Longformer's sliding window and Performer's FAVOR+ against exact attention on the queries,
keys and values of the chapter's trained one-block model (ladder run L9), beside unit Gaussian inputs.

E6's sweep (attnlab.experiments.cost.producer) measures the two approximations on unit Gaussian q, k, v, whose scaled scores
have standard deviation 1: attention there is nearly flat and has no preference for nearby keys. A window bets on
locality and random features on mild scores, so what they give up depends on the inputs; here the inputs are a
trained layer's own. At every seed of the profile: L9's finished model at that seed, `batches` batches of
`batch_size` consecutive windows of the validation split, each run through the model once to keep what every
attention layer's core scored and mixed (attnlab.nn.model.attention_kept: q and k after any rotation), then each
window's and feature count's relative error against exact attention (attnlab.nn.approx.errors_against_exact), in
float64.
Beside each batch, unit Gaussian q, k, v of the same shape with the same random features: the same measurement
on inputs with no structure, so that the two are compared batch by batch.

Output (results/<profile>/approximation/result.json): by_seed, per seed under the run's name (the first seed's
also at the top level): trained and gaussian, each as nn.approx.summarise_errors gives it over the batches (per size
the mean relative error with its standard error; the shrink from the first size to the last and the log-log
rate), with the attention's score spread, entropy and saturated rows (experiments.probes.summarise);
trained_over_gaussian, per size the mean over batches of the ratio of the two errors with its standard error;
a run that diverged at a seed, its Diverged record with that seed. Then settings, seeds, method, provenance.
"""
from __future__ import annotations

from pathlib import Path

import torch

from attnlab import config, layout, registry
from attnlab.errors import AttnlabError, Diverged
from attnlab.probes import summarise
from attnlab.nn.approx import errors_against_exact, summarise_errors
from attnlab.nn.attention import attention
from attnlab.nn.model import attention_kept
from attnlab.stats import mean_se

NAME = "approximation"
BLOCK = 128  # the window method's query block: any block gives the same output
DRAWS = 1000  # a batch's random features and Gaussian inputs are drawn with seed * DRAWS + batch


def validation_rows(tokens: torch.Tensor, T: int, a: dict) -> torch.Tensor:
    """The first batches * batch_size consecutive windows of T tokens of the split -> (N, T)."""
    n = a["batches"] * a["batch_size"]
    if len(tokens) < n * T:
        raise AttnlabError(f"config error at 'approximation.batches': {a['batches']} batches of {a['batch_size']} "
                           f"windows of {T} tokens need {n * T:,} validation tokens, and the split holds "
                           f"{len(tokens):,}")
    return tokens[: n * T].view(n, T)


def average(rows: list[dict]) -> dict:
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def measure(model, rows: torch.Tensor, a: dict, seed: int) -> dict:
    """S8 on one trained model over rows (N, T) of its validation text, a batch at a time: every attention layer's
    q, k, v (the layers' heads side by side) and unit Gaussian q, k, v of the same shape, each approximation's
    relative error on both with the same random features, and the ratio of the two per batch."""
    device = next(model.parameters()).device
    sizes = {"windows": a["windows"], "features": a["features"]}
    draws, peaks = {"trained": [], "gaussian": []}, {"trained": [], "gaussian": []}
    for b in range(a["batches"]):
        x = rows[b * a["batch_size"] : (b + 1) * a["batch_size"]].to(device)  # (B, T)
        kept = attention_kept(model, x)
        q, k, v = (torch.cat([layer[key] for layer in kept], dim=1).double().cpu() for key in "qkv")  # (B, L*H, T, w)
        draw = seed * DRAWS + b
        g = torch.Generator().manual_seed(draw)
        noise = [torch.randn(t.shape, generator=g, dtype=torch.float64) for t in (q, k, v)]
        for inputs, qkv in (("trained", (q, k, v)), ("gaussian", noise)):  # the same random features for both
            draws[inputs].append(errors_against_exact(*qkv, **sizes, n_global=a["n_global"], block=BLOCK, seed=draw))
        flat = {}
        attention(*noise, causal=True, keep=flat)
        peaks["trained"] += [summarise(layer) for layer in kept]  # how peaked: score spread, entropy, saturated rows
        peaks["gaussian"].append(summarise(flat))
    out = {"batches": a["batches"], "windows_per_batch": a["batch_size"], "context": rows.size(1),
           "layers": len(kept), "heads": q.size(1) // len(kept), "head_dim": q.size(-1)}
    for inputs in draws:
        out[inputs] = {**summarise_errors(draws[inputs], **sizes), "attention": average(peaks[inputs])}
    out["trained_over_gaussian"] = ratios(draws["trained"], draws["gaussian"], a)
    return out


def ratios(trained: list[dict], gaussian: list[dict], a: dict) -> dict:
    """Per method and size, the trained layer's error over the Gaussian inputs' at the same batch (the two share
    their random features): the mean over batches with its standard error."""
    out = {}
    for method, key in (("window", "windows"), ("favor", "features")):
        per_batch = [[t / g for t, g in zip(tb[method], gb[method])] for tb, gb in zip(trained, gaussian)]
        out[method] = []
        for i, size in enumerate(a[key]):
            ratio, se = mean_se([r[i] for r in per_batch])
            out[method].append({"size": size, "ratio": ratio, "se": se})
    return out


def at_seed(cfg: dict, results: Path, tokens: torch.Tensor, run: str, seed: int) -> dict:
    """measure() on one run's finished model at one seed; a run that diverged there: its Diverged record."""
    from attnlab.train import finished, pick_device

    experiment, _, name = run.partition(".")
    try:
        model = finished(results / registry.get(experiment).run_dir(name, seed))
    except Diverged as err:
        print(f"  {name} at seed {seed}: {err}", flush=True)
        return {**err.record, "seed": seed}
    model.to(pick_device(cfg.get("device", "auto")))
    out = {"seed": seed, **measure(model, validation_rows(tokens, model.spec.context, cfg[NAME]), cfg[NAME], seed)}
    t, g = out["trained"], out["gaussian"]
    print(f"  {name} at seed {seed}: window {t['window'][-1]['window']} errs {t['window'][-1]['relative_error']:.3g} "
          f"(Gaussian {g['window'][-1]['relative_error']:.3g}), FAVOR+ with {t['favor'][-1]['features']} features "
          f"{t['favor'][-1]['relative_error']:.3g} (Gaussian {g['favor'][-1]['relative_error']:.3g})", flush=True)
    return out


def main(cfg: dict, out_path, data_dir) -> dict:
    from attnlab import provenance
    from attnlab.data.prepare import load_tokens
    from attnlab.train import job_device

    out_path, device = Path(out_path), job_device(cfg)
    runs = registry.get(NAME).needed_runs  # at every seed
    seeds = config.seeds(cfg)

    def run():
        tokens = load_tokens(data_dir, "val")
        by_seed = {str(seed): {r.partition(".")[2]: at_seed(cfg, layout.results_of(out_path), tokens, r, seed)
                               for r in runs} for seed in seeds}
        return {**by_seed[str(seeds[0])], "by_seed": by_seed, "seeds": seeds, "settings": cfg[NAME],
                "method": ("relative error ||approx - exact|| / ||exact|| of the causal attention outputs of every "
                           "head, float64; window: Longformer's sliding window with n_global global tokens; favor: "
                           "Performer's FAVOR+ (positive orthogonal random features); gaussian: unit Gaussian q, k, v "
                           "of the trained layer's shape with the same features, one draw per batch")}

    return provenance.measured(cfg, out_path, run, device=device)
