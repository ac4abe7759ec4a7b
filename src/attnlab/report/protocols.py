"""The papers' protocols beside this project's: one table on each survey page, from its page module's PROTOCOL.

A protocol is a fact about a paper, so the paper's side is typed once, in the page module (`PROTOCOL`, YAML:
`sources`, the papers; per row, `aspect`, `paper`, `here` and `why`: why the two differ, the method's reason,
never a result). What is run here is not typed there: each `here` cell is a template filled from the profile the
page describes, so that the table follows the profile and cannot fall behind it. A field {a.b.c} is that
setting, {#a.b} the number of its items, {name} or {name:arg} one of DERIVED or of the page module's own `DERIVED`
(name -> function(site, arg) -> text): a value the settings imply but do not state (a run's model, the positions
the in-context-learning score reads at the profile's length). No number about results belongs in a protocol.
Site.skeleton puts the table at the page's <!-- attnlab:protocol -->.

Every page with a survey claim (S...) has a table, but scores (S2: E3's saturation table read for the survey)
and equivalence (S3: a unit check of masking and cross-attention): neither follows a paper's experiment.
"""
from __future__ import annotations

import importlib
import re
from functools import lru_cache

import pandas as pd

from attnlab import registry
from attnlab.config import run_settings, runs_settings, seeds as profile_seeds
from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec
from attnlab.report.format import fmt, md_table

FIELD = re.compile(r"\{(#?)([A-Za-z_][\w.-]*)(?::([\w.-]+))?\}")  # {a.b}, {#a.b}, {name}, {name:arg}
ROW = ("aspect", "paper", "here", "why")
HEADERS = {"aspect": "", "paper": "the paper", "here": "here", "why": "why they differ"}


@lru_cache(maxsize=None)
def protocols() -> dict:
    """Page name -> its protocol (the PROTOCOL of its page module), checked: each with its sources and rows of
    ROW."""
    doc = {}
    for e in registry.load():
        entry = getattr(importlib.import_module(e.page), "PROTOCOL", None)
        if entry is None:
            continue
        where = f"{e.page}.PROTOCOL"
        if not isinstance(entry, dict) or set(entry) != {"sources", "rows"} or not entry["rows"]:
            raise AttnlabError(f"{where}: needs `sources` and a list of `rows`, and nothing else")
        for i, row in enumerate(entry["rows"]):
            if not isinstance(row, dict) or set(row) != set(ROW):
                raise AttnlabError(f"{where} row {i + 1}: needs exactly {', '.join(ROW)}")
        doc[e.name] = entry
    return doc


@lru_cache(maxsize=None)
def own_fields(page: str) -> dict:
    """The fields a page module derives for its own protocol (its `DERIVED`), {} for none."""
    return getattr(importlib.import_module(registry.get(page).page), "DERIVED", {})


def blocks(site, page: str) -> dict[str, str]:
    """{"protocol": the page's table} for a page that has one, {} for the others."""
    return {"protocol": block(site, page)} if page in protocols() else {}


def block(site, page: str) -> str:
    """The page's table: aspect, the paper's protocol, this profile's (filled from its settings), why."""
    entry = protocols()[page]
    rows = pd.DataFrame([labelled({**row, "aspect": f"**{row['aspect']}**",
                                   "here": filled(row["here"], site, f"{page} row '{row['aspect']}'",
                                                  own_fields(page))})
                         for row in entry["rows"]])
    lead = (f"What the papers did beside what profile `{site.profile}` runs, aspect by aspect; the *here* column "
            f"is written from the profile's settings. Sources: {entry['sources']}.")
    return lead + "\n\n" + md_table(rows, HEADERS) + "\n"


def labelled(row: dict) -> dict:
    """Each text cell led by its column's name, which only a narrow screen shows (attnlab.css stacks the table's
    cells there, so the header row is out of sight)."""
    return {k: v if k == "aspect" else f'<span class="attnlab-protocol-label">{HEADERS[k]}</span> {v}'
            for k, v in row.items()}


