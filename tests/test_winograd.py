"""E8's generated task and its measurements: the held-out split, the scored position, the maps."""
import copy
import json

import pytest
import torch

from attnlab.config import load
from attnlab.errors import AttnlabError
from attnlab.experiments.winograd import producer as wg
from attnlab.experiments.winograd.settings import check_section as check_winograd
from attnlab.nn.model import LM
from helpers import REPO


@pytest.fixture(scope="module")
def task():
    return load(REPO / "config" / "smoke.yaml")["winograd"]


def test_the_closed_held_out_set_holds_only_reversed_trained_pairs(task):
    trained, held = wg.split_pairs(task, "closed", torch.Generator().manual_seed(0))
    assert held and set(held).isdisjoint(trained)
    assert all((y, x) in trained for x, y in held), "a held-out pair's reverse order was trained"
    assert len(trained) + len(held) == len(task["nouns"]) * (len(task["nouns"]) - 1), "every ordered pair is used"
    assert all(x in task["nouns"] and y in task["nouns"] and x != y for x, y in trained)


def test_the_cheating_version_pairs_an_animal_with_a_place_and_holds_out_unseen_pairs(task):
    trained, held = wg.split_pairs(task, "cheat", torch.Generator().manual_seed(0))
    assert held and set(held).isdisjoint(trained)
    assert all(x in task["animals"] and y in task["places"] for x, y in trained + held)


def test_the_adjective_decides_the_referent_and_the_scored_position_precedes_it(task):
    vocab = wg.vocabulary(task)
    words, ref = wg.sentence(task, "dog", "river", "tired")
    assert ref == "dog" and wg.sentence(task, "dog", "river", "wet")[1] == "river"
    data = wg.encode(task, [("dog", "river")], vocab)
    assert len(data["rows"]) == len(task["crosser"]) + len(task["crossed"])
    assert words[data["pos"] - 1 : data["pos"] + 2] == ["so", "the", "dog"]
    assert vocab[data["rows"][0, data["pos"] + 1]] == "dog" and data["ref"][0] == vocab.index("dog")
    assert data["other"][0] == vocab.index("river")


def test_every_attention_row_of_the_maps_sums_to_one(task):
    torch.manual_seed(0)
    vocab = wg.vocabulary(task)
    model = LM(wg.spec_of(task, "two_blocks", len(vocab), len(task["template"].split())))
    m = wg.maps({**task, "map": task["map"]}, model, vocab, wg.encode(task, [("animal", "street")], vocab)["pos"])
    rows = [r for s in m["sentences"].values() for r in s["blocks"]] + list(m["last_block_by_adjective"].values())
    assert len(m["sentences"]["crosser"]["blocks"]) == 2
    assert all(abs(sum(r) - 1) < 1e-5 for r in rows)
    a, b = m["sentences"]["crosser"]["blocks"], m["sentences"]["crossed"]["blocks"]
    assert m["block_difference"] == [max(abs(x - y) for x, y in zip(ra, rb)) for ra, rb in zip(a, b)]


def test_accuracy_counts_the_referent_and_the_other_noun_apart(task):
    vocab = wg.vocabulary(task)
    data = wg.encode(task, [("dog", "river")], vocab)

    class Says(torch.nn.Module):  # always answers one word at every position
        def __init__(self, word):
            super().__init__()
            self.word = vocab.index(word)

        def forward(self, idx):
            return torch.nn.functional.one_hot(torch.full(idx.shape, self.word), len(vocab)).float(), None

    dog = wg.answers(Says("dog"), data)  # right for the crossers, the other noun for the crossed
    share = len(task["crosser"]) / (len(task["crosser"]) + len(task["crossed"]))
    assert dog["accuracy"] == pytest.approx(share) and dog["other_noun"] == pytest.approx(1 - share)
    assert wg.answers(Says("street"), data)["elsewhere"] == 1.0


