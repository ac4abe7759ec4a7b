"""S9: is attention explanation? Jain & Wallace (NAACL 2019) against Wiegreffe & Pinter (EMNLP 2019), measured.

The setting: a trained LM predicts the next token at one scored position `pos` of each example (e.g. the word
after "so the"); the *output* is its softmax distribution over the vocabulary at `pos`; the *attention* studied
is one layer's row of query `pos` (default: the last attention layer).

Choices, stated once:
- Multi-head: an intervention replaces the row at `pos` of *every* head of the layer (all other rows, and every
  other layer, keep their learned weights). A permutation moves the same keys in every head; an adversary
  chooses one row per head. Divergences and correlations are of the head-mean row, the one distribution a viewer
  is shown and the one comparable across seeds (heads have no order shared between two trainings); taus are also
  given per head.
- JSD in nats (natural log), so 0 <= JSD <= ln 2; TV (total variation) = half the L1 distance, in [0, 1].
- Leave-one-out: TV between the output at `pos` before and after position j's token is replaced by `neutral`
  (neutral=None: removed, the later tokens moving one place left and the output read one place earlier).
- Gradient importance: the L2 norm, per position, of the gradient of the predicted (argmax) token's
  log-probability at `pos` with respect to that position's token embedding; as Jain & Wallace do, the studied
  layer's attention is held fixed (detached), so the gradient says how the output moves with the inputs for
  the attention as it is.
- Only positions <= pos can reach the output (the model is causal), so every function runs the prefix up to the
  largest `pos` of the batch; (B, T) and (B, H, T) results are padded back to the batch's T with zeros.
"""
from __future__ import annotations

import math
import statistics
from contextlib import contextmanager, nullcontext

import torch
import torch.nn.functional as F

from attnlab import layout
from attnlab.errors import AttnlabError, Diverged
from attnlab.experiments.explanation import derive
from attnlab.nn.model import SelfAttention, recording, replaced
from attnlab.stats import bootstrap_se, mean_se

LN2 = math.log(2.0)
JSD_FLOOR = 1e-6  # nats: an adversarial row closer than this to the learned one has not moved (it is the same row)
SPREAD = 1e-3     # share of the learned row's mass an adversarial search starts spread over the visible keys
PENALTY = 500.0   # weight of the TV bound's violation in the relaxed objective (Jain & Wallace use a hinge too)

DEFINITIONS = {
    "output": "softmax distribution over the vocabulary at the scored position pos",
    "attention": "weights of query pos in the studied layer; head-mean unless per head",
    "intervention": "the row of query pos is replaced in every head of the studied layer; all else is learned",
    "tv": "total variation distance, 0.5 * sum |p - q|, in [0, 1]",
    "jsd": "Jensen-Shannon divergence of head-mean rows, natural log (nats), in [0, ln 2]",
    "gradient": "L2 norm per position of d log p(predicted token at pos) / d token embedding, attention detached",
    "loo": "TV of the output when one position's token is replaced by the neutral token (or removed)",
    "kendall_tau": "tau-b over the visible positions 0..pos; None where a ranking is constant",
    "adversarial": "Adam on softmax logits of the row at pos (visible keys only), maximising JSD from the learned "
                   "row plus pairwise JSD between the k rows, hinge penalty on TV above eps; each row reports the "
                   "best iterate whose TV (measured in the same forward pass) is <= eps and JSD > floor",
    "uniform": "row at pos (or every row of the layer) set to uniform weights over the keys it may see",
    "seeds": "JSD between the head-mean rows at pos of two models trained with different seeds",
    "jsd_under_bound": "per example, the largest JSD of an adversarial row whose output stayed within TV eps, 0 "
                       "where none did; its median over examples, with a bootstrap standard error over examples",
}


# --- distances and ranks -------------------------------------------------------------------------------

