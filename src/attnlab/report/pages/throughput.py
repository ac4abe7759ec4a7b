"""Performance: training throughput of attnlab's one-block model beside a plain PyTorch reference."""
from __future__ import annotations

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
                  "speed_reading": speed_reading(b), "tokenizer_reading": tokenizer_reading(b, site.res.result("data"))}
