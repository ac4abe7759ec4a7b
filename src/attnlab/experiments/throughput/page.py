"""Performance: training throughput of attnlab's one-block model at each speed setting beside a plain PyTorch
reference in float32."""
from __future__ import annotations

import math

import pandas as pd

from attnlab.experiments.throughput import derive
from attnlab.report import charts
from attnlab.report.format import chart, fmt, md_table, num
from attnlab.report.readings import interval, said
from attnlab.stats import of_values, side
from attnlab.report.context import experiment_page

NAME = "throughput"
EAGER = ("plain eager reference (separate q/k/v projections, explicit mask and softmax): this run file "
         "predates the fused reference that the text above describes")


def speed_reading(b: dict) -> str:
    """attnlab's speed against the reference's, from the paired rounds: each round's reference step time over
    attnlab's, their mean with its interval (95 %), said faster or slower only where that interval clears 1."""
    e = paired_ratio(b)
    if e is None:
        return ""
    return (f"Over {len(b['attnlab_step_seconds'])} paired rounds, the reference's step time over attnlab's is "
            f"{interval(e, 3, False)} (mean, 95 %): attnlab trains " + said(e, of=1.0, above=f"{e.value:.3f}× faster than the reference",
                                                   below=f"{1 / e.value:.3f}× slower than the reference",
                                                   within="about as fast as the reference, within the noise",
                                                   unknown="at a speed one round cannot judge") + ".")


def paired_ratio(b: dict):
    """attnlab's speed over the reference's, from the paired rounds (derive.round_ratios), as a mean with its
    error; None without paired rounds."""
    ratios = derive.round_ratios(b)
    return None if ratios is None else of_values(ratios)


GOAL = 1.25  # issue 23: the fastest setting at >= 1.25x the float32 reference


def speedups(b: dict) -> list[tuple[dict, object]]:
    """Each measured setting with its speedup over the yardstick: the mean of its rounds' log speedups
    (derive.log_speedups) with its interval (95 %). Empty for a run file from before the settings."""
    return [(r, of_values(logs)) for r, logs in derive.log_speedups(b)]


def faster_or_slower(e, than: str = "") -> str:
    """A speedup (its log estimate) with its direction: 'x.xxx× faster' or 'x.xxx× slower' (the slower factor and
    its interval the reciprocals), or 'about the same speed' with the ratio where its 95 % interval holds 1;
    without an interval, the direction of the one value, said to have none. `than`: what it is set against."""
    r, to = math.exp(e.value), f" than {than}" if than else ""
    if e.half is None:
        return f"{max(r, 1 / r):.3f}× {'faster' if r >= 1 else 'slower'}{to} (one round: no interval)"
    lo, hi = math.exp(e.value - e.half), math.exp(e.value + e.half)
    where = side(e)
    if where == "above":
        return f"{r:.3f}× faster{to} (95 % interval {lo:.3f}–{hi:.3f})"
    if where == "below":
        return f"{1 / r:.3f}× slower{to} (95 % interval {1 / hi:.3f}–{1 / lo:.3f})"
    return f"about the same speed{' as ' + than if than else ''} ({r:.3f}×, 95 % interval {lo:.3f}–{hi:.3f})"


def against_paired(ratio: float | None, lo: float | None, hi: float | None) -> str:
    """A ratio of attnlab's speed to the reference's that has no interval of its own (of medians), said against the
    paired rounds' interval: 'about the same' inside it, else 'x.xxx× faster' or 'slower'."""
    if ratio is None:
        return "–"
    if lo is not None and lo <= ratio <= hi:
        return f"{ratio:.3f}: about the same (inside the paired rounds' 95 % interval, {lo:.3f}–{hi:.3f})"
    direction = f"{ratio:.3f}× faster" if ratio >= 1 else f"{1 / ratio:.3f}× slower"
    return f"{ratio:.3f}: attnlab {direction}" + (" (outside the paired rounds' 95 % interval, "
                                                   f"{lo:.3f}–{hi:.3f})" if lo is not None else " (no interval)")


def paired_interval(b: dict) -> tuple[float | None, float | None]:
    """The paired rounds' 95 % interval of attnlab's speed over the reference's (None, None without one)."""
    e = paired_ratio(b)
    return (None, None) if e is None or e.half is None else (e.value - e.half, e.value + e.half)