def tv(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Total variation distance along the last dim: (..., V) -> (...)."""
    return 0.5 * (p - q).abs().sum(-1)


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence in nats along the last dim: (..., T) -> (...); 0 log 0 = 0, so at most ln 2."""
    m = 0.5 * (p + q)

    def kl(a):  # KL(a || m), terms with a = 0 contribute nothing (and no NaN gradient)
        ratio = torch.where(a > 0, a / m.clamp_min(1e-30), torch.ones_like(a))
        return (a * ratio.log()).sum(-1)

    return 0.5 * kl(p) + 0.5 * kl(q)


def kendall_tau(a: torch.Tensor, b: torch.Tensor) -> float:
    """Kendall's tau-b of two 1-D vectors: (C - D) / sqrt((n0 - n1)(n0 - n2)); NaN when either is constant.

    Over all pairs i < j: sign(a_i - a_j) * sign(b_i - b_j) is +1 (concordant), -1 (discordant) or 0 (a tie in
    either); n0 - n1 counts the pairs not tied in a, n0 - n2 those not tied in b.
    """
    a, b = a.double().flatten(), b.double().flatten()
    sa = torch.sign(a[:, None] - a[None, :]).triu(1)  # (n, n), pairs i < j
    sb = torch.sign(b[:, None] - b[None, :]).triu(1)
    denom = math.sqrt((sa != 0).sum().item() * (sb != 0).sum().item())
    return (sa * sb).sum().item() / denom if denom else float("nan")


def taus(a: torch.Tensor, b: torch.Tensor, pos: torch.Tensor) -> list[float]:
    """Kendall's tau-b of each example's a and b over its visible positions: (B, T), (B, T) -> B floats."""
    return [kendall_tau(a[i, : p + 1], b[i, : p + 1]) for i, p in enumerate(pos.tolist())]


# --- running the model with its attention kept or replaced ---------------------------------------------

def attention_layers(model) -> list[SelfAttention]:
    layers = [m for m in model.modules() if isinstance(m, SelfAttention)]
    if not layers:
        raise AttnlabError(f"S9 needs learned attention; this model's mixer is '{model.spec.mixer}'")
    return layers


def positions(pos, B: int, device=None) -> torch.Tensor:
    """pos as an int or B ints -> (B,) long."""
    pos = torch.as_tensor(pos, dtype=torch.long, device=device)
    pos = pos.expand(B).clone() if pos.dim() == 0 else pos
    if pos.shape != (B,):
        raise AttnlabError(f"one scored position per example: {B} examples, pos of shape {tuple(pos.shape)}")
    return pos


def prefix(model, tokens: torch.Tensor, pos) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens up to the largest pos (B, Tc), pos (B,)) on the model's device. Later tokens cannot matter."""
    tokens = tokens.to(next(model.parameters()).device)
    pos = positions(pos, tokens.size(0), tokens.device)
    if pos.min() < 0 or pos.max() >= tokens.size(1):
        raise AttnlabError(f"scored positions must lie in 0..{tokens.size(1) - 1}, got {pos.tolist()}")
    return tokens[:, : int(pos.max()) + 1], pos


def pad(x: torch.Tensor, T: int) -> torch.Tensor:
    """Zeros for the positions after the prefix: (..., Tc) -> (..., T)."""
    return F.pad(x, (0, T - x.size(-1)))


