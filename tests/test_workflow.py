"""The smoke DAG end to end (a copy of the run every smoke-based file shares: conftest.py): its site, its report,
bad input stopped before any job, a new experiment as one folder, publishing, the GPU script, and the pages in a
browser."""
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnlab.config import resolve
from attnlab.registry import load as load_registry
from attnlab.registry import pages
import charts
from dag import REPO, LocalSite, attnlab, by_claim, checkout, clone, git, planned, profile, snakemake, tree
from helpers import BAD, CHROMIUM, playwright_or_skip


def test_smoke_dag_builds_the_site(smoke):
    r = smoke / "results" / "smoke"
    assert (r / "site" / "index.html").is_file()
    claims = pd.read_csv(r / "claims.csv")
    assert list(claims.columns) == ["claim_id", "part", "kind", "chapter_value", "value", "value_text", "se", "k",
                                    "lo", "hi", "n_seeds", "verdict", "part_verdict", "settle", "note",
                                    "dominant", "look", "level"]
    assert {"C0.2", "C1.1", "C2.1"} <= set(claims.claim_id)
    assert (r / "claims_by_seed.csv").is_file()
    assert by_claim(claims).loc["C0.2", "verdict"] == "holds"  # the real corpus, the real BPE
    for row in resolve(yaml.safe_load((smoke / "config" / "smoke.yaml").read_text()))["ladder"]:
        assert (r / "ladder" / row / "seed1337" / "metrics.json").is_file()
    for job in ("prepare_data", "claims", "site", "charts", "throughput", "averaging", "ladder/L1/seed1337"):
        assert (r / "logs" / f"{job}.log").exists() and (r / "benchmarks" / f"{job}.tsv").exists()


def test_lint_has_nothing_to_say(smoke):
    proc = snakemake(smoke, "--lint", "--configfile", "config/smoke.yaml", check=False)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_the_report_holds_the_claims_and_every_experiments_charts(smoke, tmp_path):
    """`snakemake --report report.zip` (README): claims.csv, and at least one chart (or viewer) of every experiment in
    the registry, each file under report/data/raw/<id>/ by its name in the charts folder (<experiment>/<chart>)."""
    snakemake(smoke, "--report", str(tmp_path / "report.zip"), "--configfile", "config/smoke.yaml")
    held = zipfile.ZipFile(tmp_path / "report.zip").namelist()
    assert "report/report.html" in held
    assert any(re.fullmatch(r"report/data/raw/\w+/claims\.csv", name) for name in held), held
    charted = {m[1] for name in held if (m := re.fullmatch(r"report/data/raw/\w+/(\w+)/[\w-]+\.(?:svg|html)", name))}
    assert charted == {e.name for e in load_registry()}, sorted(charted)


FILES = {  # a profile file that cannot be read: (its text or None for no file, what the one line says)
    "a missing profile file": (None, "config file not found"),
    "an empty profile file": ("", "is empty"),
    "a profile that is a list": ("- a\n- b\n", "must hold a mapping of settings"),
    "a profile with a YAML syntax error": ("profile: smoke\nseed: [1,\n  x: 2\n", "is not valid YAML at line 4"),
    "a profile that gives a key twice": ("profile: smoke\nseeds: [1]\nseeds: [2]\n",
                                         "at line 3, column 1: key 'seeds' is given twice (first at line 2)"),
    "a profile that is an alias bomb": ("profile: smoke\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")),
        "its aliases expand 'f' to more than 100,000 values"),
}


def outputs(smoke) -> dict:
    r = smoke / "results" / "smoke"
    return {p: p.read_bytes() for p in [r / "claims.csv", r / "site" / "index.html", *r.glob("*/*/seed*/metrics.json")]}


# Every case of BAD gets its one line from `attnlab check` (test_reliability), which runs the Snakefile's own check
# (the next test holds the two to it). Through Snakemake, which starts in about 4 s a case, go the unreadable
# files, which only `chosen` sees, and one case of each stage of `check.check`: the one line, no job and nothing lost
# are the Snakefile's doing, alike for every message a stage raises. All 63 through Snakemake had cost CI 4 minutes.
THROUGH_SNAKEMAKE = [
    "a misspelt setting", "a learning rate YAML 1.1 reads as text", "an unknown profile name",  # the schema
    "heads that do not divide the width", "a width that cannot fit in memory",  # the models' specs and sizes
    "up-training from another model",  # check_init
    "E8 a noun twice", "S1 an unknown cell type",  # an experiment's own check
    "a corpus with another checksum", "a corpus too short once tokenised", "a folder as the corpus",  # the corpus
]


