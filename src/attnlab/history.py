"""One claim across every published version: its value and verdict in each, oldest commit first, and the steps.

Every version is read with today's claims (as the sites are), so a version's number is there wherever its run
files can answer the claim. A step is a version whose value moved beyond the noise (the compare page's test on
the difference: comparison.changes, NOISE_K) or whose verdict changed, since the previous version of the same
budget (claims.budget.rank: versions of other budgets stay in the table, never compared across budgets). Each
step names what separates the two versions: the commits between them that touched the claim's code (the files
that shape its experiment's runs, versions.run_shaping, with the claims' own code and file) and the settings its
jobs read that differ (versions.differences).
"""
from __future__ import annotations

import difflib
import functools
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import imports, registry, versions
from attnlab.claims.budget import rank
from attnlab.claims.design import first_look
from attnlab.claims.evaluate import evaluate
from attnlab.claims.outcome import Outcome
from attnlab.claims.registry import load_registry
from attnlab.claims.verdicts import Verdict
from attnlab.comparison import NOISE_K, changes
from attnlab.errors import AttnlabError
from attnlab.pooling import pool


@dataclass
class Step:
    """What moved between a version and the previous one of its budget, and what separates them."""
    since: str                                            # the previous version of the same budget
    moved: dict[str, dict] = field(default_factory=dict)  # part -> comparison.part_change, beyond the noise
    was: Outcome | str | None = None                      # the previous verdict, where the verdict changed
    commits: list[tuple[str, str]] | None = field(default_factory=list)  # (short hash, subject) touching the
    # code; None where git cannot list them
    settings: list = field(default_factory=list)         # versions.Difference of the experiment's jobs


@dataclass
class Row:
    manifest: dict
    verdict: Verdict
    step: Step | None = None

    @property
    def version(self) -> str:
        return self.manifest["version"]

    @property
    def seeds(self) -> int:
        return self.verdict.seed_count


def claim_of(claim_id: str):
    """The registered claim `claim_id`; one line naming the nearest ids where there is none."""
    reg = load_registry()
    ids = [c.id for c in reg.claims]
    if claim_id not in ids:
        near = difflib.get_close_matches(claim_id, ids, n=3, cutoff=0.5)
        raise AttnlabError(f"no claim {claim_id!r}" + (f"; the nearest: {', '.join(near)}" if near else
                                                       f"; claims are named like {ids[0]} (see `claims/`)"))
    return reg.by_id(claim_id)


def moved(mine: Verdict, before: Verdict) -> dict[str, dict]:
    """The parts whose value moved beyond the noise between two verdicts of one claim: not rounding, and beyond
    NOISE_K errors of the difference where it has one (a computed part has none: any change moves it)."""
    return {part: c for part, c in changes(mine, before).items()
            if "identical" not in c and (c["se"] is None or abs(c["diff"]) > NOISE_K * c["se"])}


@functools.lru_cache(maxsize=None)
def commit_time(root: Path, commit: str) -> int:
    """A commit's date (seconds); 0 where git cannot tell (a copy outside git): such versions sort first."""
    done = subprocess.run(["git", "show", "-s", "--format=%ct", commit], cwd=root, capture_output=True, text=True)
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else 0


