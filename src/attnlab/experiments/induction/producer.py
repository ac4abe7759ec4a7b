"""S10: induction heads (Olsson et al. 2022, "In-context learning and induction heads"), as pure functions.

An induction head completes [A][B] ... [A] -> [B]: at the second A it attends to the token after the first A
(prefix matching) and copies it (copying). In a model it needs a previous-token head in an earlier layer, so
an attention-only model forms one with two layers and not with one. Olsson et al. see it form in a sudden
phase change, at the same time as the in-context-learning score (late loss minus early loss) drops.

What is here:
    repeated_spans        the control task: random tokens in which one random span recurs at varying distances
    prefix_matching       per head: attention from a repeated token to the tokens after its earlier occurrences
    over_chance_se        the best head's prefix-matching score over chance: its error over the rows (a bootstrap)
    previous_token        per head: attention from each position to the one before it
    copying               per head: whether the head's OV circuit raises the logit of the token it reads
    icl_score             late loss minus early loss over per-position losses
    measure               all of the above (but copying) on any LM and a batch of token rows
    InductionProbe        measure() as a probe of attnlab.train.train
    phase_change, same_phase   the step at which a probed score jumps, and whether two jumps coincide
    rise_window           how suddenly a probed score changes: its 10 %-90 % window as a share of training
    phase_across_seeds    S10.2 at every seed (the control models are trained at each of the profile's seeds)
    across_seeds          every seed's measurements as the result holds them (by_seed: S10.1 and S10.3 per seed)
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab import config, layout, registry
from attnlab.errors import AttnlabError, Diverged
from attnlab.experiments.induction import derive
from attnlab.experiments.induction.settings import EARLY, LATE, window  # where icl_score reads the loss
from attnlab.nn.model import SelfAttention, recording
from attnlab.stats import bootstrap_se, mean_se



def repeated_spans(n_sequences: int, length: int, span: int, vocab_size: int,
                   generator: torch.Generator | None = None) -> torch.Tensor:
    """The control task -> LongTensor (n_sequences, length), tokens uniform in [0, vocab_size).

    Each sequence opens with a random span of `span` tokens; copies of it follow, each after a gap of
    0 ... span fresh random tokens, until the sequence is full (the last copy may be cut off). The first gap is
    short enough for one whole copy to fit, so every sequence repeats its span at least once.
    Within a copy every token after the first is predictable, and only by induction: all tokens are
    random, so no bigram helps, and the distance back to the previous copy varies (span ... 2 span), so no
    fixed-offset (positional) head helps either. Random filler may collide with span tokens by chance.
    """
    if not isinstance(span, int) or span < 1:
        raise AttnlabError(f"repeated_spans: span must be a positive integer, got {span!r}")
    if not isinstance(length, int) or length < 2 * span:
        raise AttnlabError(f"repeated_spans: length {length!r} is shorter than two spans of {span} "
                           f"(nothing would repeat)")
    if not isinstance(vocab_size, int) or vocab_size < 2:
        raise AttnlabError(f"repeated_spans: vocab_size must be at least 2, got {vocab_size!r}")
    if not isinstance(n_sequences, int) or n_sequences < 1:
        raise AttnlabError(f"repeated_spans: n_sequences must be a positive integer, got {n_sequences!r}")
    out = torch.randint(vocab_size, (n_sequences, length), generator=generator)  # filler everywhere
    gaps = torch.randint(span + 1, (n_sequences, length // span + 1), generator=generator)
    gaps[:, 0] = gaps[:, 0] % (length - 2 * span + 1)
    for n in range(n_sequences):
        seq, pos = out[n], span
        for gap in gaps[n].tolist():
            pos += gap
            if pos >= length:
                break
            n_copy = min(span, length - pos)
            seq[pos : pos + n_copy] = seq[:n_copy]
            pos += n_copy
    return out


def after_earlier(tokens: torch.Tensor) -> torch.Tensor:
    """(B, T) -> bool (B, T, T): [b, i, k] is True where key k directly follows an earlier occurrence of
    query i's token (k = j + 1 for some j < i with tokens[j] == tokens[i]; k <= i, so causal rows may see it)."""
    T = tokens.size(1)
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, T, T): same[b, i, j]
    earlier = same & torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(-1)  # j < i
    return F.pad(earlier[:, :, :-1], (1, 0))  # shift j -> j + 1


