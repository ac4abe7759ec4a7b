"""Performance: training throughput of attnlab's one-block model at each speed setting beside a plain PyTorch
reference in float32."""
from __future__ import annotations

import math
import statistics

import altair as alt
import pandas as pd

from attnlab.experiments.throughput import derive
from attnlab.report import charts
from attnlab.report.format import NOT_RECORDED, chart, fmt, md_table, num
from attnlab.report.readings import count, interval, said
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


SHARE_GOAL = 0.70  # issue 33: the fp32 step at 70 % or more of the measured matmul peak
FP32_STEP = "attnlab fp32"  # the step the goal is set for: attnlab's training default
COLORS = {"matmul": "#1f77b4", "attention": "#17becf", "normalisation": "#9467bd", "activation": "#e377c2",
          "loss": "#ff7f0e", "optimiser": "#d62728", "rest": "#bdbdbd"}


def percent_of(x: float) -> str:
    return f"{x * 100:.0f} %"


def gflop(x: float) -> str:
    return f"{x / 1e9:,.3f}"


def rate(flops_per_s: float) -> str:
    return f"{flops_per_s / 1e9:,.1f}"


def peak_table(b: dict) -> str:
    """The peak of each precision measured: its matmul, median rate and spread; and whether the CPU has bf16."""
    table = pd.DataFrame([(p["precision"], f"{p['n']} × {p['n']}", rate(p["flops_per_s"]),
                           f"{rate(p['flops_per_s_p20'])}–{rate(p['flops_per_s_p80'])}", f"{p['rsd']:.1%}",
                           p["samples"]) for p in b["peak"].values()],
                         columns=["peak", "matmul", "GFLOP/s (median)", "GFLOP/s, 20th–80th percentile of time",
                                  "spread (rsd of time)", "rounds"])
    has = "has" if b["native_bf16"] else "has no"
    return (md_table(table) + f"\n\nThe device {has} native bf16 ({b['native_bf16_why']})"
            + ("." if b["native_bf16"] else ": bf16 settings are set against the fp32 peak, its fastest matmul."))


def limit_table(b: dict) -> str:
    """The peak, then every setting's counted FLOPs per step, their rate and its share of the peak."""
    rows = [r for r in b.get("settings") or [] if "share_of_peak" in r]
    if not b.get("peak") or not rows:
        return f"*The FLOPs per step and the share of the machine's matmul peak: {NOT_RECORDED}.*"
    table = pd.DataFrame([(r["name"], gflop(r["flops"]), rate(r["flops_per_s"]), r["peak"],
                           f"{r['share_of_peak']:.1%}") for r in rows],
                         columns=["setting", "GFLOP per step (counted)", "GFLOP/s (median step)", "peak",
                                  "share of the peak"])
    return peak_table(b) + "\n\n" + md_table(table)


def geometric(e, n: int) -> str:
    """A share's geometric mean over n rounds (e: the mean of its logs) with its 95 % interval, in percent."""
    mean = f"{math.exp(e.value):.1%} (geometric mean over {count(n, 'round')}"
    if e.half is None:
        return mean + ": no interval)"
    return mean + f"; 95 % interval {math.exp(e.value - e.half):.1%}–{math.exp(e.value + e.half):.1%})"