def at(logits: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """The output distribution at each example's pos: (B, T, V) -> (B, V)."""
    return logits[torch.arange(len(pos), device=pos.device), pos].float().softmax(-1)


def forward(model, attn: SelfAttention, tokens: torch.Tensor, weights=None, keep: bool = False):
    """logits (B, T, V), with `attn` mixing by `weights` (B, H, T, T) if given; and its own weights if keep."""
    with replaced(attn, weights), (recording(attn) if keep else nullcontext()) as kept:
        logits, _ = model(tokens)
        return logits, (kept()[0]["weights"] if keep else None)


def learned(model, attn, tokens):
    """logits (B, T, V) and the layer's weights (B, H, T, T) of a plain pass.

    The weights come from the explicit path, so a pass that mixes with these very weights repeats the same
    arithmetic and gives the same output bit for bit."""
    return forward(model, attn, tokens, keep=True)


def with_row(weights: torch.Tensor, pos: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The layer's weights (B, H, T, T) with every head's row of query pos replaced by rows (B, H, T)."""
    B, H, T, _ = weights.shape
    is_pos = (torch.arange(T, device=pos.device) == pos[:, None])[:, None, :, None]  # (B, 1, T, 1)
    return torch.where(is_pos, rows[:, :, None, :].expand(B, H, T, T), weights)


def visible(pos: torch.Tensor, T: int) -> torch.Tensor:
    """(B, 1, T) True for the keys query pos may see: 0..pos."""
    return (torch.arange(T, device=pos.device) <= pos[:, None])[:, None, :]


@contextmanager
def evaluating(model):
    """Eval mode (no dropout) for the duration, the earlier mode after."""
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)


@torch.no_grad()
def attention_row(model, tokens: torch.Tensor, pos, layer: int = -1) -> torch.Tensor:
    """The learned weights of query pos in layer `layer`: (B, T) tokens -> (B, H, T)."""
    T = tokens.size(1)
    x, pos = prefix(model, tokens, pos)
    with evaluating(model):
        _, w = learned(model, attention_layers(model)[layer], x)
    return pad(w[torch.arange(len(pos), device=pos.device), :, pos], T)  # (B, H, T)


@torch.no_grad()
def output_at(model, tokens: torch.Tensor, pos, rows: torch.Tensor | None = None, layer: int = -1) -> torch.Tensor:
    """Output distribution (B, V) at pos, with the row of query pos in every head replaced by rows (B, H, T)
    (or (B, 1, T), the same row for every head) when given; rows=None is the model as trained. Rows should sum
    to 1 over the keys 0..pos and be 0 after pos (weight there would read the future)."""
    x, pos = prefix(model, tokens, pos)
    attn = attention_layers(model)[layer]
    with evaluating(model):
        logits, w = learned(model, attn, x)
        if rows is not None:
            rows = rows.to(w)[..., : x.size(1)].expand(-1, w.size(1), -1)
            logits, _ = forward(model, attn, x, with_row(w, pos, rows))
    return at(logits, pos)


# --- J&W 3: do attention weights agree with feature importance? -----------------------------------------

def gradient_importance(model, tokens: torch.Tensor, pos, layer: int = -1, detach_attention: bool = True):
    """|d log p(predicted) / d embedding| per position: (B, T). Zero after pos (the model is causal)."""
    T = tokens.size(1)
    x, pos = prefix(model, tokens, pos)
    attn = attention_layers(model)[layer]
    kept = {}

    def leaf(module, inp, out):  # the embeddings as a tensor to differentiate by, whatever requires_grad says
        kept["emb"] = out.detach().requires_grad_(True)
        return kept["emb"]

    hook = model.tok.register_forward_hook(leaf)
    try:
        with evaluating(model), torch.enable_grad():
            fixed = None
            if detach_attention:
                with torch.no_grad():
                    _, fixed = learned(model, attn, x)
            logits, _ = forward(model, attn, x, fixed)
            logp = logits[torch.arange(len(pos), device=pos.device), pos].float().log_softmax(-1)  # (B, V)
            chosen = logp.gather(1, logp.argmax(-1, keepdim=True)).sum()  # examples are independent
            (grad,) = torch.autograd.grad(chosen, kept["emb"])  # (B, Tc, d)
    finally:
        hook.remove()
    return pad(grad.float().norm(dim=-1), T)


@torch.no_grad()
def loo_importance(model, tokens: torch.Tensor, pos, neutral: int | None = None) -> torch.Tensor:
    """TV of the output at pos when position j's token is replaced by `neutral` (None: removed), for each j:
    (B, T), zero after pos."""
    T = tokens.size(1)
    x, pos = prefix(model, tokens, pos)
    if neutral is None and pos.min() < 1:
        raise AttnlabError("leave-one-out by removal needs pos >= 1 (removing the only token leaves no input)")
    B, Tc = x.shape
    with evaluating(model):
        base = at(model(x)[0], pos)
        out = torch.zeros(B, Tc, device=x.device)
        for j in range(Tc):
            if neutral is None:
                left = torch.cat([x[:, :j], x[:, j + 1:]], dim=1)  # (B, Tc - 1): j's token is gone
                changed = at(model(left)[0], pos - 1)
            else:
                left = x.clone()
                left[:, j] = neutral
                changed = at(model(left)[0], pos)
            out[:, j] = torch.where(j <= pos, tv(changed, base), 0.0)
    return pad(out, T)


# --- J&W 4.1: permuted attention ----------------------------------------------------------------------

@torch.no_grad()
def permutation_test(model, tokens: torch.Tensor, pos, layer: int = -1, n_perm: int = 16, seed: int = 0) -> dict:
    """Shuffle the visible weights of row pos (the same shuffle in every head), n_perm times per example.

    -> {"tv": (B, n_perm) TV from the original output, "argmax_changed": (B, n_perm) bool,
        "median_tv": (B,) median over the permutations}"""
    x, pos = prefix(model, tokens, pos)
    attn = attention_layers(model)[layer]
    gen = torch.Generator().manual_seed(seed)
    B, Tc = x.shape
    idx = torch.arange(B, device=x.device)
    with evaluating(model):
        logits, w = learned(model, attn, x)
        base = at(logits, pos)
        row = w[idx, :, pos]  # (B, H, Tc)
        tvs, changed = [], []
        for _ in range(n_perm):
            keys = torch.rand(B, Tc, generator=gen).to(x.device)
            keys = torch.where(visible(pos, Tc)[:, 0], keys, 2.0 + torch.arange(Tc, device=x.device))  # hidden stay
            perm = keys.argsort(-1)[:, None, :].expand_as(row)  # (B, H, Tc)
            out = at(forward(model, attn, x, with_row(w, pos, row.gather(-1, perm)))[0], pos)
            tvs.append(tv(out, base))
            changed.append(out.argmax(-1) != base.argmax(-1))
    tvs, changed = torch.stack(tvs, 1), torch.stack(changed, 1)  # (B, n_perm)
    return {"tv": tvs, "argmax_changed": changed, "median_tv": tvs.median(1).values}


# --- J&W 4.2: adversarial attention -------------------------------------------------------------------

def adversarial(model, tokens: torch.Tensor, pos, layer: int = -1, k: int = 4, eps: float = 0.01,
                steps: int = 300, lr: float = 0.1, penalty: float = PENALTY, seed: int = 0) -> dict:
    """Search, per example, k rows at pos (one per head each) far from the learned row with the output kept
    within TV eps of the original. Jain & Wallace's relaxed objective, maximised with Adam on row logits:

        sum_i JSD(a_i, learned) + 1/(k(k-1)) sum_{i<j} JSD(a_i, a_j) - penalty * sum_i max(0, TV_i - eps)

    JSD is of head-mean rows. Each of the k rows keeps its best iterate with TV <= eps (measured in the very
    forward pass that gave its gradient) and JSD > JSD_FLOOR; a row with none is infeasible and reports the
    moved iterate that came closest to the bound.

    -> {"learned": (B, H, T), "weights": (B, k, H, T), "jsd": (B, k), "tv": (B, k), "feasible": (B, k) bool,
        "max_jsd": (B,) best feasible JSD (NaN if none), "tv_at_max": (B,) (NaN if none),
        "argmax_changed": (B, k) bool}"""
    T = tokens.size(1)
    x, pos = prefix(model, tokens, pos)
    attn = attention_layers(model)[layer]
    B, Tc = x.shape
    with evaluating(model), torch.enable_grad():
        with torch.no_grad():
            logits, w = learned(model, attn, x)
        base = at(logits, pos)  # (B, V)
        row = w[torch.arange(B, device=pos.device), :, pos].float()  # (B, H, Tc)
        H = row.size(1)
        seen = visible(pos, Tc)  # (B, 1, Tc)
        xk, posk, wk = x.repeat(k, 1), pos.repeat(k), w.repeat(k, 1, 1, 1)  # example b, try i at i * B + b
        gen = torch.Generator().manual_seed(seed)
        noise = torch.randn(k, B, H, Tc, generator=gen).to(row)
        # start at the learned row with a thousandth of its mass spread over the visible keys: a key the softmax
        # gave ~0 would otherwise start with a logit so low that no gradient reaches it
        start = (1 - SPREAD) * row + SPREAD * seen / seen.sum(-1, keepdim=True)
        z = (start.clamp_min(1e-30).log() + 0.1 * noise).requires_grad_(True)  # (k, B, H, Tc)
        opt = torch.optim.Adam([z], lr=lr)

        best = {"jsd": torch.full((k, B), -1.0), "tv": torch.full((k, B), math.inf),
                "weights": row.detach().cpu().expand(k, B, H, Tc).clone(),
                "changed": torch.zeros(k, B, dtype=torch.bool)}
        closest = {key: value.clone() for key, value in best.items()}  # infeasible: the moved iterate of least TV
        for step in range(steps + 1):
            a = z.masked_fill(~seen, float("-inf")).softmax(-1)  # (k, B, H, Tc)
            out = at(forward(model, attn, xk, with_row(wk, posk, a.flatten(0, 1).to(w)))[0], posk).view(k, B, -1)
            t = tv(out, base)  # (k, B)
            mean = a.mean(2)  # (k, B, Tc) head-mean rows
            d = jsd(mean, row.mean(1))  # (k, B)
            with torch.no_grad():
                moved = d > JSD_FLOOR
                remember(best, moved & (t <= eps) & (d > best["jsd"].to(d)), d, t, a, out, base)
                remember(closest, moved & (t < closest["tv"].to(t)), d, t, a, out, base)
            if step == steps:
                break
            objective = d.sum()
            if k > 1:  # the k rows pushed apart from each other too
                objective = objective + sum(jsd(mean[i], mean[j]).sum() for i in range(k)
                                            for j in range(i + 1, k)) / (k * (k - 1))
            loss = -objective + penalty * (t - eps).clamp_min(0).sum()
            (z.grad,) = torch.autograd.grad(loss, [z])
            opt.step()

    feasible = best["jsd"] > 0  # (k, B)
    pick = {key: torch.where(feasible.view(k, B, *[1] * (v.dim() - 2)), v, closest[key])
            for key, v in best.items()}
    never = pick["jsd"] < 0  # a row that never moved past JSD_FLOOR: nothing to report
    pick["jsd"], pick["tv"] = pick["jsd"].masked_fill(never, math.nan), pick["tv"].masked_fill(never, math.nan)
    max_jsd = torch.where(feasible, pick["jsd"], -1.0).max(0)  # over the k rows
    some = feasible.any(0)
    return {"learned": pad(row.cpu(), T), "weights": pad(pick["weights"].transpose(0, 1), T),
            "jsd": pick["jsd"].T, "tv": pick["tv"].T, "feasible": feasible.T, "argmax_changed": pick["changed"].T,
            "max_jsd": torch.where(some, max_jsd.values, math.nan),
            "tv_at_max": torch.where(some, pick["tv"].gather(0, max_jsd.indices[None])[0], math.nan)}


def remember(record: dict, where: torch.Tensor, d, t, a, out, base) -> None:
    """Overwrite record's entries (k, B, ...) where `where` (k, B) holds."""
    where = where.cpu()
    record["jsd"][where] = d.detach().cpu()[where]
    record["tv"][where] = t.detach().cpu()[where]
    record["weights"][where] = a.detach().cpu()[where]
    record["changed"][where] = (out.argmax(-1) != base.argmax(-1)).cpu()[where]


# --- W&P: is attention needed at all? seed variance --------------------------------------------------

@torch.no_grad()
def uniform_baseline(model, tokens: torch.Tensor, pos, target=None, layer: int = -1) -> dict:
    """Wiegreffe & Pinter's frozen uniform attention, in the trained model: the row at pos (every head), or the
    whole layer (each query uniform over the keys it may see), set to uniform weights.

    -> {"tv_row", "tv_layer": (B,) TV from the original output, "changed_row", "changed_layer": (B,) argmax moved,
        "jsd_learned_uniform": (B,) how far the learned head-mean row is from uniform,
        and with target (B,): "correct_learned", "correct_row", "correct_layer": (B,) bool}"""
    x, pos = prefix(model, tokens, pos)
    attn = attention_layers(model)[layer]
    B, Tc = x.shape
    seen = visible(pos, Tc).float()  # (B, 1, Tc)
    flat = seen / seen.sum(-1, keepdim=True)
    causal = torch.ones(Tc, Tc, device=x.device).tril()
    with evaluating(model):
        logits, w = learned(model, attn, x)
        base = at(logits, pos)
        row_out = at(forward(model, attn, x, with_row(w, pos, flat.expand(-1, w.size(1), -1).to(w)))[0], pos)
        layer_w = (causal / causal.sum(-1, keepdim=True)).expand_as(w).to(w)
        layer_out = at(forward(model, attn, x, layer_w)[0], pos)
    res = {"tv_row": tv(row_out, base), "tv_layer": tv(layer_out, base),
           "changed_row": row_out.argmax(-1) != base.argmax(-1),
           "changed_layer": layer_out.argmax(-1) != base.argmax(-1),
           "jsd_learned_uniform": jsd(w[torch.arange(B, device=pos.device), :, pos].float().mean(1), flat[:, 0])}
    if target is not None:
        target = torch.as_tensor(target, device=x.device)
        res.update(correct_learned=base.argmax(-1) == target, correct_row=row_out.argmax(-1) == target,
                   correct_layer=layer_out.argmax(-1) == target)
    return res


def seed_jsd(model_a, model_b, tokens: torch.Tensor, pos, layer: int = -1) -> torch.Tensor:
    """JSD between two models' head-mean rows at pos: (B,). The yardstick for adversarial divergences."""
    a = attention_row(model_a, tokens, pos, layer).float().mean(1)
    b = attention_row(model_b, tokens, pos, layer).float().to(a.device).mean(1)
    return jsd(a, b)


# --- everything, as one JSON-able record ---------------------------------------------------------------

def explain(model, tokens: torch.Tensor, pos, target=None, *, layer: int = -1, neutral: int | None = None,
            n_perm: int = 16, k: int = 4, eps: float = 0.01, steps: int = 300, seed: int = 0, n_show: int = 8,
            other=None) -> dict:
    """All of S9 for a batch of examples: tokens (B, T) (anything after an example's pos is ignored), pos (B,)
    or an int, target (B,) or None; `other`: the same architecture trained with another seed, or None.

    Per-example lists (None where undefined) with their means/medians; JSON-able. "examples" holds, for the
    first n_show examples, the learned and adversarial rows (per head, visible keys 0..pos) for a viewer."""
    x, pos = prefix(model, tokens, pos)
    n_layers = len(attention_layers(model))
    B = x.size(0)
    row = attention_row(model, x, pos, layer)  # (B, H, Tc)
    mean_row = row.mean(1)
    grad = gradient_importance(model, x, pos, layer)
    loo = loo_importance(model, x, pos, neutral)
    base = output_at(model, x, pos, layer=layer)
    perm = permutation_test(model, x, pos, layer, n_perm, seed)
    adv = adversarial(model, x, pos, layer, k, eps, steps, seed=seed)
    uni = uniform_baseline(model, x, pos, target, layer)

    tau_grad, tau_loo = taus(mean_row, grad, pos), taus(mean_row, loo, pos)
    tau_ref = taus(grad, loo, pos)
    per_head = {name: [mean_of(taus(row[:, h], imp, pos)) for h in range(row.size(1))]
                for name, imp in (("gradient", grad), ("loo", loo))}
    changed = perm["argmax_changed"].float().mean(1)
    under = under_bound(adv["max_jsd"])
    out = {
        "layer": layer % n_layers, "n_heads": row.size(1), "n_examples": B, "pos": pos.tolist(),
        "definitions": {**DEFINITIONS, "neutral": "removed" if neutral is None else f"token {neutral}"},
        "predicted": base.argmax(-1).tolist(), "target": None if target is None else torch.as_tensor(target).tolist(),
        "correlation": {
            "tau_attention_gradient": floats(tau_grad), "tau_attention_loo": floats(tau_loo),
            "tau_gradient_loo": floats(tau_ref),
            "mean_tau_attention_gradient": mean_of(tau_grad), "mean_tau_attention_loo": mean_of(tau_loo),
            "mean_tau_gradient_loo": mean_of(tau_ref),
            "mean_tau_attention_gradient_per_head": per_head["gradient"],
            "mean_tau_attention_loo_per_head": per_head["loo"],
        },
        "permutation": {
            "n_perm": n_perm, "median_tv": floats(perm["median_tv"]), "argmax_changed": floats(changed),
            "median_median_tv": median_of(perm["median_tv"]), "mean_median_tv": mean_of(perm["median_tv"]),
            "mean_argmax_changed": mean_of(changed), "se_mean_median_tv": se_of_mean(perm["median_tv"]),
        },
        "adversarial": {
            "k": k, "eps": eps, "steps": steps, "jsd_max_possible": LN2,
            "max_jsd": floats(adv["max_jsd"]), "tv_at_max": floats(adv["tv_at_max"]),
            "feasible": adv["feasible"].any(1).tolist(), "n_feasible": int(adv["feasible"].any(1).sum()),
            "mean_max_jsd": mean_of(adv["max_jsd"]), "median_max_jsd": median_of(adv["max_jsd"]),
            "jsd_under_bound": floats(under), "median_jsd_under_bound": median_of(under),
            "se_median_jsd_under_bound": se_of_median(under, seed),
            "min_tv_infeasible": floats(torch.where(adv["feasible"].any(1), math.nan, adv["tv"].min(1).values)),
            "argmax_changed": adv["argmax_changed"].any(1).tolist(),
        },
        "uniform": {
            "tv_row": floats(uni["tv_row"]), "tv_layer": floats(uni["tv_layer"]),
            "mean_tv_row": mean_of(uni["tv_row"]), "mean_tv_layer": mean_of(uni["tv_layer"]),
            "changed_row": mean_of(uni["changed_row"].float()), "changed_layer": mean_of(uni["changed_layer"].float()),
            "jsd_learned_uniform": floats(uni["jsd_learned_uniform"]),
            "mean_jsd_learned_uniform": mean_of(uni["jsd_learned_uniform"]),
        },
        "accuracy": None, "seeds": None,
        "examples": [{"index": i, "pos": p, "learned": floats(row[i, :, : p + 1]),
                      "adversarial": floats(adv["weights"][i, :, :, : p + 1]),
                      "adversarial_jsd": floats(adv["jsd"][i]), "adversarial_tv": floats(adv["tv"][i]),
                      "adversarial_feasible": adv["feasible"][i].tolist()}
                     for i, p in enumerate(pos.tolist()[:n_show])],
    }
    if target is not None:
        keys = ("learned", "row", "layer")  # and each sentence's outcome: the accuracy lost is a paired difference
        out["accuracy"] = {**{key: mean_of(uni[f"correct_{key}"].float()) for key in keys},
                           "correct": {key: uni[f"correct_{key}"].tolist() for key in keys}}
    if other is not None:
        s = seed_jsd(model, other, x, pos, layer)
        out["seeds"] = {"jsd": floats(s), "mean_jsd": mean_of(s), "median_jsd": median_of(s)}
    return out


def under_bound(max_jsd: torch.Tensor) -> list[float]:
    """Per example, the adversaries' best JSD within the output bound, 0 where no row stayed within it (NaN):
    an example the adversary could not move counts against the claim instead of dropping out of it."""
    return [0.0 if math.isnan(v) else v for v in max_jsd.tolist()]


def se_of_median(values: list[float], seed: int = 0) -> float | None:
    """Bootstrap standard error, over examples, of their median."""
    if len(values) < 2:
        return None
    return floats(bootstrap_se({"x": values}, lambda r: statistics.median(r["x"]), seed=seed))


def se_of_mean(values) -> float | None:
    """Standard error, over examples, of their mean (sd / √n); None with fewer than two defined values."""
    v = defined(values)
    return floats(mean_se(v)[1]) if len(v) > 1 else None


def floats(x) -> list:
    """A tensor as nested lists of floats, 6 significant digits, NaN as None (JSON has no NaN)."""
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    if isinstance(x, list):
        return [floats(v) for v in x]
    return None if x is None or math.isnan(x) else float(f"{x:.6g}")


def defined(values) -> list[float]:
    values = values.tolist() if isinstance(values, torch.Tensor) else values
    return [v for v in values if v is not None and not math.isnan(v)]


def mean_of(values) -> float | None:
    v = defined(values)
    return floats(sum(v) / len(v)) if v else None


def median_of(values) -> float | None:
    v = defined(values)
    return floats(statistics.median(v)) if v else None


# ------------------------------------------------------------------ the experiment (registry: explanation)

def main(cfg: dict, out_path) -> dict:
    """S9 on E8's trained block: its held-out Winograd sentences, the word after "so the" as the output; a
    second model of the same kind, trained with another seed, for Wiegreffe and Pinter's yardstick. Where E8's
    block diverged, the result is its Diverged record (with the settings); where the second model did, "seeds" is."""
    from pathlib import Path

    from attnlab import provenance
    from attnlab.experiments.winograd import producer as wg
    from attnlab.train import finished, job_device

    out_path, device = Path(out_path), job_device(cfg)
    s, w = cfg["explanation"], cfg["winograd"]

    def run():
        vocab = wg.vocabulary(w)
        if s["neutral"] not in vocab:
            raise AttnlabError(f"config error at 'explanation.neutral': '{s['neutral']}' is not a word of E8's "
                               "vocabulary")
        trained, held = wg.split_pairs(w, "closed", torch.Generator().manual_seed(cfg["seed"]))
        data, test = wg.encode(w, trained, vocab), wg.encode(w, held, vocab)
        studied = f"E8 closed version, {s['model'].replace('_', ' ')}"
        try:
            model = finished(layout.results_of(out_path) / layout.model_dir("winograd", f"closed-{s['model']}"))
        except Diverged as err:
            print(f"  {err}: nothing to explain", flush=True)
            return {**err.record, "model": studied, "settings": s}
        other, other_diverged = None, None
        try:
            second = derive.second_seed(cfg)
            other, _ = wg.train_model({**cfg, "seed": second}, w, "closed", s["model"], data, test, vocab,
                                      layout.seed_dir(out_path.parent, second, first=cfg["seed"]))
        except Diverged as err:
            print(f"  the second seed's model: {err}", flush=True)
            other_diverged = err.record
        n = min(s["examples"], len(test["rows"]))
        rows = test["rows"][torch.randperm(len(test["rows"]), generator=torch.Generator().manual_seed(cfg["seed"]))[:n]]
        target = rows[:, test["pos"] + 1]
        result = explain(model, rows, test["pos"], target, neutral=vocab.index(s["neutral"]), n_perm=s["permutations"],
                         k=s["adversaries"], eps=s["eps"], steps=s["steps"], seed=cfg["seed"], n_show=s["show"],
                         other=other)
        if other_diverged:
            result["seeds"] = other_diverged
        result["words"] = [[vocab[t] for t in row[: test["pos"] + 1]] for row in rows[: s["show"]].tolist()]
        result["model"] = studied
        result["settings"] = s
        return result

    return provenance.measured(cfg, out_path, run, device=device)
