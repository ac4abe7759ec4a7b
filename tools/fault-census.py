"""How the project answers bad input, damage and faults, counted case by case from the tests that try each.

    python tools/fault-census.py                  # runs the cases' tests (about 15 min on 2 cores), then counts
    python tools/fault-census.py --junit run.xml  # counts from a finished pytest run (--junitxml run.xml)

Each case is one parametrised test: a malformed profile (tests/helpers.py BAD, through `attnlab check` and
through the DAG), a damaged published version or run file (DAMAGE, through `publish` and `versions`), or a fault
(kill -9, a damaged checkpoint, a full disk, a second writer, divergence). The tests assert what "clean" means:
one line naming the problem, no traceback, no job started and nothing computed lost (input), nothing published
or built (damage), a resumed or recorded run (faults). A failed case is listed with its first line.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GROUPS = {  # group -> (test file, the test functions whose cases it counts)
    "malformed inputs": {
        "tests/test_reliability.py": ["test_attnlab_check_names_the_setting_in_one_line",
                                      "test_a_broken_profile_file_is_named_with_its_line",
                                      "test_a_corpus_that_does_not_match_its_checksum_is_refused",
                                      "test_cuda_on_a_machine_without_it_is_a_config_error",
                                      "test_a_seed_that_is_not_the_first_of_the_seeds_is_named",
                                      "test_a_results_path_through_a_file_is_one_line",
                                      "test_an_unwritable_results_folder_is_one_line",
                                      "test_attnlab_check_refuses_a_results_folder_that_is_a_file",
                                      "test_a_size_that_cannot_fit_says_its_estimate_and_the_memory"],
        "tests/test_workflow.py": ["test_bad_input_stops_the_dag_in_one_line_before_any_job",
                                   "test_a_bad_registry_stops_the_dag_in_one_line_before_any_job"],
    },
    "publish and version damage": {
        "tests/test_versions.py": ["test_a_damaged_file_is_refused_in_one_line_naming_it",
                                   "test_a_damaged_run_file_is_named_wherever_results_are_read"],
        "tests/test_published.py": ["test_every_file_of_a_version_is_whole"],
    },
    "faults": {
        "tests/test_reliability.py": ["test_a_damaged_checkpoint_is_set_aside_and_the_run_starts_afresh",
                                      "test_a_diverging_run_is_recorded_with_the_step_the_curve_gives_it",
                                      "test_a_diverged_rerun_leaves_no_weights_behind",
                                      "test_a_run_that_diverges_after_a_checkpoint_leaves_none",
                                      "test_a_checkpoint_lends_its_weights_only_to_its_own_finished_run",
                                      "test_up_training_from_a_diverged_run_is_recorded_as_diverged",
                                      "test_a_second_writer_of_a_run_folder_is_refused_in_one_line_and_a_kill_leaves_no_lock",
                                      "test_a_diverged_run_reruns_to_the_same_record",
                                      "test_a_final_loss_past_exps_range_is_diverged_not_an_overflow",
                                      "test_the_induction_analysis_records_a_diverged_shakespeare_model",
                                      "test_a_claim_that_reads_a_diverged_models_record_is_not_run_naming_it",
                                      "test_a_refused_run_file_is_one_line_naming_it_and_the_last_good_one_stays",
                                      "test_a_checkpoint_torch_cannot_write_is_one_line_naming_it",
                                      "test_a_full_disk_mid_run_names_the_checkpoint",
                                      "test_a_folder_made_read_only_mid_run_names_the_file",
                                      "test_a_log_that_cannot_be_written_is_one_line",
                                      "test_a_job_failure_reaches_the_terminal_as_one_line"],
        "tests/test_runner.py": ["test_a_runner_killed_mid_run_takes_its_jobs_with_it_and_a_rerun_completes_the_ladder",
                                 "test_a_results_folder_that_cannot_take_the_run_files_is_the_snakefiles_one_line"],
        "tests/test_recovery.py": ["test_a_snakemake_killed_mid_run_resumes_as_the_readme_says"],
        "tests/test_divergence.py": ["test_a_diverged_rerun_is_shown_as_diverged_where_its_old_weights_were_read",
                                     "test_the_smoke_dag_at_lr_100_everywhere_builds_its_site"],
    },
}


def run_tests(junit: Path) -> None:
    ids = [f"{file}::{name}" for files in GROUPS.values() for file, names in files.items() for name in names]
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *ids],
                   cwd=REPO)


def census(junit: Path) -> dict:
    cases = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        outcome = "skipped" if case.find("skipped") is not None else "failed" if failed is not None else "clean"
        why = (failed.get("message") or "").splitlines()[0][:160] if failed is not None else ""
        cases[(case.get("classname", "").split(".")[-1], name)] = (outcome, why)
    out = {}
    for group, files in GROUPS.items():
        rows = [(f"{Path(file).stem}::{name}", *outcome) for file, names in files.items() for (module, name), outcome
                in cases.items() if module == Path(file).stem and name.split("[")[0] in names]
        out[group] = {"cases": len(rows), **{k: sum(r[1] == k for r in rows) for k in ("clean", "failed", "skipped")},
                      "not clean": [f"{r[0]}: {r[2]}" for r in rows if r[1] != "clean"]}
        missing = {name for names in files.values() for name in names} - {r[0].split("::")[1].split("[")[0] for r in rows}
        if missing:
            out[group]["tests not found"] = sorted(missing)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--junit", type=Path, help="count from this pytest --junitxml file instead of running the tests")
    ap.add_argument("--out", type=Path, help="also write the counts here as JSON")
    a = ap.parse_args()
    junit = a.junit
    if junit is None:
        junit = Path(tempfile.mkdtemp()) / "census.xml"
        run_tests(junit)
    counts = census(junit)
    for group, c in counts.items():
        print(f"{group}: {c['cases']} cases, {c['clean']} clean (one line, no traceback, nothing lost), "
              f"{c['failed']} not, {c['skipped']} skipped")
        for line in c["not clean"] + [f"test not found: {t}" for t in c.get("tests not found", [])]:
            print(f"  {line}")
    if a.out:
        a.out.write_text(json.dumps(counts, indent=2) + "\n")
    return 0 if all(c["cases"] and c["clean"] == c["cases"] and not c.get("tests not found")
                    for c in counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
