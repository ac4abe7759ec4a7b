"""A SLURM profile's resources, checked before anything is submitted (by the Snakefile and `attnlab check`).

snakemake-executor-plugin-slurm passes on the resources it knows and silently ignores any other, so a
misspelt one (`gpu_count: 1`) would quietly run every job without it. Nothing here imports torch.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from attnlab.config import StrictLoader
from attnlab.errors import AttnlabError

# The plugin exposes no list of the resources it reads; these are the ones its documentation names
# (docs/further.md of snakemake-executor-plugin-slurm 2.8: "Standard Resources", "SLURM-specific Resources",
# "GPU Jobs", "MPI-specific Resources"), which tests/test_cluster.py checks against what its code reads.
STANDARD = {"runtime", "mem", "mem_mb", "mem_mib", "disk", "disk_mb", "disk_mib", "tmpdir", "threads",
            "gpu", "gpu_model", "gpu_manufacturer"}  # Snakemake's own, which the plugin maps to sbatch options
SLURM = {"slurm_partition", "slurm_account", "clusters", "cluster", "slurm_cluster", "constraint", "qos",
         "cpus_per_task", "cpus_per_gpu", "mem_mb_per_cpu", "nodes", "tasks", "tasks_per_node", "tasks_per_gpu",
         "gres", "mpi", "slurm_extra", "slurm_requeue"}
KNOWN = STANDARD | SLURM
RULES = Path(__file__).resolve().parents[2] / "workflow" / "rules"


def rules(folder: Path = RULES) -> set[str]:
    """The workflow's rules, read from its rule files (the Snakefile adds `all`)."""
    return {"all"} | {m[1] for f in folder.glob("*.smk") for m in re.finditer(r"^rule (\w+):", f.read_text(), re.M)}


def check_resources(default: dict, per_rule: dict[str, dict], known_rules: set[str] | None = None,
                    where: str = "") -> None:
    """Raise AttnlabError naming the first resource the plugin does not know, or rule the workflow lacks.

    `default`: resource -> value (default-resources); `per_rule`: rule -> {resource: value} (set-resources).
    """
    places = [("default-resources", name) for name in default]
    for rule, resources in per_rule.items():
        if known_rules is not None and rule not in known_rules:
            raise AttnlabError(f"{where}set-resources names rule '{rule}', which the workflow does not have "
                               f"(its rules: {', '.join(sorted(known_rules))})")
        places += [(f"set-resources.{rule}", name) for name in resources]
    for place, name in places:
        if name not in KNOWN:
            raise AttnlabError(f"{where}{place} names resource '{name}', which snakemake-executor-plugin-slurm "
                               f"does not know (it knows {', '.join(sorted(KNOWN))})")


def check_profile(path: str | Path) -> dict:
    """A Snakemake profile (a folder holding config.yaml, or the file) for the SLURM executor, read and checked."""
    path = Path(path)
    file = path / "config.yaml" if path.is_dir() else path
    try:
        profile = yaml.load(file.read_text(), Loader=StrictLoader) or {}  # noqa: S506 - a SafeLoader
    except OSError as err:
        raise AttnlabError(f"SLURM profile {file} cannot be read ({err.strerror})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        raise AttnlabError(f"SLURM profile {file} is not valid YAML{where}: {problem}") from None
    if not isinstance(profile, dict):
        raise AttnlabError(f"SLURM profile {file} is not a mapping of Snakemake options")
    where = f"SLURM profile {file}: "
    if profile.get("executor") != "slurm":
        raise AttnlabError(f"{where}executor is {profile.get('executor')!r}, not 'slurm'")
    check_resources(assignments(profile.get("default-resources"), where + "default-resources"),
                    per_rule(profile.get("set-resources"), where), rules(), where)
    return profile


def assignments(value, where: str) -> dict:
    """A profile's `name: value` mapping, or its list of 'name=value' (the command line's form), as a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and all(isinstance(v, str) and "=" in v for v in value):
        return dict(v.split("=", 1) for v in value)
    raise AttnlabError(f"{where} must map names to values (or list 'name=value')")


def per_rule(value, where: str) -> dict[str, dict]:
    """set-resources as rule -> {resource: value}, from the profile's mapping or its list of 'rule:name=value'."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {rule: assignments(v, f"{where}set-resources.{rule}") for rule, v in value.items()}
    if isinstance(value, list) and all(isinstance(v, str) and ":" in v for v in value):
        out: dict[str, dict] = {}
        for entry in value:
            rule, assignment = entry.split(":", 1)
            out.setdefault(rule, {}).update(assignments([assignment], f"{where}set-resources"))
        return out
    raise AttnlabError(f"{where}set-resources must map rules to resources (or list 'rule:name=value')")