def settings_table(b: dict) -> str:
    ups = speedups(b)
    if not ups:
        return ("*This run file predates the speed settings (precision, compile, AdamW): it times attnlab's float32 "
                "step only. Rerun the benchmark for the table of settings.*")
    table = pd.DataFrame([(r["name"], r["tokens_per_s"], "1 (the yardstick)" if r["name"] == b["yardstick"]
                           else faster_or_slower(e), r["first_step_seconds"]) for r, e in ups],
                         columns=["setting", "tokens/s", f"speed against {b['yardstick']}", "first step (s)"])
    return md_table(table, formats={"tokens/s": num(0), "first step (s)": num(2)})


def goal_reading(b: dict) -> str:
    """Whether the fastest attnlab setting (by mean log speedup) reaches the goal, said only where its interval
    clears GOAL."""
    found = derive.fastest(b)
    if found is None:
        return ""
    r, e = found[0], of_values(found[1])
    verdict = said(e, of=math.log(GOAL), above=f"it reaches the goal of {GOAL}×",
                   below=f"it falls short of the goal of {GOAL}×",
                   within=f"whether it reaches the goal of {GOAL}× the noise cannot tell",
                   unknown=f"one round cannot judge it against the goal of {GOAL}×")
    return (f"The fastest setting, {r['name']}, trains {faster_or_slower(e, 'the ' + b['yardstick'])} "
            f"(geometric mean over {len(r['step_seconds'])} paired rounds): {verdict}.")


def tokenizer_reading(b: dict, data: dict | None) -> str:
    """How long training the BPE took, on how much text and for how many merges (the data stage's counts)."""
    seconds = b.get("tokenizer_train_seconds")
    if seconds is None or not data:
        return ""
    return (f" Here {data['n_merges']:,} merges over {data['n_chars']:,} characters took {seconds:.2f} s.")


def render(ctx) -> dict[str, str]:
    site, b = ctx.site, ctx.result
    yardstick = b.get("reference", EAGER)  # the run file says what it was measured against
    speed = pd.DataFrame([("attnlab (spec-built model, one attention core)", b["attnlab_tokens_per_s"]),
                          (yardstick.split(":")[0], b["reference_tokens_per_s"])], columns=["model", "tokens/s"])
    if b.get("settings"):
        speed = pd.DataFrame([(r["name"], r["tokens_per_s"]) for r in b["settings"]], columns=["model", "tokens/s"])
    facts = pd.DataFrame([
        ("parameters", f"{b['n_params']:,}"), ("batch × context", f"{b['batch_size']} × {b['context']}"),
        ("timed rounds (after warm-up)", f"{b['steps']} (after {b.get('warmup', '–')})"),
        ("CPU threads", b.get("threads")),
        ("attnlab's speed / the reference's, of the two medians", against_paired(b["ratio"], *paired_interval(b))),
        ("the same, median of the paired rounds' ratios",
         against_paired(b.get("ratio_paired_median"), *paired_interval(b))),
        ("max |logit difference| with copied weights", fmt(b["max_abs_logit_diff"])),
    ], columns=["measure", "value"])
    tok = pd.DataFrame([
        ("train the BPE on the whole corpus (s)", b.get("tokenizer_train_seconds")),
        ("encode the whole corpus (s)", b.get("tokenizer_encode_seconds")),
        ("encode 100 KB again with the saved tokenizer (s)", b.get("encode_100kb_seconds")),
    ], columns=["step", "seconds"])
    return {"reference": f"Measured against the {yardstick}.",
            "throughput_table": md_table(speed, formats={"tokens/s": num(0)}) + "\n\n" + md_table(facts),
            "throughput_chart": chart("chart-throughput", charts.throughput_chart(speed)),
            "tokenizer_table": md_table(tok, formats={"seconds": num(3)}),
            "settings_table": settings_table(b), "goal_reading": goal_reading(b),
            "speed_reading": speed_reading(b), "tokenizer_reading": tokenizer_reading(b, site.res.result("data"))}


blocks = experiment_page(NAME, render)
