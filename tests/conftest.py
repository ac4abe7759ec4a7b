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
