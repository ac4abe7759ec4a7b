"""The papers' protocols beside this profile's (attnlab.report.protocols, each page module's PROTOCOL): every survey page
has its table, and its "here" column follows the settings, each field of it and each value the settings imply."""
from __future__ import annotations

import copy
import importlib
import json
import re
from types import SimpleNamespace

import pytest

from attnlab.report.build import template as template_of
from attnlab import registry
from attnlab.claims.registry import load_registry
from attnlab.config import load
from attnlab.errors import AttnlabError
from attnlab.report import protocols
from attnlab.results import gather

from helpers import REPO, rendered_page, site_for

# pages with a survey claim but no paper's experiment to set beside it (report/protocols.py says why)
NO_PROTOCOL = {"scores", "equivalence"}


@pytest.fixture
def smoke():
    return load(REPO / "config" / "smoke.yaml")


def cells(block: str) -> dict[str, dict[str, str]]:
    """The table's rows: aspect -> {paper, here, why}, each cell without its label."""
    out = {}
    for line in block.splitlines():
        if line.startswith("| **"):
            aspect, *rest = [c.strip() for c in line.strip("|").split(" | ")]
            out[aspect.strip("*")] = {k: c.split("</span> ", 1)[1] for k, c in zip(("paper", "here", "why"), rest)}
    return out


def survey_pages() -> set[str]:
    claims = load_registry().claims
    return {c.experiment for c in claims if c.id.startswith("S")} - NO_PROTOCOL


def test_every_survey_page_has_its_table(tmp_path, smoke):
    assert set(protocols.protocols()) == survey_pages()
    site = site_for(tmp_path, smoke)  # nothing run: the table needs only the settings
    for page, entry in protocols.protocols().items():
        assert "<!-- attnlab:protocol -->" in template_of(f"{page}.md").read_text(), page
        text = rendered_page(site, page, importlib.import_module(registry.get(page).page).blocks)
        block = protocols.block(site, page)
        assert block.strip() in text and "why they differ" in text, page
        assert list(cells(block)) == [row["aspect"] for row in entry["rows"]], page


def fields() -> list[tuple[str, str]]:
    """Every (page, setting) a `here` cell names as {a.b} or {#a.b}."""
    out = []
    for page, entry in protocols.protocols().items():
        for row in entry["rows"]:
            for m in protocols.FIELD.finditer(row["here"]):
                if m.group(2) not in {**protocols.DERIVED, **protocols.own_fields(page)}:
                    out.append((page, m.group(2)))
    return sorted(set(out))


def changed(value):
    """Another value of the same kind (a list one item longer, so that its count changes too)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7
    if isinstance(value, str):
        return value + " again"
    if isinstance(value, list):
        return value + [changed(value[-1])]
    return {**value, "another": {"d_model": 8}}


@pytest.mark.parametrize("page,path", fields())
def test_the_here_column_follows_each_setting_it_names(tmp_path, smoke, page, path):
    before = cells(protocols.block(bare(tmp_path, smoke), page))
    cfg = copy.deepcopy(smoke)
    *parents, key = path.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    node[key] = changed(node[key])
    after = cells(protocols.block(bare(tmp_path, cfg), page))
    assert [r["here"] for r in after.values()] != [r["here"] for r in before.values()]
    assert [(r["paper"], r["why"]) for r in after.values()] == [(r["paper"], r["why"]) for r in before.values()]


def bare(root, cfg):
    """What the table reads of a site: the profile and the result files under root."""
    return SimpleNamespace(config=cfg, profile=cfg["profile"], res=gather(root))


def here(tmp_path, cfg, page: str, aspect: str) -> str:
    return cells(protocols.block(bare(tmp_path, cfg), page))[aspect]["here"]


def test_the_icl_score_s_positions_follow_the_length_on_both_sides_of_a_wider_window(tmp_path, smoke):
    """icl_score averages T // 40 neighbours either side: one position below T = 40, three from it."""
    at = {}
    for T in (39, 40, 48):
        cfg = copy.deepcopy(smoke)
        cfg["induction"]["length"] = T
        at[T] = here(tmp_path, cfg, "induction", "the in-context-learning score")
    assert "positions 4 and 35 of 39" in at[39]
    assert "positions 3–5 and 35–37 of 40" in at[40]
    assert "positions 4–6 and 42–44 of 48" in at[48]
    assert "0.1 and 0.9 of the input" in at[48]
    assert "positions 3 and 29 of 32 on Shakespeare" in at[48]  # smoke's L9 reads 32 tokens


