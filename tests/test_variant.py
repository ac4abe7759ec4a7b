"""A reader's own variant, declared in a profile file of their own (no code edited): `extends` lays the file over a
profile, `like: NAME` starts a run from another's settings, and every other job keeps the settings it had."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from attnlab import registry
from attnlab.config import chosen, validate
from attnlab.errors import AttnlabError
from attnlab.plan import plan
from attnlab.report.pages import compare
from attnlab.experiments.ladder import derive, page as ladder
from attnlab.results import Spread, row_order

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


# ------------------------------------------------------------------ the ladder page's reading of a variant

L9 = Spread({1337: 50.0, 1338: 51.0, 1339: 49.5})


@pytest.mark.parametrize("shift, says", [
    ([-2.0, -2.1, -1.9], "lower than L9's (better)"),
    ([2.0, 2.1, 1.9], "higher than L9's (worse)"),
    ([1.0, -1.0, 0.5], "within the noise"),
])
def test_a_variant_is_read_against_l9_on_both_sides_of_it(shift, says):
    mine = Spread({seed: v + d for (seed, v), d in zip(L9.by_seed.items(), shift)})
    text = ladder.variant_reading("L9-mlp2", "L9 with mlp_ratio 2", "L9", mine, L9)
    mean = sum(shift) / 3
    assert text.startswith(f"**L9-mlp2** (L9 with mlp_ratio 2): validation perplexity {mine.mean:.2f} against "
                           f"L9's {L9.mean:.2f}, paired at each of 3 seeds (1337, 1338, 1339): a difference of "
                           f"{mean:+.2f} ± ")
    assert text.endswith(says + ".")


def test_a_variant_with_no_seed_in_common_has_no_error_to_judge_by():
    text = ladder.variant_reading("L9-x", "L9 with norm post", "L9", Spread({7: 40.0}), L9)
    assert "paired with no seed in common" in text and text.endswith("no error to judge it by.")


def test_a_variant_is_described_by_what_it_changes_from_the_run_it_is_like(tmp_path):
    declared = variant(tmp_path, {"L9-mlp2": {"like": "L9", "mlp_ratio": 2}, "L9-same": {"like": "L9"},
                                  "L9-post": {"like": "L9-mlp2", "norm": "post"},
                                  "mine": {"mixer": "head"}})["ladder"]
    assert ladder.described("L9-mlp2", declared) == "L9 with mlp_ratio 2"
    assert ladder.described("L9-post", declared) == "L9-mlp2 with norm post"
    assert ladder.described("L9-same", declared) == "as L9, nothing changed"
    assert ladder.described("mine", declared) == "a run of this profile's own"
    assert list(derive.variants(declared)) == ["L9-mlp2", "L9-same", "L9-post", "mine"]


def test_a_variant_is_read_against_its_like_where_that_ran_else_l9():
    declared = {"L9": {}, "L8": {}, "L8-x": {"like": "L8"}, "L7-x": {"like": "L7"}, "mine": {}}
    ran = {"L9": L9, "L8": L9, "L7": None}
    assert derive.reference_of("L8-x", declared, ran) == "L8"
    assert derive.reference_of("L7-x", declared, ran) == "L9"
    assert derive.reference_of("mine", declared, ran) == "L9"
    assert derive.reference_of("mine", declared, {"L9": None}) is None


def test_the_variants_part_reads_each_variant_that_ran_and_leaves_the_chapters_rungs_to_the_steps_table():
    table = pd.DataFrame([{"row": "L9", "description": "one block", "val_spread": L9},
                          {"row": "L9-mlp2", "description": "L9 with mlp_ratio 2",
                           "val_spread": Spread({s: v + 3 for s, v in L9.by_seed.items()})},
                          {"row": "L9-later", "description": "L9 with norm post", "val_spread": None}])
    part = ladder.variants_part(table, {"L9": {}, "L9-mlp2": {"like": "L9"}, "L9-later": {"like": "L9"}})
    assert part.count("\n- ") == 1 and "**L9-mlp2** (L9 with mlp_ratio 2)" in part and "L9-later" not in part
    assert ladder.variants_part(table.iloc[:1], {"L9": {}}) == ""
    assert ladder.steps_table(table.iloc[:2]) == ""  # one chapter rung ran: no step to read


@pytest.mark.parametrize("shift, says", [([-2.0, -2.1, -1.9], "lower here"), ([2.0, 2.1, 1.9], "higher here"),
                                         ([1.0, -1.0, 0.5], "within the noise")])
def test_the_compare_page_reads_a_variant_against_the_run_it_is_like_there(shift, says):
    mine = Spread({seed: v + d for (seed, v), d in zip(L9.by_seed.items(), shift)})
    text = compare.variant_lines([("L9-mlp2", "L9", mine, L9)])
    assert (f"<code>L9-mlp2</code> here against <code>L9</code> there (validation perplexity): {mine.mean:.2f} "
            f"against {L9.mean:.2f}, a difference of {sum(shift) / 3:+.2f} ± ") in text
    assert text.count("<li>") == 1 and f": {says}</li>" in text


def test_the_compare_page_says_where_the_run_a_variant_is_like_did_not_run_there():
    assert "(validation perplexity): not run there</li>" in compare.variant_lines([("x", "L7", L9, None)])
    assert compare.variant_lines([]) == ""


def test_a_variant_is_set_against_the_run_it_is_like_only_where_it_ran_here():
    from types import SimpleNamespace

    from attnlab.comparison import variants

    cfg = {"ladder": {"L9": {}, "L9-mlp2": {"like": "L9"}, "L9-later": {"like": "L9"}}}
    here = SimpleNamespace(spread=lambda run, key: {"L9-mlp2": L9}.get(run) if key == "val_ppl" else None)
    assert variants(cfg, here, {"L9": L9}.get) == [("L9-mlp2", "L9", L9, L9)]  # L9-later did not run here
    assert variants(cfg, here, {}.get) == [("L9-mlp2", "L9", L9, None)]
    assert variants({"ladder": {"L9": {}}}, here, {"L9": L9}.get) == []


def test_the_shared_tables_module_names_no_experiment():
    """The ladder's rows and tables live in its page module; report/tables.py holds what every page shares."""
    source = (REPO / "src" / "attnlab" / "report" / "tables.py").read_text()
    named = [e.name for e in registry.load() if re.search(rf"(?<![\w.]){re.escape(e.name)}(?!\w)", source)]
    assert not named, f"report/tables.py names {named}"


def test_rows_come_in_the_order_given_then_alphabetically():
    assert row_order({"b", "a", "L9", "L1", "x"}, ["L1", "L9", "gone", "x"]) == ["L1", "L9", "x", "a", "b"]
    assert ladder.row_order({"B2", "L9-mlp2", "L1", "zz"}, {"L9-mlp2": {}}) == ["L1", "B2", "L9-mlp2", "zz"]


def test_a_configfile_that_extends_is_refused_in_one_line_naming_the_way_that_works(tmp_path):
    mine = profile(tmp_path, {"extends": "smoke"})
    with pytest.raises(AttnlabError, match=f"config file {mine} extends another profile, which --configfile cannot "
                                           f"lay it over: give it as --config profile={mine}"):
        chosen({"extends": "smoke"}, [str(mine)])
