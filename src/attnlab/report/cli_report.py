"""Entry points for `python -m attnlab report ...` (wired up in attnlab.cli)."""
from __future__ import annotations

from pathlib import Path

from attnlab import config as config_mod
from attnlab.report.claims import write_claims_csv
from attnlab.report.site import build_site


def main_claims(results_dir, claims_path, out_csv) -> int:
    """Evaluate every claim against results_dir and write claims.csv; print a one-line summary."""
    table = write_claims_csv(Path(results_dir), Path(claims_path), Path(out_csv))
    counts = table["verdict"].value_counts()
    print(f"{out_csv}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return 0


def main_site(results_dir, claims_path, config_path, out_docs, out_site, strict: bool = True) -> int:
    """Render the pages into out_docs and build the static site into out_site with mkdocs --strict."""
    cfg = config_mod.load(config_path)
    yml = build_site(Path(results_dir), Path(claims_path), cfg, Path(out_docs), Path(out_site), strict=strict)
    print(f"site built into {out_site} (config {yml})")
    return 0
