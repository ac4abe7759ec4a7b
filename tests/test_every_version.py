"""Every page of every committed version renders with today's code (no mkdocs: build.context, page_blocks and
render, as the MkDocs hook calls them), so a change that breaks an old version's pages fails here; and what a page
says of an older version's files it can not read as today's (a field it predates, a claim it cannot judge)."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from attnlab import versions
from attnlab.report import build
from helpers import REPO

VERSIONS = [m["version"] for m in versions.versions(REPO)]
PAGES = [page for page in [*build.pages(), *build.STATIC_PAGES] if build.template(page).is_file()]


@pytest.fixture(scope="module")
def known() -> dict:
    """Other versions' verdicts, shared by every version's site here (each page that compares versions would
    otherwise recompute all of them, once per version)."""
    return {}


SEEDS_SAID = re.compile(r"(?:Every run (?:here )?was|The runs behind this site were) trained at (one seed|\d+ seeds)")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_page_of_a_committed_version_renders_with_todays_code(version, known):
    """...and says which engine judged it, points at the version's own folder, and counts the seeds its run files
    are at, on every page alike."""
    site = build.context(REPO / "results" / version, None, selector=True, known=known)
    held = site.held_seeds()
    for page in PAGES:
        text = site.stamp(page) + build.render(build.template(page).read_text(), build.page_blocks(site, page), page)
        assert version in text and "<!-- attnlab:" not in text, f"{version}/{page} left a marker unfilled"
        assert "verdicts: today's claims (that commit's) over its run files" in text
        lines = text.splitlines()  # Markdown reads a line right under a table as one more row of it
        glued = [b for a, b in zip(lines, lines[1:]) if a.startswith("|") and b.strip() and not b.startswith("|")]
        assert not glued, f"{version}/{page}: a line right under a table is read as one more row: {glued[0][:80]}"
        folders = set(re.findall(r"`results/([^/`]+)/", text.partition("## Provenance")[2]))
        own = {version, *site.pool_versions()}  # its own folder, and those of the versions pooled with it
        assert folders <= own, f"{version}/{page}: provenance names run files in {folders - own}"
        counts = {len(held)} | {len(site.pool.seeds(e)) for e in site.pool.members}  # pooled: per experiment
        for said in SEEDS_SAID.findall(text):
            assert said in {"one seed" if n == 1 else f"{n} seeds" for n in counts}, f"{version}/{page}: {said}"


def test_every_committed_version_is_under_test():
    folders = sorted(p.name for p in (REPO / "results").iterdir() if p.is_dir() and versions.NAME.match(p.name))
    assert folders and sorted(VERSIONS) == folders


# ---------------------------------------------------------------- a field an older version did not record

def test_a_field_an_older_run_file_lacks_reads_as_not_recorded():
    from attnlab.report.format import NOT_RECORDED, recorded

    assert recorded({"seeds": 3}, "seeds") == "3"
    assert recorded({"seeds": 0.5}, "seeds", lambda x: f"{x:.1%}") == "50.0%"
    assert recorded({}, "seeds") == recorded(None, "seeds") == NOT_RECORDED == "not recorded in this version"


def gradient_result(norms: list[float], summary: float, with_count: bool) -> dict:
    rows = [{"kind": "rnn", "T": T, "seed": k, "grad": g * (1 if T == 2 else 1e-3), "relative": 1.0}
            for k, g in enumerate(norms) for T in (2, 256)]
    g = {"T_short": 2, "T_long": 256, "grad_short": summary, "grad_long": summary * 1e-3, "decades": 3.0,
         "relative_long": 1.0} | ({"seeds": len(norms)} if with_count else {})
    return {"gradient_path": rows, "gradient": {"rnn": g}}


def test_the_gradient_reading_names_the_mean_its_norms_are_and_what_an_old_result_did_not_record():
    from attnlab.experiments.seq2seq.derive import geometric_mean, summary_over_seeds
    from attnlab.experiments.seq2seq.page import gradient_reading

    norms = [1.0, 4.0]  # geometric mean 2, arithmetic 2.5
    assert summary_over_seeds(2.0, norms) == "geometric"
    assert summary_over_seeds(2.5, norms) == "arithmetic"
    assert summary_over_seeds(2.2, norms) is None
    today = gradient_reading(gradient_result(norms, geometric_mean(norms), with_count=True))
    assert "the geometric mean over the 2 seeds (the chart's lines)" in today and "not recorded" not in today
    old = gradient_reading(gradient_result(norms, 2.5, with_count=False))
    assert "the arithmetic mean over the 2 seeds of the chart's points" in old
    assert "its count of seeds: not recorded in this version" in old


# ---------------------------------------------------------------- a claim today's engine cannot read

def test_a_field_a_claim_tests_for_that_the_run_files_lack_is_named():
    from attnlab.claims.expressions import lacking_fields

    code = ["[r['x'] for r in scores['rows']][0] if 'x_se' in scores['rows'][0] else None",
            "probe['E4']['g_1'] if 'g_1' in probe['E4'] else None"]
    scope = {"scores": {"rows": [{"x": 1.0}]}, "probe": {"E4": {"g_2": 1.0}}, "__builtins__": {}}
    assert lacking_fields(code, scope) == ("x_se", "g_1")
    scope["scores"]["rows"][0]["x_se"], scope["probe"]["E4"]["g_1"] = 0.1, 1.0
    assert lacking_fields(code, scope) == ()


def claim(kind="measured"):
    from attnlab.claims.registry import Claim

    return Claim("T1", "t", 1, {"a": "1", "b": "2"}, {"a": {"equals": 1}, "b": {"equals": 2}}, "t",
                 kinds={"a": kind, "b": kind})


def verdict(value, word="reproduced", lacking=(), kind="measured", seeds=None, se=None):
    from attnlab.claims.verdicts import Verdict

    return Verdict(claim(kind), word, value, lacking=lacking, seeds=seeds or {}, se=se or {})


@pytest.mark.parametrize("today, then, why", [
    (verdict({"a": 1.0921, "b": 40.0}), ("reproduced", {"a": "1.092", "b": "40"}), ""),  # within its rounding
    (verdict({"a": 1.0931, "b": 40.0}), ("reproduced", {"a": "1.092", "b": "40"}),
     "today's claim computes a otherwise from the same run files"),
    (verdict({"a": 1.092, "b": 40.0}, "inconclusive"), ("reproduced", {"a": "1.092", "b": "40"}),
     "the same value, judged by today's test and interval rule"),
    (verdict({"a": 1.0, "b": 2.0}, "holds", kind="computed"), ("reproduced", {"a": "1", "b": "2"}), ""),
    (verdict(None, "not run", lacking=("x_se",)), ("reproduced", {"a": "1.092"}),
     "measured in that version, but its run files lack x_se that today's claim reads"),
    (verdict({"a": 1.0, "b": 2.0}), None, "not in its claims.csv: a claim added since it was published"),
])
def test_a_published_verdict_that_differs_from_todays_is_shown_with_why(today, then, why):
    from attnlab.claims.table import Frozen
    from attnlab.report.published import beside, reason

    frozen = None if then is None else Frozen(*then)
    assert reason(today, frozen) == why
    shown = beside(today, {"T1": frozen} if frozen else {}).replace("&#x27;", "'")
    if "computes a otherwise" in why:  # the published number beside today's
        assert "a was 1.092: today's claim computes it otherwise from the same run files" in shown
    else:
        assert (why in shown) if why else shown == ""
    assert beside(today, None) == ""  # a version published without a claims.csv


def test_a_verdict_that_reads_other_versions_run_files_says_so_not_that_it_computes_otherwise():
    """Pooled seeds or an analysis's second look: the published claims.csv could not read those run files."""
    from attnlab.claims.table import Frozen
    from attnlab.report.published import ELSEWHERE, beside, reason

    then = Frozen("reproduced", {"a": "1.092", "b": "40"})
    moved, judged, same = (verdict({"a": 1.0931, "b": 40.0}), verdict({"a": 1.092, "b": 40.0}, "inconclusive"),
                           verdict({"a": 1.0921, "b": 40.0}))
    assert reason(moved, then, elsewhere=True) == ELSEWHERE == reason(judged, then, elsewhere=True)
    assert reason(moved, then) != ELSEWHERE and reason(judged, then) != ELSEWHERE
    assert reason(same, then, elsewhere=True) == ""  # nothing differs: nothing to say
    shown = beside(moved, {"T1": then}, elsewhere=True).replace("&#x27;", "'")
    assert "a was 1.092: other versions' run files read too" in shown and "same run files" not in shown


