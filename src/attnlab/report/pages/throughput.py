"""Performance: training throughput of attnlab's one-block model at each speed setting beside a plain PyTorch
reference in float32."""
from __future__ import annotations

import math

import pandas as pd

from attnlab.report import charts
from attnlab.report.format import chart, fmt, md_table, num
from attnlab.report.readings import interval, of_values, said

NAME = "throughput"
EAGER = ("plain eager reference (separate q/k/v projections, explicit mask and softmax): this run file "
         "predates the fused reference that the text above describes")


def speed_reading(b: dict) -> str:
    """attnlab's speed against the reference's, from the paired rounds: each round's reference step time over
    attnlab's, their mean with its interval (95 %), said faster or slower only where that interval clears 1."""
    ours, theirs = b.get("attnlab_step_seconds") or [], b.get("reference_step_seconds") or []
    if not ours or len(ours) != len(theirs):
        return ""
    e = of_values([t / o for o, t in zip(ours, theirs)])
    return (f"Over {len(ours)} paired rounds, the reference's step time over attnlab's is {interval(e, 3, False)} "
            "(mean, 95 %): attnlab trains " + said(e, of=1.0, above="faster than the reference",
                                                   below="slower than the reference",
                                                   within="as fast as the reference, within the noise",
                                                   unknown="at a speed one round cannot judge") + ".")


GOAL = 1.25  # issue 23: the fastest setting at >= 1.25x the float32 reference


def speedups(b: dict) -> list[tuple[dict, object]]:
    """Each measured setting with its speedup over the yardstick: the yardstick's step seconds over the setting's,
    round by round, as the mean of their logarithms with its interval (95 %), so that one round slowed by the
    machine weighs no more on the fast side than on the slow. Empty for a run file from before the settings."""
    rows = b.get("settings") or []
    yard = next((r["step_seconds"] for r in rows if r["name"] == b.get("yardstick")), None)
    if yard is None:
        return []
    return [(r, of_values([math.log(y / x) for x, y in zip(r["step_seconds"], yard)])) for r in rows]


def times(e) -> str:
    """A speedup from its log estimate: '1.150× (95 % interval 1.020–1.297)'."""
    if e.half is None:
        return f"{math.exp(e.value):.3f}× (one round: no interval)"
    return f"{math.exp(e.value):.3f}× (95 % interval {math.exp(e.value - e.half):.3f}–{math.exp(e.value + e.half):.3f})"


def settings_table(b: dict) -> str:
    ups = speedups(b)
    if not ups:
        return ("*This run file predates the speed settings (precision, compile, AdamW): it times attnlab's float32 "
                "step only. Rerun the benchmark for the table of settings.*")
    table = pd.DataFrame([(r["name"], r["tokens_per_s"], "1 (the yardstick)" if r["name"] == b["yardstick"]
                           else times(e), r["first_step_seconds"]) for r, e in ups],
                         columns=["setting", "tokens/s", f"speedup over {b['yardstick']}", "first step (s)"])
    return md_table(table, formats={"tokens/s": num(0), "first step (s)": num(2)})


def fastest(b: dict) -> tuple[dict, object] | None:
    """attnlab's setting with the highest mean speedup, and that speedup (None: no settings measured)."""
    return max(((r, e) for r, e in speedups(b) if r["model"] == "attnlab"), key=lambda pair: pair[1].value,
               default=None)


def goal_reading(b: dict) -> str:
    """Whether the fastest attnlab setting (by mean log speedup) reaches the goal, said only where its interval
    clears GOAL."""
    if fastest(b) is None:
        return ""
    r, e = fastest(b)
    verdict = said(e, of=math.log(GOAL), above=f"it reaches the goal of {GOAL}×",
                   below=f"it falls short of the goal of {GOAL}×",
                   within=f"whether it reaches the goal of {GOAL}× the noise cannot tell",
                   unknown=f"one round cannot judge it against the goal of {GOAL}×")
    return (f"The fastest setting, {r['name']}, trains at {times(e)} the speed of the {b['yardstick']} "
            f"(geometric mean over {len(r['step_seconds'])} paired rounds): {verdict}.")


def tokenizer_reading(b: dict, data: dict | None) -> str:
    """How long training the BPE took, on how much text and for how many merges (the data stage's counts)."""
    seconds = b.get("tokenizer_train_seconds")
    if seconds is None or not data:
        return ""
    return (f" Here {data['n_merges']:,} merges over {data['n_chars']:,} characters took {seconds:.2f} s.")


def blocks(site) -> dict[str, str]:
    out = site.skeleton(NAME)
    b = site.res.result(NAME)
    if b is None:
        return out
    yardstick = b.get("reference", EAGER)  # the run file says what it was measured against
    speed = pd.DataFrame([("attnlab (spec-built model, one attention core)", b["attnlab_tokens_per_s"]),
                          (yardstick.split(":")[0], b["reference_tokens_per_s"])], columns=["model", "tokens/s"])
    if b.get("settings"):
        speed = pd.DataFrame([(r["name"], r["tokens_per_s"]) for r in b["settings"]], columns=["model", "tokens/s"])
    facts = pd.DataFrame([
        ("parameters", f"{b['n_params']:,}"), ("batch × context", f"{b['batch_size']} × {b['context']}"),
        ("timed rounds (after warm-up)", f"{b['steps']} (after {b.get('warmup', '–')})"),
        ("CPU threads", b.get("threads")), ("ratio attnlab / reference (medians)", f"{b['ratio']:.3f}"),
        ("ratio, median of paired rounds", fmt(b.get("ratio_paired_median"))),
        ("max |logit difference| with copied weights", fmt(b["max_abs_logit_diff"])),
    ], columns=["measure", "value"])
    tok = pd.DataFrame([
        ("train the BPE on the whole corpus (s)", b.get("tokenizer_train_seconds")),
        ("encode the whole corpus (s)", b.get("tokenizer_encode_seconds")),
        ("encode 100 KB again with the saved tokenizer (s)", b.get("encode_100kb_seconds")),
    ], columns=["step", "seconds"])
    return out | {"reference": f"Measured against the {yardstick}.",
                  "throughput_table": md_table(speed, formats={"tokens/s": num(0)}) + "\n\n" + md_table(facts),
                  "throughput_chart": chart("chart-throughput", charts.throughput_chart(speed)),
                  "tokenizer_table": md_table(tok, formats={"seconds": num(3)}),
                  "settings_table": settings_table(b), "goal_reading": goal_reading(b),
                  "speed_reading": speed_reading(b), "tokenizer_reading": tokenizer_reading(b, site.res.result("data"))}