def filled(template: str, site, where: str, own: dict | None = None) -> str:
    """A `here` template with every field replaced by what the settings say (an unknown one is an error); `own`:
    the fields the page derives itself."""
    derived = {**DERIVED, **(own or {})}

    def one(m):
        count, name, arg = m.group(1), m.group(2), m.group(3)
        if name in derived and not count:
            return derived[name](site, arg)
        value = setting(site.config, name, where)
        if count:
            if not isinstance(value, (list, dict)):
                raise AttnlabError(f"protocol of {where}: {{#{name}}} counts items, and '{name}' has none")
            return str(len(value))
        return shown(value)
    return FIELD.sub(one, template)


def setting(cfg: dict, path: str, where: str):
    """The value at a dotted path of the profile."""
    value = cfg
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise AttnlabError(f"protocol of {where}: no setting '{path}' in the profile")
        value = value[key]
    return value


def shown(value) -> str:
    """A setting as the table says it: lists as comma-separated items, mappings as 'name (its value)', large
    counts with thousands separators (not four-digit ones: seeds and widths read better without)."""
    if isinstance(value, dict):
        return ", ".join(f"{k} ({shown(v)})" if isinstance(v, (dict, list)) else f"{k} {shown(v)}"
                         for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(shown(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return fmt(value)


def counted(n: int, thing: str) -> str:
    return f"{shown(n)} {thing}{'' if n == 1 else 's'}"


def described(spec: ModelSpec) -> str:
    """A model's shape in words: blocks, width, heads (and shared key/value heads where there are fewer)."""
    kv = f" sharing {counted(spec.kv_heads, 'key/value head')}" if spec.kv_heads != spec.heads else ""
    return f"{counted(spec.n_blocks, 'block')} of width {spec.d_model} with {counted(spec.heads, 'head')}{kv}"


# ------------------------------------------------------------------ values the settings imply

def seeds(site, _=None) -> str:
    """The profile's seeds (a version from before the list: its one seed)."""
    listed = profile_seeds(site.config)
    return f"{'seeds' if len(listed) > 1 else 'seed'} {shown(listed)}"


def device(site, experiment: str) -> str:
    """The device a benchmark ran on, as its result file names it; before it has run, the profile's choice."""
    r = site.res.result(experiment)
    if r and r.get("device"):
        return r["device"]
    return f"the profile's device (`{site.config.get('device')}`; not run yet)"


def model(site, run: str) -> str:
    """A training run's model in words."""
    found = run_settings(site.config, run)
    return described(found.spec) if found else f"– (this profile declares no run {run})"


def budget(site, run: str) -> str:
    """A training run's steps and batch."""
    found = run_settings(site.config, run)
    return f"{shown(found.train['steps'])} steps of {shown(found.train['batch_size'])} windows" if found else "–"


def kv_heads(site, experiment: str) -> str:
    """The key/value head counts of an experiment's runs trained from scratch (no init_from)."""
    counts = sorted({run.spec.kv_heads for run in runs_settings(site.config, experiment).values()
                     if not run.init_from}, reverse=True)
    return either([shown(n) for n in counts]) or "–"


def either(items: list[str]) -> str:
    """'a, b or c' (one item: itself; none: '')."""
    return " or ".join(filter(None, [", ".join(items[:-1]), *items[-1:]]))


def uptraining(site, experiment: str) -> str:
    """Each up-trained run's steps, and their share of the steps of the run it starts from."""
    parts = []
    for name, run in runs_settings(site.config, experiment).items():
        if run.init_from:
            steps, source = run.train["steps"], run.init_from
            of = run_settings(site.config, source).train["steps"]
            parts.append(f"{name} trains {shown(steps)} steps, {fmt(round(100 * steps / of, 1))} % of {source}'s "
                         f"{shown(of)}")
    return "; ".join(parts) or "– (this profile up-trains no run)"


def context(site, run: str) -> str:
    """The tokens a training run's model reads at once."""
    found = run_settings(site.config, run)
    return shown(found.spec.context) if found else "–"


def approximations(site, experiment: str, kind: str) -> list[tuple[str, ModelSpec]]:
    """An experiment's runs with attention `kind`, and their specs."""
    return [(name, run.spec) for name, run in runs_settings(site.config, experiment).items()
            if run.spec.attention == kind]


DERIVED = {"seeds": seeds, "device": device, "model": model, "budget": budget, "kv_heads": kv_heads,
           "uptraining": uptraining, "context": context}  # besides each page module's own DERIVED
