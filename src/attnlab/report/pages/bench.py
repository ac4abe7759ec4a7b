"""Performance: training throughput of attnlab's one-block model beside a plain PyTorch reference."""
from __future__ import annotations

import pandas as pd

from attnlab.report import charts
from attnlab.report.format import chart, fmt, md_table, num

NAME = "bench"
EAGER = ("plain eager reference (separate q/k/v projections, explicit mask and softmax): this run file "
         "predates the fused reference that the text above describes")


def blocks(site) -> dict[str, str]:
    out = site.skeleton(NAME)
    b = site.res.result(NAME)
    if b is None:
        missing = site.missing(NAME)
        return out | {"throughput_table": missing, "tokenizer_table": missing, "throughput_chart": "",
                      "reference": ""}
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
                  "tokenizer_table": md_table(tok, formats={"seconds": num(3)})}