def prefix_matching(weights: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Prefix-matching score per head -> (H,).

    weights: (B, H, T, T) attention rows, tokens: (B, T) the tokens the rows belong to. At each position i
    whose token occurred before, the total weight from i to the tokens that followed its earlier occurrences
    (j + 1 for every j < i with the same token; with one earlier occurrence, simply the weight on j + 1); the
    mean over all such positions of the batch. A perfect induction head scores 1; uniform causal attention
    scores chance_level(tokens), which is small when tokens seldom repeat. NaN when no token repeats.
    Every earlier occurrence counts, not only the most recent: a trained induction head spreads its weight
    over all of them (on repeated_spans it favours the first copy), and each one predicts the next token.
    """
    return prefix_by_row(weights, tokens).sum(0) / after_earlier(tokens).any(-1).sum()


def prefix_by_row(weights: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Per row and head, the weight from every repeated token to the tokens after its earlier occurrences, summed
    over the row: (B, H, T, T), (B, T) -> (B, H). prefix_matching is its column sums over the repeated positions."""
    return (weights * after_earlier(tokens)[:, None]).sum((-1, -2))


def over_chance_se(weights: list[torch.Tensor], tokens: torch.Tensor, seed: int = 0) -> float | None:
    """Bootstrap standard error, over the rows, of the best head's prefix-matching score over chance: weights, one
    (B, H, T, T) per layer, of the rows tokens (B, T). The best head is chosen again in every resample; the
    repeated positions' count, the same for a head and for chance, cancels from the ratio. Rows in which no token
    repeats add nothing to either side and are left out; None with fewer than two rows left."""
    chance = prefix_by_row(causal_uniform(tokens.size(0), 1, tokens.size(1)).to(tokens.device), tokens)[:, 0]
    scored = chance > 0  # (B,)
    if scored.sum() < 2:
        return None
    heads = torch.cat([prefix_by_row(w, tokens) for w in weights], 1)[scored].T.tolist()  # (L * H, rows scored)
    rounds = {"chance": chance[scored].tolist(), **{str(h): row for h, row in enumerate(heads)}}
    return bootstrap_se(rounds, lambda r: max(sum(r[str(h)]) for h in range(len(heads))) / sum(r["chance"]),
                        seed=seed)


def previous_token(weights: torch.Tensor) -> torch.Tensor:
    """Previous-token score per head -> (H,): mean weight from i to i - 1 over i >= 1 and the batch."""
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, 2))  # diagonal: (B, H, T - 1)


def causal_uniform(B: int, H: int, T: int) -> torch.Tensor:
    """Uniform causal attention rows (B, H, T, T): what an untrained, flat head does."""
    return torch.ones(T, T).tril().div(torch.arange(1, T + 1)[:, None]).expand(B, H, T, T)


def chance_level(tokens: torch.Tensor) -> float:
    """The prefix-matching score of uniform causal attention on these tokens (B, T)."""
    return prefix_matching(causal_uniform(tokens.size(0), 1, tokens.size(1)), tokens).item()