def touching(root: Path, old: str, new: str, paths: list[str]) -> list[tuple[str, str]] | None:
    """(short hash, subject) of the commits after `old` up to `new` that touched any of `paths`, oldest first;
    None where git cannot tell (a copy outside git, a shallow clone without them)."""
    if old == new:
        return []
    done = subprocess.run(["git", "log", "--reverse", "--format=%h %s", f"{old}..{new}", "--", *paths],
                          cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return [tuple(line.split(" ", 1)) if " " in line else (line, "") for line in done.stdout.splitlines()]


def code_of(cfg: dict, experiment: str) -> list[str]:
    """The files a claim of `experiment` rests on: what shapes its runs, the claims' code and its claims file."""
    e = registry.get(experiment)
    claims = [registry.relative(e.claims_file)] if e.claims else []
    return sorted({*versions.run_shaping(cfg, [experiment]), *imports.files(imports.verb("claims"), root=registry.ROOT),
                   *claims})


def history(claim_id: str, root: Path = registry.ROOT, verdicts_of=None) -> list[Row]:
    """One row per published version under root/results/ whose run files answer `claim_id`, oldest commit first,
    each with its step since the previous version of the same budget. `verdicts_of(version)` -> {claim id:
    Verdict} where they are computed already (the History page's, for every claim); else this claim alone is
    judged in each version, on the seeds pooled with it, as the version's pages judge it."""
    claim = claim_of(claim_id)
    root = Path(root)
    published = versions.versions(root)
    rows = []
    for m in sorted(published, key=lambda m: (commit_time(root, m["commit"]), m["published"])):
        v = verdicts_of(m["version"]).get(claim.id) if verdicts_of else judged(root, claim, m, published)
        if v is not None and v.verdict != Outcome.NOT_RUN:
            rows.append(Row(m, v))
    for i, row in enumerate(rows):
        before = next((r for r in reversed(rows[:i]) if rank(r.manifest) is not None
                       and (r.manifest["profile"], rank(r.manifest)) == (row.manifest["profile"], rank(row.manifest))),
                      None)
        if before is not None:
            row.step = step(root, claim, before, row)
    return rows


def judged(root: Path, claim, manifest: dict, published: list[dict]) -> Verdict:
    """`claim` judged on a version's run files with the seeds pooled with it, at its profile's first look."""
    results = pool(root, manifest["version"], published, [claim.experiment]).results
    cfg = versions.settings_of(root / "results" / manifest["version"] / "config.yaml")
    return evaluate(claim, results, first_look(cfg, manifest))


def compared(claim_id: str, root: Path = registry.ROOT) -> list[Row]:
    """history(), refused in one line where fewer than two versions measured the claim: nothing to compare."""
    rows = history(claim_id, root)
    if len(rows) < 2:
        raise AttnlabError(f"only one version measured {claim_id} ({rows[0].version}): no history to compare" if rows
                           else f"no published version measured {claim_id}: nothing to show")
    return rows


def unmeasured(rows: list[Row], root: Path = registry.ROOT) -> list[str]:
    """The published versions not in the history: their run files cannot answer the claim (another experiment
    set, or a version from before the claim's experiment existed). Said, so that a missing row is not a surprise."""
    shown = {r.version for r in rows}
    return [m["version"] for m in versions.versions(Path(root)) if m["version"] not in shown]


def step(root: Path, claim, before: Row, row: Row) -> Step | None:
    """The step from `before` to `row` (None where nothing moved and the verdict is the same)."""
    parts = moved(row.verdict, before.verdict)
    changed = row.verdict.verdict != before.verdict.verdict
    if not parts and not changed:
        return None
    here, there = (versions.settings_of(root / "results" / r.version / "config.yaml") for r in (row, before))
    return Step(before.version, parts, before.verdict.verdict if changed else None,
                touching(root, before.manifest["commit"], row.manifest["commit"], code_of(here, claim.experiment)),
                versions.differences(there, here).get(claim.experiment, []))


def value_text(v: Verdict) -> str:
    """'gain 0.135 ± 0.007; …' (the part's name where the claim has several)."""
    return "; ".join(f"{p} {t}" if p else t for p, t in v.shown().items()).replace("\u00a0", " ") or "–"


def step_text(s: Step) -> str:
    """A step in one line: what moved, then what separates the versions."""
    what = [f"{p or 'value'} {c['diff']:+.4g}" + (f" ± {c['se']:.2g}" if c["se"] else "") for p, c in s.moved.items()]
    what += [f"verdict was {s.was}"] if s.was is not None else []
    commits = ("unknown (git cannot list them here)" if s.commits is None
               else ", ".join(f"{h} {subject}" for h, subject in s.commits) or "none")
    settings = ", ".join(f"{d.setting} {d.before} → {d.after}" for d in s.settings) or "none"
    return f"since {s.since}: {'; '.join(what)}. Commits touching its code: {commits}. Settings: {settings}."


def lines(rows: list[Row]) -> list[str]:
    """The history as a plain table, a step marked ◆ with its line under it."""
    width = max(len(r.version) for r in rows)
    out = [f"{'version':<{width}}  {'profile':<8} seeds  {'value ± SE':<28} verdict"]
    for r in rows:
        mark = "◆ " if r.step else "  "
        out.append(f"{r.version:<{width}}  {r.manifest['profile']:<8} {r.seeds:>5}  {value_text(r.verdict):<28} "
                   f"{mark}{r.verdict.verdict}")
        if r.step:
            out.append(f"    ◆ {step_text(r.step)}")
    return out
