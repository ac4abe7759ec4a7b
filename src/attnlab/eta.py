"""The expected time of a run, before it starts: each job's recorded run time, scaled to this machine.

A job's record is the `process_seconds` (the job's whole process; else the `wall_seconds`, its work alone, which for
a training run resumed from a checkpoint counts the killed processes' time too, and is then the larger) in the
provenance of its run file in a published version of the same profile
(the version of record first, then the others, newest first), or in a folder named with `--from`; a training run
recorded at another seed stands for its seeds (a seed changes no arithmetic's size), and a job that runs at every
seed of a list (an analysis that reads the seeds) is scaled by how many it runs at against its record's. The record is scaled by the
ratio of this machine's calibration figure to the one the run file recorded (attnlab.calibration); a record without
one has an unknown scale, taken as 1 and said so. A job with no record anywhere is counted apart, never guessed.
The wall time is the jobs laid out as the runner and Snakemake start them: each as soon as what it needs is done,
`slots` at once.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import heapq
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import registry, versions
from attnlab.errors import AttnlabError
from attnlab.plan import Job
from attnlab.runfiles import read_json

SEED = re.compile(r"/seed\d+(?=/)")
SEEDS = "_seeds"  # timed()'s key for the seed count of a file that holds several seeds' results


@dataclass(frozen=True)
class Record:
    seconds: float           # the run's wall time where it was recorded
    calibration: float | None  # that machine's calibration figure (seconds), None where it recorded none
    source: str              # the version (or folder) it comes from
    seeds: int | None = None  # how many seeds the job ran at, where one job ran at several (its `by_seed`)


@dataclass
class Estimate:
    cpu: dict[str, float]                # experiment -> expected run time here (s), of its recorded jobs
    jobs: dict[str, int]                 # experiment -> its jobs with a record
    unrecorded: list[str]                # the jobs no source records, counted apart
    unscaled: dict[str, str]             # recorded job -> its experiment, where its record has no calibration:
                                         # its scale is unknown, taken as 1
    wall: float                          # expected wall time at `slots` jobs at once (unrecorded jobs: 0 s)
    slots: int
    here: float                          # this machine's calibration figure (s)
    sources: list[str] = field(default_factory=list)
    scale: float | None = None           # the factor the records were scaled by, where it was one for all of them
    by_benchmark: dict[str, float] = field(default_factory=dict)  # source -> its factor, where its throughput
                                         # benchmark gave it (the source recorded no calibration figure)

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


def seedless(rel: str) -> str:
    """A run file's path with its seed folder taken out: the key of the same run at any seed."""
    return SEED.sub("", rel)


def timed(folder: Path) -> dict[str, dict]:
    """The provenance of every JSON run file of an experiment under `folder` that records a wall time, by its path
    relative to it (the site's copies, logs and ledgers are not run files); `SEEDS` in it: how many seeds the file
    holds results of, where it holds several."""
    names, out = {e.name for e in registry.load()}, {}
    for path in sorted(Path(folder).rglob("*.json")):
        rel = path.relative_to(folder)
        if rel.parts[0] not in names:
            continue
        try:
            doc = read_json(path)
            prov = doc.get("provenance") or {}
        except Exception:  # a file that is not a run file (or not whole) records nothing
            continue
        if isinstance(prov, dict) and isinstance(prov.get("wall_seconds"), (int, float)):
            by_seed = doc.get("by_seed")
            out[str(rel)] = {**prov, SEEDS: len(by_seed)} if isinstance(by_seed, dict) and by_seed else prov
    return out


def records_of(folder: Path, name: str | None = None) -> dict[str, Record]:
    """Every run file's record under `folder`: its wall time and its machine's calibration figure."""
    out = {}
    for rel, prov in timed(folder).items():
        cal = prov.get("calibration") or {}
        figure = cal.get("seconds") if cal.get("workload") == calibration_workload() else None
        whole = prov.get("process_seconds")  # the job's whole process, where recorded; else its work alone
        seconds = whole if isinstance(whole, (int, float)) and whole >= prov["wall_seconds"] else prov["wall_seconds"]
        out[rel] = Record(float(seconds), figure, name or str(folder), prov.get(SEEDS))
    return out


@dataclass(frozen=True)
class Spent:
    """Where a run's time went, from its run files' provenance."""
    run: dict[str, float]   # experiment -> the run time of its run files (s), in the registry's order
    files: dict[str, int]   # experiment -> how many run files record it
    wall: float | None      # from the first run file's start to the last one's end (s); None without dates

    @property
    def total(self) -> float:
        return sum(self.run.values())