def test_both_layouts_of_a_published_claims_csv_are_read(tmp_path):
    from attnlab.claims.table import frozen_verdicts

    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "claims.csv").write_text(
        "claim_id,chapter_value,reproduced_value,verdict,note\nT1,a=1,a=1.092; b=40,reproduced,✓\n"
        "T2,1,\"[' t', 'he']\",reproduced,✓\n")
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "claims.csv").write_text(
        "claim_id,part,kind,chapter_value,value,value_text,verdict\nT1,a,measured,1,1.0921,,inconclusive\n"
        "T1,b,measured,1,,true,inconclusive\n")
    old, new = frozen_verdicts(tmp_path / "old"), frozen_verdicts(tmp_path / "new")
    assert old["T1"].values == {"a": "1.092", "b": "40"} and old["T2"].values == {"": "[' t', 'he']"}
    assert new["T1"].verdict == "inconclusive" and new["T1"].values == {"a": "1.092", "b": "true"}
    assert frozen_verdicts(tmp_path) is None


def test_a_claim_measured_when_published_but_unread_today_is_not_an_unmeasured_one():
    from attnlab.comparison import status
    from attnlab.report.pages.compare import tally
    from attnlab.claims.table import Frozen, unread as unread_then

    measured, unread = verdict({"a": 1.0}), verdict(None, "not run", lacking=("x_se",))
    then = Frozen("reproduced", {"a": "1"})

    def status_then(mine, other, then_here, then_there):  # as the compare page asks
        return status(mine, other, unread_then(mine, then_here), unread_then(other, then_there))
    assert status_then(measured, unread, None, then) == "unread there"
    assert status_then(unread, measured, then, None) == "unread here"
    assert status_then(measured, verdict(None, "not run"), None, then) == "only here"  # no field lacking: not run
    assert status_then(measured, unread, None, Frozen("not run", {})) == "only here"  # not measured then either
    assert "run files lack a field today's claim reads: C3.2" in tally({"C1": "same", "C3.2": "unread there"})
    from attnlab.report.pages.compare import value_cell, verdict_cell

    assert "published: <span class=\"verdict verdict-reproduced\">" in verdict_cell(unread, {"T1": then})
    said = value_cell(unread, {"T1": then})
    assert "measured in that version, but its run files lack <code>x_se</code> that today's claim reads" in said
    assert '<span class="part-name">a</span> 1' in said
    assert "published" not in verdict_cell(measured, {"T1": then}) + value_cell(measured, {"T1": then})


