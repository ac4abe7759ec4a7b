"""tools/campaign.py: the jobs a CPU campaign finished survive a machine that starts afresh (its carry on main)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from attnlab.config import chosen, runs_of
from attnlab.plan import with_needs
from attnlab.runner import LEDGER as LEDGER_OF
from helpers import REPO

spec = importlib.util.spec_from_file_location("campaign", REPO / "tools" / "campaign.py")
campaign = importlib.util.module_from_spec(spec)
spec.loader.exec_module(campaign)


def run(results) -> str:
    proc = subprocess.run([sys.executable, "-m", "attnlab.runner", "smoke", "--only", "params", "--results",
                           str(results), "--jobs", "1"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_a_finished_job_carried_and_put_back_on_a_fresh_machine_is_not_run_again(tmp_path):
    first, carry, fresh = tmp_path / "first", tmp_path / "carry", tmp_path / "fresh"
    assert "0 already done" in run(first)
    copied = campaign.save(first, carry)
    assert sorted(copied) == [".runner/params.json", "logs/params.log", "params/result.json"]  # no lock
    assert campaign.save(first, carry) == []  # saved again: nothing new to copy
    assert campaign.restore(carry, fresh) == sorted(copied)
    result = (fresh / "params" / "result.json").read_bytes()
    assert "1 jobs, 1 already done" in run(fresh)
    assert (fresh / "params" / "result.json").read_bytes() == result  # kept, not rewritten


def test_only_stamped_jobs_are_carried_without_checkpoints_and_nothing_is_put_back_over_a_file(tmp_path):
    results, carry = tmp_path / "results", tmp_path / "carry"
    for job in ("depth/E4-pre/seed1337", "depth/E4-post/seed1337"):
        for name in ("metrics.json", "curve.csv", "ckpt.pt", ".attnlab.lock"):
            (results / job).mkdir(parents=True, exist_ok=True)
            (results / job / name).write_text(f"{job} {name}")
    (results / ".runner" / "depth" / "E4-pre").mkdir(parents=True)
    (results / ".runner" / "depth" / "E4-pre" / "seed1337.json").write_text("{}")  # finished; E4-post is not
    (results / ".runner" / "prepare_data.json").write_text("{}")
    (results / "data").mkdir()
    (results / "data" / "train.bin").write_text("tokens")
    assert campaign.finished(results) == ["depth/E4-pre/seed1337"]
    assert sorted(campaign.save(results, carry)) == [".runner/depth/E4-pre/seed1337.json",
                                                     "depth/E4-pre/seed1337/curve.csv",
                                                     "depth/E4-pre/seed1337/metrics.json"]
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "depth" / "E4-pre" / "seed1337").mkdir(parents=True)
    (elsewhere / "depth" / "E4-pre" / "seed1337" / "metrics.json").write_text("newer")
    assert campaign.restore(carry, elsewhere) == [".runner/depth/E4-pre/seed1337.json",
                                                  "depth/E4-pre/seed1337/curve.csv"]
    assert (elsewhere / "depth" / "E4-pre" / "seed1337" / "metrics.json").read_text() == "newer"


def manifest(root, name, commit, run_files, profile="chapter"):
    """A published version's manifest under root/results/, as `publish` writes it (its run files listed)."""
    name = f"2026-12-01-{name}"
    (root / "results" / name).mkdir(parents=True)
    (root / "results" / name / "manifest.json").write_text(json.dumps(
        {"version": name, "profile": profile, "commit": commit, "hardware": "cpu",
         "published": "2026-12-01T00:00:00+00:00", "runs": {"run_files": run_files}}))


def test_a_folder_whose_runs_a_version_on_main_holds_is_not_queued_again(tmp_path):
    """A machine that starts afresh has no worktree and no carry for published work: the queue must skip it."""
    c = campaign.COMMIT + "d3a27"
    manifest(tmp_path, "a-depth", c, [f"depth/E4-{n}/seed{s}/metrics.json" for n in ("pre", "post") for s in (1337, 1338)])
    manifest(tmp_path, "b-ladder", c, ["ladder/L1/seed1340/metrics.json", "position/P1/seed1340/metrics.json",
                                       "winograd/result.json"])
    manifest(tmp_path, "other-commit", "0123456789ab", ["depth/E4-pre/seed1339/metrics.json"])
    manifest(tmp_path, "quick", c, ["depth/E4-pre/seed1340/metrics.json"], profile="quick")
    assert campaign.published(["depth"], [1337, 1338], tmp_path) == "2026-12-01-a-depth"
    assert campaign.published(["ladder", "position"], [1340], tmp_path) == "2026-12-01-b-ladder"
    assert campaign.published(["depth"], [1337, 1339], tmp_path) is None  # 1339 only at another commit
    assert campaign.published(["depth"], [1340], tmp_path) is None  # only at another budget
    assert campaign.published(["ladder", "position"], [1341], tmp_path) is None
    assert campaign.published(["depth.E4-pre", "depth.E4-post"], [1338], tmp_path) == "2026-12-01-a-depth"
    assert campaign.published(["depth.E4-pre-warm"], [1337], tmp_path) is None  # a run no version holds