def spent(folder: Path) -> Spent:
    """The run time of each experiment's run files under `folder`, and the wall time from the first one's start
    (its end less its wall time) to the last one's end."""
    prov = timed(folder)
    run, files, starts, ends = {}, {}, [], []
    for e in registry.load():
        mine = [p for rel, p in prov.items() if rel.split("/")[0] == e.name]
        if mine:
            run[e.name], files[e.name] = sum(p["wall_seconds"] for p in mine), len(mine)
    for p in prov.values():
        if isinstance(p.get("date"), str):
            end = dt.datetime.fromisoformat(p["date"])
            ends.append(end)
            starts.append(end - dt.timedelta(seconds=p["wall_seconds"]))
    return Spent(run, files, (max(ends) - min(starts)).total_seconds() if ends else None)


def calibration_workload() -> str:
    from attnlab.calibration import WORKLOAD

    return WORKLOAD


def sources(profile: str, root: Path = registry.ROOT) -> list[Path]:
    """The published versions of `profile` to read records from: the version of record first (where it is one),
    then the complete ones, then the partial ones, each newest first."""
    published = [m for m in versions.versions(root) if m.get("profile") == profile]
    record = versions.latest(root)
    ordered = sorted(published, key=lambda m: (m["version"] != record, not m.get("complete", True)))
    return [Path(root, "results", m["version"]) for m in ordered]


BENCHMARK = "throughput/result.json"  # a version's own speed where it recorded no calibration figure


def benchmark_scale(folder: Path) -> float | None:
    """How much slower this machine is than the one that ran `folder`, by the throughput benchmark's reference
    fp32 step: the fastest of its recorded rounds against the same step timed here at the same shape, batch and
    threads (None: no such run file). For a version published before the calibration figure."""
    try:
        b = read_json(Path(folder) / BENCHMARK)
        recorded = min(b["reference_step_seconds"])
        spec, batch, threads = b["model"], b["batch_size"], b["threads"]
    except Exception:  # none, damaged, or from before the paired rounds: no figure
        return None
    from attnlab.bench.reference import best_step_seconds
    from attnlab.nn.spec import ModelSpec

    return best_step_seconds(ModelSpec(**spec), batch, threads) / recorded


def lookup(folders: list[Path], here: float | None = None) -> tuple[dict[str, Record], dict[str, Record], dict]:
    """Each run file's record from the first folder holding it, by path and by its seedless path, with its folder's
    machine figure: the best of its files' calibration figures. A file's own figure was timed beside the other jobs
    of its run, so it says how busy the machine was; the best of them, at a quiet moment, says how fast it is.
    A folder with no figure at all, given `here`, gets one from its throughput benchmark (benchmark_scale): the
    figure that scales its records by the benchmark's ratio; those folders and their ratios come third."""
    exact, any_seed, by_benchmark = {}, {}, {}
    for folder in folders:
        name = folder.name if versions.NAME.match(folder.name) else str(folder)  # a version, or any folder
        records = records_of(folder, name)
        figures = [r.calibration for r in records.values() if r.calibration]
        machine = min(figures) if figures else None
        if machine is None and here and records and (ratio := benchmark_scale(folder)):
            machine, by_benchmark[name] = here / ratio, ratio
            records = {rel: dataclasses.replace(rec, calibration=machine) for rel, rec in records.items()}
        for rel, rec in records.items():
            rec = dataclasses.replace(rec, calibration=machine if rec.calibration else None)
            exact.setdefault(rel, rec)
            any_seed.setdefault(seedless(rel), rec)
    return exact, any_seed, by_benchmark


def estimate(todo: list[Job], folders: list[Path], here: float, slots: int) -> Estimate:
    """The expected run time of `todo` per experiment and its wall time at `slots` jobs at once."""
    exact, any_seed, by_benchmark = lookup(folders, here)
    cpu, counted, unrecorded, unscaled, seconds, used, factors = {}, {}, [], {}, {}, [], set()
    for job in todo:
        rec = exact.get(job.output) or any_seed.get(seedless(job.output))
        if rec is None:
            unrecorded.append(job.name)
            seconds[job.name] = 0.0
            continue
        if rec.calibration is None:
            unscaled[job.name] = job.experiment
        seconds[job.name] = rec.seconds * (here / rec.calibration if rec.calibration else 1.0) * per_seeds(job, rec)
        cpu[job.experiment] = cpu.get(job.experiment, 0.0) + seconds[job.name]
        counted[job.experiment] = counted.get(job.experiment, 0) + 1
        used += [rec.source] if rec.source not in used else []
        factors.add(round(here / rec.calibration, 6) if rec.calibration else None)
    return Estimate(cpu, counted, unrecorded, unscaled, wall_time(todo, seconds, slots), slots, here, used,
                    next(iter(factors)) if len(factors) == 1 else None,
                    {name: ratio for name, ratio in by_benchmark.items() if name in used})


