"""The time of a run, before and after: the expected time a dry run prints (recorded run times scaled by the
calibration figure), the home page's chart of where a version's time went, the progress lines of a long job, and
the README's quick figures against the version of record's run files."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnlab import calibration, eta, provenance, runner
from attnlab.plan import Job
from attnlab.progress import Progress
from helpers import REPO

sys.path.insert(0, str(Path(__file__).parent))
from charts import described, scene_items  # noqa: E402

WORKLOAD = calibration.WORKLOAD


def job(name: str, experiment: str, output: str, needs=()) -> Job:
    return Job(name, experiment, "training", (output,), (), "{}", tuple(needs))


def run_file(folder: Path, rel: str, wall: float, figure: float | None, date: str = "2026-12-01T10:00:00+00:00"):
    prov = {"wall_seconds": wall, "date": date}
    if figure is not None:
        prov["calibration"] = {"workload": WORKLOAD, "seconds": figure}
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": prov}))


@pytest.fixture
def version(tmp_path) -> Path:
    """A hand-made version: two run files of the ladder, whose calibration was timed at 0.02 s and (the machine
    busier then) 0.04 s: the machine's figure is the best, 0.02 s."""
    folder = tmp_path / "2026-12-01-quick-cpu-abc1234"
    run_file(folder, "ladder/L1/seed1337/metrics.json", 100.0, 0.02, "2026-12-01T10:01:40+00:00")
    run_file(folder, "ladder/L2/seed1337/metrics.json", 50.0, 0.04, "2026-12-01T10:02:30+00:00")
    return folder


TODO = [job("ladder/L1/seed1337", "ladder", "ladder/L1/seed1337/metrics.json"),
        job("ladder/L2/seed1337", "ladder", "ladder/L2/seed1337/metrics.json", needs=["ladder/L1/seed1337"]),
        job("winograd", "winograd", "winograd/result.json")]


def test_the_estimate_is_each_record_scaled_by_the_ratio_of_calibrations(version):
    est = eta.estimate(TODO, [version], here=0.03, slots=2)
    assert est.cpu == {"ladder": pytest.approx((100 + 50) * 0.03 / 0.02)}  # 225 s
    assert est.jobs == {"ladder": 2} and est.unscaled == {} and est.sources == [version.name]
    assert est.scale == pytest.approx(1.5)
    assert est.wall == pytest.approx(225.0)  # L2 waits for L1, whatever the free slots
    assert "(×1.50: calibration 0.0300 s here)" in eta.lines(est, "the 3 jobs")[0]


def test_a_job_with_no_record_is_counted_apart_and_said_so(version):
    est = eta.estimate(TODO, [version], here=0.03, slots=2)
    assert est.unrecorded == ["winograd"] and "winograd" not in est.cpu
    lines = eta.lines(est, "the 3 jobs")
    assert lines[-1] == "  1 jobs with no recorded time, not counted above: winograd"
    assert any(re.fullmatch(r"  ladder\s+2 jobs\s+225 s", line) for line in lines)


def test_the_calibration_scales_the_estimate_and_an_unknown_scale_is_taken_as_one(version, tmp_path):
    slow, fast = (eta.estimate(TODO, [version], here=h, slots=1).total for h in (0.06, 0.03))
    assert slow == pytest.approx(2 * fast)
    old = tmp_path / "old"
    run_file(old, "ladder/L1/seed1337/metrics.json", 80.0, None)
    est = eta.estimate(TODO[:1], [old], here=0.05, slots=1)
    assert est.total == pytest.approx(80.0) and est.unscaled == {"ladder/L1/seed1337": "ladder"}
    assert "unknown, as they recorded no calibration; taken as 1" in eta.lines(est, "1 job")[0]


TINY = {"vocab_size": 64, "d_model": 16, "context": 8, "n_heads": 2, "mixer": "multihead", "position": "learned",
        "mlp": True, "norm": "pre"}


def test_a_version_with_no_calibration_is_scaled_by_its_throughput_benchmark_timed_again(tmp_path, monkeypatch):
    """A version published before the calibration figure: its benchmark's fastest reference round (0.1 s) against
    the same step here (0.25 s) scales it by 2.5; a folder without the benchmark keeps the unknown scale."""
    from attnlab.bench import reference

    old = tmp_path / "2026-11-01-quick-cpu-abc1234"
    run_file(old, "ladder/L1/seed1337/metrics.json", 80.0, None)
    bench = {"model": TINY, "batch_size": 4, "threads": 1, "reference_step_seconds": [0.3, 0.1, 0.2]}
    (old / "throughput").mkdir()
    (old / "throughput" / "result.json").write_text(json.dumps(bench))
    asked = []
    monkeypatch.setattr(reference, "best_step_seconds",
                        lambda spec, batch, threads: asked.append((spec.d_model, batch, threads)) or 0.25)
    est = eta.estimate(TODO[:1], [old], here=0.05, slots=1)
    assert asked == [(16, 4, 1)] and est.total == pytest.approx(200.0) and est.unscaled == {}
    assert est.by_benchmark == {old.name: pytest.approx(2.5)}
    head = eta.lines(est, "1 job")[0]
    assert f"{old.name} by its throughput benchmark's reference step, timed again here (×2.50)" in head
    (old / "throughput" / "result.json").write_text("{not json")
    assert eta.estimate(TODO[:1], [old], here=0.05, slots=1).unscaled == {"ladder/L1/seed1337": "ladder"}


