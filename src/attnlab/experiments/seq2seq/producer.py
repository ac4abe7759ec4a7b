"""S1 ("where attention came from"): a fixed-vector recurrent encoder-decoder against attention, and the
chapter's argument against recurrence (the gradient path), as pure functions.

Sutskever et al. (2014) and Cho et al. (2014) squeeze the whole source into the encoder's last state; Bahdanau
et al. (2015) let each decoder step read a weighted average of every encoder state, with weights from an additive
score; Luong et al. (2015) tried dot, general and concat scores. The papers also wire the attention differently
(attnlab.nn.seq2seq): Bahdanau scores with the previous decoder state and feeds the context into the recurrence;
Luong scores with the current state and combines the context after it (feeding the result to the next step's
input when input_feeding is set). Each score is run in its paper's wiring, at the same sizes and budget; since
Luong's concat v.tanh(W [h; e]) is Bahdanau's additive function (W = [W1 W2]), `bahdanau` against `concat`
compares the two wirings with the score held fixed (contrasts' `wiring`).

Teacher forcing lets an attention decoder find its place by content: it looks up the target token it was just
given in the source and reads the neighbour off that state (a trained model's weights can sit one position off
the (anti-)diagonal for that reason). Greedy decoding loses its place after its first mistake, so accuracy()
reports the teacher-forced token accuracy (what the decoder can read) beside greedy token and sequence accuracy.
A forward-only encoder holds a token's left neighbour but not its right one, which hurts reverse under greedy
decoding; the two-way encoder is the default for that reason.

What is here:
    task_rows        copy / reverse as rows [source (S), SEP, target (S)], SEP = the id `vocab`
    accuracy, attention_map   greedy token / sequence accuracy, one example's weights (the model, its scores and
                     greedy decoding are attnlab.nn.seq2seq)
    gradient_path, gradient_sweep     how much gradient reaches input 1 from output T: RNN, LSTM, attention
    run, main        every task x length x variant x seed through the one training loop, plus the above, and
                     the paired seed-by-seed differences the claims and the page read (contrasts,
                     gradient_summary)
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn as nn

from attnlab import config, layout
from attnlab.errors import AttnlabError, diverged_record, is_diverged
from attnlab.experiments.seq2seq.derive import geometric_mean
from attnlab.experiments.seq2seq.settings import PATH_KINDS, TASKS, check_section
from attnlab.nn.model import SelfAttention
from attnlab.nn.seq2seq import WIRINGS, Seq2Seq, Seq2SeqSpec, greedy

ACCURACIES = ("token_accuracy", "sequence_accuracy", "teacher_forced_accuracy")


# ----------------------------------------------------------------------------- tasks

def task_rows(task: str, n: int, source_length: int, vocab: int,
              generator: torch.Generator | None = None) -> torch.Tensor:
    """n examples of `task` -> LongTensor (n, 2S + 1): [source (S), SEP, target (S)].

    Source tokens are uniform over the `vocab` symbols 0 ... vocab-1; SEP is the id `vocab`, so a model reads and
    writes vocab + 1 ids. copy: target = source; reverse: target = source read backwards.
    """
    if task not in TASKS:
        raise AttnlabError(f"seq2seq: unknown task {task!r} (choose from {', '.join(TASKS)})")
    if isinstance(source_length, bool) or not isinstance(source_length, int) or source_length < 1:
        raise AttnlabError(f"seq2seq: source length must be a positive integer, got {source_length!r}")
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 2:
        raise AttnlabError(f"seq2seq: vocab must be at least 2 symbols, got {vocab!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AttnlabError(f"seq2seq: number of examples must be a positive integer, got {n!r}")
    src = torch.randint(vocab, (n, source_length), generator=generator)  # (n, S)
    tgt = src if task == "copy" else src.flip(1)
    sep = torch.full((n, 1), vocab, dtype=src.dtype)
    return torch.cat([src, sep, tgt], dim=1)


# ----------------------------------------------------------------------------- evaluation

@torch.no_grad()
def accuracy(model: Seq2Seq, rows: torch.Tensor, batch_size: int = 512) -> dict:
    """Held-out rows (N, 2S+1) -> token_accuracy (share of target tokens right) and sequence_accuracy (share of
    rows with every target token right) of greedy decoding, token_accuracy_se (its sampling error over rows), and teacher_forced_accuracy: the share of target
    tokens right when every earlier target token is given (what the decoder can read, before its own errors)."""
    S = model.spec.source_length
    right, forced = [], []
    for i in range(0, len(rows), batch_size):
        batch = rows[i : i + batch_size]
        pred, _ = greedy(model, batch[:, :S])
        right.append(pred == batch[:, S + 1 :])  # (b, S)
        logits, _ = model(batch[:, :-1])
        forced.append(logits[:, S:].argmax(-1) == batch[:, S + 1 :])
    right, forced = torch.cat(right), torch.cat(forced)
    per_row = right.float().mean(1)  # (N,): a row's tokens are not independent (greedy errors cascade), rows are
    se = per_row.std().item() / math.sqrt(len(per_row)) if len(per_row) > 1 else 0.0
    return {"token_accuracy": right.float().mean().item(), "token_accuracy_se": se,
            "sequence_accuracy": right.all(1).float().mean().item(),
            "teacher_forced_accuracy": forced.float().mean().item()}


@torch.no_grad()
def attention_map(model: Seq2Seq, row: torch.Tensor) -> dict:
    """One example (2S+1,) -> its source, target, greedy prediction and weights [target step][source position]."""
    S = model.spec.source_length
    pred, w = greedy(model, row[None, :S])
    return {"source": row[:S].tolist(), "target": row[S + 1 :].tolist(), "predicted": pred[0].tolist(),
            "weights": None if w is None else [[round(x, 5) for x in r] for r in w[0].tolist()]}


# ----------------------------------------------------------------------------- the gradient path

def path_layer(kind: str, d: int) -> nn.Module:
    if kind == "rnn":
        return nn.RNN(d, d, nonlinearity="tanh", batch_first=True)
    if kind == "lstm":
        return nn.LSTM(d, d, batch_first=True)
    if kind == "attention":
        return SelfAttention(d, 1, out_proj=False)  # one head, causal, scores divided by sqrt(d)
    raise AttnlabError(f"gradient_path: unknown kind {kind!r} (choose from {', '.join(PATH_KINDS)})")


def jacobian_norms(kind: str, T: int, d: int = 32, seed: int = 0) -> torch.Tensor:
    """||d y_T / d x_t||_F for every input position t = 1 ... T -> (T,) float64.

    An untrained layer with PyTorch's default initialisation (every RNN/LSTM weight and bias U(-1/sqrt(d),
    1/sqrt(d)); attention's q, k, v nn.Linear defaults), inputs x_t ~ N(0, I_d), in float64 so that a vanishing
    gradient is measured, not rounded to zero. One backward pass gives the whole Jacobian: the input is repeated
    d times in the batch and copy i pulls on output component i.
    """
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise AttnlabError(f"gradient_path: T must be a positive integer, got {T!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = path_layer(kind, d).double()
        x = torch.randn(1, T, d, dtype=torch.float64)
    x = x.expand(d, T, d).clone().requires_grad_()  # (d, T, d)
    y = layer(x)
    y = y[0] if isinstance(y, tuple) else y  # (d, T, d)
    y[:, -1].backward(torch.eye(d, dtype=torch.float64))
    return x.grad.pow(2).sum(dim=(0, 2)).sqrt()  # (T,): row i of each Jacobian came from copy i


def gradient_path(kind: str, T: int, d: int = 32, seed: int = 0) -> float:
    """The norm of the gradient that reaches the input at position 1 from the output at position T."""
    return jacobian_norms(kind, T, d, seed)[0].item()


def gradient_sweep(kinds=PATH_KINDS, lengths=(2, 4, 8, 16, 32, 64, 128, 256), d: int = 32,
                   seeds: int = 3) -> list[dict]:
    """Rows for a log-axis chart: kind, T, seed, grad (position 1 <- T) and relative (that over the mean norm
    of all T positions: 1 when the far input counts as much as the average one)."""
    rows = []
    for kind in kinds:
        for T in lengths:
            for seed in range(seeds):
                norms = jacobian_norms(kind, T, d, seed)
                rows.append({"kind": kind, "T": T, "seed": seed, "grad": norms[0].item(),
                             "relative": (norms[0] / norms.mean()).item()})
    return rows


# ----------------------------------------------------------------------------- the experiment (registry: seq2seq)

def settings(section: dict | None = None) -> dict:
    """A seq2seq section with the schema's defaults filled, checked: one line naming the first bad value."""
    from attnlab.config import validate

    s = validate({"profile": "smoke", "seq2seq": section or {}}, partial=True)["seq2seq"]
    check_section(s)
    return s


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    m = sum(values) / len(values)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else None
    return m, sd


