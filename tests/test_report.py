"""Report: verdicts computed from fake run files, and the static site built from them."""
from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnlab.claims.checks import passes
from attnlab.claims.design import LOOKS, k_at
from attnlab.claims.registry import load_file, parse_claim
from attnlab.claims.table import write_claims_csv
from attnlab.errors import AttnlabError
from attnlab.provenance import read_json, write_json
from attnlab.registry import get as get_experiment, load as load_experiments
from attnlab.report.build import build_site
from helpers import CHROMIUM, crated, eval_section, playwright_or_skip

REPO = Path(__file__).resolve().parents[1]
REGISTRY = None
FAKED = ("data", "averaging", "ladder")  # the experiments write_fake_results writes run files for
IDS = [c["id"] for name in FAKED for c in yaml.safe_load(get_experiment(name).claims_file.read_text())["claims"]]
CONFIG = {"profile": "smoke", "seed": 1337,
          "data": {"url": "file://input.txt", "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"},
          "train": {"steps": 3000, "batch_size": 64, "lr": 1e-3},
          "model": {"d_model": 128, "context": 128}, "ladder": {"L1": {}}}

# Perplexities consistent with the chapter (absolute where stated, differences elsewhere).
VAL = {"L1": 59.71, "L2": 248.45, "L3": 246.31, "L4": 60.45, "L5": 55.45, "L6": 46.45, "L7": 43.45,
       "L8": 39.87, "L9": 38.07, "B2": 40.57}
TRAIN = {**{r: v - 3 for r, v in VAL.items()}, "L9": 18.77, "B2": 14.49}


def provenance(seed=1337, commit="abc123def456"):
    return {"commit": commit, "config_hash": "0123456789abcdef", "profile": "smoke", "device": "cpu: x86_64 (4 threads)",
            "clocks": None, "torch": "2.4.0", "python": "3.11.7", "date": "2025-01-01T00:00:00+00:00",
            "wall_seconds": 1.5, "seed": seed, "host": "test"}


def breakdown(row: str) -> dict:
    d, v = 128, 1024
    head_p = d * d + d
    blocks = 2 if row == "B2" else 1
    mixer = {"L1": 0, "L2": 0, "L3": 0, "L4": 0, "L5": 3 * head_p, "L6": 3 * head_p}.get(row, 4 * head_p)
    mlp = 8 * d * d + 5 * d if row in ("L8", "L9", "B2") else 0
    norm = 4 * d * blocks + 2 * d if row in ("L9", "B2") else 0
    return {"embedding": v * d, "position": 0 if row in ("L1", "L2") else d * d, "mixer": mixer * blocks,
            "mlp": mlp * blocks, "norm": norm, "head": d * v + v}


