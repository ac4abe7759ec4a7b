"""attnlab.layout: the one module that spells a run file's path, and reads one back."""
from __future__ import annotations

import json
import re

import pytest

from attnlab import layout, registry
from attnlab.config import chosen, seeds, validate
from attnlab.plan import plan
from helpers import REPO

SPELLED = re.compile(r"seed\{|metrics\.json")  # a path built by hand: the seed folder, the run file's name


def sources() -> list:
    """Every source file of the package, the Snakefile and the workflow's rules (not the claims: their prose
    names the files a value comes from, and their expressions read run files through the results' index)."""
    return sorted([*(REPO / "src").rglob("*.py"), *(p for p in (REPO / "src").rglob("*.yaml") if p.name != "claims.yaml"), REPO / "Snakefile",
                   *(REPO / "workflow").rglob("*.smk")])


def spelled_outside_layout(files, root=REPO) -> list[str]:
    return [f"{path.relative_to(root)}:{n}: {line.strip()}" for path in files if path.name != "layout.py"
            for n, line in enumerate(path.read_text().splitlines(), 1) if SPELLED.search(line)]


def test_only_the_layout_spells_a_run_files_path():
    assert len(sources()) > 50 and REPO / "src" / "attnlab" / "layout.py" in sources()
    assert spelled_outside_layout(sources()) == []


@pytest.mark.parametrize("line", ['folder = out / f"seed{seed}"', 'path = run / "metrics.json"'])
def test_the_check_names_a_path_built_by_hand(tmp_path, line):
    """The test above can fail: a path spelled anywhere but the layout is named, with its line."""
    (tmp_path / "producer.py").write_text(f"import x\n{line}\n")
    (tmp_path / "layout.py").write_text(f"{line}\n")
    assert spelled_outside_layout([tmp_path / "producer.py", tmp_path / "layout.py"], tmp_path) == [
        f"producer.py:2: {line}"]


@pytest.mark.parametrize("experiment, run, seed, file", [
    ("ladder", "L9", 1337, layout.METRICS), ("grouping", "S6-mha", 7, layout.CHECKPOINT),
    ("depth", "D-post", 0, layout.PROBES), ("ladder", "L1", None, layout.CURVE),  # None: before seeds
])
def test_a_run_files_path_reads_back_as_what_built_it(experiment, run, seed, file):
    path = layout.run_file(experiment, run, seed, file)
    assert layout.parse(path) == layout.RunPath(run, experiment, seed, file)
    assert layout.parse(layout.run_dir(experiment, run, seed)) == layout.RunPath(run, experiment, seed)
    assert layout.seed_of(path) == seed
    assert layout.parse(layout.sibling(path, layout.CURVE)).file == layout.CURVE


@pytest.mark.parametrize("path", ["", "a/b/c/d/metrics.json", "ladder/L9/seedling/metrics.json", "../L9"])
def test_what_is_not_a_runs_path_reads_as_none(path):
    assert layout.parse(path) is None


def test_where_an_up_trained_run_started_reads_in_every_form_a_version_recorded():
    """{run, seed} today; a checkpoint's path (with or without its seed's folder) or a bare run name before."""
    for where in ({"run": "S6-mha", "seed": 1338}, "grouping/S6-mha/seed1338/ckpt.pt"):
        assert (layout.source_of(where).run, layout.source_of(where).seed) == ("S6-mha", 1338)
    for old in ("grouping/S6-mha/ckpt.pt", "S6-mha"):
        assert (layout.source_of(old).run, layout.source_of(old).seed) == ("S6-mha", None)
    assert layout.source_of(None) is None and layout.source_of({"run": None}) is None
    assert layout.parse(layout.run_file("grouping", "S6-mha", 5, layout.CHECKPOINT)).source() == {"run": "S6-mha",
                                                                                                    "seed": 5}


