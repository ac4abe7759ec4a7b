"""Seeds that add up across published versions.

A CPU owner publishes a seed a night; a GPU owner publishes three at once. Either way, a training experiment is
judged on the union of the seeds of every published version whose runs of it were shaped alike:

- the same profile (the budget: a profile's file names it);
- the same settings for every job of the experiment but the seed (plan.Job.settings, read from each version's
  own config.yaml, with `seed` left out);
- the same code: no file that shapes those runs (versions.run_shaping) differs between the two commits.

A seed that two such versions both hold must carry the same numbers, or nothing is pooled: the error names the
run, the seed and both versions. Only training experiments pool (their seeds are separate folders); an analysis
or benchmark states one result file, read from the version it is published in, or from its second look: an
analysis reads every seed at once, so seeds cannot be added to its result, and a version that reran it at exactly
the seeds the profile plans for its second look (shaped as this one's, the first look's seeds among them) takes
its place (`Pool.second_looks`).

Versions of other hardware (a GPU's beside a CPU's) pool only where their figures agree: each side's own pool is
judged on the experiment's measured claims, and every numeric part's interval must overlap the other side's. Then
the other side's seeds this side lacks are added (one seed counts once: a seed both ran is this side's run);
otherwise nothing of theirs is, and `Pool.apart` names the first part that disagrees, with both intervals.

Seeds that arrive a version at a time are looks at the data, and the verdicts' design allows two (claims/design.py):
the profile's seeds, then the second look its file plans for the experiment (`<experiment>: {seeds: [...]}`,
decided once by `attnlab second-look`). A pool that has gone past the first look judges on the first look's seeds
until every seed of the planned second look is in, then on exactly those: a seed in between would be a third look,
and a seed no design planned is held back too (`Pool.held_back` says which, and why).
"""
from __future__ import annotations

import functools
import json
import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from attnlab import registry
from attnlab.errors import AttnlabError
from attnlab.plan import plan
from attnlab.results import Results, gather

COMPARED = ("val_ppl", "train_ppl", "status", "steps")  # what must agree where two versions hold one seed
REL_TOL = 1e-6  # float rounding between two machines' reads of one file; a rerun that differs is another run


@dataclass
class Pool:
    """A version's results with the seeds of the versions pooled with it: `members` names, per training
    experiment, each version pooled and the seeds it gave (this version first)."""
    version: str
    results: Results
    members: dict[str, list[tuple[str, list[int]]]] = field(default_factory=dict)
    # experiment -> (the seeds held back, the first look's, the planned second look's or None)
    held_back: dict[str, tuple[list[int], list[int], list[int] | None]] = field(default_factory=dict)
    apart: dict[str, str] = field(default_factory=dict)  # experiment -> why another hardware's versions are not in
    # analysis -> (the version of its second look, whose result this version's pages read, and its seeds)
    second_looks: dict[str, tuple[str, list[int]]] = field(default_factory=dict)

    @property
    def pooled(self) -> bool:
        """Whether any experiment holds seeds of a version other than this one."""
        return any(len(vs) > 1 for vs in self.members.values()) or bool(self.second_looks)

    def experiments(self) -> list[str]:
        """The experiments whose results this pool holds: the training ones, then analyses read from a second look."""
        return [*self.members, *(e for e in self.second_looks if e not in self.members)]

    def behind(self, experiment: str) -> list[str]:
        """The versions whose run files `experiment`'s results read: this one and those pooled with it, or this one
        and the version of its second look."""
        if experiment in self.second_looks:
            return [self.version, self.second_looks[experiment][0]]
        return [v for v, _ in self.members.get(experiment, [])] or [self.version]

    def versions(self) -> list[str]:
        """The versions whose run files these results read: this one, those pooled with it, second looks."""
        return list(dict.fromkeys([self.version, *(v for e in self.experiments() for v in self.behind(e))]))

    def past_first_look(self, experiment: str, first: int) -> bool:
        """Whether `experiment` is judged at its second look here, the design's last (`first`: the first look's
        seed count): a pool past the first look's seeds, or an analysis read from its rerun."""
        return experiment in self.second_looks or len(self.seeds(experiment)) > first

    def seeds(self, experiment: str) -> list[int]:
        return sorted(s for _, seeds in self.members.get(experiment, []) for s in seeds)

    def words(self, experiment: str) -> str:
        """'pooled over 2 versions: A (seed 1337), B (seed 1338)'; for an analysis read from its second look, which
        version that is; '' where the experiment is not pooled."""
        if experiment in self.second_looks:
            version, seeds = self.second_looks[experiment]
            return (f"read from the second look of {experiment}, {version} (seeds {', '.join(map(str, seeds))}): an "
                    f"analysis reads every seed at once, so that version reran it at the seeds the profile plans for "
                    f"it, this version's among them")
        members = self.members.get(experiment) or []
        if len(members) < 2:
            return ""
        named = ", ".join(f"{v} ({'seeds' if len(s) > 1 else 'seed'} {', '.join(map(str, s))})" for v, s in members)
        return f"pooled over {len(members)} versions: {named}" + self.waiting(experiment)

    def waiting(self, experiment: str) -> str:
        """'; seed 1340 held back ...' where seeds published for `experiment` are not judged yet; '' else."""
        if experiment not in self.held_back:
            return ""
        held, first, plan = self.held_back[experiment]
        named = f"{'seeds' if len(held) > 1 else 'seed'} {', '.join(map(str, held))} held back"
        if not plan:
            return f"; {named}: the profile plans no second look for {experiment}"
        adds = [s for s in plan if s not in first]
        return (f"; {named} until the {len(adds)} seeds the planned second look adds are all in "
                f"({sum(s in held for s in adds)} so far)")