def test_an_analysis_at_a_second_look_is_held_at_the_seeds_its_versions_profile_gave_it(tmp_path):
    """An analysis states one file for all its seeds: a version holds it at the seeds its config.yaml gives it,
    at the folder's profile and commit only."""
    import yaml

    record = REPO / "results" / "2026-12-02-quick-cpu-4303899"
    seeds = [1337, 1338, 1339, 1340]
    manifest(tmp_path, "induction", campaign.RECORD + "5f0a1", ["induction/result.json"], profile="quick")
    config = yaml.safe_load((record / "config.yaml").read_text())
    (tmp_path / "results" / "2026-12-01-induction" / "config.yaml").write_text(yaml.safe_dump({**config, "seeds": seeds}))
    assert campaign.published(["induction"], seeds, tmp_path, "quick", campaign.RECORD) == "2026-12-01-induction"
    assert campaign.published(["induction"], [*seeds, 1341], tmp_path, "quick", campaign.RECORD) is None
    assert campaign.published(["induction"], seeds, tmp_path, "chapter", campaign.RECORD) is None
    assert campaign.published(["induction"], seeds, tmp_path, "quick", campaign.COMMIT) is None
    quick = [f for f in campaign.QUEUE if f.profile == "quick"]
    assert quick and all(f.commit == campaign.RECORD for f in quick)
    assert campaign.tree_of(campaign.RECORD) == campaign.WORKTREE.with_name(f"campaign-{campaign.RECORD}")


def test_a_folder_is_complete_once_the_runner_wrote_its_verdicts_after_its_last_job(tmp_path):
    stamp = tmp_path / ".runner" / "ladder" / "L1" / "seed1340.json"
    stamp.parent.mkdir(parents=True)
    stamp.write_text("{}")
    assert not campaign.complete(tmp_path)  # jobs finished, no verdicts yet
    (tmp_path / "claims.csv").write_text("claim_id\n")
    os.utime(stamp, (1_000, 1_000))
    assert campaign.complete(tmp_path)
    os.utime(stamp, (4_000_000_000, 4_000_000_000))  # a job finished after the verdicts: a later runner call's
    assert not campaign.complete(tmp_path)
    assert not campaign.complete(tmp_path / "nothing-here")


def stamp(ledger, job):
    (ledger / f"{job}.json").parent.mkdir(parents=True, exist_ok=True)
    (ledger / f"{job}.json").write_text("{}")


def test_status_counts_the_jobs_left_here_and_in_the_carry_and_the_queues_expected_time(tmp_path, monkeypatch):
    from attnlab import eta

    tree, carry = tmp_path / "tree", tmp_path / "carry"
    stamp(tree / "results" / "a" / ".runner", "depth/E4-pre/seed1340")  # finished in the worktree
    stamp(carry / "a" / ".runner", "depth/E4-post/seed1340")  # finished on another machine, carried
    stamp(tree / "results" / "a" / ".runner", "prepare_data")
    runs = runs_of(chosen({"profile": "chapter"}, []), "depth")
    left = campaign.to_run("a", ["depth"], [1340, 1341], tree, carry)
    assert sorted(job.name for job in left) == sorted({f"depth/{r}/seed{s}" for r in runs for s in (1340, 1341)} - {
        "depth/E4-pre/seed1340", "depth/E4-post/seed1340"})  # nor prepare_data: it reruns in seconds

    monkeypatch.setattr(eta, "here", lambda: 1.0)
    depth = REPO / "results" / "2026-12-06-chapter-cpu-680862e-only-depth"  # E4 at the chapter's budget
    both = {"a": left, "b": campaign.to_run("b", ["depth"], [1342], tree, carry)}
    said = campaign.expected(both, 2, [depth])
    walls = [eta.estimate(todo, [depth], 1.0, 2).wall for todo in both.values()]
    assert said[0].startswith(f"campaign: a: expected time of the {len(left)} jobs left, from the run times "
                              f"recorded in {depth.name}")
    assert f"campaign: b: expected time of the {len(runs)} jobs left" in "\n".join(said)
    assert 0 < walls[1] < walls[0]
    assert said[-1] == f"campaign: the queue's wall time left: about {eta.duration(sum(walls))}, the folders one " \
                       "after another"


