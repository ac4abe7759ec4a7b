"""Training tokens/s of the one-block model (ladder row L9) at every speed setting beside a plain PyTorch reference
in float32, and tokenizer timings.

Every setting runs in the same process, interleaved step by step (A B C ... A B C ...), on the same batches and
from the same weights, so whatever the machine is doing meanwhile slows all alike.
"""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

import torch

from attnlab import layout, provenance
from attnlab.bench import limit
from attnlab.bench.harness import interleaved, measure, setup
from attnlab.bench.reference import DESCRIPTION, copy_weights, from_spec
from attnlab.data.prepare import load_tokens
from attnlab.errors import AttnlabError
from attnlab.nn.model import build
from attnlab.precision import native_bf16
from attnlab.runs import spec_from_config
from attnlab.train import autocast, check_speed, optimizer, speed, stepping

ROW = "L9"
ENCODE_CHARS = 100_000  # the slice of text whose encoding is timed afresh
# the reference fuses q/k/v into one matmul, so the same weights may round differently
LOGIT_ATOL = 1e-5
FP32 = {"precision": "fp32", "compile": False, "adamw": "default"}
REFERENCES = [("reference", {}), ("reference", {"adamw": "fused"})]  # the yardstick: the faster of these
# attnlab's default AdamW is foreach (bit for bit torch's own on a CPU): the reference's default is torch's own
ATTNLAB = [{}, {"adamw": "fused"}, {"precision": "bf16"}, {"precision": "bf16", "adamw": "fused"},
           {"compile": True}, {"compile": True, "adamw": "fused"}, {"compile": True, "precision": "bf16"},
           {"compile": True, "precision": "bf16", "adamw": "fused"}]
SETTINGS = REFERENCES + [("attnlab", s) for s in ATTNLAB]  # (model, speed settings over FP32)
BREAKDOWN = ["attnlab fp32", "reference fp32"]  # the settings whose step is profiled by operator
PROFILED_STEPS = 5  # steps profiled per setting, one at a time: the breakdown is their median


def setting_name(model: str, settings: dict) -> str:
    """'attnlab bf16, compiled, fused AdamW': the model and what differs from fp32, eager, torch's AdamW."""
    s = {**FP32, **settings}
    return ", ".join([f"{model} {s['precision']}"] + (["compiled"] if s["compile"] else [])
                     + ([f"{s['adamw']} AdamW"] if s["adamw"] != "default" else []))


class Stepper:
    """One model, its AdamW and its batch generator: step() does one training step (the harness times it).

    The step is the training loop's (attnlab.train.train), at the speed settings of `tc` (precision, compile,
    AdamW's implementation, through the loop's own helpers): random windows drawn with a seeded torch.Generator,
    forward, loss.item(), zero_grad, backward, optional clip, AdamW step.
    """

    def __init__(self, model, tc: dict, seed: int, tokens: torch.Tensor, context: int, batch_size: int, device):
        self.model, self.tokens, self.T, self.B, self.device = model, tokens, context, batch_size, device
        self.clip, self.precision = tc.get("grad_clip"), speed(tc)["precision"]
        self.forward = stepping(model, tc)
        self.opt = optimizer(model, tc)
        self.gen = torch.Generator().manual_seed(seed)  # same seed: every model sees the same batches
        self.losses = []

    def step(self) -> None:
        T, B, tokens = self.T, self.B, self.tokens
        starts = torch.randint(len(tokens) - T - 1, (B,), generator=self.gen)
        xb = torch.stack([tokens[s : s + T] for s in starts]).to(self.device)  # (B, T)
        yb = torch.stack([tokens[s + 1 : s + T + 1] for s in starts]).to(self.device)  # (B, T)
        with autocast(self.precision, self.device):
            _, loss = self.forward(xb, yb)
        self.losses.append(loss.item())
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.opt.step()


