"""The one training loop: seeded AdamW with optional warmup, evaluation, checkpoint/resume, probes."""
from __future__ import annotations

import contextlib
import csv
import hashlib
import inspect
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from tqdm import tqdm

from attnlab import layout, provenance, registry
from attnlab.config import digest
from attnlab.errors import AttnlabError, Diverged
from attnlab.nn.model import build, param_breakdown, pool_kv_heads
from attnlab.nn.spec import ModelSpec

MODEL_CODE = [Path(__file__).parent / "nn" / name
              for name in ("attention.py", "approx.py", "model.py", "spec.py")] + [Path(__file__)]
EVAL_METHOD = ("consecutive non-overlapping windows of `context` tokens covering the split, "
               "every position scored; perplexity = exp(mean cross-entropy)")

# A probe is called as probe(step, model, batch_loss) after each optimiser step and returns a dict
# of scalars (or None); its rows land in the run's probes file (layout.PROBES).
Probe = Callable[[int, torch.nn.Module, float], "dict | None"]


def code_hash(spec=None) -> str:
    """The model code's hash; a spec that builds its own model (spec.build()) adds the file that defines it."""
    h = hashlib.sha256()
    for path in MODEL_CODE + ([Path(inspect.getfile(type(spec)))] if hasattr(spec, "build") else []):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def job_device(cfg: dict) -> torch.device:
    """A job's device (the profile's `device`, default auto), with torch's threads set to the profile's `threads`."""
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    return pick_device(cfg.get("device", "auto"))


SPEED = {"precision": "fp32", "compile": False, "adamw": "default"}  # unset: today's behaviour (and config hashes)


def speed(tc: dict) -> dict:
    """A train section's speed settings, each at its default where the section leaves it unset."""
    return {key: tc.get(key, default) for key, default in SPEED.items()}


def check_speed(tc: dict) -> None:
    """Refuse speed settings this machine cannot honour, before any work (the schema has checked their values)."""
    if tc.get("compile") and not any(shutil.which(c) for c in (os.environ.get("CXX"), "g++", "c++", "clang++") if c):
        raise AttnlabError("train.compile: true needs a C++ compiler for inductor (g++, c++ or clang++ on PATH, or "
                           "$CXX), and none was found: install one or set train.compile: false")


def autocast(precision: str, device) -> contextlib.AbstractContextManager:
    """bf16: autocast of the forward (and so the backward) on the device; weights and optimiser state stay fp32."""
    if precision == "bf16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def optimizer(model: torch.nn.Module, tc: dict) -> torch.optim.AdamW:
    """AdamW at the section's rate and decay, in the implementation `adamw` names. The default is foreach: on a
    CPU it computes, bit for bit, what torch's own choice there (one tensor at a time) computes, in fewer calls
    (tests/test_speed.py trains both and compares the weights); on CUDA it is torch's own choice. fused differs
    in the last bits, so it stays a setting."""
    impl = speed(tc)["adamw"]
    return torch.optim.AdamW(model.parameters(), lr=tc["lr"], weight_decay=tc.get("weight_decay", 0.01),
                             **{"foreach" if impl == "default" else impl: True})


def stepping(model: torch.nn.Module, tc: dict) -> torch.nn.Module:
    """What a training step calls: the model itself, or compiled by inductor (sharing its weights)."""
    return torch.compile(model) if speed(tc)["compile"] else model


def windows(tokens: torch.Tensor, context: int, limit: int | None = None):
    """Inputs and targets of consecutive non-overlapping windows: (N, context) each. Tokens in rows
    (N, context + 1) are sequences of their own (generated tasks): each row is one window."""
    if tokens.dim() == 2:
        check_rows(tokens, context)
        return tokens[:limit, :-1], tokens[:limit, 1:]
    n = (len(tokens) - 1) // context
    if limit is not None:
        n = min(n, limit)
    x = tokens[: n * context].view(n, context)
    y = tokens[1 : n * context + 1].view(n, context)
    return x, y


def check_rows(tokens: torch.Tensor, context: int) -> None:
    if tokens.size(1) != context + 1:
        raise AttnlabError(f"sequences of {tokens.size(1)} tokens do not fit a context of {context} "
                           f"(each row is one window: context + 1 tokens)")


