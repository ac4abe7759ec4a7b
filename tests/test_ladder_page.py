"""The ladder page's note under the training curves: what the validation dots score (the first eval_windows windows
of the split, during training) against the ladder table's final evaluation (the whole split), every number and
direction generated from the run files."""
from __future__ import annotations

import math
import re

import pandas as pd

from attnlab.config import load_settings
from attnlab.experiments.ladder import derive, page as ladder
from helpers import REPO, rendered_page, site_for

VERSION = REPO / "results" / "2026-12-02-quick-cpu-4303899"  # the version the auditor read


def evals(curve: dict, final: dict, windows=16, context=128, tokens=45952, steps=800, step=800) -> pd.DataFrame:
    """last_evals' table for runs keyed (row, seed): the last dot's loss and the final loss of each."""
    return pd.DataFrame([{"row": row, "seed": seed, "step": step, "curve_loss": curve[row, seed], "steps": steps,
                          "final_loss": final[row, seed], "context": context, "final_tokens": tokens,
                          "windows": windows} for row, seed in curve])


def test_dots_below_the_final_loss_are_said_below_with_the_measured_gap():
    curve = {("L1", 1): 4.00, ("L1", 2): 3.90, ("L9", 1): 3.70}
    final = {("L1", 1): 4.20, ("L1", 2): 4.21, ("L9", 1): 4.00}
    text = ladder.curves_note(evals(curve, final))
    assert "the first 16 windows of 128 tokens of the validation split (2,048 tokens" in text
    assert "scores all 359 windows (45,952 tokens)" in text
    assert "the dot lies below the final loss in every one of the 3 runs: by 0.27 nats on average (0.20 to 0.31)" \
        in text
    low, high = 100 * (1 - math.exp(-0.20)), 100 * (1 - math.exp(-0.31))
    assert f"is {low:.0f} % to {high:.0f} % below its run's final perplexity" in text
    assert "the last dots of one rung span up to 0.10 nats (L1); the final losses, up to 0.01 (L1)" in text
    assert "not a sample of the whole of it" in text


def test_dots_above_the_final_loss_are_said_above():
    curve = {("L1", 1): 4.30, ("L1", 2): 4.25}
    final = {("L1", 1): 4.20, ("L1", 2): 4.21}
    text = ladder.curves_note(evals(curve, final))
    assert "the dot lies above the final loss in every one of the 2 runs: by 0.07 nats on average (0.04 to 0.10)" \
        in text
    assert "below" not in text


def test_dots_on_both_sides_are_counted_with_the_signed_range():
    curve = {("L1", 1): 4.10, ("L1", 2): 4.30, ("L2", 1): 5.00}
    final = {("L1", 1): 4.20, ("L1", 2): 4.21, ("L2", 1): 5.00}
    text = ladder.curves_note(evals(curve, final))
    assert ("the dot lies below it in 1 run, above it in 1 run, equal to it in 1 run (the final loss less the "
            "dot's: -0.09 to +0.10 nats, +0.00 on average)") in text
    assert "every one" not in text


def test_dots_over_the_whole_split_say_so_and_match():
    curve = {("L1", 1): 4.2, ("L1", 2): 4.21}
    text = ladder.curves_note(evals(curve, dict(curve), windows=359))
    assert text.startswith("The dots score the whole validation split (45,952 tokens)")
    assert "the dot equals the final loss in every one of the 2 runs" in text
    assert "first" not in text and "not a sample" not in text


def test_no_comparison_where_the_last_dot_is_not_the_final_weights():
    """A run that diverged has no final loss, and a curve that stops early was not scored at the final weights."""
    text = ladder.curves_note(evals({("L1", 1): 4.0}, {("L1", 1): None}, step=700))
    assert "the first 16 windows" in text and "last step" not in text and "nats" not in text


def test_unknown_windows_are_not_counted():
    text = ladder.curves_note(evals({("L1", 1): 4.0}, {("L1", 1): 4.2}, windows=None))
    assert "windows from the start of the validation split" in text and "16" not in text
    assert "below the final loss in the one run" in text


def test_the_published_note_reads_its_numbers_from_the_run_files():
    """The auditor's version: every dot at step 800 is the curve.csv row, every final loss metrics.json's."""
    site = site_for(VERSION, load_settings(str(VERSION / "config.yaml")))
    table = derive.last_evals(site.res, site.config, ladder.curves(site.res, site.config.get("ladder")))
    assert len(table) == 30 and set(table["windows"]) == {16} and set(table["final_tokens"]) == {45952}
    b2 = table[(table["row"] == "B2") & (table["seed"] == 1338)].iloc[0]
    curve = pd.read_csv(VERSION / "ladder" / "B2" / "seed1338" / "curve.csv").dropna(subset=["val_loss"])
    assert b2["curve_loss"] == curve["val_loss"].iloc[-1] and b2["step"] == 800
    gaps = table["final_loss"] - table["curve_loss"]
    page = rendered_page(site, "ladder", ladder.blocks)
    note = re.search(r"The dots are the evaluation.*\n", page).group(0)
    assert f"below the final loss in every one of the 30 runs: by {gaps.mean():.2f} nats on average " \
           f"({gaps.min():.2f} to {gaps.max():.2f})" in note
    assert note in page[page.index('id="chart-curves"'):]  # under the chart it explains
