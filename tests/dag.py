"""Running the project's DAG in a test: a checkout of the workflow and code, Snakemake in it, and the finished
smoke run that every smoke-based test file copies (`finished_smoke`, the `smoke` fixture in conftest.py)."""
import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from attnlab.config import resolve
from helpers import REPO


COPIED = ["Snakefile", "workflow", "src", "config", "docs", "tools", "profiles", "environment.yml",
          "mkdocs.yml", ".gitignore"]


def run_env(work: Path) -> dict:
    """The environment a command runs in `work` with: its own code first, and this interpreter's tools on PATH."""
    return {**os.environ, "PYTHONPATH": str(work / "src"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def snakemake(workdir: Path, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workdir, env=run_env(workdir),
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def planned(proc) -> dict[str, int]:
    """Rule -> job count from a dry run's job stats table."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", proc.stdout, re.M) if m[1] != "total"}


def edit(path: Path):
    path.write_text(path.read_text() + "\n# an edit\n")


def checkout(work: Path, corpus_path: Path) -> Path:
    """The project's workflow and code in `work`, its smoke profile reading the corpus at `corpus_path`."""
    for name in COPIED:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, work / name,
                                                            **({"ignore": shutil.ignore_patterns("__pycache__")}
                                                               if src.is_dir() else {}))
    cfg = yaml.safe_load((work / "config" / "smoke.yaml").read_text())
    cfg["data"]["path"] = str(corpus_path)
    (work / "config" / "smoke.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(work, "init", "-q")  # a checkout: run files record its commit, and it can publish
    git(work, "add", "-A")
    git(work, "commit", "-qm", "checkout")
    return work


def git(work: Path, *args) -> str:
    return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args], cwd=work,
                          check=True, capture_output=True, text=True).stdout.strip()


def attnlab(work: Path, *args):
    return subprocess.run([sys.executable, "-m", "attnlab", *args], cwd=work, env=run_env(work), capture_output=True,
                          text=True)


def profile(work: Path, name: str, change) -> str:
    """config/<name>.yaml: the smoke profile (every run spelt out) with `change(cfg)` applied; returns its path
    relative to `work`."""
    cfg = resolve(yaml.safe_load((work / "config" / "smoke.yaml").read_text()))
    change(cfg)
    (work / "config" / f"{name}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return f"config/{name}.yaml"


def tree(root: Path) -> dict:
    """Every file under `root` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def clone(smoke: Path, work: Path) -> Path:
    """A copy of the finished smoke run (results and git history) that a test may change."""
    shutil.copytree(smoke, work, symlinks=True)
    git(work, "checkout", "--", ".")  # undo what other tests edited, so the tree is clean again
    git(work, "clean", "-fdq")
    return work


def by_claim(claims: pd.DataFrame) -> pd.DataFrame:
    """claims.csv (one row per part, each with its claim's verdict) as one row per claim."""
    return claims.drop_duplicates("claim_id").set_index("claim_id")


class LocalSite:
    """The built site served on 127.0.0.1 (an ephemeral port) from a thread, as a reader's browser would see it."""

    def __init__(self, root: Path):
        import functools
        import http.server
        import threading

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = functools.partial(Quiet, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def finished_smoke(root: Path, corpus_path: Path) -> Path:
    """The smoke DAG run to the end in `root`/smoke-run, once for every worker of a test session: the first to ask
    runs it, the others wait for it (a lock in `root`, the folder they share), and a run that failed fails them
    all at once rather than being tried again."""
    work, done, failed = root / "smoke-run", root / "smoke-run.done", root / "smoke-run.failed"
    with open(root / "smoke-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, here or when the worker dies
        if failed.exists():
            raise AssertionError(failed.read_text())
        if not done.exists():
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            try:
                snakemake(checkout(work, corpus_path), "--cores", "2", "--resources", "gpu=1",
                          "--configfile", "config/smoke.yaml")
            except BaseException as err:
                failed.write_text(f"the shared smoke run failed: {err}")
                raise
            done.touch()
    return work