def test_the_reference_step_timed_again_leaves_threads_and_the_rng_as_they_were():
    import torch

    from attnlab.bench.reference import best_step_seconds
    from attnlab.nn.spec import ModelSpec

    threads, state = torch.get_num_threads(), torch.get_rng_state()
    assert 0 < best_step_seconds(ModelSpec(**TINY), 2, 1, steps=2) < 5
    assert torch.get_num_threads() == threads and torch.equal(torch.get_rng_state(), state)


def test_the_figure_here_is_the_best_of_several_measurements(monkeypatch):
    figures = iter([0.05, 0.03, 0.04, 0.01])
    monkeypatch.setattr(calibration, "measure", lambda: {"workload": WORKLOAD, "seconds": next(figures)})
    assert eta.HERE_ROUNDS == 3 and eta.here() == 0.03  # the fourth is never measured


def test_another_seed_of_the_same_run_stands_for_it_and_independent_jobs_share_the_slots(version):
    other = [job("ladder/L1/seed1338", "ladder", "ladder/L1/seed1338/metrics.json"),
             job("ladder/L2/seed1338", "ladder", "ladder/L2/seed1338/metrics.json")]
    assert eta.estimate(other, [version], here=0.02, slots=2).wall == pytest.approx(100.0)  # max(100, 50)
    assert eta.estimate(other, [version], here=0.02, slots=1).wall == pytest.approx(150.0)


def test_an_analysis_run_at_every_seed_scales_with_how_many_it_runs_at(version):
    """A record of the Winograd probe at 3 seeds stands for a second look at 5 at 5/3 its time; one job at one
    seed (a training run's) is not scaled by the seeds."""
    doc = {"provenance": {"wall_seconds": 90.0, "calibration": {"workload": WORKLOAD, "seconds": 0.02}},
           "by_seed": {"1337": {}, "1338": {}, "1339": {}}}
    (version / "winograd").mkdir()
    (version / "winograd" / "result.json").write_text(json.dumps(doc))
    at = lambda seeds: Job("winograd", "winograd", "analysis", ("winograd/result.json",), (), json.dumps({"seeds": seeds}))
    assert eta.estimate([at([1337, 1338, 1339])], [version], here=0.02, slots=1).total == pytest.approx(90.0)
    assert eta.estimate([at(list(range(1337, 1342)))], [version], here=0.02, slots=1).total == pytest.approx(150.0)
    assert eta.estimate([at([1337])], [version], here=0.04, slots=1).total == pytest.approx(60.0)
    assert eta.estimate(TODO[:1], [version], here=0.02, slots=1).total == pytest.approx(100.0)


def test_the_calibration_is_recorded_in_every_run_files_provenance():
    figure = calibration.measure(repeats=2)
    assert figure["workload"] == WORKLOAD and 0 < figure["seconds"] < 10
    assert provenance.record({"profile": "smoke"})["calibration"]["workload"] == WORKLOAD


def test_the_runners_dry_run_prints_the_expected_time_per_experiment(tmp_path, capsys, monkeypatch):
    source = tmp_path / "earlier"
    run_file(source, "ladder/L1/seed1337/metrics.json", 40.0, 0.01)
    run_file(source, "data/stats.json", 2.0, 0.01)
    monkeypatch.setattr(eta, "here", lambda: 0.02)
    assert runner.main(["smoke", "--results", str(tmp_path / "r"), "-n", "--only", "ladder",
                        "--times-from", str(source)]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(out) if "expected time of" in line)
    assert out[head].startswith("attnlab.runner: expected time of the ") and str(source) in out[head]
    assert re.fullmatch(r"  data\s+1 jobs\s+4 s", out[head + 1])
    assert re.fullmatch(r"  ladder\s+1 jobs\s+80 s", out[head + 2])
    assert "wall time at 2 jobs at once" in out[head + 3]
    assert re.fullmatch(r"  \d+ jobs with no recorded time, not counted above: .*", out[head + 4])