def write_fake_results(root: Path, val=None, train=None, diverged=(), skip=(), rows=None) -> Path:
    """Write a complete, chapter-like results/<profile>/ tree into root."""
    val, train = {**VAL, **(val or {})}, {**TRAIN, **(train or {})}
    first = [" t", "he", " a", "ou", " s", " m", "in", " w", "re", "ha", "nd", " the", " y", "ll"]
    write_json(root / "data/stats.json", {
        "n_chars": 1115394, "n_tokens": 459760, "n_train": 413784, "n_val": 45976,
        "chars_per_token": 1115394 / 459760, "tokenizer_seconds": 12.0, "encode_seconds": 3.0,
        "vocab_size": 1024, "n_merges": 768, "pattern": "gpt2", "first_merges": first,
        "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        "provenance": provenance()})
    matrix = [[1 / (t + 1) if s <= t else 0.0 for s in range(6)] for t in range(6)]
    write_json(root / "averaging/result.json", {
        "T": 6, "d": 4, "shuffle_max_abs_diff": 2.98e-8, "loop_vs_matmul_max_abs_diff": 5.96e-8,
        "loop_vs_softmax_max_abs_diff": 5.96e-8, "matrix": matrix, "float16_mask_is_inf": True,
        "provenance": provenance()})
    if "throughput" not in skip:
        write_json(root / "throughput/result.json", {
            "n_params": 478080, "batch_size": 16, "context": 128, "steps": 10, "warmup": 3, "threads": 2,
            "attnlab_tokens_per_s": 8000.0, "reference_tokens_per_s": 8400.0, "ratio": 0.952,
            "ratio_paired_median": 0.95, "max_abs_logit_diff": 0.0, "tokenizer_train_seconds": 0.8,
            "tokenizer_encode_seconds": 0.3, "encode_100kb_seconds": 0.05, "provenance": provenance()})
    for i, row in enumerate(rows or VAL):
        if row in skip:
            continue
        bd = breakdown(row)
        bad = row in diverged
        write_json(root / f"ladder/{row}/metrics.json", {
            "name": row, "experiment": "ladder",
            "spec": {"d_model": 128, "context": 128, "n_blocks": 2 if row == "B2" else 1,
                     "mixer": "none" if row == "L1" else ("average" if row in ("L2", "L3", "L4") else
                                                         "head" if row in ("L5", "L6") else "multihead"),
                     "n_heads": 4 if row in ("L7", "L8", "L9", "B2") else 1,
                     "residual": row not in ("L2", "L3", "L5"),
                     "position": "none" if row in ("L1", "L2") else "learned",
                     "mlp": row in ("L8", "L9", "B2"), "norm": "pre" if row in ("L9", "B2") else "none"},
            "n_params": sum(bd.values()), "param_breakdown": bd,
            "status": "diverged" if bad else "ok", "diverged_at_step": 812 if bad else None, "steps": 3000,
            "val_loss": None if bad else 4.0, "val_ppl": None if bad else val[row],
            "train_loss": None if bad else 3.9, "train_ppl": None if bad else train[row],
            "eval": {"method": "consecutive non-overlapping windows"} if bad else eval_section(row, val[row], train[row]),
            "tokens_per_second": 51234.0, "resumed_from_step": None, "provenance": provenance(seed=1337 + i)})
        steps = range(1, 3001)  # a row per step, as train.py logs it (a version's curve is checked for that)
        pd.DataFrame({"step": list(steps), "lr": 1e-3,
                      "train_loss": [5.0 - 1.0 * s / 3000 for s in steps],
                      "val_loss": [5.1 - 0.9 * s / 3000 if s % 500 == 0 else None for s in steps]}
                     ).to_csv(root / f"ladder/{row}/curve.csv", index=False)
    return root


def verdicts(root: Path) -> dict[str, dict]:
    """The verdicts of the claims on the faked experiments (every other claim is "not run" here)."""
    table = write_claims_csv(root, REGISTRY, root / "claims.csv")
    return {r["claim_id"]: r for r in table.to_dict("records") if r["claim_id"] in IDS}


# ------------------------------------------------------------------ claims

def test_claims_csv_columns_and_all_reproduced(tmp_path):
    root = write_fake_results(tmp_path / "r")
    got = verdicts(root)
    table = pd.read_csv(root / "claims.csv", keep_default_na=False)
    assert list(table.columns) == ["claim_id", "part", "kind", "chapter_value", "value", "value_text", "se", "k",
                                   "lo", "hi", "n_seeds", "verdict", "part_verdict", "settle", "note", "dominant", "look",
                                   "level"]
    assert list(dict.fromkeys(i for i in table["claim_id"] if i in IDS)) == IDS  # in registry order
    assert {f"C0.{i}" for i in range(1, 5)} | {f"C1.{i}" for i in range(1, 4)} \
        | {f"C2.{i}" for i in range(1, 11)} <= set(IDS)
    assert {k: v["verdict"] for k, v in got.items() if v["verdict"] != {"measured": "reproduced",
                                                                         "computed": "holds"}[v["kind"]]} == {}
    assert got["C2.7"]["reproduced_value"] == "gain=3; extra_params=16512"
    c27 = table[table.claim_id == "C2.7"].set_index("part")
    assert list(c27.kind) == ["measured", "computed"] and list(c27.part_verdict) == ["reproduced", "holds"]
    gain = c27.loc["gain"]
    k = k_at(19, LOOKS[0])  # one seed of a trained run: the first look, at the 20 blocks' 19 degrees of freedom
    assert float(gain.lo) == pytest.approx(3 - k * float(gain.se)) and int(gain.n_seeds) == 1
    assert (gain.dominant, int(gain.look), float(gain.level)) == ("sampling", 1, LOOKS[0])
    assert float(gain.lo) < 3 < float(gain.hi) and gain.value_text == "" and float(gain.value) == pytest.approx(3)
    merges = table[table.claim_id == "C0.4"].iloc[0]
    assert merges.value == "" and merges.value_text.startswith('[" t", "he"')  # JSON, not a Python repr


@pytest.mark.parametrize("change, claim", [
    ({"L2": 330.0}, "C2.1"),     # ratio 5.5, outside [3, 5]
    ({"L3": 220.0}, "C2.2"),     # positions suddenly help a lot
    ({"L3": 252.0}, "C2.2"),     # ... or hurt: wrong direction, clear of the noise
    ({"L4": 66.0}, "C2.3"),      # residual average 10 % worse than no context
    ({"L6": 59.0}, "C2.5"),      # the head barely helps
    ({"B2": 37.0}, "C2.9"),      # second block no longer overfits
])
def test_verdict_flips_when_numbers_move(tmp_path, change, claim):
    assert verdicts(write_fake_results(tmp_path / "ok"))[claim]["verdict"] == "reproduced"
    row = verdicts(write_fake_results(tmp_path / "moved", val=change))[claim]
    assert row["verdict"] == "not reproduced"
    assert "✗" in row["note"]


@pytest.mark.parametrize("l3", [248.1, 249.0])  # a gain of 0.35, or a loss of 0.55, inside the sampling noise
def test_a_difference_inside_the_noise_is_inconclusive_and_the_budget_limits_it(tmp_path, l3):
    row = verdicts(write_fake_results(tmp_path / "tie", val={"L3": l3}))["C2.2"]
    assert (row["verdict"], row["settle"]) == ("inconclusive", "budget")  # one seed: only sampling is known


def test_a_wrong_mask_fails_a_computed_claim(tmp_path):
    root = write_fake_results(tmp_path)
    e1 = read_json(root / "averaging/result.json")
    write_json(root / "averaging/result.json", {**e1, "float16_mask_is_inf": False})
    got = verdicts(root)
    assert got["C1.3"]["verdict"] == "fails"
    assert "✗ float16_mask_is_inf: false fails v = true" in got["C1.3"]["note"]


def test_missing_runs_are_not_run_and_named(tmp_path):
    root = write_fake_results(tmp_path, skip={"L5"})
    (root / "averaging/result.json").unlink()
    got = verdicts(root)
    assert got["C2.6"]["verdict"] == "not run"
    assert "ladder/L5/metrics.json" in got["C2.6"]["note"]
    assert got["C2.5"]["verdict"] == "reproduced"
    assert {got[c]["verdict"] for c in ("C1.1", "C1.2", "C1.3")} == {"not run"}
    assert "averaging/result.json" in got["C1.1"]["note"]
    assert got["C1.1"]["reproduced_value"] == ""


def test_a_missing_run_is_named_with_its_seed_folder(tmp_path):
    root = write_fake_results(tmp_path, skip={"L5"})
    for m in root.glob("ladder/*/metrics.json"):  # the layout of a run with seeds: <run>/seed<k>/metrics.json
        (m.parent / "seed1337").mkdir()
        m.rename(m.parent / "seed1337" / "metrics.json")
    got = verdicts(root)
    assert got["C2.6"]["verdict"] == "not run"
    assert got["C2.6"]["note"] == "missing: ladder/L5/seed1337/metrics.json"


def test_diverged_run_gives_diverged(tmp_path):
    got = verdicts(write_fake_results(tmp_path, diverged={"L5"}))
    assert got["C2.6"]["verdict"] == "diverged"
    assert "L5 diverged at step 812" in got["C2.6"]["note"]
    assert got["C2.5"]["verdict"] == "reproduced"


def test_parameter_claims_survive_a_diverged_run(tmp_path):
    got = verdicts(write_fake_results(tmp_path, diverged={"L8"}))
    assert got["C2.10"]["verdict"] == "holds"  # counts parameters only
    assert got["C2.8"]["verdict"] == "diverged"


GOOD = {"id": "C9.9", "claim": "x", "chapter_value": 1, "value": "ppl['L1']", "check": {"abs_le": 1},
        "tolerance_note": "n"}


@pytest.mark.parametrize("patch", [
    {"check": {"within": 3}},                          # unknown check kind
    {"check": {"between": [3]}},                       # malformed band
    {"check": {"target": 3}},                          # no tolerance
    {"value": "ppl['L1' +"},                           # syntax error
    {"value": "open('/etc/passwd')"},                  # not a whitelisted call
    {"value": "data.__class__"},                       # attribute access
    {"value": "ppl[row]"},                             # unknown name / non-literal row
    {"value": {"a": "ppl['L1']"}},                     # parts without matching checks
    {"tolerance_note": None, "drop": "tolerance_note"},  # missing field
])
def test_malformed_claim_raises_naming_its_id(tmp_path, patch):
    entry = {**GOOD, **patch}
    if "drop" in patch:
        entry.pop(entry.pop("drop"))
    path = tmp_path / "ladder.yaml"
    path.write_text(yaml.safe_dump({"claims": [entry]}))
    with pytest.raises(AttnlabError, match=r"C9\.9"):
        load_file(path, "ladder")


def test_checks():
    assert passes({"between": [3, None]}, 7)
    assert not passes({"between": [None, 3]}, 7)
    assert passes({"target": 188, "rel_tol": 0.15}, 200)
    assert not passes({"target": 188, "rel_tol": 0.15}, 150)
    assert passes({"target": 2.43, "abs_tol": 0.005}, 2.426)
    assert passes({"equals": [" t", "he"]}, (" t", "he"))
    assert not passes({"is_true": None}, 1)


# -------------------------------------------------------------------- site

SCRIPT_OR_CSS_URL = re.compile(r"""<(?:script[^>]*\bsrc|link[^>]*\bhref)\s*=\s*["']?(?:https?:)?//""", re.I)


def built_pages(site: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in site.glob("*.html")}


def test_site_builds_offline_with_provenance(tmp_path):
    root = write_fake_results(tmp_path / "results" / "smoke")
    build_site(root, REGISTRY, CONFIG, tmp_path / "site")
    html = built_pages(tmp_path / "site")
    for page in ("index.html", "data.html", "averaging.html", "ladder.html", "throughput.html"):
        assert 'id="provenance"' in html[page], page
        assert "abc123def456" in html[page], page
        assert "snakemake " in html[page] and " --cores " in html[page], page
    assert "verdict-reproduced" in html["ladder.html"]
    assert 'vegaEmbed("#chart-ladder"' in html["ladder.html"]
    assert 'vegaEmbed("#chart-throughput"' in html["throughput.html"] and "8,400" in html["throughput.html"]
    assert "snakemake results/smoke/ladder/L6/seed1337/metrics.json --cores 4 --resources gpu=1 --config profile=smoke" \
        in html["ladder.html"]
    for path in (tmp_path / "site").rglob("*"):
        if path.suffix in (".html", ".css"):
            text = path.read_text(errors="replace")
            assert not SCRIPT_OR_CSS_URL.search(text), path
            assert "fonts.googleapis" not in text and "@import url(http" not in text, path
    for js in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        assert (tmp_path / "site" / "assets" / "vendor" / js).stat().st_size > 10_000
        assert f'src="assets/vendor/{js}"' in html["ladder.html"]
    # every claim has its own anchor with how it is computed, and links to a copy of the run files it read
    assert 'id="claim-C2-2"' in html["ladder.html"] and "ppl[&#x27;L2&#x27;] - ppl[&#x27;L3&#x27;]" in html["ladder.html"]
    assert 'href="runs/ladder/L3/metrics.json"' in html["ladder.html"]
    assert (tmp_path / "site" / "runs" / "ladder" / "L3" / "metrics.json").is_file()
    assert 'href="ladder.html#claim-C2-2"' in html["index.html"]
    assert "export: true" in html["ladder.html"]  # charts offer PNG/SVG export
    downloaded = pd.read_csv(tmp_path / "site" / "downloads" / "ladder.csv")
    assert list(downloaded["row"][:3]) == ["L1", "L2", "L3"]
    spread = ["n_seeds", "val_ppl_sd", "train_ppl_sd", "val_ppl_seed1337", "train_ppl_seed1337"]
    assert set(spread) <= set(downloaded.columns) and not {"val_spread", "train_spread"} & set(downloaded.columns)
    assert all(pd.api.types.is_numeric_dtype(downloaded[c]) for c in ["val_ppl", "train_ppl", *spread])
    assert downloaded["val_ppl_seed1337"][0] == pytest.approx(VAL["L1"]) and downloaded["n_seeds"][0] == 1


def test_site_builds_with_stages_missing(tmp_path):
    root = write_fake_results(tmp_path / "results", skip={"L7", "L8", "L9", "B2"})
    (root / "averaging/result.json").unlink()
    build_site(root, REGISTRY, CONFIG, tmp_path / "site")
    html = built_pages(tmp_path / "site")
    assert "not run" in html["averaging.html"] and 'id="provenance"' in html["averaging.html"]
    assert "results/smoke/ladder/L7/seed1337/metrics.json" in html["ladder.html"]
    assert "verdict-not-run" in html["index.html"]
    build_site(root, REGISTRY, CONFIG, tmp_path / "site")  # rebuilding over its own output is fine


@pytest.mark.parametrize("name", [e.name for e in load_experiments() if e.result])
def test_a_page_without_its_result_shows_one_warning_and_no_marker(name, tmp_path):
    """Over a results folder with no run files, every experiment page with a result file renders whole from the
    skeleton: one not-run warning naming its file, `settings` not run, no marker left."""
    from attnlab.config import load
    from attnlab.report import build
    from helpers import site_for

    site = site_for(tmp_path, load(REPO / "config" / "smoke.yaml"))
    text = build.render(build.template(f"{name}.md").read_text(), build.page_blocks(site, f"{name}.md"), f"{name}.md")
    assert text.count('!!! warning "not run"') == 1, text
    assert f"results/smoke/{get_experiment(name).result}" in text and "<!-- attnlab:" not in text


def test_strict_build_fails_on_a_broken_link(tmp_path):
    docs = tmp_path / "handwritten"
    shutil.copytree(REPO / "docs", docs)
    with (docs / "about.md").open("a") as f:
        f.write("\nSee [the missing page](nowhere.md).\n")
    root = write_fake_results(tmp_path / "results")
    with pytest.raises(AttnlabError, match="mkdocs build failed"):
        build_site(root, REGISTRY, CONFIG, tmp_path / "site", docs_src=docs)


def test_mixed_provenance_says_what_is_shared_once_and_tabulates_only_the_differences(tmp_path):
    from helpers import site_for

    root = write_fake_results(tmp_path / "results" / "smoke")
    late = read_json(root / "ladder/L2/metrics.json")
    write_json(root / "ladder/L2/metrics.json", {**late, "provenance": provenance(seed=7, commit="fedcba987654")})
    block = site_for(root, CONFIG).provenance_block(["ladder/L1/metrics.json", "ladder/L2/metrics.json"])
    shared, differ = block.split("Where they differ:")
    assert "mixed provenance" in block and "2 different commits" in block
    assert "**torch**: 2.4.0" in shared and "**device**" in shared  # the same for both: said once
    header = differ.strip().splitlines()[0]
    assert "commit" in header and "seed" in header and "torch" not in header and "device" not in header


def test_mixed_provenance_alarms_only_where_files_that_should_share_a_setting_do_not():
    """Each run's config hash covers its own job (its seed included), and experiments may run with other thread
    counts: no alarm. One experiment's runs on two devices, or any two files from two commits, profiles or torch
    versions: an alarm that names them."""
    from attnlab.report.site import mixed

    prov = {f"ladder/L{k}/seed1337/metrics.json": {**provenance(), "config_hash": f"{k:016d}"} for k in (1, 2)}
    prov["throughput/result.json"] = {**provenance(), "device": "cpu: x86_64 (2 threads)"}
    assert mixed(prov) == ""
    gpu = {**prov, "ladder/L2/seed1337/metrics.json": {**provenance(), "device": "NVIDIA H200"}}
    assert mixed(gpu) == "The runs of one experiment, set against each other, come from different devices: ladder (2)."
    for key, value, label in (("commit", "fedcba987654", "commits"), ("profile", "quick", "profiles"),
                              ("torch", "2.5.0", "torch versions")):
        moved = {**prov, "throughput/result.json": {**prov["throughput/result.json"], key: value}}
        assert mixed(moved) == f"These run files come from 2 different {label}."


def test_a_machine_is_named_with_its_threads_once():
    from attnlab.report.format import machine

    assert machine("cpu: x86_64 (2 threads)", 2) == "**cpu: x86_64 (2 threads)**"
    assert machine("cpu: x86_64", 2) == "**cpu: x86_64** (2 threads)"
    assert machine("NVIDIA H200", 4) == "**NVIDIA H200** (4 threads)" and machine("NVIDIA H200", None) == "**NVIDIA H200**"


def test_a_spread_column_says_its_plus_minus_is_a_standard_deviation():
    from attnlab.report.format import md_table, spread
    from attnlab.results import Spread

    df = pd.DataFrame([{"run": "L1", "val": Spread({1337: 3.0, 1338: 5.0})}])
    assert md_table(df, {"run": "run", "val": "val ppl"}, {"val": spread(1)}).splitlines()[0] \
        == "| run | val ppl (mean ± sd) |"
    assert md_table(df, {"run": "run", "val": "val (± sd)"}, {"val": spread(1)}).splitlines()[0] == "| run | val (± sd) |"
    assert md_table(df, {"run": "run", "val": "val ppl"}, {"val": str}).splitlines()[0] == "| run | val ppl |"


# ------------------------------------------------------------ errors (the interval rule: tests/test_intervals.py)

def test_the_jackknife_matches_the_textbook_error_of_a_mean(tmp_path):
    """For one run's perplexity the delete-one-block jackknife is exactly ppl-free algebra: the SE of the block
    means times the derivative of exp, to first order."""
    import math

    from attnlab.claims.evaluate import evaluate
    from attnlab.results import gather

    root = write_fake_results(tmp_path / "r")
    claim = parse_claim({"id": "T1", "claim": "L3 is above 200", "chapter_value": 200,
                            "value": "ppl['L3']", "check": {"above": 200}, "tolerance_note": "test"})
    v = evaluate(claim, gather(root))
    means = [m for m, _ in eval_section("L3", VAL["L3"], 1.0)["val_blocks"]]
    k, mu = len(means), sum(means) / len(means)
    textbook = math.exp(mu) * math.sqrt(sum((m - mu) ** 2 for m in means) / (k - 1) / k)
    assert v.se[""] == pytest.approx(textbook, rel=0.01) and v.verdict == "reproduced"


def test_runs_scored_on_the_same_tokens_are_paired(tmp_path):
    """The shared pattern of hard and easy stretches cancels in a difference: its SE is far below what two
    independent errors would give, which is what lets a small real gain (C2.2's) clear the margin."""
    import math

    from attnlab.claims.evaluate import evaluate
    from attnlab.results import gather

    res = gather(write_fake_results(tmp_path / "r"))
    claims = {e: parse_claim({"id": e, "claim": e, "chapter_value": 0, "value": e, "check": {"above": -1e9},
                                 "tolerance_note": "t"}) for e in ("ppl['L2'] - ppl['L3']", "ppl['L2']", "ppl['L3']")}
    se = {e: evaluate(c, res).se[""] for e, c in claims.items()}
    assert se["ppl['L2'] - ppl['L3']"] < 0.5 * math.hypot(se["ppl['L2']"], se["ppl['L3']"])


def test_a_direction_on_runs_without_blocks_is_not_run(tmp_path):
    root = write_fake_results(tmp_path / "r")
    m = read_json(root / "ladder/L3/metrics.json")
    del m["eval"]["val_blocks"]
    write_json(root / "ladder/L3/metrics.json", m)
    got = verdicts(root)["C2.2"]
    assert got["verdict"] == "not run" and "ladder/L3/metrics.json records no evaluation blocks" in got["note"]


def test_a_multi_part_value_names_its_parts_on_both_sides():
    entry = {"id": "T2", "claim": "c", "chapter_value": 0.6667, "value": {"a": "1", "b": "2"},
             "check": {"a": {"equals": 1}, "b": {"equals": 2}}, "tolerance_note": "t"}
    with pytest.raises(AttnlabError, match="must name what the chapter says for each part"):
        parse_claim(entry)
    with pytest.raises(AttnlabError, match="same parts"):
        parse_claim({**entry, "chapter_value": {"a": 1}, "value": "1", "check": {"equals": 1}})
    assert parse_claim({**entry, "chapter_value": {"a": 1}}).id == "T2"


# ------------------------------------------------------------------ versions

def fake_version(root: Path, name: str, published: str, manifest: dict | None = None, **change) -> Path:
    """A published version folder: run files, the profile it ran and a manifest (what `publish` writes; `manifest`
    overrides some of it)."""
    from attnlab.config import load

    folder = write_fake_results(root / "results" / name, **change)
    (folder / "config.yaml").write_text(yaml.safe_dump(load(REPO / "config" / "smoke.yaml")))
    write_json(folder / "manifest.json", {"version": name, "profile": "smoke", "commit": "abc123def456",
                                          "published_from": "abc123def456", "published": published,
                                          "hardware": "cpu", **(manifest or {})})
    return crated(folder)


OLD, NEW = "2026-01-01-smoke-cpu-abc123d", "2026-02-01-smoke-cpu-abc123d"


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory):
    """Two published versions (C2.1 holds in the older only), the older the version of record (results/LATEST
    names it, not the newer date), and the site of both: (root, site, built names)."""
    from attnlab.report.build import build_versions

    root = tmp_path_factory.mktemp("versions")
    fake_version(root, OLD, "2026-01-01T00:00:00+00:00")
    # C2.1 no longer holds: another run, so another commit (the same commit, settings and seed are the same run)
    fake_version(root, NEW, "2026-02-01T00:00:00+00:00", {"commit": "fed321cba987", "published_from": "fed321cba987"},
                 val={"L2": 330.0})
    (root / "results" / "smoke").mkdir()  # a live run folder is not a version
    (root / "results" / "LATEST").write_text(OLD + "\n")
    out = root / "site"
    return root, out, build_versions(REGISTRY, out, root=root)


def test_every_version_gets_a_stamped_site_with_a_selector_and_a_comparison(two_versions):
    _, out, built = two_versions
    old, new = OLD, NEW
    assert built == [new, old]
    assert 'url=latest/index.html' in (out / "index.html").read_text()  # the version of record's, not the newest
    for name in (new, old):
        for page in ("index", "ladder", "about", "compare"):
            text = (out / name / f"{page}.html").read_text()
            commit = "fed321cba987" if name == new else "abc123def456"
            assert f"Version <code>{name}</code> · runs at commit <code>{commit}</code>" in text, (name, page)
            assert f'<option value="../{old}/{page}.html"' in text and f'<option value="../{new}/{page}.html"' in text
            assert "site built from commit <code>" in text
    compare = (out / new / "compare.html").read_text()
    assert f"against version {old} (the version of record)" in compare and "changed: C2.1," in compare
    assert re.search(r"<td[^>]*>C2\.1</td><td[^>]*><span class=\"verdict verdict-not-reproduced\">.*?≠ changed", compare)
    assert ">change: here − there (± SE)</th>" in compare and "admonition-title\">different settings" not in compare


def test_the_version_of_record_is_marked_and_latest_leads_to_it(two_versions):
    """As `mike` does: latest/ leads every page to the version of record, the root to its home page, the selector
    labels it, and each version's stamp says whether it is the record (and links the record's same page)."""
    root, out, _ = two_versions
    assert 'location.replace("latest/index.html" + location.hash)' in (out / "index.html").read_text()
    assert f'The version of record: <a href="{OLD}/index.html">' in (out / "index.html").read_text()
    assert f'location.replace("../{OLD}/compare.html" + location.hash)' in (out / "latest" / "compare.html").read_text()
    assert sorted(p.name for p in (out / "latest").iterdir()) == sorted(p.name for p in (out / OLD).glob("*.html"))
    for page in ("index", "ladder"):
        older, newer = ((out / name / f"{page}.html").read_text() for name in (OLD, NEW))
        assert "published 2026-01-01 · the version of record" in older
        assert "· the version of record" not in newer.split("attnlab-stamp")[1].split("</div>")[0]
        assert f'<a href="../latest/{page}.html">the version of record</a>' in newer
        assert f">{OLD} (latest)</option>" in newer and f">{NEW}</option>" in newer


def test_the_stamp_links_the_version_s_manifest_and_claims_csv(two_versions):
    root, out, _ = two_versions
    page = (out / NEW / "ladder.html").read_text()
    assert '<a href="downloads/manifest.json">manifest</a> · <a href="downloads/claims.csv">claims.csv</a>' in page
    assert (out / NEW / "downloads" / "manifest.json").read_text() == (root / "results" / NEW / "manifest.json").read_text()
    assert "C2.1" in (out / NEW / "downloads" / "claims.csv").read_text()


def test_the_version_selector_lists_every_version_and_opens_the_same_page_there(two_versions):
    """In Chromium, from disk: the selector on a page of one version lists every published version, and
    choosing another opens the same page in it, at the same claim; latest/ opens the version of record at the
    claim it was given; a 404 page loads its styles; search finds pages. No console or page error on the way."""
    sync_api = playwright_or_skip()
    _, out, names = two_versions
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.goto((out / OLD / "ladder.html").as_uri() + "#claim-C2-1")
        options = page.eval_on_selector_all("select.attnlab-versions option", "os => os.map(o => o.textContent)")
        selected = page.eval_on_selector("select.attnlab-versions", "s => s.options[s.selectedIndex].textContent")
        with page.expect_navigation():
            page.select_option("select.attnlab-versions", label=NEW)
        landed = page.url
        page.goto((out / "latest" / "ladder.html").as_uri() + "#claim-C2-1")
        page.wait_for_url(f"**/{OLD}/ladder.html#claim-C2-1")
        page.goto((out / NEW / "404.html").as_uri())
        sheets = page.evaluate("Array.from(document.styleSheets, s => (s.href || '').split('/').pop())")
        page.goto((out / NEW / "index.html").as_uri())
        page.locator("input.md-search__input").click()
        page.locator("input.md-search__input").press_sequentially("perplexity", delay=20)
        page.locator(".md-search-result__item").first.wait_for(timeout=15_000)
        browser.close()
    assert sorted(options) == sorted(n + (" (latest)" if n == OLD else "") for n in names) and selected == f"{OLD} (latest)"
    assert landed == (out / NEW / "ladder.html").as_uri() + "#claim-C2-1"
    assert any(s.startswith("main.") for s in sheets) and "attnlab.css" in sheets and not errors, (sheets, errors)


def test_a_live_site_says_its_results_are_unpublished(tmp_path):
    root = write_fake_results(tmp_path / "results" / "smoke")
    build_site(root, REGISTRY, CONFIG, tmp_path / "site")
    page = (tmp_path / "site" / "ladder.html").read_text()
    assert "Unpublished results in <code>smoke/</code>" in page and "<select" not in page
    assert "No other published version to compare with" in (tmp_path / "site" / "compare.html").read_text()


def test_a_value_the_run_could_not_measure_is_not_run(tmp_path):
    from attnlab.claims.evaluate import evaluate
    from attnlab.results import gather

    root = write_fake_results(tmp_path / "r")
    m = read_json(root / "throughput/result.json")
    m["ratio"] = None
    write_json(root / "throughput/result.json", m)
    claim = parse_claim({"id": "T3", "claim": "c", "chapter_value": 1, "value": "throughput['ratio']",
                            "check": {"between": [0, None]}, "tolerance_note": "t"})
    v = evaluate(claim, gather(root))
    assert v.verdict == "not run" and "value is null in the run files" in v.note


@pytest.mark.parametrize("se, verdict", [(0.25, "inconclusive"), (0.19, "reproduced"), (0.01, "reproduced")])
def test_a_result_file_can_state_the_standard_error_of_its_value(tmp_path, se, verdict):
    """`se:` reads a value's sampling error from the run files (a held-out accuracy's binomial error, say):
    the interval is then 0.9 ± 1.96 of them (normal), clear of 0.5 below SE 0.204."""
    from attnlab.claims.evaluate import evaluate
    from attnlab.results import gather

    root = write_fake_results(tmp_path / "r")
    m = read_json(root / "averaging/result.json")
    m.update(accuracy=0.9, accuracy_se=se)
    write_json(root / "averaging/result.json", m)
    claim = parse_claim({"id": "T3", "claim": "better than chance", "chapter_value": 0.9,
                            "value": "averaging['accuracy']", "se": "averaging['accuracy_se']",
                            "check": {"above": 0.5}, "tolerance_note": "t"})
    got = evaluate(claim, gather(root))
    assert got.verdict == verdict and got.se[""] == se
    with pytest.raises(AttnlabError, match="'se' must name parts of 'value'"):
        parse_claim({"id": "T4", "claim": "c", "chapter_value": {"a": 1}, "value": {"a": "1"},
                        "check": {"a": {"equals": 1}}, "se": {"b": "1"}, "tolerance_note": "t"})


# ------------------------------------------------------------ what a ± is

ERROR_WORDS = re.compile(r"\b(sd|SEs?|standard deviations?|(standard )?errors?|tolerance)\b")


def plus_minus_unsaid(text: str) -> list[str]:
    """Every ± in a rendered page that does not say which error it is: in a table, its cell, its row's label, its
    column's header or the line above the table must; elsewhere, its own sentence."""
    found = []
    for table in re.findall(r"<table.*?</table>", text, flags=re.S):
        heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table, flags=re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
            found += [f"{heads[i]!r}: {re.sub('<[^>]+>', '', c)[:60]}" for i, c in enumerate(cells)
                      if "±" in c and not ERROR_WORDS.search(heads[i] + c + cells[0])]
    # a claim's "Why this tolerance" states a tolerance, which its heading says
    text = re.sub(r"<table.*?</table>|<script.*?</script>|<p>Why this tolerance:.*?</p>", "", text, flags=re.S)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):  # a markdown table's header
            heads = line.strip().strip("|").split(" | ")
            above = next((x for x in reversed(lines[:i]) if x.strip()), "")
            for body in itertools.takewhile(lambda x: x.startswith("|"), lines[i + 2:]):
                cells = body.strip().strip("|").split(" | ")
                found += [f"{heads[k].strip()!r}: {c.strip()[:60]}" for k, c in enumerate(cells)
                          if "±" in c and not ERROR_WORDS.search(heads[k] + c + cells[0] + above)]
    prose = "\n".join(x for x in lines if not x.startswith("|"))
    for m in re.finditer("±", prose):
        sentence = re.split(r"[.!?]\s|\n\n", prose[:m.start()])[-1] + re.split(r"[.!?]\s|\n\n", prose[m.start():])[0]
        if not ERROR_WORDS.search(sentence):
            found.append(sentence[-120:])
    return found


