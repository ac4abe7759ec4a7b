"""The smoke profile through a real one-node SLURM cluster started on this machine (`pytest -m slurm`).

Debian's slurmctld, slurmd and munge, installed with apt-get if missing, run as root with their state, logs
and munge socket in a temporary folder, and are stopped afterwards. Their configuration is written to
/etc/slurm/slurm.conf, where no SLURM is configured yet, and removed afterwards: the plugin's job step runs
`srun` without SLURM_CONF (it drops every SLURM_ variable but the job's identity), so srun reads only the
default path. The workflow goes through `sbatch` with profiles/slurm; the test skips, in one line, where that
cannot be (not root, no apt-get, the install fails, a SLURM already configured here).
"""
import importlib.util
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from attnlab.config import resolve
from attnlab.runs import runs
from helpers import apt_install
from dag import REPO, checkout, snakemake, tree

pytestmark = pytest.mark.slurm
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
DAEMONS = ["slurmctld", "slurmd", "sbatch", "squeue", "munged"]
CONF = Path("/etc/slurm/slurm.conf")


def install() -> str | None:
    """Why SLURM cannot run here (one line), or None once its daemons are installed."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')"
    if os.geteuid() != 0:
        return "the SLURM test needs root (it starts slurmctld, slurmd and munged)"
    if CONF.exists():
        return f"{CONF} exists: this machine has a SLURM of its own, which the test leaves alone"
    if all(shutil.which(d) or Path(f"/usr/sbin/{d}").exists() for d in DAEMONS):
        return None
    why = apt_install(*PACKAGES)
    return f"SLURM is not installed and {why}" if why else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def slurm_conf(root: Path, host: str, cpus: int, memory: int) -> str:
    """One node that is its own controller. No accounting (no slurmdbd), so finished jobs must stay in the
    controller for squeue to see them (MinJobAge); memory is not a consumable, so jobs share the node."""
    return "\n".join([
        "ClusterName=attnlab", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={root}/munge.sock",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "MinJobAge=600", "ReturnToService=2", "SlurmdParameters=config_overrides",
        f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
        f"StateSaveLocation={root}/state", f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid", f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/slurmctld.log", f"SlurmdLogFile={root}/slurmd.log",
        f"NodeName={host} CPUs={cpus} RealMemory={memory} State=UNKNOWN",
        "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""])


def wait_for(what: str, test, seconds: float = 60):
    end = time.monotonic() + seconds
    while not test():
        if time.monotonic() > end:
            raise AssertionError(f"SLURM: {what} after {seconds:.0f} s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running one-node cluster: the folder of its state and logs."""
    why = install()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool"):
        (root / sub).mkdir()
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    # every job asks for the profile's 16000 MB: the node takes them all (config_overrides trusts the config)
    memory = max(16000, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20)
    made_dir = not CONF.parent.exists()
    CONF.parent.mkdir(parents=True, exist_ok=True)
    CONF.write_text(slurm_conf(root, host, os.cpu_count(), memory))
    start = time.monotonic()
    daemons = []
    try:  # -f: munged runs as root and its socket's folder is private
        daemons.append(subprocess.Popen(
            ["munged", "-F", "-f", f"--socket={root}/munge.sock", f"--key-file={key}", f"--pid-file={root}/munged.pid",
             f"--seed-file={root}/munged.seed", f"--log-file={root}/munged.log"],
            stdout=subprocess.DEVNULL, stderr=open(root / "munged.out", "w")))
        wait_for("munged gave no socket", (root / "munge.sock").exists, 20)
        for daemon in ("slurmctld", "slurmd"):
            daemons.append(subprocess.Popen([daemon, "-D"], stdout=subprocess.DEVNULL,
                                            stderr=open(root / f"{daemon}.out", "w")))
        wait_for("the node is not idle", lambda: subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout.strip() == "idle")
        print(f"cluster started in {time.monotonic() - start:.1f} s")
        yield root
    finally:
        for proc in reversed(daemons):  # ours only, by the ids we started them with
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        CONF.unlink()
        if made_dir:
            CONF.parent.rmdir()