def test_a_folder_of_some_runs_trains_them_alone_with_the_runners_own_stamps(tmp_path):
    """RUNS narrows the campaign commit's runner (which takes experiments only) to some runs and what they need,
    with its own launches and ledger stamps: the folder is then complete, and today's runner, given those runs by
    name (`--only depth.E4-post`), counts every job of it done."""
    results = tmp_path / "r"
    args = ["smoke", "--only", "depth", "--results", str(results), "--jobs", "1"]
    proc = subprocess.run([sys.executable, "-c", campaign.RUNS, json.dumps(["E4-post"]), *args], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert campaign.finished(results) == ["depth/E4-post/seed1337"]  # and prepare_data, which it needs
    assert (results / LEDGER_OF / "prepare_data.json").is_file()
    assert [p.parts[-3] for p in results.glob("depth/*/seed1337/metrics.json")] == ["E4-post"]
    assert campaign.complete(results, [])

    again = subprocess.run([sys.executable, "-m", "attnlab.runner", "smoke", "--only", "depth.E4-post", "--results",
                            str(results), "--jobs", "1", "-n"], cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "expected time of the 0 jobs to run (2 kept from an earlier run)" in again.stdout
    left = campaign.to_run("r", ["depth.E4-post"], [1337], tmp_path, tmp_path / "carry")
    assert [job.name for job in left] == ["depth/E4-post/seed1337"]  # the chapter's plan: not stamped there


def test_the_queue_names_runs_its_profiles_have():
    for folder in campaign.QUEUE:
        jobs = with_needs(chosen({"profile": folder.profile}, []), folder.experiments)  # an unknown run is refused here
        named = {name.partition(".")[2] for name in folder.experiments if "." in name}
        assert not named or {job.run for job in jobs if job.run} == named, folder


def test_a_version_never_lands_into_or_over_one_of_its_name(tmp_path):
    """Two versions of one commit, day and settings' names once had one name: the second moved into the first's
    folder. It stays where it was published, with a line saying why."""
    import pytest

    made, main = tmp_path / "tree" / "2026-12-06-v", tmp_path / "main"
    made.mkdir(parents=True)
    main.mkdir()
    (made / "manifest.json").write_text("{}")
    assert campaign.land(made, main) == main / "2026-12-06-v"
    again = tmp_path / "tree" / "2026-12-06-v"
    again.mkdir()
    with pytest.raises(SystemExit, match="exists already"):
        campaign.land(again, main)
    assert again.is_dir() and sorted(p.name for p in (main / "2026-12-06-v").iterdir()) == ["manifest.json"]


YIELD = """import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("campaign", sys.argv[1])
campaign = importlib.util.module_from_spec(spec)
spec.loader.exec_module(campaign)
said = campaign.yield_cores(*map(campaign.Path, sys.argv[2:]))
print(json.dumps([said, open("/proc/self/autogroup").read()]))
"""


def yielded(*args, new_session: bool) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", YIELD, str(REPO / "tools" / "campaign.py"), *map(str, args)],
                          capture_output=True, text=True, start_new_session=new_session)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tuple(json.loads(proc.stdout))


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="no scheduling groups on this kernel")
def test_a_campaign_in_a_session_of_its_own_lowers_its_group_and_one_in_a_terminal_leaves_the_terminals_alone(tmp_path):
    said, group = yielded(new_session=True)  # as `setsid tools/campaign.py start` runs it
    assert said.startswith("its scheduling group at niceness 19") and group.rstrip().endswith("nice 19")
    ours = open("/proc/self/autogroup").read()
    said, group = yielded(new_session=False)  # inside the session that runs the tests: theirs stays as it is
    assert said.startswith("under nice only: started inside a terminal's session") and group == ours
    said, group = yielded(tmp_path / "missing" / "autogroup", new_session=True)
    assert said.startswith("under nice only: its scheduling group could not be lowered") and "missing" in said
    assert not group.rstrip().endswith("nice 19")
