"""The smoke DAG end to end, and what a code edit reruns (shown with `snakemake -n`)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnlab.config import TRAINING

REPO = Path(__file__).resolve().parents[1]
COPIED = ["Snakefile", "workflow", "src", "config", "claims", "docs", "environment.yml"]


def snakemake(workdir: Path, *args, check=True):
    env = {**os.environ, "PYTHONPATH": str(workdir / "src"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def planned(proc) -> dict[str, int]:
    """Rule -> job count from a dry run's job stats table."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", proc.stdout, re.M) if m[1] != "total"}


def edit(path: Path):
    path.write_text(path.read_text() + "\n# an edit\n")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, corpus_path):
    work = tmp_path_factory.mktemp("attnlab")
    for name in COPIED:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, work / name,
                                                            **({"ignore": shutil.ignore_patterns("__pycache__")}
                                                               if src.is_dir() else {}))
    cfg = yaml.safe_load((work / "config" / "smoke.yaml").read_text())
    cfg["data"]["path"] = str(corpus_path)
    (work / "config" / "smoke.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake(work, "--cores", "2", "--resources", "gpu=1", "--configfile", "config/smoke.yaml")
    return work


def test_smoke_dag_builds_the_site(smoke):
    r = smoke / "results" / "smoke"
    assert (r / "site" / "index.html").is_file()
    claims = pd.read_csv(r / "claims.csv")
    assert list(claims.columns) == ["claim_id", "chapter_value", "reproduced_value", "verdict", "note"]
    assert {"C0.2", "C1.1", "C2.1"} <= set(claims.claim_id)
    assert claims.set_index("claim_id").loc["C0.2", "verdict"] == "reproduced"  # the real corpus, the real BPE
    for row in yaml.safe_load((smoke / "config" / "smoke.yaml").read_text())["ladder"]:
        assert (r / "ladder" / row / "metrics.json").is_file()
    for job in ("prepare_data", "claims", "site", "bench_throughput", "e1/averaging", "ladder/L1"):
        assert (r / "logs" / f"{job}.log").exists() and (r / "benchmarks" / f"{job}.tsv").exists()


def test_nothing_to_do_after_a_complete_run(smoke):
    assert planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml")) == {}


def test_editing_report_code_reruns_no_training(smoke):
    edit(smoke / "src" / "attnlab" / "report" / "charts.py")
    jobs = planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml"))
    assert jobs.get("site") == 1 and "train" not in jobs and "prepare_data" not in jobs


def test_editing_model_code_reruns_training(smoke):
    edit(smoke / "src" / "attnlab" / "nn" / "model.py")
    jobs = planned(snakemake(smoke, "-n", "--configfile", "config/smoke.yaml"))
    cfg = yaml.safe_load((smoke / "config" / "smoke.yaml").read_text())
    runs = sum(len(cfg.get(experiment) or {}) for experiment in TRAINING)
    assert jobs.get("train") == runs and "prepare_data" not in jobs


def test_lint_has_nothing_to_say(smoke):
    proc = snakemake(smoke, "--lint", "--configfile", "config/smoke.yaml", check=False)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("edit_cfg,message", [
    (lambda c: c["ladder"]["L5"].update(mixer="lstm"), "unknown mixer 'lstm'"),
    (lambda c: c.update(learning_rate=1), "Additional properties are not allowed ('learning_rate'"),
    (lambda c: c["ladder"]["L9"].update(max_positions=4), "longer than the position table"),
    (lambda c: c["data"].update(path="no/such/input.txt"), "corpus file not found: no/such/input.txt"),
    (lambda c: c["data"].update(sha256="0" * 64), "corpus checksum mismatch"),
])
def test_bad_config_stops_the_dag_before_any_job(smoke, edit_cfg, message):
    cfg = yaml.safe_load((smoke / "config" / "smoke.yaml").read_text())
    edit_cfg(cfg)
    (smoke / "config" / "bad.yaml").write_text(yaml.safe_dump(cfg))
    metrics = smoke / "results" / "smoke" / "ladder" / "L5" / "metrics.json"
    before = metrics.read_bytes(), metrics.stat().st_mtime
    proc = snakemake(smoke, "--cores", "1", "--configfile", "config/bad.yaml", check=False)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert (metrics.read_bytes(), metrics.stat().st_mtime) == before