# ---------------------------------------------------------------- runs of the same seed are paired

def test_identical_reruns_read_identical_and_runs_of_one_seed_are_paired():
    from attnlab.report.pages.compare import change

    def at(values, se):
        return verdict({"a": sum(values) / len(values)}, seeds={1337 + k: {"a": v} for k, v in enumerate(values)},
                       se={"a": se})

    rerun = change(at([4.0738522, 4.0826485, 4.0402020], 0.1466), at([4.0738522, 4.0826481, 4.0402017], 0.1466))
    assert "identical" in rerun and "±" not in rerun
    moved = change(at([4.10, 4.12, 4.06], 0.15), at([4.00, 4.02, 4.00], 0.15))  # +0.1, +0.1, +0.06 seed by seed
    assert "+0.08667\u00a0±\u00a00.01333 (paired: 3 seeds)" in moved  # the pairs' spread, not both errors
    apart = change(at([4.10, 3.90, 4.06], 0.15), at([4.00, 4.02, 4.00], 0.15))
    assert "(paired: 3 seeds; within the noise)" in apart
    other_seeds = verdict({"a": 4.0}, seeds={7: {"a": 4.0}, 8: {"a": 4.0}}, se={"a": 0.3})
    assert "+0.09333\u00a0±\u00a00.3354 (within the noise)" in change(at([4.10, 4.12, 4.06], 0.15), other_seeds)


# ---------------------------------------------------------------- which engine, which folder, which seeds

def test_the_stamp_says_which_engine_judged_the_verdicts():
    from attnlab.claims.table import Frozen
    from attnlab.report.site import Site

    manifest = {"commit": "abc", "published_from": "def"}
    v = verdict({"a": 1.0, "b": 2.0})

    def engine(frozen, manifest=manifest):
        return Site.engine(SimpleNamespace(built_from="123", manifest=manifest, verdicts=[v], frozen=lambda: frozen))
    agrees, differs = Frozen("reproduced", {"a": "1", "b": "2"}), Frozen("reproduced", {"a": "1.5", "b": "2"})
    assert "today's claims (that commit's) over its run files" in engine({"T1": agrees})
    assert "its frozen claims.csv (commit <code>def</code>) gives every claim the same verdict" in engine({"T1": agrees})
    assert "not its frozen claims.csv (commit <code>def</code>), which differs on 1 claim (both shown" in \
        engine({"T1": differs})
    assert "published (commit <code>def</code>) without a claims.csv" in engine(None)
    assert engine(None, manifest=None) == " · verdicts: today's claims (that commit's) over these run files"


