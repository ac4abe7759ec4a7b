"""The sequential design's second look, decided from the first: which experiments get seeds of their own.

A claim inconclusive at its profile's seeds (the first look) whose settle count is at most SECOND_LOOK_MOST gets
those seeds at the second look, as a setting of its experiment (`<experiment>: {seeds: [...]}`: the profile's seeds,
then the next ones). The decision reads the first look's verdicts only and is made once: the second look's numbers
never add seeds again, which is what keeps the design's error at the level design.LOOKS spends. Only an
experiment made at seeds can take more (a training experiment, or an analysis whose job reads the seeds); a claim
of any other is named with why not.
"""
from __future__ import annotations

from typing import Callable

from attnlab import registry
from attnlab.claims.design import SECOND_LOOK_MOST
from attnlab.claims.outcome import Outcome
from attnlab.claims.verdicts import Verdict


def takes_seeds(experiment: str) -> bool:
    e = registry.get(experiment)
    return e.trains or "seeds" in e.reads


def settled_by_seeds(v: Verdict, most: int | None = None) -> bool:
    """Inconclusive with a settle count (at most `most` seeds where given): what more seeds would decide."""
    return v.verdict == Outcome.INCONCLUSIVE and v.settle.isdigit() and (most is None or int(v.settle) <= most)


def second_look(verdicts: list[Verdict], first: Callable[[str], list[int]],
                at_last: Callable[[str], bool] = lambda experiment: False
                ) -> tuple[dict[str, list[int]], dict[str, str]]:
    """(experiment -> the seeds of its second look, claim id -> why it gets none) from first-look verdicts, where
    `first(experiment)` is the seeds its first look judged (pooled across versions where they were); only claims
    inconclusive with a settle count are considered (one limited by the evaluation's budget, or needing no error,
    is not settled by seeds). `at_last(experiment)`: its verdicts are its second look's already (a pool that holds
    the planned seeds, an analysis read from the version that reran it), the design's last: none is added."""
    wanted: dict[str, int] = {}
    not_taken: dict[str, str] = {}
    for v in verdicts:
        if not settled_by_seeds(v):
            continue
        n, experiment = int(v.settle), v.claim.experiment
        if at_last(experiment):
            not_taken[v.claim.id] = f"{experiment} is at its second look, the design's last"
        elif n > SECOND_LOOK_MOST:
            not_taken[v.claim.id] = f"needs {n} seeds, beyond the design's {SECOND_LOOK_MOST}"
        elif not takes_seeds(experiment):
            not_taken[v.claim.id] = f"{experiment} is not made at seeds"
        elif n > len(first(experiment)):
            wanted[experiment] = max(wanted.get(experiment, 0), n)
    return {e: _extended(first(e), n) for e, n in sorted(wanted.items())}, not_taken


def runs_needing(verdicts: list[Verdict], seeds: dict[str, list[int]], runs_of: Callable[[str], list[str]]
                 ) -> dict[str, tuple[list[str], list[str]]]:
    """Experiment -> (the claims that gave it its second look, the runs they read) where those runs are fewer
    than the experiment's (`runs_of`): its other runs serve only claims that seeds do not settle, so a version
    may hold the added seeds of these runs alone. An experiment whose claims read something else too (a result
    file) needs every run."""
    asking: dict[str, list] = {}
    for v in verdicts:
        if v.claim.experiment in seeds and settled_by_seeds(v, SECOND_LOOK_MOST):
            asking.setdefault(v.claim.experiment, []).append(v.claim)
    out = {}
    for experiment, claims in asking.items():
        every = runs_of(experiment)
        read = {run for c in claims for run in c.rows}
        if all(c.rows and not c.files for c in claims) and read < set(every):
            out[experiment] = ([c.id for c in claims], [run for run in every if run in read])
    return out


def _extended(seeds: list[int], n: int) -> list[int]:
    """`seeds`, then the next ones after the largest, to n in all."""
    top = max(seeds)
    return list(seeds) + list(range(top + 1, top + 1 + n - len(seeds)))


def as_yaml(seeds: dict[str, list[int]], narrow: dict[str, tuple[list[str], list[str]]] | None = None) -> str:
    """The settings to lay into the profile's file, one line an experiment, and under it, where its claims read
    some of its runs only (runs_needing), a comment naming them and the runner's call that trains those alone."""
    out = ""
    for e, s in seeds.items():
        out += f"{e}: {{seeds: [{', '.join(map(str, s))}]}}\n"
        if e in (narrow or {}):
            claims, runs = narrow[e]
            out += (f"#   {', '.join(claims)} read {', '.join(runs)} only: a version of the added seeds may hold "
                    f"those runs alone (--only {' '.join(f'{e}.{r}' for r in runs)})\n")
    return out