@torch.no_grad()
def copying(model) -> torch.Tensor:
    """Copying score of every head -> (n_layers, H), each in [0, 1]; chance is 1 / vocab_size. (0, 0) for a
    model without learned attention.

    The head's direct OV circuit as a (V, V) matrix: token embedding, through the norm in front of the
    attention (a lone embedding, no position), the head's value and its slice of the output projection, the
    final norm's gain, then the unembedding; biases are left out. The score is the fraction of tokens t whose
    own logit is the largest of those the head writes when it reads t: how often the head, attending to t
    alone, would predict t.
    """
    W_E = model.tok.weight  # (V, d)
    gain = model.norm.weight if isinstance(model.norm, nn.LayerNorm) else torch.ones_like(W_E[0])
    W_U = model.head.weight * gain  # (V, d)
    rows = []
    for block in model.blocks:
        attn = block.mixer
        if not isinstance(attn, SelfAttention):
            continue
        x = W_E if block.post else block.norm1(W_E)  # (V, d): what the head reads for each token
        H, group = attn.n_heads, attn.n_heads // attn.n_kv_heads
        dv = attn.v.out_features // attn.n_kv_heads
        W_O = attn.out.weight if isinstance(attn.out, nn.Linear) else torch.eye(H * dv, device=W_E.device)
        scores = []
        for h in range(H):
            W_V = attn.v.weight[(h // group) * dv : (h // group + 1) * dv]  # (dv, d)
            ov = x @ W_V.T @ W_O[:, h * dv : (h + 1) * dv].T  # (V, d): the head's output for each token
            logits = ov @ W_U.T  # (V_in, V_out)
            hits = logits.argmax(-1) == torch.arange(len(logits), device=logits.device)
            scores.append(hits.float().mean())
        rows.append(torch.stack(scores))
    return torch.stack(rows) if rows else torch.empty(0, 0)


def icl_score(losses: torch.Tensor, early: float = EARLY, late: float = LATE) -> float:
    """In-context-learning score: mean loss near position late*T minus near early*T (nats).

    losses: (T,) or (B, T) per-position losses, position i being the loss of predicting token i + 1 from
    tokens 0 ... i; a batch is averaged first. Each end averages the nearest position and T // 40 neighbours
    either side. Negative when later tokens are predicted better: the more negative, the more in-context
    learning.
    """
    losses = losses.float()
    if losses.dim() == 2:
        losses = losses.mean(0)
    T = losses.numel()
    return (losses[window(T, late)].mean() - losses[window(T, early)].mean()).item()


@torch.no_grad()
def measure(model, tokens: torch.Tensor, se: bool = False) -> dict:
    """Induction scores of any LM on a batch of token rows (B, T + 1): inputs are all but the last token,
    targets all but the first. Works on a model as trained (natural text repeats tokens too).

    Returns plain numbers (JSON-ready): prefix and previous, per layer a list of per-head scores; induction,
    the largest prefix score; chance, the prefix score of uniform causal attention on these tokens; icl; loss,
    the mean cross-entropy; losses, the mean loss at each position; with `se`, se_over_chance, the standard
    error over the rows of induction / chance (over_chance_se), and icl_se, icl's over the rows. The model is left as it was found.
    """
    device = next(model.parameters()).device
    x, y = tokens[:, :-1].to(device), tokens[:, 1:].to(device)  # (B, T) each
    was_training = model.training
    model.eval()
    try:
        with recording(model) as records:
            logits, _ = model(x)  # (B, T, V)
            kept = [r["weights"].float() for r in records()]  # (B, H, T, T) each
    finally:
        model.train(was_training)
    losses = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="none").view_as(y)  # (B, T)
    prefix = [prefix_matching(w, x).tolist() for w in kept]
    out = {
        "prefix": prefix,
        "previous": [previous_token(w).tolist() for w in kept],
        "induction": max((s for row in prefix for s in row if not math.isnan(s)), default=float("nan")),
        "chance": chance_level(x.cpu()),
        "icl": icl_score(losses),
        "loss": losses.mean().item(),
        "losses": losses.mean(0).tolist(),
    }
    if se:
        out["se_over_chance"] = over_chance_se(kept, x)
        out["icl_se"] = icl_se(losses)
    return out


def icl_se(losses: torch.Tensor) -> float | None:
    """The standard error of icl_score over the rows of a batch (B, T): each row's late-minus-early loss is one
    draw, so a score read on few windows of text says how far it could be from 0 by chance."""
    T = losses.size(1)
    per_row = losses[:, window(T, LATE)].mean(1) - losses[:, window(T, EARLY)].mean(1)  # (B,)
    return (per_row.std() / math.sqrt(len(per_row))).item() if len(per_row) > 1 else None


def flat(scores: dict) -> dict:
    """measure()'s result as one probes.csv row: prefix_L{l}H{h}, prev_L{l}H{h}, induction, icl, loss, chance
    (layers and heads counted from 0)."""
    row = {}
    for key, name in (("prefix", "prefix"), ("previous", "prev")):
        for l, heads in enumerate(scores[key]):
            row.update({f"{name}_L{l}H{h}": s for h, s in enumerate(heads)})
    row.update({k: scores[k] for k in ("induction", "icl", "loss", "chance")})
    return row


class InductionProbe:
    """A probe of attnlab.train.train: at step 0 and every `every` steps, measure() on a fixed batch of
    token rows (N, context + 1) and return flat() of it. `loss` is the loss on that batch (the training
    loop's own batch loss is in curve.csv)."""

    def __init__(self, tokens: torch.Tensor, every: int):
        if tokens.dim() != 2 or tokens.size(1) < 2:
            raise AttnlabError(f"InductionProbe needs token rows (N, context + 1), got shape {tuple(tokens.shape)}")
        if every < 1:
            raise AttnlabError(f"InductionProbe: every must be at least 1, got {every}")
        self.tokens, self.every = tokens, every

    def __call__(self, step: int, model, loss: float) -> dict | None:
        if step % self.every:
            return None
        return flat(measure(model, self.tokens))


def phase_change(steps, values, min_change: float = 0.1) -> dict:
    """The step at which a probed score changes, by one rule: the first probe step at which the series has
    covered half its net change (first value to last value), up or down.

    Returns {step, before, after, start, end, change}: before/after are the values at the probe points
    either side of the crossing, start/end the first and last values, change = end - start. When |change| is
    below min_change there is no phase change: step, before and after are None.
    """
    steps, values = list(steps), [float(v) for v in values]
    if len(steps) != len(values) or len(values) < 2:
        raise AttnlabError(f"phase_change needs two or more (step, value) pairs, got {len(steps)} steps and "
                           f"{len(values)} values")
    start, end = values[0], values[-1]
    out = {"step": None, "before": None, "after": None, "start": start, "end": end, "change": end - start}
    if abs(end - start) < min_change:
        return out
    sign, half = math.copysign(1.0, end - start), (start + end) / 2
    k = next(i for i, v in enumerate(values) if sign * (v - half) >= 0)
    out.update(step=steps[k], before=values[k - 1], after=values[k])
    return out


def probe_interval(steps) -> int:
    """The usual distance between two probes (a last, shorter one does not count)."""
    steps = list(steps)
    gaps = sorted(s1 - s0 for s0, s1 in zip(steps, steps[1:]))
    return gaps[len(gaps) // 2]


def lag(a: dict, b: dict, steps) -> float | None:
    """How many probe intervals apart two phase changes (phase_change results over the same probe steps) are;
    None when either has none."""
    if a["step"] is None or b["step"] is None:
        return None
    return abs(a["step"] - b["step"]) / probe_interval(steps)


def same_phase(a: dict, b: dict, steps, within: int = 2) -> bool:
    """Whether two phase changes happen within `within` probe intervals of each other; False when either has
    none."""
    apart = lag(a, b, steps)
    return apart is not None and apart <= within


def rise_window(steps, values, lo: float = 0.1, hi: float = 0.9, min_change: float = 0.1) -> dict:
    """How suddenly a probed score changes: the first probe steps at which it has covered `lo` and `hi` of its
    net change (first value to last), and the distance between them as a share of the probed training,
    `width`. A phase change is a short window; a score that climbs steadily all along has a width near
    hi - lo. A change smaller than min_change has no window: width 1, as slow as training itself."""
    steps, values = list(steps), [float(v) for v in values]
    start, change = values[0], values[-1] - values[0]
    if abs(change) < min_change:
        return {"from": None, "to": None, "width": 1.0}
    covered = [(v - start) / change for v in values]
    first = next(st for st, c in zip(steps, covered) if c >= lo)
    last = next(st for st, c in zip(steps, covered) if c >= hi)
    return {"from": first, "to": last, "width": (last - first) / (steps[-1] - steps[0])}


# ------------------------------------------------------------------ the experiment (registry: induction)

def probed(path) -> list[dict]:
    """A run's probes.csv as rows of numbers."""
    import csv

    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def control(cfg: dict, out_dir, seed: int | None = None) -> dict:
    """Attention-only models of each depth trained on repeated spans, probed as they learn, at `seed` (default:
    the job's); a model that diverged is recorded as such (its Diverged record, with its depth)."""
    from attnlab.train import finished, train

    s = cfg["induction"]
    seed = cfg["seed"] if seed is None else seed
    gen = torch.Generator().manual_seed(seed)
    T = s["length"]
    data, val, probe_rows = (repeated_spans(n, T + 1, s["span"], s["vocab_size"], gen)
                             for n in (s["sequences"], s["probe_sequences"], s["probe_sequences"]))
    run_cfg = {"seed": seed, "device": cfg["device"], "threads": cfg.get("threads"), "profile": cfg["profile"],
               "train": {**derive.control_train(cfg), "eval_contexts": None}}
    out = {}
    for layers in s["layers"]:
        spec = derive.control_spec(cfg, n_blocks=layers)
        name = f"attn-only-{layers}"
        metrics = train(spec, run_cfg, data, val, out_dir / name, name=name, experiment="induction",
                        probes=[InductionProbe(probe_rows, s["probe_every"])], progress=False)
        try:
            model = finished(out_dir / name)
        except Diverged as err:
            out[name] = {**err.record, "layers": layers}
            print(f"  {name}: {err}", flush=True)
            continue
        rows = probed(out_dir / name / "probes.csv")
        steps = [int(r["step"]) for r in rows]
        rise = phase_change(steps, [r["induction"] for r in rows])
        drop = phase_change(steps, [r["icl"] for r in rows])
        final = measure(model, probe_rows)
        out[name] = {"layers": layers, "steps": steps, "series": rows, "final": final,
                     "copying": copying(model).tolist(), "induction_jump": rise, "icl_drop": drop,
                     "same_phase": same_phase(rise, drop, steps), "lag_intervals": lag(rise, drop, steps),
                     "rise_window": rise_window(steps, [r["induction"] for r in rows]),
                     "n_params": metrics["n_params"]}
        print(f"  {name}: best prefix-matching score {final['induction']:.3f} (chance {final['chance']:.3f}), "
              f"ICL score {final['icl']:.3f}, jump at step {rise['step']}", flush=True)
    return out


PHASE = ("rise_width", "lag_intervals", "icl_two_minus_one")


def phase_at(runs: dict) -> dict | None:
    """S10.2 at one seed, from control()'s runs: the width of the two-layer model's rise (a share of training),
    how many probe intervals its ICL drop lies from that rise (a drop or rise that never came counts as the
    whole run), and its ICL score less the one-layer model's. None where either model diverged."""
    two, one = runs.get("attn-only-2") or {}, runs.get("attn-only-1") or {}
    if "final" not in two or "final" not in one:
        return None
    apart = two["lag_intervals"]
    whole = (two["steps"][-1] - two["steps"][0]) / probe_interval(two["steps"])
    return {"rise_width": two["rise_window"]["width"], "lag_intervals": whole if apart is None else apart,
            "icl_two_minus_one": two["final"]["icl"] - one["final"]["icl"]}


def phase_across_seeds(by_seed: dict) -> dict:
    """Per S10.2 measure, its mean over the seeds at which both models trained, with the standard error of that
    mean over the seeds (None from one seed); `by_seed` is seed -> control()'s runs."""
    at = {str(seed): phase_at(runs) for seed, runs in by_seed.items()}
    ok = {seed: m for seed, m in at.items() if m is not None}
    out = {"by_seed": at, "seeds": len(ok)}
    for key in PHASE:
        values = [m[key] for m in ok.values()]
        mean, se = mean_se(values) if values else (None, None)
        out[key] = {"mean": mean, "se": se if len(values) > 1 else None}
    return out


def across_seeds(controls: dict, texts: dict) -> dict:
    """The result's measurements from control()'s runs and on_text()'s scores at each seed (the job's own first):
    that seed's as `control` and `text` (the page's), S10.2's phase over the seeds, and every seed's under
    `by_seed`, where the claims read S10.1 and S10.3 once per seed (attnlab.results.Results.at) and take
    the seeds' spread."""
    first = next(iter(controls))
    return {"control": controls[first], "text": texts[first], "phase": phase_across_seeds(controls),
            "by_seed": {str(seed): {"control": runs, "text": texts[seed]} for seed, runs in controls.items()}}


def on_text(cfg: dict, results, data_dir, runs: list[str]) -> dict:
    """The same scores on the chapter's trained Shakespeare models at cfg's seed, on windows of the validation
    split (a run that diverged: its Diverged record)."""
    from attnlab.data.prepare import load_tokens
    from attnlab.train import finished

    s = cfg["induction"]
    tokens = load_tokens(data_dir, "val")
    out = {}
    for run in runs:
        experiment, _, name = run.partition(".")
        try:
            model = finished(results / registry.get(experiment).run_dir(name, cfg["seed"]))
        except Diverged as err:
            out[name] = err.record
            print(f"  {name} on Shakespeare: {err}", flush=True)
            continue
        T = model.spec.context
        n = min(s["text_windows"], (len(tokens) - 1) // (T + 1))
        rows = tokens[: n * (T + 1)].view(n, T + 1)
        scores = measure(model, rows, se=True)  # the windows' error of the score over chance (S10.3)
        scores["copying"] = copying(model).tolist()
        out[name] = {"blocks": model.spec.n_blocks, "windows": n, "context": T, **scores}
        print(f"  {name} on Shakespeare: best prefix-matching score {scores['induction']:.3f} "
              f"(chance {scores['chance']:.3f}), ICL score {scores['icl']:.3f}", flush=True)
    return out


def main(cfg: dict, out_path, data_dir) -> dict:
    from pathlib import Path

    from attnlab import provenance
    from attnlab.train import job_device

    out_path, device = Path(out_path), job_device(cfg)
    runs = registry.get("induction").needed_runs  # the Shakespeare runs it reads

    def run():
        seeds = [cfg["seed"], *(seed for seed in config.seeds(cfg) if seed != cfg["seed"])]
        folder = {seed: layout.seed_dir(out_path.parent, seed, first=cfg["seed"]) for seed in seeds}
        controls = {seed: control(cfg, folder[seed], seed) for seed in seeds}
        texts = {seed: on_text({**cfg, "seed": seed}, layout.results_of(out_path), data_dir, runs) for seed in seeds}
        return {**across_seeds(controls, texts), "settings": cfg["induction"], "icl_positions": [EARLY, LATE]}

    return provenance.measured(cfg, out_path, run, device=device)
