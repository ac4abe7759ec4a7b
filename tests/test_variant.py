"""A reader's own variant, declared in a profile file of their own (no code edited): `extends` lays the file over a
profile, `like: NAME` starts a run from another's settings, and every other job keeps the settings it had."""
import json
from pathlib import Path

import pytest
import yaml

from attnlab.config import chosen, validate
from attnlab.errors import AttnlabError
from attnlab.plan import plan

REPO = Path(__file__).resolve().parents[1]


def profile(tmp_path: Path, doc: dict, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def read(path: Path) -> dict:
    return validate(chosen({"profile": str(path)}, []))


def variant(tmp_path, runs: dict, over: str = "smoke") -> dict:
    return read(profile(tmp_path, {"extends": over, "ladder": runs}))


def test_a_variant_is_the_run_it_is_like_with_its_own_settings_laid_over(tmp_path):
    cfg = variant(tmp_path, {"L9-mlp2": {"like": "L9", "mlp_ratio": 2}})
    l9, mine = cfg["ladder"]["L9"], cfg["ladder"]["L9-mlp2"]
    assert mine == {**l9, "mlp_ratio": 2, "like": "L9"}
    assert cfg["profile"] == "smoke" and cfg["train"]["steps"] == read(REPO / "config" / "smoke.yaml")["train"]["steps"]


def test_a_variant_of_a_variant_follows_the_chain_and_keeps_its_nearest_like(tmp_path):
    cfg = variant(tmp_path, {"L9-mlp2": {"like": "L9", "mlp_ratio": 2}, "L9-mlp2-post": {"like": "L9-mlp2",
                                                                                         "norm": "post"}})
    assert cfg["ladder"]["L9-mlp2-post"] == {**cfg["ladder"]["L9"], "mlp_ratio": 2, "norm": "post",
                                             "like": "L9-mlp2"}


def test_a_variant_in_a_section_with_a_base_copies_its_run_as_resolved(tmp_path):
    """smoke's scaling has a base (20 steps) that E3-block-raw overrides (40): the variant starts from 40."""
    cfg = read(profile(tmp_path, {"extends": "smoke", "scaling": {"E3-mine": {"like": "E3-block-raw",
                                                                               "mlp_ratio": 2}}}))
    assert cfg["scaling"]["E3-mine"]["train"] == cfg["scaling"]["E3-block-raw"]["train"]
    assert cfg["scaling"]["E3-mine"]["train"]["steps"] == 40


@pytest.mark.parametrize("runs, says", [
    ({"L9-x": {"like": "L99"}}, "config error at 'ladder.L9-x.like': no run of this profile is called 'L99'"),
    ({"L9-x": {"like": "L9-x"}}, "config error at 'ladder.L9-x.like': its likes run in a circle (L9-x → L9-x)"),
    ({"A": {"like": "B"}, "B": {"like": "A"}}, "its likes run in a circle (A → B → A)"),
    ({"L9-x": {"like": 9}}, "no run of this profile is called 9"),
])
def test_an_unknown_or_circular_like_is_one_line_naming_the_run_and_the_key(tmp_path, runs, says):
    with pytest.raises(AttnlabError) as err:
        variant(tmp_path, runs)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_variant_adds_its_own_jobs_and_no_other_job_changes(tmp_path):
    smoke = {job.name: job.settings for job in plan(read(REPO / "config" / "smoke.yaml"))}
    mine = {job.name: job.settings for job in plan(variant(tmp_path, {"L9-mlp2": {"like": "L9", "mlp_ratio": 2}}))}
    assert sorted(set(mine) - set(smoke)) == ["ladder/L9-mlp2/seed1337"]
    assert {name: mine[name] for name in smoke} == smoke
    assert json.loads(mine["ladder/L9-mlp2/seed1337"])["ladder"]["L9-mlp2"]["mlp_ratio"] == 2


def test_a_variant_trains_at_every_seed_of_the_profile(tmp_path):
    cfg = read(profile(tmp_path, {"extends": "smoke", "seeds": [1337, 1338, 1339],
                                  "ladder": {"L9-mlp2": {"like": "L9", "mlp_ratio": 2}}}))
    assert [job.seed for job in plan(cfg) if job.run == "L9-mlp2"] == [1337, 1338, 1339]


def test_a_profile_may_extend_a_profile_file_beside_it(tmp_path):
    profile(tmp_path, {"extends": "smoke", "train": {"steps": 12}}, "short.yaml")
    cfg = read(profile(tmp_path, {"extends": "short.yaml", "ladder": {"L9-mlp2": {"like": "L9", "mlp_ratio": 2}}}))
    assert cfg["train"]["steps"] == 12 and cfg["ladder"]["L9-mlp2"]["mlp_ratio"] == 2


@pytest.mark.parametrize("extends, says", [
    ("nosuch", "config error at 'extends' in {mine}: profile 'nosuch' not found"),
    ("gone.yaml", "config error at 'extends' in {mine}: profile 'gone.yaml' not found ({tmp}/gone.yaml)"),
    ("mine.yaml", "the profiles extend each other in a circle ({mine} → {mine})"),
    (7, "config error at 'extends' in {mine}: give a profile's name"),
])
def test_a_missing_or_circular_extends_is_one_line_naming_the_file(tmp_path, extends, says):
    mine = profile(tmp_path, {"extends": extends})
    with pytest.raises(AttnlabError) as err:
        read(mine)
    assert says.format(mine=mine, tmp=tmp_path) in str(err.value) and "\n" not in str(err.value)


def test_a_missing_profile_file_is_named(tmp_path):
    with pytest.raises(AttnlabError, match=f"config file not found: {tmp_path}/absent.yaml"):
        read(tmp_path / "absent.yaml")