def sample_batch(tokens: torch.Tensor, context: int, batch_size: int, gen: torch.Generator):
    """A training batch (B, context) of inputs and targets: random windows of a stream, or random rows."""
    if tokens.dim() == 2:
        rows = torch.randint(len(tokens), (batch_size,), generator=gen)
        return tokens[rows, :-1], tokens[rows, 1:]
    starts = torch.randint(len(tokens) - context - 1, (batch_size,), generator=gen)
    return (torch.stack([tokens[s : s + context] for s in starts]),
            torch.stack([tokens[s + 1 : s + context + 1] for s in starts]))


EVAL_BLOCKS = 20  # contiguous stretches of a split, scored apart: the evaluation's own sampling error


@dataclass
class Scored:
    loss: float                  # mean cross-entropy over every scored token
    tokens: int                  # how many were scored
    blocks: list[list] = field(default_factory=list)  # [mean loss, tokens] of EVAL_BLOCKS stretches, in order


@torch.no_grad()
def evaluate(model, tokens, context, batch_size=64, limit=None, device="cpu", blocks: bool = False,
             precision: str = "fp32") -> Scored:
    """Mean cross-entropy over windows of the split; with `blocks`, also per stretch of the split. `precision`:
    the forward's (a model trained in bf16 is scored in bf16)."""
    was_training = model.training
    model.eval()
    x, y = windows(tokens, context, limit)
    total, per_token = 0.0, []
    for i in range(0, len(x), batch_size):
        xb, yb = x[i : i + batch_size].to(device), y[i : i + batch_size].to(device)
        with autocast(precision, device):
            logits, loss = model(xb, yb)
        total += loss.item() * yb.numel()
        if blocks:  # windows are consecutive, so flattening keeps the split's order
            per_token.append(F.cross_entropy(logits.float().flatten(0, 1), yb.flatten(),
                                             reduction="none").double().cpu())
    model.train(was_training)
    scored = Scored(total / y.numel(), y.numel())
    if blocks:
        for part in torch.tensor_split(torch.cat(per_token), EVAL_BLOCKS):
            scored.blocks.append([round(part.mean().item(), 6), part.numel()])
    return scored


MAX_LOSS = math.log(sys.float_info.max)  # above it exp(loss) overflows: the perplexity is not a finite number


def diverged(loss: float) -> bool:
    return not math.isfinite(loss) or loss >= MAX_LOSS


def lr_at(step: int, lr: float, warmup: int) -> float:
    return lr * min(1.0, (step + 1) / warmup) if warmup else lr


def perplexity(loss: float) -> float | None:
    """exp(loss), or None where that is not a finite number (JSON has no infinity)."""
    return None if diverged(loss) else math.exp(loss)