def test_an_analysis_keeps_its_first_seeds_work_beside_its_result(tmp_path):
    assert layout.seed_dir(tmp_path, 1337, first=1337) == tmp_path
    assert layout.seed_of(layout.seed_dir(tmp_path, 1338, first=1337).name) is None  # a folder, not a run's path
    assert layout.seed_of_folder(layout.seed_dir(tmp_path, 1338, first=1337).name) == 1338
    assert layout.seed_of_folder(layout.seeded("copy-S8-additive", 9).rsplit("-", 1)[1]) == 9


def test_the_registry_and_the_plan_name_the_layouts_files():
    cfg = validate(chosen({"profile": "smoke"}, []))
    for job in plan(cfg):
        e = registry.get(job.experiment)
        if job.run:
            assert layout.parse(job.output) == layout.RunPath(job.run, e.name, job.seed, layout.METRICS)
            assert job.name == layout.run_dir(e.name, job.run, job.seed) == e.run_dir(job.run, job.seed)
        else:
            assert job.output == e.result == layout.result(e.name, e.kind)
    assert registry.get("data").result == layout.STATS


def test_the_rules_output_patterns_are_the_layouts_with_wildcards():
    assert layout.run_file("{experiment}", "{run}", "{seed}") == f"{layout.TRAIN_DIR}/{layout.METRICS}"
    assert layout.ANALYSIS_RESULT == "{name}/" + layout.RESULT
    smk = (REPO / "workflow" / "rules" / "train.smk").read_text()
    assert "attnlab.layout.TRAIN_DIR" in smk


@pytest.mark.parametrize("given, listed", [
    ({"seeds": [7, 8]}, [7, 8]), ({"seed": 7}, [7]),  # a version from before seeds: its one seed
])
def test_a_profile_resolves_to_one_list_of_seeds(given, listed):
    cfg = validate(chosen({"profile": "smoke", **given}, []))
    assert cfg["seeds"] == seeds(cfg) == listed and cfg["seed"] == listed[0]


def test_a_jobs_settings_with_one_seed_have_that_one():
    assert seeds({"profile": "smoke", "seed": 9}) == [9]
    assert seeds({"profile": "smoke", "seeds": [1, 2], "ladder": {"seeds": [1, 2, 3]}}, "ladder") == [1, 2, 3]
    with pytest.raises(Exception, match="no seeds"):
        seeds({"profile": "smoke"})


def test_every_committed_versions_profile_resolves_to_its_seeds():
    """A version's config.yaml is read back as a profile is: one written before the list (`seed: 1337` alone)
    has that one seed; one with the list, the list."""
    import yaml

    from attnlab.versions import settings_of

    versions = sorted((REPO / "results").glob("*/config.yaml"))
    assert any("seeds" not in yaml.safe_load(p.read_text()) for p in versions)  # an old one is among them
    for path in versions:
        doc = yaml.safe_load(path.read_text())
        cfg = settings_of(path)
        assert seeds(cfg) == cfg["seeds"] == (doc.get("seeds") or [doc["seed"]]) and cfg["seed"] == cfg["seeds"][0]


def test_a_training_jobs_settings_are_checked_once_on_the_way_to_train(monkeypatch):
    """The job's settings are validated where the job reads them (config.load_settings), once for its run; reading
    its train settings afterwards merges them and checks nothing again."""
    from attnlab import runs
    from attnlab.config import load_settings

    cfg = validate(chosen({"profile": "smoke"}, []))
    job = next(j for j in plan(cfg) if j.run == "S6-gqa-up")  # up-trained: its settings hold two runs
    checked = []
    validator = runs._train_validator()
    monkeypatch.setattr(runs, "_train_validator", lambda: checked.append(1) or validator)
    settings = load_settings(job.settings)
    assert len(checked) == 2  # the run and the run it starts from, each once
    runs.train_settings(settings, job.run)
    assert len(checked) == 2
    broken = {**settings, "train": {**settings["train"], "lr": "fast"}}
    assert runs.train_settings(broken, job.run)["lr"] == "fast"  # a merge: validate() is what refuses it
    with pytest.raises(Exception, match="config error at 'train.lr'"):
        load_settings(json.dumps(broken))
