"""The sequential design of the verdicts: a first look at the profile's seeds, a second at the seeds an
experiment adds where the first left a claim inconclusive, each at the level the design gives it (LOOKS),
and, simulated, the chance of a wrong verdict for claims whose truth sits exactly on their bound."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attnlab.claims import design
from attnlab.claims.design import LOOKS, MAX_SEEDS, Noise, SECOND_LOOK_MOST, k_at
from attnlab.claims.registry import parse_claim
from attnlab.claims.table import COLUMNS
from attnlab.claims.verdicts import judge_claim, judge_part

WRONG = ("reproduced", "not reproduced")  # the truth on the bound: either decided verdict is wrong
FIRST = 3  # the profile's own seeds, the first look
BLOCKS_DF = 19  # the jackknife's 20 evaluation blocks


def claim(check):
    return parse_claim({"id": "T", "claim": "c", "chapter_value": 0, "value": "1", "check": check,
                        "tolerance_note": "t"})


ONE_SIDED, BANDS = claim({"above": 0.0}), [claim({"between": [-w, 0.0]}) for w in (2.0, 5.0, 20.0)]


def simulate(n_claims: int, seed: int = 20261205, spread=(3.0, 10.0)) -> tuple[float, float]:
    """(share of wrong verdicts, share given a second look) over simulated claims whose true value is 0, on the
    bound of a one-sided test (above 0) or the upper end of a band. Each claim has a seed spread (`spread`: from
    3 to 10 times its sampling error, log-uniform, where seeds dominate: the claims more seeds can settle) and
    one sampling error drawn once and shared by all its seeds (every seed is scored on the same split); the
    sampling error is estimated from 19 degrees of freedom for half of the claims and stated (normal) for the
    others. Judged at FIRST seeds; where that is inconclusive and the settle
    count is at most SECOND_LOOK_MOST, judged again on that many seeds (the first FIRST among them)."""
    rng = np.random.default_rng(seed)
    wrong = second = 0
    for i in range(n_claims):
        c = ONE_SIDED if i % 2 == 0 else BANDS[(i // 2) % len(BANDS)]
        df = BLOCKS_DF if i % 4 < 2 else math.inf
        estimated = math.sqrt(rng.chisquare(BLOCKS_DF) / BLOCKS_DF) if df == BLOCKS_DF else 1.0
        ratio = math.exp(rng.uniform(*map(math.log, spread)))
        values = rng.normal() + ratio * rng.normal(size=MAX_SEEDS)

        def judge(n: int):
            x = values[:n]
            return judge_part(c, "", float(x.mean()), Noise(n, float(x.std(ddof=1)), estimated, df, FIRST))

        part = judge(FIRST)
        if part.outcome == "inconclusive" and part.settle.isdigit() and int(part.settle) <= SECOND_LOOK_MOST:
            second += 1
            part = judge(int(part.settle))
            assert part.look == 2
        wrong += part.outcome in WRONG
    return wrong / n_claims, second / n_claims


N_CLAIMS = 10000


def test_the_design_keeps_wrong_verdicts_at_its_total_error_on_the_bound():
    wrong, second = simulate(N_CLAIMS)
    assert wrong <= sum(LOOKS) == pytest.approx(0.05)
    assert second > 0.1  # the second look is really taken, by a good share of the claims
    assert simulate(N_CLAIMS // 4, spread=(0.3, 10.0))[0] <= 0.05  # the sampling error dominating some of them


def test_95_percent_at_each_look_would_exceed_it(monkeypatch):
    """The control: the naive design (95 % at the first look and again at the second) errs more often than
    one in twenty on the same claims, so the test above can fail."""
    monkeypatch.setattr(design, "LOOKS", (0.05, 0.05))
    wrong, _ = simulate(N_CLAIMS)
    assert wrong > 0.05


def test_the_look_follows_from_the_profiles_own_seeds():
    """At or below the profile's seed count: the first look; above it (an experiment's own seeds): the second,
    each at its level, and a settle count is read at the second look's."""
    for n, first, look in ((3, 3, 1), (2, 3, 1), (4, 3, 2), (10, 3, 2), (3, None, 1)):
        noise = Noise(n, 1.0, 0.1, BLOCKS_DF, first)
        assert noise.look(n) == look and noise.k(n) == noise.k(n, LOOKS[look - 1])
    alone = Noise(5, 1.0, None, BLOCKS_DF, 3)  # the seeds' spread alone: k is t at their 4 df, the second look's
    part = judge_part(ONE_SIDED, "", 1.0, alone)
    assert part.look == 2 and part.k == k_at(4, LOOKS[1]) == alone.k(5)


def test_unequal_levels_change_k_at_each_look(monkeypatch):
    monkeypatch.setattr(design, "LOOKS", (0.01, 0.04))
    first, second = Noise(3, 1.0, None, BLOCKS_DF, 3), Noise(6, 1.0, None, BLOCKS_DF, 3)
    assert first.k(3) == k_at(2, 0.01) and second.k(6) == k_at(5, 0.04)
    assert judge_part(ONE_SIDED, "", 3.0, Noise(3, 1.0, None, BLOCKS_DF, 3)).k == pytest.approx(9.925, abs=1e-3)