def test_the_up_training_share_follows_both_runs_steps(tmp_path, smoke):
    assert "S6-gqa-up trains 2 steps, 5 % of S6-mha's 40" in here(tmp_path, smoke, "grouping", "S6.3 · up-training")
    cfg = copy.deepcopy(smoke)
    cfg["grouping"]["S6-gqa-up"]["train"]["steps"] = 4
    cfg["train"]["steps"] = 80  # S6-mha's, from the profile's train section
    text = here(tmp_path, cfg, "grouping", "S6.3 · up-training")
    assert "S6-gqa-up trains 4 steps, 5 % of S6-mha's 80" in text and "S6-mqa-up trains 2 steps, 2.5 % of" in text
    del cfg["grouping"]["S6-gqa-up"], cfg["grouping"]["S6-mqa-up"]
    assert "up-trains no run" in here(tmp_path, cfg, "grouping", "S6.3 · up-training")


def test_the_grouped_models_follow_their_runs(tmp_path, smoke):
    text = here(tmp_path, smoke, "grouping", "models and measure")
    assert text.startswith("1 block of width 32 with 4 heads, the query heads sharing 4, 2 or 1 key/value heads")
    assert "40 steps of 8 windows; validation perplexity at seed 1337." in text
    cfg = copy.deepcopy(smoke)
    cfg["grouping"]["S6-mqa"]["n_kv_heads"] = 2
    cfg["seeds"] = [1, 2]
    text = here(tmp_path, cfg, "grouping", "models and measure")
    assert "sharing 4 or 2 key/value heads" in text and "at seeds 1, 2." in text


def test_attention_only_says_what_the_control_models_keep(tmp_path, smoke):
    text = here(tmp_path, smoke, "induction", "the models")
    assert text == ("1 and 2 layers of width 16 with 2 heads and no MLP, but a LayerNorm before each attention layer "
                    "and one before the unembedding, and learned positions added to the token embeddings.")
    cfg = copy.deepcopy(smoke)
    cfg["induction"]["model"].update(norm="none", position="rope", mlp=True, n_heads=1)
    text = here(tmp_path, cfg, "induction", "the models")
    assert "with 1 head and an MLP in each block, but no LayerNorm, and rotary positions" in text


def test_s9_names_its_model_and_its_second_seed(tmp_path, smoke):
    assert "E8's `one_block` model (1 block of width 16 with 2 heads)" in here(
        tmp_path, smoke, "explanation", "models and outputs")
    assert "trained at seed 1338" in here(tmp_path, smoke, "explanation", "Wiegreffe and Pinter's tests")
    cfg = copy.deepcopy(smoke)
    cfg["explanation"]["model"], cfg["seed"] = "two_blocks", 7
    assert "E8's `two_blocks` model (2 blocks of width 16 with 2 heads)" in here(
        tmp_path, cfg, "explanation", "models and outputs")
    assert "trained at seed 8" in here(tmp_path, cfg, "explanation", "Wiegreffe and Pinter's tests")