def test_snakemakes_dry_run_prints_the_expected_time(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")  # the smoke profile, reading the corpus where it lies
    for name in ("src", "docs", "mkdocs.yml", "claims"):  # the rules' inputs, read from the working folder
        if (REPO / name).exists():
            (tmp_path / name).symlink_to(REPO / name)
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    smoke["data"]["path"] = str((REPO / smoke["data"]["path"]).resolve())
    (tmp_path / "config" / "smoke.yaml").write_text(yaml.safe_dump(smoke, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
                           "-n", "--cores", "2", "--config", "profile=smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("attnlab: expected time of"))
    assert "jobs whose run file is not there yet" in line
    assert not (tmp_path / "results").exists()


def test_the_home_chart_draws_one_bar_per_experiment_with_the_recorded_numbers(version):
    from attnlab.report.pages.index import time_chart, time_words

    run_file(version, "winograd/result.json", 30.0, 0.02, "2026-12-01T10:03:00+00:00")
    spent = eta.spent(version)
    assert spent.run == {"ladder": 150.0, "winograd": 30.0} and spent.wall == pytest.approx(180.0)
    bars = {d["experiment"]: float(d["run time (s)"].replace(",", ""))
            for d in map(described, (i for i in scene_items(time_chart(spent)) if i["marktype"] == "rect"))
            if "experiment" in d}
    assert bars == {"ladder": 150.0, "winograd": 30.0}
    assert time_words(spent) == ("The 3 run files record 180 s of run time (3 min); from the first one's start to "
                                 "the last one's end, 180 s passed (3 min): 1.0 jobs' worth of run time at once on "
                                 "average.")
    one = eta.Spent({"throughput": 448.0}, {"throughput": 1}, 448.0)
    assert time_words(one).startswith("The 1 run file records 448 s of run time (7 min);")


def test_progress_lines_come_at_the_set_rate_with_a_fake_clock():
    now, out = [0.0], io.StringIO()
    shown = Progress("ladder/L9/seed1337", 100, 4096, every=20.0, clock=lambda: now[0], stream=out)
    shown(0, None, float("nan"))
    for step in range(1, 101):
        now[0] += 3.0  # a step every 3 s: a line every 7 steps (21 s), and one at the end
        shown(step, None, 2.5)
    lines = out.getvalue().splitlines()
    assert [int(re.search(r"step (\d+)/", x)[1]) for x in lines] == [*range(7, 100, 7), 100]
    assert lines[0] == "  ladder/L9/seed1337: step 7/100, loss 2.500, 1,365 tokens/s, ETA 4 min 39 s"
    quiet = Progress("x", 10, 1, every=20.0, clock=lambda: 0.0, stream=io.StringIO())
    for step in range(11):
        quiet(step, None, 1.0)
    assert quiet.stream.getvalue() == ""  # a job shorter than the interval prints nothing


def test_the_readmes_quick_figures_are_the_version_of_records_recorded_times():
    from attnlab.versions import latest

    record = latest(REPO)
    spent = eta.spent(REPO / "results" / record)
    row = next(x for x in (REPO / "README.md").read_text().splitlines() if x.startswith("| `quick` |"))
    assert f"`{record}`" in row
    assert f"{spent.wall:,.0f} s from the first job's start to the last one's end" in row
    assert f"{spent.total:,.0f} s of run time" in row
    assert f"{eta.duration(spent.wall)} measured" in row


def test_the_progress_probe_changes_no_run(tmp_path):
    """A run shown on the terminal (a line at every step: interval 0) has the run id, curve and numbers of one that
    is not."""
    import csv

    from attnlab.data.prepare import load_tokens
    from attnlab.runs import spec_from_config
    from attnlab.train import train
    from helpers import tiny_config, write_tokens

    cfg, d = tiny_config(steps=12), write_tokens(tmp_path / "data")
    tokens = load_tokens(d, "train"), load_tokens(d, "val")
    shown, out = io.StringIO(), {}
    for name, probes in (("plain", []), ("shown", [Progress("ladder/L9/seed1337", 12, 32, every=0.0, stream=shown)])):
        m = train(spec_from_config(cfg, "L9"), cfg, *tokens, tmp_path / name, name="L9", progress=False, probes=probes)
        curve = list(csv.DictReader((tmp_path / name / "curve.csv").open()))
        out[name] = ({k: v for k, v in m.items() if k not in ("provenance", "tokens_per_second")}, curve)
    assert out["plain"] == out["shown"]
    assert len(shown.getvalue().splitlines()) == 12  # it did print: a line at every step after the first call


def test_a_times_from_folder_that_is_not_there_is_one_line_before_any_job(tmp_path, capsys):
    assert runner.main(["smoke", "--results", str(tmp_path / "r"), "-n", "--times-from", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"attnlab.runner: error: --times-from {tmp_path / 'nowhere'}: no such folder of run files"


def test_a_version_whose_files_record_no_dates_says_its_wall_time_is_not_recorded():
    from attnlab.report.pages.index import time_chart, time_words

    undated = eta.Spent({"ladder": 120.0}, {"ladder": 2}, None)
    assert time_words(undated) == ("The 2 run files record 120 s of run time (2 min); their dates, and so the wall "
                                   "time, are not recorded in this version.")
    assert "layer" not in time_chart(undated)  # no rule for a wall time it does not know