@pytest.mark.parametrize("change, message", [
    (dict(nouns=["dog", "cat", "dog"]), "winograd.nouns': 'dog' appears more than once"),
    (dict(nouns=["dog"]), "winograd.nouns': needs at least two nouns"),
    (dict(crossed=["wet", "tired"]), "'tired' is in both crosser and crossed"),
    (dict(template="the {x} did not cross the {y} , so the {ref} waited ."), "has no {adj} slot"),
    (dict(template="the {x} and {y} {adj} {ref} {who}"), "unknown slot {who}"),
    (dict(held_out=1.0), "winograd.held_out'"),
    (dict(map={"model": "two_blocks", "x": "unicorn", "y": "street", "crosser": "tired", "crossed": "wet"}),
     "map.x': 'unicorn' is not one of winograd.nouns"),
])
def test_bad_task_settings_are_named_in_one_line(task, change, message):
    with pytest.raises(AttnlabError, match=message.replace("{", r"\{").replace("}", r"\}")) as err:
        check_winograd({**copy.deepcopy(task), **change})
    assert "\n" not in str(err.value)


def test_the_experiment_trains_its_models_once_and_resumes(task, tmp_path):
    """The whole experiment at a tiny size: every version and model measured, maps drawn; a second run finds
    every model finished in its folder and trains nothing again."""
    cfg = load(REPO / "config" / "smoke.yaml")
    cfg["winograd"]["train"].update(steps=6, eval_every=3, ckpt_every=3)
    out = tmp_path / "winograd" / "result.json"
    r = wg.main(cfg, out)
    assert set(r["versions"]) == {"cheat", "closed"} and set(r["versions"]["closed"]["models"]) == {
        "average", "one_block", "two_blocks"}
    assert json.loads(out.read_text())["provenance"]["profile"] == "smoke"
    wg.main(cfg, out)
    resumed = {p.parent.name: json.loads(p.read_text())["resumed_from_step"] for p in out.parent.glob("*/metrics.json")}
    assert resumed == {f"{v}-{m}": 6 for v, models in wg.VERSIONS.items() for m in models}, "no step trained again"


def test_diverged_models_are_recorded_and_s9_has_nothing_to_explain(tmp_path):
    """E8 at a learning rate every model diverges on: each model (and the maps) is its Diverged record, S9 records
    that the model it explains diverged, and their claims are "not run" naming the run and the step."""
    from attnlab.experiments.explanation import producer as explanation
    from attnlab.experiments.explanation import page as explanation_page
    from attnlab.experiments.winograd import page as winograd_page
    from helpers import rendered_page, site_for

    cfg = load(REPO / "config" / "smoke.yaml")
    cfg["train"]["lr"] = 100.0
    cfg["winograd"]["train"].update(steps=6, eval_every=3, ckpt_every=3)
    r = wg.main(cfg, tmp_path / "winograd" / "result.json")
    assert {m["status"] for v in r["versions"].values() for m in v["models"].values()} == {"diverged"}
    two = r["versions"]["closed"]["models"]["two_blocks"]
    assert r["maps"] == two and two["run"] == "winograd closed-two_blocks"
    studied = r["versions"]["closed"]["models"][cfg["explanation"]["model"]]
    e = explanation.main(cfg, tmp_path / "explanation" / "result.json")
    assert (e["status"], e["run"], e["diverged_at_step"]) == ("diverged", studied["run"], studied["diverged_at_step"])
    site = site_for(tmp_path, cfg)
    notes = {v.claim.id: (v.verdict, v.note) for v in site.verdicts if v.claim.experiment in ("winograd", "explanation")}
    assert notes["C8.3"] == ("not run", f"winograd closed-two_blocks diverged at step {two['diverged_at_step']}")
    assert {verdict for verdict, _ in notes.values()} == {"not run"}
    assert all("diverged at step" in note for _, note in notes.values())
    for name, page in (("winograd", winograd_page), ("explanation", explanation_page)):
        assert "Not measured, because the run diverged: " in rendered_page(site, name, page.blocks)