def summary(runs: list[dict]) -> list[dict]:
    """Mean, standard deviation, min and max over seeds of each task x length x variant."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["task"], r["source_length"], r["variant"]), []).append(r)
    out = []
    for (task, S, variant), rs in groups.items():
        row = {"task": task, "source_length": S, "variant": variant, "seeds": len(rs)}
        for key in ACCURACIES:
            values = [r[key] for r in rs if r[key] is not None]  # a diverged run has none
            row[key], row[key + "_sd"] = mean_sd(values) if values else (None, None)
            row[key + "_min"], row[key + "_max"] = (min(values), max(values)) if values else (None, None)
        out.append(row)
    return out


def paired(runs: list[dict], task: str, a: tuple[str, int], b: tuple[str, int]) -> dict | None:
    """Token accuracy of (variant, length) a minus that of b, seed by seed (each seed's runs share their rows)
    -> mean, its standard error and how that was found, every seed's difference; None if a run is missing, the
    Diverged record (attnlab.errors) of the first run that diverged if one did.

    The error is the larger of two: the seed-to-seed spread of the differences over sqrt(seeds), and the
    held-out sampling error (each accuracy's error over sequences, the two added in quadrature, averaged over
    the seeds); one seed has only the second.
    """
    at = {(r["variant"], r["source_length"], r["seed"]): r for r in runs if r["task"] == task}
    seeds = sorted({seed for (_, _, seed) in at})
    pairs = [(at.get((*a, k)), at.get((*b, k))) for k in seeds]
    if not pairs or any(x is None or y is None for x, y in pairs):
        return None
    lost = next((r for pair in pairs for r in pair if r.get("status") == "diverged"), None)
    if lost:
        return diverged_record(f"seq2seq {lost['name']}", lost.get("diverged_at_step"))
    if any(x["token_accuracy"] is None or y["token_accuracy"] is None for x, y in pairs):
        return None
    diffs = [x["token_accuracy"] - y["token_accuracy"] for x, y in pairs]
    mean, sd = mean_sd(diffs)
    n = len(diffs)
    sampling = math.sqrt(sum(x["token_accuracy_se"] ** 2 + y["token_accuracy_se"] ** 2 for x, y in pairs)) / n
    seed_se = sd / math.sqrt(n) if sd is not None else None
    se, source = (seed_se, "seeds") if seed_se is not None and seed_se >= sampling else (sampling, "held-out rows")
    return {"mean": mean, "se": se, "se_from": source, "seed_se": seed_se, "sampling_se": sampling, "seeds": n,
            "per_seed": diffs}


def contrasts(runs: list[dict], s: dict) -> dict:
    """What the claims read, per task: the fixed vector's drop from the shortest to the longest length, and for
    every score function its gain over the fixed vector at the longest length and its own drop; then, over the
    tasks, each score function's smallest gain (the task it is on) and the largest ratio of a drop to none's;
    `wiring`: at every task and length, Bahdanau's variant minus each of Luong's, paired (the page's reading; no
    claim reads it). Where a run they need diverged, each of those is the Diverged record of that run."""
    short, long = min(s["lengths"]), max(s["lengths"])
    scores = [v for v in s["variants"] if v != "none"]
    out = {"shortest": short, "longest": long, "tasks": {}}
    for task in s["tasks"]:
        out["tasks"][task] = {
            "none_drop": paired(runs, task, ("none", short), ("none", long)),
            "gain_at_longest": {v: paired(runs, task, (v, long), ("none", long)) for v in scores},
            "drop": {v: paired(runs, task, (v, short), (v, long)) for v in scores}}
    worst, share = {}, None
    for v in scores:
        gains = [(t["gain_at_longest"][v], task) for task, t in out["tasks"].items() if t["gain_at_longest"][v]]
        lost = next((g for g, _ in gains if is_diverged(g)), None)
        if lost:
            worst[v] = lost
        elif gains:
            gain, task = min(gains, key=lambda g: g[0]["mean"])
            worst[v] = {**gain, "task": task}
        for t in out["tasks"].values():
            drop, none = t["drop"][v], t["none_drop"]
            if drop and none and not is_diverged(drop) and not is_diverged(none) and none["mean"] > 0:
                ratio = max(drop["mean"], 0) / none["mean"]
                share = ratio if share is None else max(share, ratio)
    lost = [d for t in out["tasks"].values() for d in (t["none_drop"], *t["drop"].values()) if is_diverged(d)]
    out["worst_gain"], out["largest_drop_share"] = worst, lost[0] if lost else share
    luong = [v for v in scores if WIRINGS[v] == "luong"]
    out["wiring"] = [{"task": task, "source_length": S, "luong": v, "difference": paired(runs, task, ("bahdanau", S),
                                                                                        (v, S))}
                     for task in s["tasks"] for S in sorted(s["lengths"]) for v in luong] if "bahdanau" in scores else []
    return out


def gradient_summary(sweep: list[dict]) -> dict:
    """Per layer, between the shortest and the longest T, each a mean over the seeds (the layer's random
    initialisations) of that seed's own: decades the gradient from output T to input 1 falls (log10 of the first
    over the last), that times T's growth (`times_T`: 1 when it falls as 1/T) and input 1's norm over the mean
    input's at the longest T (`relative_long`); the norms themselves as geometric means over the seeds, whose
    log10 ratio is `decades`. The claims (S1.3) recompute each from the rows, with its error over the seeds."""
    out = {}
    for kind in dict.fromkeys(r["kind"] for r in sweep):
        rows = [r for r in sweep if r["kind"] == kind]
        T0, T1 = min(r["T"] for r in rows), max(r["T"] for r in rows)
        at = {(r["T"], r["seed"]): r for r in rows}
        pairs = [(at[T0, k], at[T1, k]) for k in sorted({r["seed"] for r in rows})]  # (T0 row, T1 row) per seed
        decades = [math.log10(a["grad"] / b["grad"]) if b["grad"] > 0 else math.inf for a, b in pairs]
        mean = lambda xs: mean_sd(xs)[0]  # noqa: E731
        out[kind] = {"T_short": T0, "T_long": T1, "seeds": len(pairs),
                     "grad_short": geometric_mean(a["grad"] for a, _ in pairs),
                     "grad_long": geometric_mean(b["grad"] for _, b in pairs),
                     "decades": mean(decades),
                     "times_T": mean([b["grad"] * T1 / (a["grad"] * T0) for a, b in pairs]),
                     "relative_long": mean([b["relative"] for _, b in pairs])}
    return out


def run(cfg: dict, out_dir, *, progress: bool = False) -> dict:
    """Train every task x length x variant x seed of cfg["seq2seq"] through attnlab.train.train, into
    out_dir/<task>-S<len>-<variant> with its seed (layout.seeded; a killed run resumes from its checkpoint), and
    measure it.

    Seeds are the profile's (config.seeds); each (task, length, seed) has its own training and held-out rows, shared
    by every variant. -> {"settings", "wirings" (each variant's: attnlab.nn.spec.WIRINGS), "chance",
    "runs", "summary", "contrasts", "gradient_path", "gradient", "attention_map"}.
    """
    from attnlab.train import finished, train

    s = {**settings(cfg["seq2seq"]), "seeds": config.seeds(cfg)}
    out_dir = Path(out_dir)
    runs, amap = [], None
    total, done = len(s["tasks"]) * len(s["lengths"]) * len(s["seeds"]) * len(s["variants"]), 0
    for task in s["tasks"]:
        for S in s["lengths"]:
            for k, run_seed in enumerate(s["seeds"]):
                gen = torch.Generator().manual_seed(run_seed * 100003 + S * 101 + TASKS.index(task))
                rows = task_rows(task, s["train_rows"], S, s["vocab"], gen)
                held_out = task_rows(task, s["eval_rows"], S, s["vocab"], gen)  # the generator has moved on
                for variant in s["variants"]:
                    spec = Seq2SeqSpec(s["vocab"], S, s["cell"], variant, s["d_model"], s["bidirectional"],
                                       s["input_feeding"])
                    name = layout.seeded(f"{task}-S{S}-{variant}", run_seed)
                    run_cfg = {"seed": run_seed, "device": cfg.get("device", "auto"), "threads": cfg.get("threads"),
                               "profile": cfg.get("profile"), "train": s["train"]}
                    metrics = train(spec, run_cfg, rows, held_out, out_dir / name, name=name, experiment="seq2seq",
                                    progress=progress)
                    model = finished(out_dir / name, spec) if metrics["status"] == "ok" else None
                    acc = accuracy(model, held_out) if model is not None else dict.fromkeys(ACCURACIES)
                    runs.append({"task": task, "source_length": S, "variant": variant, "seed": run_seed,
                                 "name": name, **acc, "val_loss": metrics["val_loss"], "status": metrics["status"],
                                 "diverged_at_step": metrics["diverged_at_step"],
                                 "n_params": metrics["n_params"],
                                 "wall_seconds": metrics["provenance"]["wall_seconds"]})
                    done += 1
                    print(f"  [{done}/{total}] {name}: greedy token accuracy {acc['token_accuracy']}, "
                          f"sequence accuracy {acc['sequence_accuracy']}", flush=True)
                    if model is not None and S == max(s["lengths"]) and \
                            (task, variant, k) == (s["map"]["task"], s["map"]["variant"], 0):
                        amap = {"name": name, "task": task, "variant": variant, "source_length": S,
                                **attention_map(model, held_out[0])}
    g = s["gradient"]
    sweep = gradient_sweep(g["kinds"], g["lengths"], g["d"], g["seeds"])
    return {"settings": s, "wirings": {v: WIRINGS[v] for v in s["variants"]}, "chance": 1 / s["vocab"],
            "runs": runs, "summary": summary(runs),
            "contrasts": contrasts(runs, s), "gradient_path": sweep, "gradient": gradient_summary(sweep),
            "attention_map": amap}


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance
    from attnlab.train import job_device

    out_path, device = Path(out_path), job_device(cfg)
    return provenance.measured(cfg, out_path, lambda: run(cfg, out_path.parent), device=device)