def squeue(*fields: str) -> list[list[str]]:
    """Every job the controller holds, finished ones included (MinJobAge), one field list per job."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "|".join(fields)], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("|") for line in out.splitlines()]


# no slurmdbd here: squeue, not sacct, tells the plugin a job is done, and there are no accounts
SLURM = ["--profile", "profiles/slurm", "--configfile", "config/smoke.yaml", "--slurm-status-command", "squeue",
         "--slurm-no-account", "--slurm-init-seconds-before-status-checks", "5"]


def targets(work: Path) -> list[str]:
    """What goes through SLURM: the smoke profile's ladder (its data job and a training job per row, about 2 min),
    or with ATTNLAB_SLURM_WHOLE=1 the whole smoke DAG, site included (every job of its plan, about 7 min on 2
    cores: each job starts Snakemake twice, for the batch job and for its step)."""
    if os.environ.get("ATTNLAB_SLURM_WHOLE") == "1":
        return []
    ladder = resolve(yaml.safe_load((work / "config" / "smoke.yaml").read_text()))["ladder"]
    return [f"results/smoke/ladder/{row}/seed1337/metrics.json" for row in ladder]


@pytest.fixture(scope="module")
def smoke(cluster, tmp_path_factory, corpus_path):
    """The smoke profile run through SLURM: its folder, the jobs the controller saw, and whether it was whole."""
    work = checkout(tmp_path_factory.mktemp("attnlab"), corpus_path)
    start = time.monotonic()
    wanted = targets(work)
    proc = snakemake(work, *wanted, *SLURM, "--config", "device=cpu")  # the node has no GPU: the jobs ask for none
    jobs = squeue("%i", "%T", "%k")  # id, state, the comment the plugin gives: rule_<rule>_wildcards_<...>
    ids = sorted(int(i) for i, _, _ in jobs)
    print(f"smoke profile through SLURM: {len(jobs)} sbatch jobs, ids {ids[0]}-{ids[-1]}, "
          f"{time.monotonic() - start:.0f} s wall")
    return work, proc, jobs, wanted


def test_the_smoke_profile_runs_through_sbatch(smoke, cluster):
    work, proc, jobs, wanted = smoke
    r = work / "results" / "smoke"
    assert all((work / t).is_file() for t in wanted)
    if not wanted:
        assert (r / "site" / "index.html").is_file() and (r / "claims.csv").is_file()
    assert "has been submitted with SLURM jobid" in proc.stdout + proc.stderr
    assert jobs and all(state == "COMPLETED" for _, state, _ in jobs), jobs
    train = [i for i, _, comment in jobs if comment.startswith("rule_train_")]
    planned = wanted or runs(resolve(yaml.safe_load((work / "config" / "smoke.yaml").read_text())))  # a job each
    assert len(planned) >= 10 and len(train) == len(planned), (len(train), len(planned))
    log = (cluster / "slurmctld.log").read_text()
    assert all(f"_job_complete: JobId={i} done" in log for i in train)


def test_training_asks_slurm_for_a_gpu(smoke):
    """Without device=cpu, a training job asks for a GPU, whatever the machine running Snakemake has; this
    node has none, so sbatch refuses it, and the plugin shows the call."""
    work = smoke[0]
    proc = snakemake(work, *SLURM, "results/smoke/ladder/L1/seed1337/metrics.json", check=False)  # device: auto
    out = proc.stdout + proc.stderr
    assert proc.returncode and "SLURM sbatch failed" in out and "--gpus=1" in out, out[-3000:]


def test_a_profile_naming_an_unknown_resource_submits_nothing(cluster, tmp_path, corpus_path):
    work = checkout(tmp_path, corpus_path)
    published = next(p for p in sorted((REPO / "results").glob("2*")) if p.is_dir())  # a published version
    shutil.copytree(published, work / "results" / published.name)
    before = {j[0] for j in squeue("%i")}, tree(work / "results")
    proc = snakemake(work, *SLURM, "--config", "device=cpu", "--set-resources", "train:gpu_count=1", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("attnlab: error:")]
    assert proc.returncode and len(errors) == 1 and "'gpu_count'" in errors[0], proc.stderr[-2000:]
    assert ({j[0] for j in squeue("%i")}, tree(work / "results")) == before  # nothing submitted, nothing touched