def limit_reading(b: dict) -> str:
    """The fp32 step's FLOP rate as a share of the fp32 peak, and how far that is from SHARE_GOAL, judged on the
    rounds' shares by their logs, as the speedups are (a round whose matmul the machine slowed weighs no more than
    one whose step it slowed); '' where the run file has no share."""
    row = derive.setting(b, FP32_STEP)
    shares = derive.round_shares(b, row) if row else None
    if not shares:  # limit_table says what the file did not record
        return ""
    peak, e, goal = b["peak"][row["peak"]], of_values([math.log(x) for x in shares]), percent_of(SHARE_GOAL)
    gap = SHARE_GOAL / row["share_of_peak"]
    verdict = said(e, of=math.log(SHARE_GOAL), above=f"above the goal of {goal}",
                   below=f"short of the goal of {goal}: the step would have to run {gap:.2f}× faster to reach it",
                   within=f"whether it reaches the goal of {goal} the noise cannot tell",
                   unknown=f"one round cannot judge it against the goal of {goal}")
    return (f"The {FP32_STEP} step does {gflop(row['flops'])} GFLOP (counted) in a median "
            f"{statistics.median(row['step_seconds']) * 1e3:,.1f} ms: {rate(row['flops_per_s'])} GFLOP/s, "
            f"{row['share_of_peak']:.1%} of the {row['peak']} matmul peak measured in the same rounds "
            f"({rate(peak['flops_per_s'])} GFLOP/s, the median of one {peak['n']} × {peak['n']} matmul a round, "
            f"{count(b['threads'], 'thread')}). Taken round by round, each step's rate over the same round's peak, "
            f"its share is {geometric(e, len(shares))}: {verdict}.")


def breakdown_table(b: dict) -> str:
    rows = derive.breakdown_rows(b)
    if not rows:
        return f"*The breakdown of a step by operator: {NOT_RECORDED}.*"
    table = pd.DataFrame(rows).pivot_table(index="category", columns="setting", values="ms", sort=False)
    table = table.reset_index()[["category", *[p["setting"] for p in b["breakdown"]]]]
    shares = {(r["setting"], r["category"]): r["share"] for r in rows}
    for name in table.columns[1:]:
        table[name] = [f"{ms:,.2f} ms ({shares[name, cat]:.0%})" for cat, ms in zip(table["category"], table[name])]
    steps = ", ".join(f"{p['setting']} {p['step_ms']:,.2f} ms" for p in b["breakdown"])
    return md_table(table) + f"\n\nOne step under the profiler (median of {b['breakdown'][0]['steps']}, each profiled on its own): {steps}."


def alone_table(b: dict) -> str:
    """Each profiled setting's matmuls and attention replayed alone: calls, layouts, GFLOP, milliseconds, and the
    share of the peak timed beside them (empty for a run file from before the replay)."""
    rows = []
    for p in b.get("breakdown") or []:
        a = p.get("alone")
        if not a or not a.get("peak_seconds"):
            continue
        peak = a["peak_flops"] / a["peak_seconds"]
        rows += [(p["setting"], cat, c["calls"], c["layouts"], gflop(c["flops"]), f"{c['seconds'] * 1e3:,.2f}",
                  f"{c['flops'] / c['seconds'] / peak:.0%}") for cat, c in a["categories"].items()]
    if not rows:
        return ""
    table = pd.DataFrame(rows, columns=["setting", "replayed alone", "calls", "layouts", "GFLOP",
                                        "ms per step", "share of the peak"])
    return md_table(table) + (f"\n\nEach call replayed {b['breakdown'][0]['alone']['repeats']} times, its median "
                              "counted once per call of the step. The milliseconds move with what else the machine "
                              "was doing; the share is read against the peak timed in the same repeats.")