def test_s1_s_encoder_and_wirings_follow_the_settings_and_an_older_result(tmp_path, smoke):
    assert "the encoder reading both ways" in here(tmp_path, smoke, "seq2seq", "networks")
    assert ("Bahdanau in Bahdanau's wiring as the paper states it (deep output: one maxout layer); dot, general, "
            "concat in Luong's, with input feeding") in here(tmp_path, smoke, "seq2seq", "where the score sits")
    cfg = copy.deepcopy(smoke)
    cfg["seq2seq"].update(bidirectional=False, variants=["none", "dot"], input_feeding=False)
    assert "the encoder reading forward only" in here(tmp_path, cfg, "seq2seq", "networks")
    assert "Dot in Luong's, without input feeding." in here(tmp_path, cfg, "seq2seq", "where the score sits")
    (tmp_path / "seq2seq").mkdir()  # a result from before the two wirings: what it ran, not what the profile says
    (tmp_path / "seq2seq" / "result.json").write_text(json.dumps({"settings": {"variants": ["none", "dot"]}}))
    assert "Every score (dot) in Luong's wiring without input feeding (this version predates" in here(
        tmp_path, smoke, "seq2seq", "where the score sits")


def test_a_benchmark_names_the_device_its_result_names(tmp_path, smoke):
    assert "on the profile's device (`auto`; not run yet)" in here(tmp_path, smoke, "cost", "S7 · the measurement")
    (tmp_path / "cost").mkdir()
    (tmp_path / "cost" / "result.json").write_text('{"device": "NVIDIA H200"}')
    assert "on NVIDIA H200." in here(tmp_path, smoke, "cost", "S7 · the measurement")


def test_a_field_the_profile_lacks_is_one_error_naming_it(tmp_path, smoke):
    site = bare(tmp_path, smoke)
    with pytest.raises(AttnlabError, match="no setting 'seq2seq.lenghts'"):
        protocols.filled("at {seq2seq.lenghts}", site, "test")
    with pytest.raises(AttnlabError, match="counts items"):
        protocols.filled("{#seq2seq.vocab}", site, "test")
    assert protocols.filled("{#seq2seq.lengths} lengths: {seq2seq.lengths}", site, "test") == "2 lengths: 4, 8"


def test_settings_read_as_the_table_says_them():
    assert protocols.shown([8, 16, 32]) == "8, 16, 32"
    assert protocols.shown(9999) == "9999" and protocols.shown(10_000) == "10,000"
    assert protocols.shown({"wide": [8, 2, 1], "chapter": {"d_model": 128}}) == "wide (8, 2, 1), chapter (d_model 128)"


def test_a_malformed_protocol_is_one_error_naming_its_page_module(monkeypatch):
    from attnlab.experiments.seq2seq import page as seq2seq

    for entry, message in [({"sources": "x"}, "needs `sources` and a list of `rows`"),
                           ({"sources": "x", "rows": [{"aspect": "a", "paper": "b"}]}, "row 1: needs exactly"),
                           ("text", "needs `sources`")]:
        monkeypatch.setattr(seq2seq, "PROTOCOL", entry)
        protocols.protocols.cache_clear()
        with pytest.raises(AttnlabError, match=r"attnlab\.experiments\.seq2seq\.page\.PROTOCOL.*" + re.escape(message)):
            protocols.protocols()
    protocols.protocols.cache_clear()


def test_the_trained_approximations_follow_their_runs(tmp_path, smoke):
    text = here(tmp_path, smoke, "approximate_training", "the window and its global tokens")
    assert "S8-w16-g4 (window 16, the first 4 tokens global)" in text
    assert "S8-w16-sym (window 16, positions 15, 31, … global)" in text and "S8-w32 (window 32);" in text
    cfg = copy.deepcopy(smoke)
    sym = {**smoke["approximate_training"]["S8-w16"], "window": 8, "global_every": 4}
    cfg["approximate_training"] = {"S8-w8-sym": sym}
    assert here(tmp_path, cfg, "approximate_training", "the window and its global tokens").startswith(
        "S8-w8-sym (window 8, positions 3, 7, … global).")
    assert here(tmp_path, cfg, "approximate_training", "the features").startswith("– (no FAVOR+ run)")