def test_the_plus_minus_of_every_page_says_which_error_it_is():
    """On the version of record, page by page: every ± says whether it is a standard deviation, a standard error
    or a tolerance (in its table's header, row or caption, or in its own sentence)."""
    from attnlab.report import build
    from attnlab.versions import latest

    s = build.context(REPO / "results" / latest(REPO), REGISTRY)
    unsaid = {}
    for page in [*build.pages(), *build.STATIC_PAGES]:
        text = build.render(build.template(page).read_text(), build.page_blocks(s, page), page)
        unsaid[page] = plus_minus_unsaid(text)
    assert not any(unsaid.values()), "\n".join(f"{p}: {x!r}" for p, u in unsaid.items() for x in u)
    assert plus_minus_unsaid("| run | val ppl |\n|---|---|\n| L1 | 3 ± 1 |") == ["'val ppl': 3 ± 1"]
    assert plus_minus_unsaid("| run | val ppl (mean ± sd) |\n|---|---|\n| L1 | 3 ± 1 |") == []
    assert plus_minus_unsaid("It moved by 3 ± 1 here. One SE is small.")
    assert not plus_minus_unsaid("It moved by 3 ± 1 (one SE) here.")


def test_a_larger_budget_s_partial_version_speaks_for_its_experiments_from_its_run_files(tmp_path):
    """The record's dashboard beside a version of a larger budget that holds the ladder alone: its verdicts are
    recomputed from its run files, and it speaks for the ladder's claims only, though it holds other files."""
    from attnlab.report.build import context
    from attnlab.report.pages import dashboard

    record, larger = "2026-01-01-smoke-cpu-abc123d", "2026-02-01-quick-cpu-abc123d-only-ladder"
    fake_version(tmp_path, record, "2026-01-01T00:00:00+00:00", val={"L2": 330.0})  # C2.1 not reproduced
    fake_version(tmp_path, larger, "2026-02-01T00:00:00+00:00",
                 manifest={"profile": "quick", "complete": False, "experiments": ["ladder"]})
    (tmp_path / "results" / "LATEST").write_text(record + "\n")
    site = context(tmp_path / "results" / record, REGISTRY)
    assert next(v for v in site.verdicts if v.claim.id == "C2.1").verdict == "not reproduced"
    found = site.larger()
    assert found["C2.1"].verdict == "reproduced" and found["C2.1"].manifest["version"] == larger
    assert all(x.verdict is None for cid, x in found.items() if site.registry.by_id(cid).experiment != "ladder")
    table = dashboard.blocks(site)["table"]
    assert ">at the quick profile's budget</th>" in table
    assert (f"At the quick profile's budget ({larger}, at one seed) it is reproduced: the smoke verdict was the "
            "budget's." in table)  # smoke's one seed, as the fake version's config.yaml says