def settings_but_seeds(cfg: dict, experiment: str) -> dict[str, str]:
    """Each job of `experiment` (a training run, by its run's name; an analysis, by its job's) -> the settings it
    reads but the seeds (canonical JSON): what two versions must share. An analysis reads the profile's list of
    seeds, which is what its second look changes; a training run reads one seed."""
    out = {}
    for job in plan(cfg, [experiment]):
        read = json.loads(job.settings)
        read.pop("seed", None)
        if not job.run:
            read.pop("seeds", None)
        out[job.run or job.name] = json.dumps(read, sort_keys=True)
    return out


def why_apart(root: Path, a: dict, b: dict, experiment: str, hardware: bool = True) -> str | None:
    """Why versions `a` and `b` (manifests) cannot pool `experiment` as one run per seed; None where they can.
    `hardware=False`: whether they could, on other hardware, where their figures agree (see the module's note)."""
    from attnlab.versions import run_shaping, settings_of

    if a["profile"] != b["profile"]:
        return f"other profiles ({a['profile']}, {b['profile']})"
    if hardware and a.get("hardware") != b.get("hardware"):  # one seed on two devices is two runs, not one
        return f"other hardware ({a.get('hardware')}, {b.get('hardware')})"
    cfg_a, cfg_b = (settings_of(Path(root, "results", m["version"], "config.yaml")) for m in (a, b))
    if settings_but_seeds(cfg_a, experiment) != settings_but_seeds(cfg_b, experiment):
        return "other settings"
    if a["commit"] != b["commit"] and changed(root, a["commit"], b["commit"], tuple(run_shaping(cfg_a, [experiment]))):
        return f"the code that shapes its runs differs between {a['commit'][:7]} and {b['commit'][:7]}"
    return None


MOVED = Path(__file__).resolve().parent / "schemas" / "moved.yaml"  # where files went when experiments got folders


@functools.lru_cache(maxsize=1)
def moved() -> tuple[dict, dict]:
    """(new path -> old path, old module -> new module) of the files that moved without changing."""
    doc = yaml.safe_load(MOVED.read_text()) if MOVED.is_file() else {}
    return doc.get("files") or {}, doc.get("modules") or {}


@functools.lru_cache(maxsize=256)
def changed(root: Path, a: str, b: str, paths: tuple[str, ...]) -> bool:
    """Whether any of `paths` (as they are named now) differs between commits a and b. A file that moved (see
    moved.yaml) is compared with what it was, its module names translated: a move alone changes no run. True
    where git cannot tell (a shallow clone, a copy outside git): versions it cannot compare are not pooled."""
    files, _ = moved()
    still = [p for p in paths if p not in files]
    if still and subprocess.run(["git", "diff", "--quiet", a, b, "--", *still], cwd=root,
                                capture_output=True).returncode != 0:
        return True
    return any(_translated(root, a, p) != _translated(root, b, p) for p in paths if p in files)


def _translated(root: Path, commit: str, path: str) -> str | None:
    """The text of `path` at `commit` (under its old name before the move), old module names read as new."""
    files, modules = moved()
    for name in (path, files[path]):
        done = subprocess.run(["git", "show", f"{commit}:{name}"], cwd=root, capture_output=True, text=True)
        if done.returncode == 0:
            text = done.stdout
            for old in sorted(modules, key=len, reverse=True):
                text = re.sub(re.escape(old) + r"(?!\w)(?!\.(producer|settings|page)\b)", modules[old], text)
            return text
    return None