def test_a_versions_rerun_names_its_own_folder_and_commit():
    from attnlab.report.site import Site

    version = SimpleNamespace(manifest={"commit": "abc"}, rdir="results/2026-v", outdir="results/quick")
    said = Site.rerun_code(version, "snakemake results/quick/x")
    assert "# this version's run files: results/2026-v/ (runs at commit abc); a rerun writes results/quick/" in said
    assert Site.rerun_code(SimpleNamespace(manifest=None), "snakemake x") == "```bash\nsnakemake x\n```\n"


def test_the_seeds_said_are_those_of_the_run_files():
    from attnlab.report.pages.about import seeds_here
    from attnlab.report.site import seeds_setting
    from attnlab.sitedata import seed_folders
    from attnlab.results import gather

    assert seeds_setting([1337], [1337]) == "1337"
    assert seeds_setting([1337, 1338, 1339], [1337]) == "1337, 1338, 1339 (its run files are at 1337)"
    assert seeds_setting([1339], [1337, 1338, 1339], pooled=True) == (
        "1339 (pooled with other versions: the pages show seeds 1337, 1338, 1339)")
    assert seeds_setting([1340], [1337, 1338, 1339], pooled=True, waiting={"ladder": [1340]}) == (
        "1340 (pooled with other versions: the pages show seeds 1337, 1338, 1339; ladder's 1340 held back until its "
        "planned second look is in)")
    assert seeds_setting([1341], [1337, 1338, 1339, 1340, 1341], pooled=True, waiting={"position": [1340, 1341]}) == (
        "1341 (pooled with other versions: the pages show seeds 1337, 1338, 1339, 1340, 1341; position's 1340, 1341 "
        "held back until its planned second look is in)")
    assert seeds_here([1337]) == "The runs behind this site were trained at one seed (1337), as their run files show."
    assert "at 3 seeds (1, 2, 3)" in seeds_here([1, 2, 3]) and "nothing here was trained" in seeds_here([])
    chapter = REPO / "results" / "2026-12-02-chapter-cpu-680862e-only-ladder-position-set-seeds"
    assert seed_folders(gather(chapter)) == [1337]
    assert seed_folders(gather(REPO / "results" / "2026-12-02-quick-cpu-4303899")) == [1337, 1338, 1339]
    assert seed_folders(gather(REPO / "results" / "2026-11-30-quick-cpu-6211b28")) == []  # before seed folders


def site_command(monkeypatch, tmp_path, config, results) -> tuple[int, dict | None]:
    """What `attnlab site --config CONFIG` returns, and the profile it hands the site builder (captured, not run)."""
    from attnlab import cli
    from attnlab.report import build

    handed = {}
    monkeypatch.setattr(build, "build_site", lambda results, claims, cfg, site: handed.setdefault("cfg", cfg))
    rc = cli.main(["site", "--config", str(config), "--results", str(results), "--site", str(tmp_path / "site")])
    return rc, handed.get("cfg")


@pytest.mark.parametrize("version", VERSIONS)
def test_the_site_command_reads_every_committed_versions_own_config(version, monkeypatch, tmp_path):
    """`attnlab site --config results/V/config.yaml` (the README's one-version build) reads each version's profile
    as that version wrote it: 6ec7a8b's per-experiment `seq2seq.seeds: 3` predates today's list and failed here."""
    folder = REPO / "results" / version
    assert site_command(monkeypatch, tmp_path, folder / "config.yaml", folder) == (
        0, versions.settings_of(folder / "config.yaml"))


def test_the_site_command_still_validates_a_profile_that_is_not_a_version(tmp_path, monkeypatch, capsys):
    """Outside a version's folder (no manifest.json beside it), --config is a profile and today's schema judges it."""
    bad = tmp_path / "config.yaml"
    bad.write_text((REPO / "results" / "2026-11-30-quick-cpu-6ec7a8b" / "config.yaml").read_text())
    assert site_command(monkeypatch, tmp_path, bad, tmp_path) == (2, None)
    assert "config error at 'seq2seq.seeds'" in capsys.readouterr().err
