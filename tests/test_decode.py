"""S5/S6 decode benchmark at smoke sizes: every model, head count, length and mode timed; the cache's bytes
per token measured equal to the formula; the claims and the page."""
import copy

import pytest

from attnlab.bench import decode
from attnlab.config import load
from attnlab.errors import AttnlabError
from attnlab.provenance import read_json
from attnlab.report.pages import decode as page
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