def holds(m: dict, experiment: str) -> bool:
    return m.get("complete", True) or experiment in (m.get("experiments") or [])


def pool(root: Path, version: str, published: list[dict] | None = None, only: list[str] | None = None) -> Pool:
    """`version`'s results (root/results/<version>/) with, for each training experiment it holds (of `only`), the
    seeds of every published version that pools with it (newest first). Paths in the results are relative to
    root/results/ (each starts with its version's folder). Raises in one line where two versions pooled hold
    one seed with different numbers."""
    from attnlab.versions import versions

    results_root = Path(root, "results")
    published = versions(root) if published is None else published
    by_name = {m["version"]: m for m in published}
    own = by_name[version]
    res = _prefixed(gather(results_root / version), version)
    out = Pool(version, res)
    for e in registry.training():
        if not holds(own, e) or not res.experiment(e) or (only and e not in only):
            continue
        out.members[e] = [(version, _seeds(res, e))]
        for m in published:
            if m["version"] == version or not holds(m, e) or why_apart(root, own, m, e):
                continue
            theirs = _prefixed(gather(results_root / m["version"]), m["version"])
            added = _merge(res, theirs, e)
            if added:
                out.members[e].append((m["version"], added))
        first, plan = design_seeds(root, own["profile"], e)
        if len(out.members[e]) > 1:
            _looks(out, e, first, plan)
        others = [m for m in published if m.get("hardware") != own.get("hardware") and holds(m, e)
                  and not why_apart(root, own, m, e, hardware=False)]
        for hw in sorted({m.get("hardware") for m in others}):
            _other_hardware(out, e, pool(root, next(m["version"] for m in others if m.get("hardware") == hw),
                                         [m for m in published if m.get("hardware") == hw], [e]), hw, len(first))
        if len(out.members[e]) > 1:
            _looks(out, e, first, plan)
    for e in registry.load():
        if e.trains or not holds(own, e.name) or res.result(e.name) is None or (only and e.name not in only):
            continue
        if found := analysis_second_look(root, own, published, e.name):
            theirs = _prefixed(gather(results_root / found[0]), found[0])
            res.files[e.name], res.file_paths[e.name] = theirs.files[e.name], theirs.file_paths[e.name]
            out.second_looks[e.name] = found
    return out


def analysis_second_look(root: Path, own: dict, published: list[dict], experiment: str) -> tuple[str, list[int]] | None:
    """(the newest published version that holds analysis `experiment` at exactly the seeds its profile's file plans
    for the second look, shaped as `own`'s, and those seeds), where `own` holds it at the first look's seeds;
    None else (no plan, none published, or `own` is past its first look)."""
    from attnlab.config import seeds
    from attnlab.versions import settings_of

    def held(m: dict) -> list[int]:
        return seeds(settings_of(Path(root, "results", m["version"], "config.yaml")), experiment)

    first, plan = design_seeds(root, own["profile"], experiment)
    if not plan or held(own) != first:
        return None
    for m in published:
        if (m["version"] != own["version"] and holds(m, experiment) and held(m) == plan
                and not why_apart(root, own, m, experiment)):
            return m["version"], list(plan)
    return None


def _other_hardware(out: Pool, experiment: str, theirs: Pool, hardware: str, first_look: int) -> None:
    """Add `theirs` (another hardware's pool) to `out` for `experiment` where every numeric part of its measured
    claims agrees within the intervals; else say why not in out.apart."""
    differ = disagreement(out.results, theirs.results, experiment, first_look)
    names = ", ".join(v for v, _ in theirs.members.get(experiment, []))
    if differ:
        out.apart[experiment] = f"not pooled with the {hardware} versions ({names}): {differ}"
        return
    held = set(out.seeds(experiment))
    _merge(out.results, theirs.results, experiment, same_run=False)
    for v, seeds in theirs.members.get(experiment, []):
        if added := [s for s in seeds if s not in held]:
            out.members[experiment].append((v, added))


def disagreement(mine: Results, theirs: Results, experiment: str, first_look: int) -> str | None:
    """The first numeric part of `experiment`'s measured claims whose intervals in the two results do not
    overlap, in words; None where all that both judge overlap."""
    from attnlab.claims.evaluate import evaluate
    from attnlab.claims.registry import load_registry

    for claim in load_registry().claims:
        if claim.experiment != experiment or claim.kind != "measured":
            continue
        a, b = evaluate(claim, mine, first_look).parts, evaluate(claim, theirs, first_look).parts
        for name in a.keys() & b.keys():
            x, y = a[name].interval, b[name].interval
            if x and y and max(x[0], y[0]) > min(x[1], y[1]):
                part = f" `{name}`" if name else ""
                return (f"{claim.id}{part} is [{x[0]:.4g}, {x[1]:.4g}] here and [{y[0]:.4g}, {y[1]:.4g}] there, "
                        "intervals that do not overlap")
    return None


