import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


def _corpus() -> Path:
    env = os.environ.get("ATTNLAB_CORPUS")
    return Path(env) if env else REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"


@pytest.fixture(scope="session")
def corpus_path() -> Path:
    path = _corpus()
    if not path.is_file():
        pytest.fail(f"tiny Shakespeare copy not found at {path}; set ATTNLAB_CORPUS")
    return path


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# The files that take longest, in the order two workers should start them (README: `--dist loadfile
# --no-loadscope-reorder` hands out whole files in this order, each to the first worker free). The first runs the
# shared smoke run; the next ones need none at first, so the other worker keeps busy while it is made. The rest
# follow in name order and fill in at the end, so that the two workers finish together.
FIRST = ["test_divergence.py", "test_slurm.py", "test_variant_site.py", "test_recovery.py", "test_workflow.py",
         "test_reruns.py", "test_report.py", "test_every_version.py", "test_phone.py", "test_history.py",
         "test_runner.py", "test_charts.py", "test_published.py", "test_campaign.py"]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: a file's tests keep their order


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, corpus_path) -> Path:
    """The finished smoke run, made once per session for all workers (see dag.finished_smoke): never change it."""
    from dag import finished_smoke

    root = tmp_path_factory.getbasetemp()
    shared = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root  # a worker's basetemp is one of many
    return finished_smoke(shared, corpus_path)


@pytest.fixture(scope="module")
def smoke(smoke_run, tmp_path_factory) -> Path:
    """A copy of the finished smoke run (results, Snakemake's records and git history) that this file's tests may
    change: an edit one test leaves is seen by the tests after it in the file, never by another file."""
    from dag import clone

    return clone(smoke_run, tmp_path_factory.mktemp("smoke") / "work")
