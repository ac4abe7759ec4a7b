"""The SLURM profile's check: every resource it names is one the executor plugin knows, in one line if not."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnlab.cluster import KNOWN, check_profile, rules
from attnlab.errors import AttnlabError
from helpers import REPO

PROFILE = REPO / "profiles" / "slurm"


def bad_profile(tmp_path, change) -> Path:
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    change(profile)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(profile))
    return tmp_path


def test_the_projects_profile_passes():
    profile = check_profile(PROFILE)
    assert profile["executor"] == "slurm" and {"runtime", "mem_mb"} <= set(profile["default-resources"])


def test_the_rules_are_read_from_the_rule_files():
    assert rules() >= {"prepare_data", "train", "analyse", "claims", "site", "all"}


@pytest.mark.parametrize("change, named", [
    (lambda p: p["set-resources"]["train"].update(gpu_count=1), "set-resources.train names resource 'gpu_count'"),
    (lambda p: p["default-resources"].update(partition="gpu"), "default-resources names resource 'partition'"),
    (lambda p: p.update({"set-resources": ["analyse:walltime=60"]}), "names resource 'walltime'"),
    (lambda p: p["set-resources"].update(trian={"runtime": 5}), "names rule 'trian'"),
    (lambda p: p.update(executor="cluster-generic"), "executor is 'cluster-generic', not 'slurm'"),
])
def test_a_bad_profile_is_named_in_one_line(tmp_path, change, named):
    path = bad_profile(tmp_path, change)
    with pytest.raises(AttnlabError, match=re.escape(named)):
        check_profile(path)


def test_a_profile_that_gives_a_key_twice_is_named_at_its_line(tmp_path):
    text = (PROFILE / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(text + "executor: local\n")
    line = len(text.splitlines()) + 1
    first = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("executor:"))
    with pytest.raises(AttnlabError) as err:
        check_profile(tmp_path)
    assert str(err.value) == (f"SLURM profile {tmp_path / 'config.yaml'} is not valid YAML at line {line}, column 1: "
                              f"key 'executor' is given twice (first at line {first}); keep one")


def test_the_cli_reports_an_unknown_resource_in_one_line(tmp_path):
    path = bad_profile(tmp_path, lambda p: p["set-resources"]["train"].update(gpu_count=1))
    proc = subprocess.run([sys.executable, "-m", "attnlab", "check", "--config", "config/smoke.yaml",
                           "--slurm-profile", str(path)], capture_output=True, text=True, cwd=REPO)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and proc.stdout == "" and len(lines) == 1, proc.stderr
    assert lines[0].startswith("attnlab: error: SLURM profile") and "'gpu_count'" in lines[0]


def test_the_known_names_cover_every_resource_the_plugin_reads():
    """The plugin exposes no list: its code is the truth, so a new version that reads more fails here."""
    found = [importlib.util.find_spec(m) for m in ("snakemake_executor_plugin_slurm",
                                                   "snakemake_executor_plugin_slurm_jobstep")]
    if None in found:
        pytest.skip("snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')")
    code = "".join(p.read_text() for spec in found for p in Path(spec.origin).parent.glob("*.py"))
    read = set(re.findall(r"resources\.get\(\s*['\"](\w+)['\"]", code))
    read |= set(re.findall(r"resources\.(\w+)", code)) - {"get", "items", "keys"}
    assert read and read <= KNOWN, sorted(read - KNOWN)