def load_checkpoint(path: Path, device, name: str) -> dict | None:
    """The checkpoint at `path`, or None; one that cannot be read (empty, truncated, garbage) is set aside."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        if not isinstance(state, dict):
            raise ValueError(f"holds a {type(state).__name__}, not a checkpoint")
        return state
    except Exception as err:  # torch raises many types for a damaged file; each means the same here
        set_aside(path, name, f"it cannot be read ({type(err).__name__}: {first_line(err)})")
        return None


def first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [""])[0][:160]


def set_aside(path: Path, name: str, why: str) -> None:
    bad = path.with_name(path.name + ".bad")
    os.replace(path, bad)
    print(f"[{name}] checkpoint {path} set aside as {bad.name}: {why}; starting afresh", file=sys.stderr)


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    keys = list(dict.fromkeys(k for row in rows for k in row))

    def write(tmp: Path):
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)

    provenance.replace_into(path, write)


def train(spec: ModelSpec, cfg: dict, train_tokens: torch.Tensor, val_tokens: torch.Tensor, out_dir: Path,
          *, name: str, experiment: str = "ladder", probes: Sequence[Probe] = (), progress: bool = True,
          init: tuple[str, dict] | None = None) -> dict:
    """Train `spec` with cfg['train'] settings; write its run file, curve (and probes) into out_dir (attnlab.layout).

    init: (the checkpoint's path, relative to results/<profile>/; its weights) to start from instead of a fresh
    initialisation (up-training); the run file records the run and seed it came from.
    Resumes from its checkpoint in out_dir (layout.CHECKPOINT) when it belongs to the same spec, settings, seed and
    model code; a checkpoint that cannot be read is set aside (.bad added to its name) and the run starts afresh.
    A loss whose perplexity is not a finite number (NaN, inf, or past exp's range) ends the run with status
    'diverged', not an exception.
    """
    t_start = time.perf_counter()
    tc, seed = cfg["train"], cfg["seed"]
    check_speed(tc)
    fast = speed(tc)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = job_device(cfg)
    run_id = digest({"spec": spec.to_dict(), "train": tc, "seed": seed, "code": code_hash(spec),
                     "data": [list(train_tokens.shape), list(val_tokens.shape), int(train_tokens[:64].sum())],
                     "init": None if init is None else [init[0], digest({k: float(v.double().sum())
                                                                         for k, v in init[1].items()})]})

    def start(state: dict | None):
        """Model, optimiser, batch sampler and progress: fresh, or as checkpoint `state` left them."""
        torch.manual_seed(seed)
        model = make_model(spec).to(device)
        opt = optimizer(model, tc)
        gen = torch.Generator().manual_seed(seed)
        if state is None:
            if init is not None:
                model.load_state_dict(init[1])
            return model, opt, gen, 0, [], [], None, 0.0
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        torch.set_rng_state(state["rng"])
        return model, opt, gen, state["step"], state["curve"], state["probes"], state["step"], state["train_seconds"]

    ckpt_path = out_dir / layout.CHECKPOINT
    state = load_checkpoint(ckpt_path, device, name)
    if state is not None and state.get("run_id") != run_id:  # another run's weights must not outlive this one
        ckpt_path.unlink()
        print(f"[{name}] checkpoint belongs to other settings or code: removed; starting afresh", file=sys.stderr)
        state = None
    try:
        model, opt, gen, step, curve, probe_rows, resumed_from, train_seconds = start(state)
    except (KeyError, RuntimeError, TypeError, ValueError) as err:  # readable, but not a whole checkpoint
        set_aside(ckpt_path, name, f"its contents do not fit this run ({type(err).__name__}: {first_line(err)})")
        model, opt, gen, step, curve, probe_rows, resumed_from, train_seconds = start(None)
    # the wall time of the processes before this one, up to their last checkpoint: a resumed run's provenance counts
    # its whole training, not only its last process (a checkpoint from before this was kept holds none: 0)
    earlier = float(state.get("wall_seconds", 0.0)) if resumed_from is not None else 0.0
    if resumed_from is not None:
        print(f"[{name}] resuming from step {step}", file=sys.stderr)
    status, diverged_at = "ok", None

    def checkpoint():
        provenance.save_torch(ckpt_path, {"run_id": run_id, "config_hash": digest(cfg), "model": model.state_dict(),
                                          "opt": opt.state_dict(), "gen": gen.get_state(),
                                          "rng": torch.get_rng_state(), "step": step, "curve": curve,
                                          "probes": probe_rows, "train_seconds": train_seconds,
                                          "wall_seconds": earlier + time.perf_counter() - t_start})

    T, B = spec.context, tc["batch_size"]
    if train_tokens.dim() == 2:
        check_rows(train_tokens, T)
    elif len(train_tokens) <= T + 1:
        raise AttnlabError(f"training split has {len(train_tokens)} tokens, fewer than one window of {T + 1}")
    model.train()
    forward = stepping(model, tc)
    compile_seconds = None  # with compile: the first step's time, compilation included (counted in train_seconds)
    if step == 0:  # the probes' view of the untrained model
        for probe in probes:
            found = probe(0, model, float("nan"))
            if found:
                probe_rows.append({"step": 0, **found})
    bar = tqdm(total=tc["steps"], initial=step, desc=name, disable=not progress, file=sys.stderr,
               mininterval=1.0 if sys.stderr.isatty() else 10.0, dynamic_ncols=True)
    while step < tc["steps"]:
        t0 = time.perf_counter()
        xb, yb = (t.to(device) for t in sample_batch(train_tokens, T, B, gen))
        lr = lr_at(step, tc["lr"], tc["warmup_steps"])
        for group in opt.param_groups:
            group["lr"] = lr
        with autocast(fast["precision"], device):
            _, loss = forward(xb, yb)
        loss_value = loss.item()
        if diverged(loss_value):  # step + 1: the step this loss belongs to, counted as the curve counts
            status, diverged_at = "diverged", step + 1
            curve.append({"step": step + 1, "lr": lr, "train_loss": loss_value, "val_loss": None})
            print(f"[{name}] loss became {loss_value} at step {step + 1}: recorded as diverged", file=sys.stderr)
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if tc["grad_clip"]:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc["grad_clip"])
        opt.step()
        step += 1
        train_seconds += time.perf_counter() - t0
        if fast["compile"] and compile_seconds is None:
            compile_seconds = round(time.perf_counter() - t0, 3)
        row = {"step": step, "lr": lr, "train_loss": loss_value, "val_loss": None}
        if step % tc["eval_every"] == 0 or step == tc["steps"]:
            row["val_loss"] = evaluate(model, val_tokens, T, B, tc["eval_windows"], device,
                                       precision=fast["precision"]).loss
        curve.append(row)
        for probe in probes:
            found = probe(step, model, loss_value)
            if found:
                probe_rows.append({"step": step, **found})
        if step % tc["ckpt_every"] == 0 and step < tc["steps"]:
            checkpoint()
        bar.update(1)
        bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
    bar.close()

    metrics = {"name": name, "experiment": experiment, "spec": spec.to_dict(),
               "n_params": sum(p.numel() for p in model.parameters()),
               "param_breakdown": param_breakdown(model), "status": status, "diverged_at_step": diverged_at,
               "steps": step, "val_loss": None, "val_ppl": None, "train_loss": None, "train_ppl": None,
               "tokens_per_second": round(step * B * T / train_seconds, 1) if train_seconds else None,
               **({"compile_seconds": compile_seconds} if fast["compile"] else {}),
               "resumed_from_step": resumed_from, "wall_seconds_before_resume": round(earlier, 3) if earlier else None,
               "run_id": run_id,
               "init_from": None if init is None else layout.parse(init[0]).source(),
               "probes_first": probe_rows[0] if probe_rows else None,  # the full series is in the probes file
               "probes_last": probe_rows[-1] if probe_rows else None}
    if status == "ok":
        checkpoint()  # the finished model, for later analysis
        val = evaluate(model, val_tokens, T, B, None, device, blocks=True, precision=fast["precision"])
        train_eval = None if tc["train_eval_tokens"] is None else tc["train_eval_tokens"] // T
        trn = evaluate(model, train_tokens, T, B, train_eval, device, blocks=True, precision=fast["precision"])
        if diverged(val.loss) or diverged(trn.loss):  # trained to the end, but to no finite perplexity
            status, diverged_at = "diverged", step
            metrics.update(status=status, diverged_at_step=step)
            print(f"[{name}] final loss {val.loss} (val), {trn.loss} (train): recorded as diverged",
                  file=sys.stderr)
    if status == "ok":
        metrics.update(val_loss=val.loss, val_ppl=math.exp(val.loss), train_loss=trn.loss,
                       train_ppl=math.exp(trn.loss))
        metrics["eval"] = {"method": EVAL_METHOD, "precision": fast["precision"], "val_tokens_scored": val.tokens,
                           "train_tokens_scored": trn.tokens,
                           "blocks": EVAL_BLOCKS, "val_blocks": val.blocks, "train_blocks": trn.blocks}
        if tc.get("eval_contexts"):  # the same model read through longer (or shorter) windows
            at = {str(n): evaluate(model, val_tokens, n, B, None, device, blocks=True, precision=fast["precision"])
                  for n in tc["eval_contexts"]}
            metrics["val_ppl_at"] = {n: perplexity(a.loss) for n, a in at.items()}
            metrics["eval"]["val_blocks_at"] = {n: a.blocks for n, a in at.items()}
    else:
        metrics["eval"] = {"method": EVAL_METHOD, "val_tokens_scored": 0, "train_tokens_scored": 0}
        ckpt_path.unlink(missing_ok=True)  # a diverged run leaves no weights to load
    metrics["provenance"] = provenance.record(cfg, device=device, wall_seconds=earlier + time.perf_counter() - t_start,
                                              speed={**fast, "threads": cfg.get("threads"),
                                                     "torch_threads": torch.get_num_threads()})
    _write_csv(out_dir / layout.CURVE, curve)
    _write_csv(out_dir / layout.PROBES, probe_rows)
    provenance.write_json(out_dir / layout.METRICS, metrics)
    return metrics


def make_model(spec):
    """A fresh model of `spec`: an LM for a ModelSpec, or what a spec that builds its own model builds."""
    return spec.build() if hasattr(spec, "build") else build(spec)


def finished_state(run_dir) -> tuple[dict, dict]:
    """(run file, checkpoint) of the finished training run in `run_dir`, once shown to be one run's: the
    checkpoint's run id and settings hash are the run file's, and it holds the run's last step. A diverged run
    raises Diverged; any other run without its own finished weights, AttnlabError (one line: the run and why)."""
    run_dir = Path(run_dir)
    metrics_path, ckpt_path = run_dir / layout.METRICS, run_dir / layout.CHECKPOINT
    if not metrics_path.is_file():
        raise AttnlabError(f"run {run_dir} has no {layout.METRICS}: it has not finished (train it first)")
    m = provenance.read_json(metrics_path)
    if m.get("status") == "diverged":
        name = m.get("name") or run_dir.name  # a run of the profile is known by its name; an analysis's, with it
        name = name if m.get("experiment") in registry.training() else f"{m.get('experiment')} {name}"
        raise Diverged(name, m.get("diverged_at_step"), str(run_dir), m.get("init_diverged"))
    if m.get("status") != "ok":
        raise AttnlabError(f"run {run_dir} did not finish: its status is {m.get('status')!r}")
    if not ckpt_path.is_file():
        raise AttnlabError(f"run {run_dir} has no {ckpt_path.name}: its finished weights are gone (rerun it)")
    try:
        state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for a damaged file; each means the same here
        raise AttnlabError(f"run {run_dir}: {ckpt_path.name} cannot be read ({type(err).__name__}: "
                           f"{first_line(err)}); rerun it") from None
    ours = (m.get("run_id"), (m.get("provenance") or {}).get("config_hash"))
    theirs = (state.get("run_id"), state.get("config_hash")) if isinstance(state, dict) else (None, None)
    if theirs != ours:
        raise AttnlabError(f"run {run_dir}: {ckpt_path.name} belongs to another run (run id {theirs[0]}, settings "
                           f"{theirs[1]}; the run file's are {ours[0]}, {ours[1]}): rerun it")
    if state.get("step") != m.get("steps"):
        raise AttnlabError(f"run {run_dir}: {ckpt_path.name} holds step {state.get('step')}, not the finished "
                           f"run's last step {m.get('steps')}: rerun it")
    return m, state


def finished(run_dir, spec=None):
    """The finished model of the training run in `run_dir` (see finished_state: a diverged run raises Diverged),
    in eval mode. `spec`: the model's spec; default, the ModelSpec its run file records."""
    m, state = finished_state(run_dir)
    model = make_model(ModelSpec(**m["spec"]) if spec is None else spec)
    model.load_state_dict(state["model"])
    return model.eval()


def initial_weights(cfg: dict, run: dict, spec, out: Path) -> tuple[str, dict]:
    """The finished weights of the run this one starts from, at the same seed (out is this run's folder,
    results/<profile>/ then layout.run_dir), pooled to this run's key/value heads: (the path of its checkpoint
    relative to results/<profile>/, the weights). Raises Diverged where that run diverged."""
    from attnlab.runs import find_run, spec_from_config

    source = run["init_from"]
    experiment, _ = find_run(cfg, source)
    seed, results = layout.seed_of_folder(out.name), out.parents[2]
    folder = results / layout.run_dir(experiment, source, seed)
    if not (folder / layout.METRICS).is_file():
        raise AttnlabError(f"run {out.parent.name} starts from run {source}'s weights, and {folder / layout.METRICS} "
                           f"is not there: train {source} ({out.name}) first")
    _, state = finished_state(folder)
    where = layout.run_file(experiment, source, seed, layout.CHECKPOINT)
    return where, pool_kv_heads(state["model"], spec_from_config(cfg, source), spec)


def not_started(spec, cfg: dict, out_dir: Path, *, name: str, experiment: str, source: Diverged) -> dict:
    """The run file of a run that starts from another run's weights where that run diverged: it is recorded as
    diverged too, at no step of its own (init_diverged names the run it starts from), with an empty curve."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / layout.CHECKPOINT).unlink(missing_ok=True)
    model = make_model(spec)
    metrics = {"name": name, "experiment": experiment, "spec": spec.to_dict(),
               "n_params": sum(p.numel() for p in model.parameters()), "param_breakdown": param_breakdown(model),
               "status": "diverged", "diverged_at_step": None, "steps": 0,
               "init_from": {"run": source.record["run"], "seed": cfg["seed"]},
               "init_diverged": source.record,
               "val_loss": None, "val_ppl": None, "train_loss": None, "train_ppl": None,
               "eval": {"method": EVAL_METHOD, "val_tokens_scored": 0, "train_tokens_scored": 0},
               "provenance": provenance.record(cfg, device=pick_device(cfg.get("device", "auto")))}
    (out_dir / layout.CURVE).write_text("step,lr,train_loss,val_loss\n")
    (out_dir / layout.PROBES).unlink(missing_ok=True)
    provenance.write_json(out_dir / layout.METRICS, metrics)
    print(f"[{name}] starts from run {source.record['run']}, which diverged at step "
          f"{source.record['diverged_at_step']}: recorded as diverged, not trained", file=sys.stderr)
    return metrics
