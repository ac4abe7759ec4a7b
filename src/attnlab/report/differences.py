"""The experiments whose settings differ between two profiles, as the plan sees them.

Each profile is resolved and validated; every job of its plan is compared with the job of the same run and seed
in the other, on the settings it reads (its rerun trigger), a training run's own `train` laid over the profile's
as training does. The home page lists them between quick and chapter: the experiments the chapter's budget
changes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from attnlab import registry
from attnlab.config import load, run_settings
from attnlab.plan import Job, plan

BUDGET_PAIR = ("quick", "chapter")


@dataclass(frozen=True)
class Difference:
    setting: str              # a dotted path into the settings the job reads ('train.steps', 'cost.sizes')
    before: object            # its value in the first profile (None: not set there)
    after: object             # and in the second
    runs: tuple[str, ...] = ()  # the training runs it differs for ((): the whole experiment, or every run of it)


def flat(tree: dict, prefix: str = "") -> dict[str, object]:
    """Every leaf of nested settings by its dotted path (a list is one leaf)."""
    out = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        out.update(flat(value, path + ".") if isinstance(value, dict) and value else {path: value})
    return out


def job_view(cfg: dict, job: Job) -> dict[str, object]:
    """The settings a job reads, by dotted path, without the profile's name and the seed; a training run's own
    entry at the top (its `train` laid over the profile's), beside the shared sections it reads."""
    settings = json.loads(job.settings)
    settings.pop("profile", None)
    settings.pop("seed", None)
    if job.run is None:
        return flat(settings)
    entry = settings[job.experiment].pop(job.run)
    if not settings[job.experiment]:  # left holding an up-trained run's source, or nothing
        del settings[job.experiment]
    settings.pop("train", None)
    own = {**{k: v for k, v in entry.items() if k != "train"}, "train": run_settings(cfg, job.run).train}
    return {**flat(settings), **flat(own)}


def by_run(cfg: dict) -> dict[str, dict[tuple, dict]]:
    """Experiment -> (run, seed) -> that job's settings view."""
    out: dict[str, dict[tuple, dict]] = {}
    for job in plan(cfg):
        out.setdefault(job.experiment, {})[(job.run, job.seed)] = job_view(cfg, job)
    return out


def experiment_differences(before: dict[tuple, dict], after: dict[tuple, dict]) -> list[Difference]:
    """What differs between one experiment's jobs in two profiles: its seeds and runs, then each setting with the
    runs it differs for (none named where it differs alike for every run)."""
    out = []
    for what, pick in (("seeds", lambda key: key[1]), ("runs", lambda key: key[0])):
        was, now = sorted({pick(k) for k in before} - {None}), sorted({pick(k) for k in after} - {None})
        if was != now:
            out.append(Difference(what, was, now))
    changed: dict[tuple, dict] = {}  # (setting, before, after) -> the runs it differs for
    for key in sorted(set(before) & set(after), key=str):
        a, b = before[key], after[key]
        for path in sorted(set(a) | set(b)):
            if a.get(path) != b.get(path):
                pair = (path, json.dumps(a.get(path)), json.dumps(b.get(path)))
                changed.setdefault(pair, {})[key[0]] = None
    runs = {key[0] for key in set(before) & set(after)} - {None}
    for (path, was, now), where in changed.items():
        named = () if set(where) >= runs else tuple(sorted(where))
        out.append(Difference(path, json.loads(was), json.loads(now), named))
    return out


def differences(before: dict, after: dict) -> dict[str, list[Difference]]:
    """Experiment -> what differs between two resolved, validated profiles, in the registry's order; an
    experiment whose jobs read the same settings in both is left out."""
    a, b = by_run(before), by_run(after)
    out = {}
    for e in registry.load():
        found = experiment_differences(a.get(e.name, {}), b.get(e.name, {}))
        if found:
            out[e.name] = found
    return out


def shown(value) -> str:
    """A setting's value, short: a long list by its ends and length; 'not set' for none."""
    if value is None:
        return "not set"
    if isinstance(value, list) and len(value) > 4:
        return f"[{shown(value[0])}, …, {shown(value[-1])}] ({len(value)})"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list, str)) else str(value)


def line(name: str, found: list[Difference]) -> str:
    """One experiment's line: each setting that differs, first profile's value → second's, grouped by setting."""
    parts: dict[str, list[str]] = {}
    for d in found:
        runs = f" ({', '.join(d.runs)})" if d.runs else ""
        parts.setdefault(d.setting, []).append(f"{shown(d.before)} → {shown(d.after)}{runs}")
    title = registry.get(name).title
    return f"- [{title}]({name}.md): " + "; ".join(f"`{k}` {', '.join(v)}" for k, v in parts.items())


def differences_text(before: dict, after: dict) -> str:
    """The list, one line per experiment whose settings differ (Markdown), with a sentence naming the two."""
    found = differences(before, after)
    names = (before["profile"], after["profile"])
    if not found:
        return f"The `{names[0]}` and `{names[1]}` profiles set every experiment alike.\n"
    lines = "\n".join(line(name, d) for name, d in found.items())
    return (f"The experiments whose settings differ between the `{names[0]}` and `{names[1]}` profiles "
            f"({len(found)} of {len(registry.load())}), from the two profile files as the plan reads them "
            f"(`{names[0]}` value → `{names[1]}` value; runs named where a setting differs for some only):\n\n"
            f"{lines}\n")


def budget_differences() -> str:
    """The list between quick and chapter, from config/quick.yaml and config/chapter.yaml of this checkout."""
    before, after = (load(registry.ROOT / "config" / f"{name}.yaml") for name in BUDGET_PAIR)
    return differences_text(before, after)
