"""S5/S6 decode benchmark at smoke sizes: every model, head count, length and mode timed; the cache's bytes
per token measured equal to the formula; the claims and the page."""
import copy

import pytest

from attnlab.experiments.decode import producer as decode
from attnlab.config import load
from attnlab.errors import AttnlabError
from attnlab.provenance import read_json
from attnlab.experiments.decode import page
from helpers import REPO, rendered_page, site_for

CFG = load(REPO / "config" / "smoke.yaml")


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    decode.main({**copy.deepcopy(CFG), "threads": 1}, root / "decode" / "result.json")
    return root, read_json(root / "decode" / "result.json")


def test_every_model_head_count_length_and_mode_is_timed(decoded):
    _, r = decoded
    s = CFG["decode"]
    combos = {(row["model"], row["kv_heads"], row["n"], row["cached"]) for row in r["rows"]}
    want = {("chapter", 4, n, c) for n in s["lengths"] for c in (True, False)} | \
        {("wide", kv, n, c) for kv in (8, 2, 1) for n in s["lengths"] for c in (True, False)}
    assert combos == want and all(row["tokens_per_s"] > 0 for row in r["rows"])
    assert set(r["speedup_at_longest"]) == {"chapter/4", "wide/8", "wide/2", "wide/1"}


def test_the_cache_holds_what_the_formula_says(decoded):
    for c in decoded[1]["cache"]:
        assert c["measured_bytes"] == c["formula_bytes"], c
    wide = {c["kv_heads"]: c["measured_bytes"] for c in decoded[1]["cache"] if c["model"] == "wide"}
    assert wide[2] * 4 == wide[8] == wide[1] * 8


def test_lengths_must_increase():
    with pytest.raises(AttnlabError, match="lengths must increase"):
        decode.run({**CFG["decode"], "lengths": [8, 4]}, device=None)


def test_page_and_claims(decoded):
    site = site_for(decoded[0], CFG)
    text = rendered_page(site, "decode", page.blocks)
    assert "<!-- attnlab:" not in text and "chart-decode-speed" in text
    verdicts = {v.claim.id: v for v in site.page_verdicts("decode")}
    assert verdicts["S6.1"].verdict == "holds", verdicts["S6.1"].note
    assert verdicts["S5"].reproduced["formula_equals_measured"] is True
    assert verdicts["S5"].verdict != "not run", verdicts["S5"].note
    assert set(verdicts["S5"].se) >= {"wide_speedup", "wide_growth", "chapter_growth"}


def timings(speedups: dict[int, float], rsd: float = 0.01, samples: int = 4) -> list[dict]:
    """Decode rows of one configuration whose cached runs are `speedups` times faster than recomputing."""
    rows = []
    for n, x in speedups.items():
        for cached, tps in ((True, 100.0 * x), (False, 100.0)):
            rows.append({"model": "wide", "kv_heads": 8, "n": n, "cached": cached, "tokens_per_s": tps,
                         "rsd": rsd, "samples": samples})
    return rows


def test_a_speedup_proportional_to_length_has_slope_one_with_a_small_error():
    g = decode.growth(decode.speedup_at(timings({32: 2.0, 64: 4.0, 128: 8.0}))["wide/8"])
    assert g["slope"] == pytest.approx(1.0) and g["se_fit"] == pytest.approx(0.0, abs=1e-12)
    assert 0 < g["se"] == g["se_timing"] < 0.05 and g["lengths"] == [32, 64, 128]


def test_a_falling_speedup_has_a_negative_slope():
    g = decode.growth(decode.speedup_at(timings({32: 3.0, 64: 2.0, 128: 1.5}))["wide/8"])
    assert g["slope"] < 0 and g["slope"] + 2 * g["se"] < 0


def test_a_speedup_that_dips_then_rises_does_not_clear_its_error():
    """wide/8 on the quick CPU run: 1.90, 1.75, 2.90 - up overall, but not steadily."""
    g = decode.growth(decode.speedup_at(timings({32: 1.90, 64: 1.75, 128: 2.90}))["wide/8"])
    assert g["slope"] > 0 and g["se"] == g["se_fit"] and g["slope"] < 2 * g["se"]


def test_noisier_timings_give_the_slope_a_larger_error():
    quiet = decode.growth(decode.speedup_at(timings({32: 2.0, 128: 8.0}, rsd=0.01))["wide/8"])
    noisy = decode.growth(decode.speedup_at(timings({32: 2.0, 128: 8.0}, rsd=0.2))["wide/8"])
    assert quiet["se_fit"] is None and noisy["se"] == pytest.approx(20 * quiet["se"])
    assert decode.log_time_se({"rsd": 0.1, "samples": 1}) is None