def breakdown_chart(rows: pd.DataFrame) -> dict:
    """Each profiled setting's step as one bar, split by operator category (shares of the step, in their order)."""
    order = list(dict.fromkeys(rows["category"]))
    rows = rows.assign(order=[order.index(c) for c in rows["category"]])
    return charts.fit_page(alt.Chart(rows).mark_bar().encode(
        x=alt.X("share:Q", title="share of one training step's time (under the profiler)", stack="zero",
                scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%", labelFlush=True)),
        y=alt.Y("setting:N", title=None, sort=None, axis=alt.Axis(labelLimit=0)),
        color=alt.Color("category:N", sort=order, title="operator category",
                        scale=alt.Scale(domain=order, range=[COLORS.get(c, "#7f7f7f") for c in order])),
        order=alt.Order("order:Q"),
        tooltip=["setting", "category", alt.Tooltip("ms:Q", format=",.2f"), alt.Tooltip("share:Q", format=".1%")],
    ).properties(width=520, height=max(60, 40 * rows["setting"].nunique())).to_dict()) | {"padding": {"right": 12}}


def breakdown_block(b: dict) -> str:
    rows = derive.breakdown_rows(b)
    return chart("chart-breakdown", breakdown_chart(pd.DataFrame(rows))) if rows else ""


def breakdown_reading(b: dict) -> str:
    """Where the fp32 step's time goes against the peak: the matmuls' and attention's part of it, the rate they run
    at, and the share of the peak the step could reach were they at the full peak (derive.counted_time), said
    against SHARE_GOAL."""
    c = derive.counted_time(b, FP32_STEP)
    if c is None:
        return ""
    p = derive.profiled(b, FP32_STEP)["categories"]
    others = sorted((cat for cat in p if cat not in ("matmul", "attention")), key=lambda cat: -p[cat]["share"])
    largest = ", ".join(f"{cat} {p[cat]['share']:.0%}" for cat in others[:3])
    running = "" if c["running_share"] is None else f", and while they run they reach {c['running_share']:.0%} of the peak"
    goal = f"the goal of {percent_of(SHARE_GOAL)}"
    reach = (f"faster matmuls alone could take it to {goal}" if c["bound"] >= SHARE_GOAL
             else f"faster matmuls alone cannot take it to {goal}: the other operators' time has to shrink")
    return (f"Under the profiler, the matmuls and attention (the operators whose FLOPs are counted) take "
            f"{c['counted_share']:.0%} of the {FP32_STEP} step ({c['counted_ms']:,.2f} of {c['step_ms']:,.2f} ms)"
            f"{running}. The other {1 - c['counted_share']:.0%} (largest: {largest}) counts no FLOPs: were the "
            f"matmuls and attention at the full peak and the rest unchanged, the step would reach "
            f"{c['bound']:.0%} of the peak, so {reach}.{alone_reading(c)}")


def alone_reading(c: dict) -> str:
    """The step's matmuls and attention replayed alone at its shapes (derive.alone_time): the pace they reach, and
    against SHARE_GOAL what a step at the goal would leave beside them for everything else, set against what
    everything else takes in the timed step. Empty for a run file from before the replay."""
    if "alone_ms" not in c:
        return ""
    shares = " and ".join(f"its {PLURAL.get(cat, cat)} at {share:.0%}" for cat, share in c["alone_share"].items())
    goal_ms = c["at_peak_ms"] / SHARE_GOAL
    room, others = goal_ms - c["alone_ms"], c["others_ms"]
    head = (f" Replayed alone at the step's own shapes, with nothing between the calls, {shares} of the peak timed "
            f"beside them (attention counted in full though causal); at that pace they take {c['alone_ms']:,.2f} ms "
            f"of the {c['step_ms_timed']:,.2f} ms step (the median of the timed rounds).")
    if room <= 0:
        return (f"{head} A step at the goal takes {goal_ms:,.2f} ms: the matmuls and attention alone take longer, "
                "so the goal is out of these kernels' reach at these shapes, whatever the rest.")
    if others <= room:
        return (f"{head} A step at the goal takes {goal_ms:,.2f} ms, which leaves {room:,.2f} ms beside them, and "
                f"everything else takes {max(others, 0):,.2f} ms: the step is at the goal.")
    cut = others - room
    return (f"{head} A step at the goal takes {goal_ms:,.2f} ms, which leaves {room:,.2f} ms beside them for "
            f"everything else (the loss, activations, norms, AdamW, the embeddings' gradient, the Python between), "
            f"which takes {others:,.2f} ms: it would have to lose {cut:,.2f} ms ({cut / others:.0%}).")


PLURAL = {"matmul": "matmuls"}


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
            "limit_table": limit_table(b), "limit_reading": limit_reading(b),
            "breakdown_table": breakdown_table(b), "breakdown_chart": breakdown_block(b),
            "breakdown_reading": breakdown_reading(b), "alone_table": alone_table(b),
            "speed_reading": speed_reading(b), "tokenizer_reading": tokenizer_reading(b, site.res.result("data"))}


blocks = experiment_page(NAME, render)