@pytest.mark.parametrize("looks, most, said", [
    ((0.025, 0.025), 10, ["0.025 at look 1 and 0.025 at look 2", "97.5 % coverage at each", "their sum, 0.05",
                          "at most 10 seeds", "(3 seeds for this version)", "spends all of it (95 %)"]),
    ((0.01, 0.04), 6, ["0.01 at look 1 and 0.04 at look 2", "99 % and 96 % coverage", "their sum, 0.05",
                       "at most 6 seeds", "(3 seeds for this version)", "spends all of it (95 %)"]),
])
def test_how_verdicts_work_states_the_design_from_its_constants(monkeypatch, looks, most, said):
    from attnlab.report.pages import about

    monkeypatch.setattr(about, "LOOKS", looks)
    monkeypatch.setattr(about, "SECOND_LOOK_MOST", most)
    text = about.design({"seeds": [1337, 1338, 1339]})
    assert all(s in text for s in said), text


def test_claims_csv_records_the_dominant_source_and_the_look():
    v = judge_claim(ONE_SIDED, {"": 1.0}, {"": Noise(5, 2.0, 0.1, BLOCKS_DF, 3)}, lambda v: v[""])
    row, = v.rows()
    assert (row["dominant"], row["look"]) == ("seeds", 2) and "mostly the seeds' spread" in row["note"]
    assert list(row) == COLUMNS


@pytest.mark.parametrize("ratio", [2.5, 4.0])
def test_the_combined_k_covers_where_welch_satterthwaites_would_not(ratio):
    """One look at 95 %, three seeds whose spread dominates a shared sampling error (19 df): the interval on
    both sources, each at its own t, misses the truth at most 5 % of the time; one t at Welch-Satterthwaite's
    df (read off the same seeds) misses it more often, so this test can tell them apart."""
    from attnlab.stats import t_quantile

    rng = np.random.default_rng(31)
    misses = {"combined": 0, "welch": 0}
    for _ in range(N_CLAIMS):
        x = rng.normal() + ratio * rng.normal(size=FIRST)
        noise = Noise(FIRST, float(x.std(ddof=1)), math.sqrt(rng.chisquare(BLOCKS_DF) / BLOCKS_DF), BLOCKS_DF)
        se, _ = noise.at(FIRST)
        (_, seeds, _), (_, shared, _) = noise.sources(FIRST)
        welch = (seeds + shared) ** 2 / (seeds ** 2 / (FIRST - 1) + shared ** 2 / BLOCKS_DF)
        misses["combined"] += abs(x.mean()) > noise.k(FIRST, 0.05) * se
        misses["welch"] += abs(x.mean()) > t_quantile(0.05, welch) * se
    assert misses["combined"] / N_CLAIMS <= 0.05 < misses["welch"] / N_CLAIMS


def test_a_part_no_seed_can_be_added_to_has_one_look_at_the_whole_level(tmp_path):
    """A claim on a result file made at no seed (a benchmark) cannot get a second look: its one look spends the
    design's whole error; the same error on a trained run's claim is its first look's share."""
    from attnlab.claims.evaluate import evaluate
    from attnlab.results import Results

    c = parse_claim({"id": "T", "claim": "c", "chapter_value": 0, "tolerance_note": "t",
                        "value": "cost['v']", "se": "cost['se']", "check": {"above": 0.0}})
    part = evaluate(c, Results(root=tmp_path, files={"cost": {"v": 1.0, "se": 0.1}})).parts[""]
    assert (part.look, part.level, part.k) == (1, sum(LOOKS), k_at(math.inf, sum(LOOKS)))
    seeded = judge_part(c, "", 1.0, Noise(1, None, 0.1))
    assert (seeded.look, seeded.level, seeded.k) == (1, LOOKS[0], k_at(math.inf, LOOKS[0]))
    assert judge_part(c, "", 1.0, Noise(1, None, 0.1, seeded=False)).settle == "" and \
        judge_part(c, "", 0.18, Noise(1, None, 0.1, seeded=False)).settle == "budget"


def test_the_first_look_is_the_seed_count_of_the_profile_the_runs_were_made_with(tmp_path):
    """A version's config.yaml says it (its own seeds of an experiment beyond it are the second look), else the
    profile file of the results folder's name; a folder with neither has none."""
    import shutil

    from attnlab.versions import first_look_of
    from helpers import REPO

    latest = (REPO / "results" / "LATEST").read_text().strip()
    shutil.copy(REPO / "results" / latest / "config.yaml", tmp_path / "config.yaml")
    assert first_look_of(tmp_path) == 3 and first_look_of(REPO / "results" / "smoke") == 1
    assert first_look_of(tmp_path / "nowhere") is None


def test_a_night_of_one_seed_states_its_profiles_first_look_not_its_own_seed():
    """A version laid one seed over the chapter's three (`--set seeds=[1339]`, pooled with two nights) follows its
    profile's design: its first look is three seeds, as the verdicts judge it."""
    from attnlab.report.pages import about

    night = {"profile": "chapter", "seeds": [1339]}
    assert "(3 seeds for this version)" in about.design(night, {"set": {"seeds": [1339]}})
    assert "(1 seed for this version)" in about.design(night, None)  # a profile of one seed: one