def per_seeds(job: Job, rec: Record) -> float:
    """How many more seeds `job` runs at than its record did (1 where either ran at one seed)."""
    wanted = json.loads(job.settings).get("seeds") if rec.seeds else None
    return len(wanted) / rec.seeds if isinstance(wanted, list) and wanted else 1.0


def wall_time(todo: list[Job], seconds: dict[str, float], slots: int) -> float:
    """When the last job ends, each started (in the plan's order) as soon as a slot is free and what it needs among
    `todo` has ended; a need outside `todo` is done already."""
    names = {job.name for job in todo}
    pending, ends, running, now = list(todo), {}, [], 0.0
    while pending or running:
        ready = [j for j in pending if all(n in ends and ends[n] <= now for n in j.needs if n in names)]
        for job in ready[: slots - len(running)]:
            pending.remove(job)
            ends[job.name] = now + seconds[job.name]
            heapq.heappush(running, (ends[job.name], job.name))
        if not running:
            break  # what is left needs a job that is not in `todo`'s order: nothing can start it
        now, _ = heapq.heappop(running)
    return max(ends.values(), default=0.0)


def duration(seconds: float) -> str:
    """'45 s', '12 min', '2 h 10 min'."""
    minutes = round(seconds / 60)
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def lines(est: Estimate, what: str) -> list[str]:
    """What a dry run (and a run, before its first job) prints: one line per experiment, the total and the wall
    time, the jobs with no record apart, and the scale that is unknown said so."""
    if not est.sources:
        return [f"expected time of {what}: no published version records any of its jobs' run times "
                f"({len(est.unrecorded)} jobs with no recorded time)"]
    recorded = sum(est.jobs.values())
    every = est.unscaled and len(est.unscaled) == recorded
    scaled = ("at the scale of their machine: unknown, as they recorded no calibration; taken as 1" if every else
              "scaled to this machine" + (f" (scale unknown for {len(est.unscaled)} jobs: their records have no "
                                          "calibration, taken as 1)" if est.unscaled else ""))
    if est.by_benchmark:
        scaled += "".join(f"; {name} by its throughput benchmark's reference step, timed again here (×{ratio:.2f}), "
                          "as it recorded no calibration" for name, ratio in est.by_benchmark.items())
    elif not every:
        scaled += f" (×{est.scale:.2f}: calibration {est.here:.4f} s here)" if est.scale else ""
    out = [f"expected time of {what}, from the run times recorded in {', '.join(est.sources)}, {scaled}:"]
    width = max(map(len, est.cpu), default=0)
    for name, secs in est.cpu.items():
        mark = " (scale unknown: ×1)" if not every and name in est.unscaled.values() else ""
        out.append(f"  {name:<{width}}  {est.jobs[name]:>3} jobs  {secs:>9,.0f} s{mark}")
    out.append(f"  run time {est.total:,.0f} s ({duration(est.total)}); wall time at {est.slots} job"
               f"{'s' if est.slots > 1 else ''} at once: {est.wall:,.0f} s ({duration(est.wall)})")
    if est.unrecorded:
        shown = ", ".join(est.unrecorded[:4]) + (", …" if len(est.unrecorded) > 4 else "")
        out.append(f"  {len(est.unrecorded)} jobs with no recorded time, not counted above: {shown}")
    return out


HERE_ROUNDS = 3  # the estimate's own figure is the best of this many: a source's is the best of its many jobs'


def here() -> float:
    """This machine's calibration figure (seconds): the best of HERE_ROUNDS measurements, as a source's figure is
    the best of its run files' (lookup), so that one busy moment at the start of a dry run does not scale every
    record by it (a single figure here has come out 17 % above the machine's best on a shared machine)."""
    from attnlab.calibration import measure

    return min(measure()["seconds"] for _ in range(HERE_ROUNDS))


def expected(todo: list[Job], profile: str, slots: int, what: str, source: Path | None = None) -> str:
    """The lines for `todo`, read from `source` (a folder of run files) or the profile's published versions."""
    if source and not Path(source).is_dir():
        raise AttnlabError(f"--times-from {source}: no such folder of run files")
    try:
        folders = [Path(source)] if source else sources(profile)
    except AttnlabError as err:  # a damaged results/LATEST, say: the run goes on without an estimate
        return f"expected time of {what}: not known ({err})"
    return "\n".join(lines(estimate(todo, folders, here(), slots), what))