def design_seeds(root: Path, profile: str, experiment: str) -> tuple[list[int], list[int] | None]:
    """(the first look's seeds, the planned second look's or None) of `experiment`, from the profile's file in the
    project at `root` (the project's own where `root` has none)."""
    from attnlab.config import load
    from attnlab.runs import own_seeds

    path = Path(root, "config", f"{profile}.yaml")
    path = path if path.is_file() else registry.ROOT / "config" / f"{profile}.yaml"
    if not path.is_file():
        return [], None
    cfg = load(str(path))
    return list(cfg.get("seeds") or []), own_seeds(cfg, experiment)


def _looks(out: Pool, experiment: str, first: list[int], plan: list[int] | None) -> None:
    """Cut a pool past its first look to the seeds the design judges (see the module's note)."""
    have = out.seeds(experiment)
    if not first or len(have) <= len(first):
        return
    keep = set(plan) if plan and set(plan) <= set(have) else set(first)
    held = [s for s in have if s not in keep]
    if not held:
        return
    out.held_back[experiment] = (held, first, plan)
    res = out.results
    for run in res.experiment(experiment):
        for seed in held:
            res.by_seed.get(run, {}).pop(seed, None)
            res.seed_paths.get(run, {}).pop(seed, None)
        if res.by_seed.get(run) and res.run_paths.get(run) not in res.seed_paths[run].values():
            first_kept = res.seeds(run)[0]
            res.runs[run], res.run_paths[run] = res.by_seed[run][first_kept], res.seed_paths[run][first_kept]
    out.members[experiment] = [(v, kept) for v, seeds in out.members[experiment]
                               if (kept := [s for s in seeds if s not in held])]


def _seeds(res: Results, experiment: str) -> list[int]:
    return sorted({s for run in res.experiment(experiment) for s in res.seeds(run) if s is not None})


def _prefixed(res: Results, version: str) -> Results:
    """`res` with every path relative to the folder holding the versions (`<version>/...`)."""
    res.root = res.root.parent
    res.file_paths = {k: f"{version}/{p}" for k, p in res.file_paths.items()}
    res.run_paths = {k: f"{version}/{p}" for k, p in res.run_paths.items()}
    res.seed_paths = {k: {s: f"{version}/{p}" for s, p in d.items()} for k, d in res.seed_paths.items()}
    return res


def _merge(res: Results, theirs: Results, experiment: str, same_run: bool = True) -> list[int]:
    """Add to `res` the seeds of `experiment`'s runs that `theirs` holds and `res` does not; a seed both hold
    must agree (COMPARED) where it is the same run (`same_run`: the same hardware), and is `res`'s own where it
    is another device's run. Returns the seeds added."""
    added = set()
    for run in theirs.experiment(experiment):
        for seed, m in theirs.by_seed[run].items():
            held = res.by_seed.get(run, {}).get(seed)
            if held is not None:
                if same_run:
                    _same(held, m, run, seed, res.seed_paths[run][seed], theirs.seed_paths[run][seed])
                continue
            res.by_seed.setdefault(run, {})[seed] = m
            res.owner[run] = experiment
            res.seed_paths.setdefault(run, {})[seed] = theirs.seed_paths[run][seed]
            added.add(seed)
    for run in res.by_seed:  # a run only `theirs` held: its first seed is what Results.runs shows
        if run not in res.runs:
            first = res.seeds(run)[0]
            res.runs[run], res.run_paths[run] = res.by_seed[run][first], res.seed_paths[run][first]
    return sorted(s for s in added if s is not None)


def _same(a: dict, b: dict, run: str, seed, path_a: str, path_b: str) -> None:
    for key in COMPARED:
        x, y = a.get(key), b.get(key)
        same = (math.isclose(x, y, rel_tol=REL_TOL) if all(isinstance(v, (int, float)) for v in (x, y)) else x == y)
        if not same:
            raise AttnlabError(f"run {run} at seed {seed} is in two versions pooled together with different "
                               f"numbers ({key} {x} in results/{path_a}, {y} in results/{path_b}): a seed is "
                               "one run; publish one of them under other settings, or remove one version")
