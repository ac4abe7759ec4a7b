"""Every claim whose verdict at the largest published budget differs from the version of record's, as a Markdown
table: the record's verdict and value beside the larger budget's, each part with its 95 % interval, and the
versions and seeds pooled there. The same reading the dashboard shows (sitedata.SiteData.larger), for a closing
note or a review; the sources' claims first, then ours, counted apart. Then the run time each version of the
larger budget took, read from its run files' provenance (attnlab.eta.spent).

    python tools/budget-changes.py               # the version of record in results/LATEST
    python tools/budget-changes.py --all         # every claim measured at the larger budget, changed or not
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from attnlab.claims.budget import rank
from attnlab.eta import spent
from attnlab.sitedata import SiteData
from attnlab.crate import published_only
from attnlab.versions import latest

REPO = Path(__file__).resolve().parents[1]


def parts(verdict) -> str:
    """'part: value [lo, hi]; …' for a verdict's numeric parts (value alone where it has no error)."""
    out = []
    for name, p in verdict.parts.items():
        if not isinstance(p.value, (int, float)) or isinstance(p.value, bool):
            continue
        bounds = p.interval if p.interval and all(map(math.isfinite, p.interval)) else None
        shown = f"{p.value:.3f}" + (f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else "")
        out.append(f"{name}: {shown}" if name else shown)
    return "; ".join(out) or "–"


def main(argv=None) -> None:
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--all", action="store_true", help="every claim measured at the larger budget, not only changes")
    args = a.parse_args(argv)
    record = latest(REPO)
    site = SiteData.load(REPO / "results" / record, None)
    rows = {False: [], True: []}
    for claim_id, x in site.larger().items():
        if x.verdict is None or (x.verdict == x.record_verdict and not args.all):
            continue
        old, new = site.verdicts_of(record)[claim_id], site.verdicts_of(x.manifest["version"])[claim_id]
        rows[old.claim.ours].append(
            f"| {claim_id} | {x.record_verdict} | {parts(old)} | **{x.verdict}** | {parts(new)} | "
            f"{new.settle or '–'} | {x.pooled or x.manifest['version']} |")
    head = (f"| claim | {site.profile} (record) | value | at the larger budget | value | settle | versions |\n"
            "| --- | --- | --- | --- | --- | --- | --- |")
    for ours, title in ((False, "The sources' claims"), (True, "Ours (claims the sources never make)")):
        print(f"### {title}: {len(rows[ours])}\n\n{head}\n" + "\n".join(rows[ours]) + "\n")
    print(run_time(site))


def run_time(site) -> str:
    """The run time of every version of a larger budget than the record's, by experiment, and their sum."""
    base = rank(next(m for m in site.versions() if m["version"] == site.latest()))
    lines, total = [], 0.0
    for m in reversed(site.versions()):  # oldest first
        if (r := rank(m)) is not None and r > base:
            s = spent(REPO / "results" / m["version"])
            total += sum(s.run.values())
            lines.append(f"| {m['version']} | {', '.join(s.run)} | {sum(s.run.values()):,.0f} s | `{command(m)}` |")
    return (f"### Run time at the larger budget: {total:,.0f} s ({total / 3600:.1f} CPU-hours)\n\n"
            "| version | experiments | run time | made by (at its commit) |\n| --- | --- | --- | --- |\n"
            + "\n".join(lines) + "\n")


def command(manifest: dict) -> str:
    """The runner call that makes a version's runs, from its manifest: its profile, its experiments (a partial
    version's) and the settings laid over the profile (`set`), as `publish` must be given them too."""
    only = " --only " + " ".join(published_only(manifest)) if published_only(manifest) else ""
    laid = " ".join(f"'{k}={json.dumps(v, separators=(',', ':'))}'" for k, v in (manifest.get("set") or {}).items())
    return f"python -m attnlab.runner {manifest['profile']}{only}" + (f" --set {laid}" if laid else "")


if __name__ == "__main__":
    main()
