"""A reader's own variant end to end, in Chromium: a profile file of their own laid over smoke adds a ladder run
(`like: L9`), the runner trains the ladder with it, and the site shows it in the ladder's table and chart with a
reading against L9, and on the compare page against a published version's L9."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from charts import described, problems, scene_items, site_charts
from helpers import CHROMIUM, REPO, playwright_or_skip

VARIANT, LIKE = "L9-mlp2", "L9"
VERSION = "2026-12-02-chapter-cpu-680862e-only-ladder-position-set-seeds"  # a published L9 at seed 1337


def run(*argv: str) -> None:
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def reader(tmp_path_factory, corpus_path) -> Path:
    """A reader's folder: their profile file (smoke, 10 steps, one variant), the ladder trained by the runner into
    results/smoke beside one published version, and the site built from them."""
    home = tmp_path_factory.mktemp("reader")
    (home / "results").mkdir()
    (home / "results" / VERSION).symlink_to(REPO / "results" / VERSION)
    mine = home / "mine.yaml"
    mine.write_text(yaml.safe_dump({"extends": "smoke", "data": {"path": str(corpus_path)},
                                    "train": {"steps": 10, "eval_every": 5, "ckpt_every": 5},
                                    "ladder": {VARIANT: {"like": LIKE, "mlp_ratio": 2}}}, sort_keys=False))
    results = home / "results" / "smoke"
    run("-m", "attnlab.runner", str(mine), "--results", str(results), "--only", "ladder", "--jobs", "2")
    run("-m", "attnlab", "site", "--config", str(mine), "--results", str(results),
        "--site", str(home / "site"))
    return home


def val_ppl(results: Path, run: str) -> float:
    return json.loads((results / "ladder" / run / "seed1337" / "metrics.json").read_text())["val_ppl"]


def test_the_variant_trains_like_l9_with_its_own_setting(reader):
    metrics = json.loads((reader / "results" / "smoke" / "ladder" / VARIANT / "seed1337" / "metrics.json").read_text())
    l9 = json.loads((reader / "results" / "smoke" / "ladder" / LIKE / "seed1337" / "metrics.json").read_text())
    assert metrics["spec"] == {**l9["spec"], "mlp_ratio": 2}
    assert metrics["n_params"] < l9["n_params"]  # half the MLP's width


def test_the_ladder_page_shows_the_variant_in_its_table_chart_and_reading(reader):
    """In Chromium, from disk: the variant's row in the ladder table, its mark in the drawn chart, and its reading
    against L9 with the run files' numbers; screenshots of each (ladder-*.png) for a reader to see."""
    sync_api = playwright_or_skip()
    mine, l9 = val_ppl(reader / "results" / "smoke", VARIANT), val_ppl(reader / "results" / "smoke", LIKE)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto((reader / "site" / "ladder.html").as_uri())
        table = page.locator("table", has=page.locator("th", has_text="chapter val ppl")).first
        row = table.locator("tr", has=page.locator("td", has_text=re.compile(f"^{VARIANT}$"))).inner_text()
        chart = page.locator("#chart-ladder")
        chart.locator("canvas, svg").first.wait_for(timeout=15_000)
        drawn = chart.bounding_box()
        said = page.locator("li", has_text=f"{VARIANT} (L9 with mlp_ratio 2)")
        reading = said.inner_text()
        for name, shown in (("table", table), ("chart", chart), ("reading", said)):
            shown.screenshot(path=str(reader / f"ladder-{name}.png"))
        browser.close()
    assert "L9 with mlp_ratio 2" in row and f"{mine:,.2f}" in row, row
    assert drawn and drawn["height"] > 200 and not errors, (drawn, errors)
    assert reading.startswith(f"{VARIANT} (L9 with mlp_ratio 2): validation perplexity {mine:.2f} against L9's "
                              f"{l9:.2f}, paired at one seed (1337): a difference of {mine - l9:+.2f} ± "), reading


def test_the_ladder_chart_draws_the_variant_as_a_mark_of_its_own(reader):
    spec = site_charts(reader / "site")["ladder#chart-ladder"]
    drawn = [described(it) for it in scene_items(spec) if it["role"] == "mark" and it["marktype"] == "symbol"]
    mine = [d for d in drawn if d.get("row") == VARIANT]
    assert [d.get("source") for d in mine] == ["your variant"], drawn
    assert float(mine[0]["val_ppl"]) == pytest.approx(val_ppl(reader / "results" / "smoke", VARIANT), abs=0.01)
    assert {d.get("source") for d in drawn if d.get("row") == LIKE} == {"reproduced", "chapter"}
    assert not problems("ladder", spec)


def test_the_compare_page_reads_the_variant_against_the_published_l9(reader):
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (reader / "site" / "compare.html").read_text()))
    mine = val_ppl(reader / "results" / "smoke", VARIANT)
    there = val_ppl(REPO / "results" / VERSION, LIKE)
    assert f"{VARIANT} here against {LIKE} there (validation perplexity): {mine:.2f} against {there:.2f}, " \
           f"a difference of {mine - there:+.2f}" in text