@torch.no_grad()
def max_logit_diff(a, b, tokens: torch.Tensor, context: int, batch_size: int, device) -> float:
    """Largest |logit difference| of two models on the first batch_size windows of the split."""
    n = min(batch_size, (len(tokens) - 1) // context)
    x = tokens[: n * context].view(n, context).to(device)  # (n, T)
    la, _ = a(x)
    lb, _ = b(x)
    return (la - lb).abs().max().item()


def tokenizer_timings(data_dir: Path, tokens: torch.Tensor) -> dict:
    """Training/encoding times from stats.json, and a fresh timing of encoding ~100 KB with the saved tokenizer."""
    out = {"tokenizer_train_seconds": None, "tokenizer_encode_seconds": None, "encode_100kb_seconds": None,
           "encode_100kb_chars": None, "notes": []}
    stats_path = data_dir / layout.STATS_FILE
    if stats_path.is_file():
        stats = json.loads(stats_path.read_text())
        out["tokenizer_train_seconds"] = stats.get("tokenizer_seconds")
        out["tokenizer_encode_seconds"] = stats.get("encode_seconds")
    else:
        out["notes"].append(f"no {stats_path}: tokenizer training/encoding times unknown")

    tok_path = data_dir / "tokenizer.json"
    try:
        from attnlab.data.bpe import Tokenizer
    except ImportError as err:
        out["notes"].append(f"attnlab.data.bpe not importable ({err}): encode timing skipped")
        return out
    if not tok_path.is_file():
        out["notes"].append(f"no {tok_path}: encode timing skipped")
        return out
    tok = Tokenizer.load(tok_path)
    head = tokens[:ENCODE_CHARS]
    if len(head) and int(head.max()) >= len(tok.vocab):
        out["notes"].append(f"token ids reach {int(head.max())}, beyond the tokenizer's {len(tok.vocab)}: "
                            "the token files and tokenizer.json disagree; encode timing skipped")
        return out
    # the text is the training split decoded back: BPE round-trips, so this is the corpus itself
    text = tok.decode(head.tolist())[:ENCODE_CHARS]
    fresh = Tokenizer.load(tok_path)  # an empty chunk cache, as at the start of preparation
    once = measure(lambda: fresh.encode(text), warmup=0, min_samples=1, max_samples=1, memory=False)  # cold cache
    out["encode_100kb_seconds"] = round(once["median_ms"] / 1e3, 4)
    out["encode_100kb_chars"] = len(text)
    if len(text) < ENCODE_CHARS:
        out["notes"].append(f"training split decodes to only {len(text)} chars; timed that instead of 100 KB")
    return out


def first_step(stepper: Stepper) -> float:
    """Seconds of a setting's first step (untimed by the rounds): compilation included where it compiles."""
    t0 = time.perf_counter()
    stepper.step()
    return time.perf_counter() - t0


def peak_name(precision: str) -> str:
    return f"peak: {precision} matmul"


def peak_matmuls(device, native_bf16: bool) -> dict[str, tuple]:
    """The matmuls whose rate is the machine's peak (limit.matmul): fp32, and bf16 where the device has it
    natively (elsewhere torch converts bf16, and the fastest matmul is fp32's)."""
    return {p: limit.matmul(p, device) for p in (["fp32", "bf16"] if native_bf16 else ["fp32"])}


def against_peak(row: dict, flops: int, peaks: dict) -> dict:
    """A setting's FLOPs per step, their rate at its median step time, and its share of the peak of its precision
    (fp32's where the device has no bf16 peak), from the recorded step seconds and peak."""
    precision = row["precision"] if row["precision"] in peaks else "fp32"
    rate = flops / statistics.median(row["step_seconds"])
    return {"flops": flops, "flops_per_s": rate, "peak": precision,
            "share_of_peak": rate / peaks[precision]["flops_per_s"]}


def count_step(stepper: Stepper) -> tuple[int, dict[str, int]]:
    """The FLOPs of one training step of `stepper`, counted (limit.count_flops)."""
    return limit.count_flops(stepper.step)


def main(cfg: dict, out_path: Path, data_dir: Path, settings: list = SETTINGS) -> dict:
    """Time `settings` ((model, speed settings) pairs; the first of them a reference's) and write the result."""
    t_start = time.perf_counter()
    data_dir, out_path = Path(data_dir), Path(out_path)
    cfg, device = setup(cfg)  # the schema's defaults filled, the device chosen, threads set
    bench, tc = cfg["throughput"], {k: v for k, v in cfg["train"].items() if k not in FP32}

    spec = spec_from_config(cfg, ROW)
    T, B = spec.context, bench["batch_size"]
    tokens = load_tokens(data_dir, "train")  # int64 (N,)
    if len(tokens) <= T + 1:
        raise AttnlabError(f"training split has {len(tokens)} tokens, fewer than one window of {T + 1}")

    def fresh(model: str):  # the same weights in every model, attnlab's or copied into the reference
        torch.manual_seed(cfg["seed"])
        lm = build(spec)
        return (lm if model == "attnlab" else copy_weights(from_spec(spec), lm)).to(device)

    lm, ref = fresh("attnlab"), fresh("reference")
    n_params = sum(p.numel() for p in lm.parameters())
    n_ref = sum(p.numel() for p in ref.parameters())
    assert n_params == n_ref, f"parameter counts differ: attnlab {n_params}, reference {n_ref}"
    lm.eval(), ref.eval()
    diff = max_logit_diff(lm, ref, tokens, T, B, device)

    bf16, bf16_why = native_bf16(device)
    matmuls = peak_matmuls(device, bf16)
    steppers, first, counted, chosen, notes = {}, {}, {}, [], []
    for model, these in settings:
        name = setting_name(model, these)
        if these.get("compile") and not bench["compile"]:
            notes.append(f"{name} not measured: throughput.compile is false")
            continue
        try:
            check_speed(these)
        except AttnlabError as err:
            notes.append(f"{name} not measured: {err}")
            continue
        chosen.append((model, these))
        net = fresh(model).train()
        steppers[name] = Stepper(net, {**tc, **FP32, **these}, cfg["seed"], tokens, T, B, device)
        first[name] = round(first_step(steppers[name]), 4)
        # its eager twin (same weights, batches and precision): the flop counter does not see inside compiled code
        counted[name] = count_step(Stepper(fresh(model).train(), {**tc, **FP32, **these, "compile": False},
                                           cfg["seed"], tokens, T, B, device))
    fns = {**{name: st.step for name, st in steppers.items()},
           **{peak_name(p): call for p, (call, _, _) in matmuls.items()}}  # the peak takes its turn in every round
    timed = interleaved(fns, device, warmup=bench["warmup"], min_rounds=bench["steps"], max_rounds=bench["steps"],
                        max_seconds=math.inf)
    rounds = timed["rounds"]
    peaks = {p: limit.peak_record(p, n, flops, rounds[peak_name(p)]) for p, (_, flops, n) in matmuls.items()}
    names = {"attnlab": setting_name("attnlab", {}), "reference": setting_name("reference", {})}
    yardstick = min((setting_name(m, st) for m, st in chosen if m == "reference" and not st.get("compile")),
                    key=lambda n: statistics.median(rounds[n]))
    rows = []
    for model, these in chosen:
        name = setting_name(model, these)
        rows.append({"name": name, "model": model, **FP32, **these,
                     "tokens_per_s": round(statistics.median(B * T / sec for sec in rounds[name]), 1),
                     "step_seconds": [round(sec, 5) for sec in rounds[name]], "first_step_seconds": first[name],
                     "last_loss": steppers[name].losses[-1]})
        rows[-1].update(against_peak(rows[-1], counted[name][0], peaks), flops_by_op=counted[name][1])
    secs_a, secs_b = rounds[names["attnlab"]], rounds[names["reference"]]
    tps_a = statistics.median(B * T / s for s in secs_a)
    tps_b = statistics.median(B * T / s for s in secs_b)
    # the ratio within each round, then its median: a slow spell of the machine hits both halves of a round
    paired = statistics.median(sb / sa for sa, sb in zip(secs_a, secs_b))

    last_loss = {"attnlab": steppers[names["attnlab"]].losses[-1],
                 "reference": steppers[names["reference"]].losses[-1]}
    # after the rounds, on the warm steppers: the profiler's own cost stays out of the timed steps
    # and each profiled setting's matmuls and attention replayed alone, at its own shapes, beside the peak
    breakdown = [{"setting": name, **limit.breakdown(steppers[name].step, device, PROFILED_STEPS),
                  "alone": limit.alone(steppers[name].step, device, peak=matmuls["fp32"])}
                 for name in BREAKDOWN if name in steppers]

    tok = tokenizer_timings(data_dir, tokens)
    notes += tok["notes"]
    if diff > LOGIT_ATOL:
        notes.append(f"logits differ by {diff:.2e} with copied weights, beyond {LOGIT_ATOL:g}: "
                     "the two models do not compute the same function")
    result = {
        "model": spec.to_dict(),
        "n_params": n_params,
        "batch_size": B,
        "context": T,
        "steps": bench["steps"],
        "warmup": bench["warmup"],
        "attnlab_tokens_per_s": round(tps_a, 1),
        "reference_tokens_per_s": round(tps_b, 1),
        "ratio": round(tps_a / tps_b, 4),
        "ratio_paired_median": round(paired, 4),
        "reference": DESCRIPTION,  # what the yardstick was, for the page to say
        "settings": rows,  # every setting's step times, round by round (the page takes paired ratios)
        "yardstick": yardstick,
        "timing": {name: timed["by"][name] for name in steppers},  # the harness's statistics per setting
        "peak": peaks,  # the matmul rate per precision, timed in the same rounds on the same threads
        "native_bf16": bf16,
        "native_bf16_why": bf16_why,
        "breakdown": breakdown,  # one step's time by operator category, per profiled setting
        "nvml": timed["nvml"],
        "attnlab_step_seconds": [round(s, 5) for s in secs_a],
        "reference_step_seconds": [round(s, 5) for s in secs_b],
        "max_abs_logit_diff": diff,
        "logit_atol": LOGIT_ATOL,
        "logits_agree": diff <= LOGIT_ATOL,
        "last_loss": last_loss,
        "tokenizer_train_seconds": tok["tokenizer_train_seconds"],
        "tokenizer_encode_seconds": tok["tokenizer_encode_seconds"],
        "encode_100kb_seconds": tok["encode_100kb_seconds"],
        "encode_100kb_chars": tok["encode_100kb_chars"],
        "notes": notes,
        "threads": torch.get_num_threads(),
        "method": (f"each setting's first step untimed (first_step_seconds: compilation included where it "
                   f"compiles), then {bench['warmup']} untimed and {bench['steps']} timed rounds "
                   f"(attnlab.bench.harness.interleaved), each one training step of every setting, in an order "
                   f"rotated by one from round to round (forward+backward+AdamW, batch {B} x {T}, the same "
                   "batches and initial weights for all); tokens/s = median over rounds of B*T / step seconds; "
                   "speedup of a setting = the yardstick's step seconds over the setting's, round by round; the "
                   "yardstick is the faster (by median) of the reference's fp32 settings; ratio = attnlab fp32 "
                   "over reference fp32 (both eager; attnlab's default AdamW, foreach, against torch's own), of medians; ratio_paired_median = median "
                   "over rounds of reference seconds / attnlab seconds; "
                   f"the peak: one {limit.PEAK_N[device.type]}-square matmul per precision measured (fp32, and "
                   "bf16 where the device computes it natively), timed as one more function "
                   "in every round; flops: one training step of each setting's eager twin (same weights, batches "
                   "and precision) counted by torch.utils.flop_counter (matmuls and attention, 2 per "
                   "multiply-add, causal attention counted in full; the CPU's flash attention with torch's SDPA "
                   "formulas); flops_per_s = flops / median step seconds; share_of_peak = flops_per_s / the "
                   "median peak rate of the setting's precision (fp32's where there is no bf16 peak); breakdown: "
                   f"{PROFILED_STEPS} steps of each profiled setting after the rounds, each under torch.profiler, "
                   "every operator's own time put in the category of its outermost named caller; per category "
                   "the median over the steps, the rest the median step's wall time less the named categories; alone: every matmul and attention call of one "
                   "step of each profiled setting replayed on fresh tensors of the same layout, nothing between, "
                   f"the median of {limit.ALONE_REPEATS} replays each, with the fp32 peak matmul timed in every "
                   "repeat (peak_seconds: its median)"),
    }
    result["provenance"] = provenance.record(cfg, device=device, wall_seconds=time.perf_counter() - t_start)
    provenance.write_json(out_path, result)

    print(f"throughput {ROW} ({n_params:,} params, batch {B} x {T}, {device}, {torch.get_num_threads()} threads), "
          f"{bench['steps']} rounds; speedup over {yardstick} (median of paired rounds):")
    for row in rows:
        up = statistics.median(y / x for x, y in zip(row["step_seconds"], rounds[yardstick]))
        print(f"  {row['name']:<42} {row['tokens_per_s']:10,.0f} tokens/s  x{up:.3f}  "
              f"first step {row['first_step_seconds']:.2f} s  {row['flops'] / 1e9:.3f} GFLOP/step  "
              f"{row['share_of_peak']:.1%} of the {row['peak']} peak")
    for p in peaks.values():
        print(f"  peak {p['precision']} ({p['n']}-square matmul): {p['flops_per_s'] / 1e9:.1f} GFLOP/s "
              f"(p20-p80 {p['flops_per_s_p20'] / 1e9:.1f}-{p['flops_per_s_p80'] / 1e9:.1f}); "
              f"native bf16: {bf16} ({bf16_why})")
    for b in breakdown:
        shares = ", ".join(f"{cat} {v['share']:.0%}" for cat, v in b["categories"].items())
        print(f"  one step of {b['setting']} ({b['step_ms']:.1f} ms under the profiler): {shares}")
    print(f"  ratio attnlab/reference fp32 {tps_a / tps_b:.3f} (of medians), {paired:.3f} (median of per-round ratios)")
    print(f"  max |logit diff| with copied weights: {diff:.2e}")
    if tok["encode_100kb_seconds"] is not None:
        print(f"  tokenizer: trained in {tok['tokenizer_train_seconds']} s, "
              f"encodes {tok['encode_100kb_chars']:,} chars in {tok['encode_100kb_seconds']:.3f} s")
    for note in notes:
        print(f"  note: {note}")
    return result