def test_the_snakefile_checks_a_profile_as_attnlab_check_does():
    """What lets most of the battery go through `attnlab check` alone: both read the profile with `chosen` and
    judge it with `check.check`, the Snakefile before it declares a rule."""
    from attnlab import cli

    snakefile = (REPO / "Snakefile").read_text()
    assert "config = attnlab.check.check(attnlab.config.chosen(config, workflow.overwrite_configfiles))" in snakefile
    assert snakefile.index("attnlab.check.check(") < snakefile.index("include:")
    assert 'check(chosen({"profile": a.config}, []))' in inspect.getsource(cli.cmd_check)
    assert set(THROUGH_SNAKEMAKE) <= set(BAD)


@pytest.mark.parametrize("case", [*THROUGH_SNAKEMAKE, *FILES])
def test_bad_input_stops_the_dag_in_one_line_before_any_job(smoke, tmp_path, case):
    """Each stage's bad profile gets one line naming the problem, no traceback, no job, nothing lost."""
    path = smoke / "config" / "bad.yaml"
    if case in BAD:
        edit, message = BAD[case]
        profile(smoke, "bad", lambda c: edit(c, tmp_path))
    else:
        text, message = FILES[case]
        path.unlink(missing_ok=True)
        if text is not None:
            path.write_text(text)
    before, logs = outputs(smoke), tree(smoke / "results" / "smoke" / "logs")
    proc = snakemake(smoke, "--cores", "1", "--config", "profile=config/bad.yaml", check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in said
    lines = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "localrule" not in said and tree(smoke / "results" / "smoke" / "logs") == logs  # no job started
    assert outputs(smoke) == before  # nothing already computed was lost


REGISTRY_BAD = {  # an edit of the registry, an experiment's folder or a claims file -> what the one line says
    "a registry line without its folder": (
        "src/attnlab/experiments.yaml", lambda t: t + "  - {name: ghost, kind: analysis}\n", "'ghost' has no folder"),
    "a folder without its producer": (
        "src/attnlab/experiments/params/producer.py", None, "names a producer that does not exist"),
    "a folder without its page": (
        "src/attnlab/experiments/params/page.py", None, "names a page that does not exist"),
    "a folder without its page's prose": (
        "src/attnlab/experiments/params/page.md", None, "names a page template that does not exist"),
    "two experiments with one name": (
        "src/attnlab/experiments.yaml", lambda t: t + "  - {name: params, kind: analysis}\n",
        "two experiments are named 'params'"),
    "a claim on a run no profile declares": (
        "src/attnlab/experiments/ladder/claims.yaml", lambda t: t.replace("ppl['L2'] / ppl['L1']", "ppl['L2'] / ppl['L10']"),
        "reads run 'L10', which no profile"),
}


@pytest.mark.parametrize("case", REGISTRY_BAD)
def test_a_bad_registry_stops_the_dag_in_one_line_before_any_job(smoke, case):
    file, change, message = REGISTRY_BAD[case]
    path = smoke / file
    kept = path.read_text()
    before, logs = outputs(smoke), tree(smoke / "results" / "smoke" / "logs")
    if change is None:
        path.unlink()
    else:
        path.write_text(change(kept))
    try:
        proc = snakemake(smoke, "--cores", "1", "--configfile", "config/smoke.yaml", check=False)
    finally:
        path.write_text(kept)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert tree(smoke / "results" / "smoke" / "logs") == logs and outputs(smoke) == before


TOY_CLAIM = """claims:
  - id: T1
    claim: The validation split holds at least one token.
    chapter_value: 1
    value: "toy['n_val']"
    check: {between: [1, null]}
    tolerance_note: Any split will do; this is a toy.
"""


def test_a_new_experiment_is_its_folder_and_one_registry_line(tmp_path, corpus_path, smoke):
    """The scaffold, then a trivial measurement filled in by hand (the validation tokens counted), through the
    DAG, the claims and the site; the project's source changes by the new folder and one registry line only."""
    work = checkout(tmp_path, corpus_path)
    shutil.copytree(smoke / "results", work / "results")  # the smoke run, done: only the toy is new
    made = attnlab(work, "new-experiment", "toy", "--kind", "analysis", "--title", "Toy")
    assert made.returncode == 0, made.stderr
    folder = work / "src" / "attnlab" / "experiments" / "toy"
    producer = folder / "producer.py"
    producer.write_text(producer.read_text().replace(
        'lambda: run(cfg["toy"]["n"], cfg["seed"])', 'lambda: {"n_val": len(load_tokens(data_dir, "val"))}').replace(
        "def main(cfg: dict, out_path) -> dict:", "def main(cfg: dict, out_path, data_dir) -> dict:\n"
        "    from attnlab.data.prepare import load_tokens"))
    (folder / "experiment.yaml").write_text((folder / "experiment.yaml").read_text() + "data: true\n")
    (folder / "claims.yaml").write_text(TOY_CLAIM)
    page = folder / "page.py"
    page.write_text(page.read_text().replace(
        '{"n": r["n"], "mean": r["mean"], "standard error": r["mean_se"]}', '{"validation tokens": r["n_val"]}'))

    jobs = planned(snakemake(work, "-n", "--configfile", "config/smoke.yaml"))
    assert jobs == {"analyse": 1, "claims": 1, "site": 1, "charts": 1, "all": 1}, jobs  # no training, nothing else
    snakemake(work, "--cores", "2", "--configfile", "config/smoke.yaml")
    r = work / "results" / "smoke"
    n_val = json.loads((r / "toy" / "result.json").read_text())["n_val"]
    assert n_val == json.loads((r / "data" / "stats.json").read_text())["n_val"] > 0
    assert by_claim(pd.read_csv(r / "claims.csv")).loc["T1", "verdict"] == "inconclusive"  # no error estimate
    html = (r / "site" / "toy.html").read_text()
    assert re.search(rf">\s*({n_val}|{n_val:,})\s*<", html), "the page's table shows the measured count"
    assert "T1" in html and "Toy" in (r / "site" / "index.html").read_text()

    source = lambda path: (not path.startswith(("results/", ".snakemake/"))  # the run's outputs are not source,
                           and ".egg-info/" not in path)  # nor what pip writes beside the package
    modified = [p for p in git(work, "diff", "--name-only").splitlines() if source(p)]
    added = [p for p in git(work, "ls-files", "--others").splitlines() if source(p) and "__pycache__" not in p]
    assert modified == ["src/attnlab/experiments.yaml"], modified
    assert added and {p.rpartition("/")[0] for p in added} == {"src/attnlab/experiments/toy"}, added
    assert git(work, "diff", "--numstat").split()[:2] == ["1", "0"]  # one line added to the registry


def test_a_complete_run_publishes_as_a_version_whose_site_rebuilds_without_training(smoke, tmp_path):
    work = clone(smoke, tmp_path / "clone")
    head = git(work, "rev-parse", "--short=12", "HEAD")
    done = attnlab(work, "publish", "--config", "config/smoke.yaml", "--results", "results/smoke")
    assert done.returncode == 0, done.stderr
    (version,) = [p for p in (work / "results").iterdir() if p.name[:4].isdigit()]
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["commit"] == head and manifest["profile"] == "smoke" and manifest["runs"]["dag_wall_seconds"] > 0
    assert manifest["throughput_ratio"] > 0 and not list(version.rglob("*.pt"))
    git(work, "add", "results")  # a version is meant for git: the live run stays ignored
    git(work, "commit", "-qm", "publish")
    again = attnlab(work, "publish", "--config", "config/smoke.yaml", "--results", "results/smoke")
    assert again.returncode == 2 and "already exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1

    shutil.rmtree(work / "results" / "smoke")  # no run files, no checkpoints: the site needs only the version
    built = attnlab(work, "versions", "--site", "site")
    assert built.returncode == 0, built.stderr
    page = (work / "site" / version.name / "ladder.html").read_text()
    assert f"Version <code>{version.name}</code> · runs at commit <code>{head}</code>" in page
    assert f'<option value="../{version.name}/ladder.html" selected>' in page


def gpu_script(work: Path, profile: str, **env):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", "tools/gpu-benchmarks.sh", profile], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_gpu_script_measures_on_a_copy_without_git_and_publishes_back_in_the_checkout(smoke, tmp_path):
    """tools/gpu-benchmarks.sh as on the lent GPU machine: the tree travels without .git, so the commit is given;
    the results come back into the checkout, where the same command keeps them (they are current) and publishes
    them as a version that holds only those benchmarks."""
    work = clone(smoke, tmp_path / "clone")
    head = git(work, "rev-parse", "--short=12", "HEAD")
    device = tmp_path / "device"
    shutil.copytree(work, device, ignore=shutil.ignore_patterns(".git", "results"))
    away = gpu_script(device, "smoke", OUT=str(tmp_path / "out"), ATTNLAB_COMMIT=head)
    assert away.returncode == 0, away.stderr
    assert "not published: a version comes from a clean git checkout" in away.stdout
    names = ["multihead", "cost", "decode"]  # the registry's benchmarks that need no data, in its order
    for name in names:
        prov = json.loads((tmp_path / "out" / name / "result.json").read_text())["provenance"]
        assert prov["commit"] == head and prov["commit_given"] is True
        shutil.copytree(tmp_path / "out" / name, work / "results" / "smoke" / name, dirs_exist_ok=True)
    before = tree(work / "results" / "smoke")

    back = gpu_script(work, "smoke")
    assert back.returncode == 0, back.stderr
    assert [line for line in back.stdout.splitlines() if " kept " in line] == [
        f"== {name}: kept results/smoke/{name}/result.json (commit {head}, the same settings)" for name in names]
    (version,) = [p for p in (work / "results").iterdir() if p.name.endswith("-only-" + "-".join(names))]
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["complete"] is False and manifest["experiments"] == names and manifest["commit"] == head
    for name in names:
        assert (version / name / "result.json").read_bytes() == (tmp_path / "out" / name / "result.json").read_bytes()
    assert tree(work / "results" / "smoke") == before, "the live results are untouched"
    assert not (version / "ladder").exists() and not (version / "claims.csv").exists()

    git(work, "add", "results")
    git(work, "commit", "-qm", "publish the benchmarks")
    built = attnlab(work, "versions", "--site", "site")
    assert built.returncode == 0, built.stderr
    cost = (work / "site" / version.name / "cost.html").read_text()
    assert f"Version <code>{version.name}</code>" in cost and "holds only multihead, cost, decode" in cost
    ladder = (work / "site" / version.name / "ladder.html").read_text()
    assert "not run" in ladder.lower()


def test_the_built_viewer_draws_the_trained_weights_and_a_click_changes_them(smoke):
    """S11 on the smoke site, opened from disk: the weights shown are the result file's, and clicking another
    word redraws them from that word's row."""
    sync_api = playwright_or_skip()
    from attnlab.maps import check_data

    r = smoke / "results" / "smoke"
    data = json.loads((r / "viewer" / "result.json").read_text())
    check_data({"examples": data["examples"]})
    first = data["examples"][0]
    model = next(iter(first["models"]))
    last = first["models"][model][-1]  # the default view: last layer, mean of heads
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((r / "site" / "viewer.html").as_uri())
        tokens = page.locator("#attnlab-viewer-tokens .av-token")
        assert tokens.count() == len(first["tokens"])
        before = json.loads(page.get_attribute("#attnlab-viewer", "data-state"))
        tokens.nth(1).click()
        after = json.loads(page.get_attribute("#attnlab-viewer", "data-state"))
        shown = float(tokens.nth(0).locator(".av-weight").inner_text())
        browser.close()
    assert before["query"] == len(first["tokens"]) - 1 and after["query"] == 1 and after["pinned"]
    want = sum(head[1][0] for head in last) / len(last)  # query 1's weight on word 0, mean of heads
    assert shown == pytest.approx(want, abs=0.006) and not errors


def local_target(site: Path, page: str, href: str) -> tuple[Path, str] | None:
    """A link on `page` -> (the file it opens in the built site, its anchor); None for a link off the site."""
    from urllib.parse import urldefrag, urljoin, urlparse

    url, frag = urldefrag(urljoin(f"http://site/{page}", href))
    parsed = urlparse(url)
    if parsed.netloc != "site":
        return None
    path = site / parsed.path.lstrip("/")
    return (path / "index.html" if path.is_dir() else path), frag


def test_every_chart_of_the_smoke_site_draws_only_its_own_rows(smoke, tmp_path):
    """Every chart on every page, compiled to Vega offline and read back from its scene graph (tests/charts.py):
    each panel of a faceted chart holds only its own rows and says so in its tooltips, and every share,
    accuracy, fraction or probability lies in [0, 1]. The PNGs land in one folder to look at
    ($ATTNLAB_CHARTS, else this test's folder)."""
    specs = charts.site_charts(smoke / "results" / "smoke" / "site")
    assert len(specs) >= 15, sorted(specs)
    folder = Path(os.environ.get("ATTNLAB_CHARTS") or tmp_path / "charts")
    found = []
    for name, spec in specs.items():
        found += charts.problems(name, spec)
        if charts.facet_fields(spec) and not charts.faceted_and_described(spec):
            found.append(f"{name}: its tooltips do not name the facet field, so its panels cannot be checked")
        charts.png(spec, folder / (name.replace("/", "_").replace("#", "-") + ".png"))
    print(f"{len(specs)} charts drawn in {folder}")
    assert not found, "\n".join(found)


def test_every_page_in_a_browser(smoke, tmp_path):
    """Each page of the smoke site in headless Chromium, served locally at 1280 px and at 390 px (a phone, where no
    page may scroll sideways): no console or page error, no
    request to another host, every chart drawn, every internal link and anchor resolves, the verdict column in
    view, and the viewers answer a click. Screenshots land in this test's folder."""
    sync_api = playwright_or_skip()
    site = smoke / "results" / "smoke" / "site"
    names = [*pages(), "about"]
    server = LocalSite(site)
    problems, shots = [], tmp_path / "screenshots"
    (shots / "390px").mkdir(parents=True)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM))
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            where = {"name": ""}
            page.on("console", lambda m: problems.append(f"{where['name']}: console {m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"{where['name']}: page error: {e}"))
            page.on("request", lambda r: None if r.url.startswith((server.url, "data:", "blob:", "about:"))
                    else problems.append(f"{where['name']}: request off the local server: {r.url}"))
            for name in names:
                where["name"] = name
                page.goto(server.url + f"{name}.html", wait_until="networkidle")
                charts = page.locator(".attnlab-chart")
                for i in range(charts.count()):  # vega-embed draws after load: wait for each chart's SVG or canvas
                    try:
                        charts.nth(i).locator("svg, canvas").first.wait_for(timeout=10_000)
                    except sync_api.TimeoutError:
                        problems.append(f"{name}: chart {charts.nth(i).get_attribute('id')} was not drawn")
                for th in page.locator("table.verdicts th:last-child, table.dashboard th:nth-child(6)").all():
                    box = th.bounding_box()
                    if box is None or box["x"] + box["width"] > 1280:
                        problems.append(f"{name}: the verdict column is not in view at 1280 px ({box})")
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
                    target = local_target(site, f"{name}.html", href)
                    if target is None:
                        continue
                    file, frag = target
                    if not file.is_file():
                        problems.append(f"{name}: link {href} opens a file the site lacks")
                    elif frag and file.suffix == ".html" and f'id="{frag}"' not in file.read_text():
                        problems.append(f"{name}: link {href} points to an anchor its page lacks")
                page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
            phone = browser.new_page(viewport={"width": 390, "height": 844})  # a phone: nothing scrolls sideways
            phone.on("console", lambda m: problems.append(f"{where['name']} at 390 px: console {m.type}: {m.text}")
                     if m.type == "error" else None)
            for name in names:
                where["name"] = name
                phone.goto(server.url + f"{name}.html", wait_until="networkidle")
                wide = phone.evaluate("document.documentElement.scrollWidth")
                if wide > 390:
                    problems.append(f"{name}: at 390 px the page is {wide} px wide and scrolls sideways")
                phone.screenshot(path=str(shots / "390px" / f"{name}.png"))
            for name, viewer in [("viewer", "attnlab-viewer"), ("seq2seq", "seq2seq-viewer")]:
                where["name"] = name
                page.goto(server.url + f"{name}.html", wait_until="networkidle")
                before = page.get_attribute(f"#{viewer}", "data-state")
                page.locator(f"#{viewer}-tokens .av-token").nth(0).click()
                if page.get_attribute(f"#{viewer}", "data-state") == before:
                    problems.append(f"{name}: the viewer did not answer a click")
            for width, view in ((1280, page), (390, phone)):  # on a phone the rows are cards: still filtered
                where["name"] = "dashboard"
                view.goto(server.url + "dashboard.html", wait_until="networkidle")
                rows = view.locator("table.dashboard tbody tr")
                chosen = rows.first.get_attribute("data-verdict")
                view.select_option("#dashboard-verdict", chosen)
                shown = [r.get_attribute("data-verdict") for r in rows.all() if r.is_visible()]
                want = view.locator(f'table.dashboard tbody tr[data-verdict="{chosen}"]').count()
                if not (len(shown) == want > 0 and set(shown) == {chosen} and want < rows.count()):
                    problems.append(f"dashboard at {width} px: the verdict filter shows {len(shown)} rows, not the "
                                    f"{want} {chosen}")
            browser.close()
    finally:
        server.close()
    assert not problems, "\n".join(problems)
    assert sorted(p.stem for p in shots.glob("*.png")) == sorted(names)
    assert sorted(p.stem for p in (shots / "390px").glob("*.png")) == sorted(names)
