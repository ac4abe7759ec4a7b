"""Give every committed version its RO-Crate, once: the Snakefile of the runs' commit (from git) and
ro-crate-metadata.json written from the version's manifest and files, as `attnlab publish` writes them since.

    python tools/crate-versions.py        # each version under results/ that lacks a crate

A version that has its crate is left alone (published versions are never rewritten); rerunning changes nothing.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from attnlab.crate import CRATE, WORKFLOW, check_crate, write_crate
from attnlab.versions import read_manifest, versions

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    for m in versions(REPO):
        folder = REPO / "results" / m["version"]
        if (folder / CRATE).is_file():
            continue
        if not (folder / WORKFLOW).is_file():  # as it stood at the commit the runs came from
            text = subprocess.run(["git", "show", f"{m['commit']}:{WORKFLOW}"], cwd=REPO, capture_output=True,
                                  check=True).stdout
            (folder / WORKFLOW).write_bytes(text)
        write_crate(folder, read_manifest(folder))
        check_crate(folder)
        print(f"wrote {folder / CRATE}")


if __name__ == "__main__":
    main()
