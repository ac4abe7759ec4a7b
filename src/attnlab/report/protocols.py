"""The papers' protocols beside this project's: one table on each survey page, from its page module's PROTOCOL.

A protocol is a fact about a paper, so the paper's side is typed once, in the page module (`PROTOCOL`, YAML:
`sources`, the papers; per row, `aspect`, `paper`, `here` and `why`: why the two differ, the method's reason,
never a result). What is run here is not typed there: each `here` cell is a template filled from the profile the
page describes, so that the table follows the profile and cannot fall behind it. A field {a.b.c} is that
setting, {#a.b} the number of its items, {name} or {name:arg} one of DERIVED: a value the settings imply but do
not state (a run's model, the positions the in-context-learning score reads at the profile's length). No number
about results belongs in a protocol. Site.skeleton puts the table at the page's <!-- attnlab:protocol -->.

Every page with a survey claim (S...) has a table, but scores (S2: E3's saturation table read for the survey)
and equivalence (S3: a unit check of masking and cross-attention): neither follows a paper's experiment.
"""
from __future__ import annotations

import re
from functools import lru_cache

import pandas as pd

from attnlab import registry
from attnlab.config import seeds as profile_seeds
from attnlab.runs import entries, find_run, spec_from_config, train_settings
from attnlab.errors import AttnlabError
from attnlab.settings.induction import EARLY, LATE, window
from attnlab.nn.spec import ModelSpec
from attnlab.report.format import fmt, md_table

FIELD = re.compile(r"\{(#?)([A-Za-z_][\w.-]*)(?::([\w.-]+))?\}")  # {a.b}, {#a.b}, {name}, {name:arg}
ROW = ("aspect", "paper", "here", "why")
HEADERS = {"aspect": "", "paper": "the paper", "here": "here", "why": "why they differ"}


@lru_cache(maxsize=None)
def protocols() -> dict:
    """Page name -> its protocol (the PROTOCOL of its page module), checked: each with its sources and rows of
    ROW."""
    import importlib

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


def blocks(site, page: str) -> dict[str, str]:
    """{"protocol": the page's table} for a page that has one, {} for the others."""
    return {"protocol": block(site, page)} if page in protocols() else {}


def block(site, page: str) -> str:
    """The page's table: aspect, the paper's protocol, this profile's (filled from its settings), why."""
    entry = protocols()[page]
    rows = pd.DataFrame([labelled({**row, "aspect": f"**{row['aspect']}**",
                                   "here": filled(row["here"], site, f"{page} row '{row['aspect']}'")})
                         for row in entry["rows"]])
    lead = (f"What the papers did beside what profile `{site.profile}` runs, aspect by aspect; the *here* column "
            f"is written from the profile's settings. Sources: {entry['sources']}.")
    return lead + "\n\n" + md_table(rows, HEADERS) + "\n"


def labelled(row: dict) -> dict:
    """Each text cell led by its column's name, which only a narrow screen shows (attnlab.css stacks the table's
    cells there, so the header row is out of sight)."""
    return {k: v if k == "aspect" else f'<span class="attnlab-protocol-label">{HEADERS[k]}</span> {v}'
            for k, v in row.items()}


def filled(template: str, site, where: str) -> str:
    """A `here` template with every field replaced by what the settings say (an unknown one is an error)."""
    def one(m):
        count, name, arg = m.group(1), m.group(2), m.group(3)
        if name in DERIVED and not count:
            return DERIVED[name](site, arg)
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


def next_seed(site, _=None) -> str:
    """The seed of S9's second model (attnlab.experiments.explanation trains it at the profile's seed + 1)."""
    return str(site.config["seed"] + 1)


def device(site, experiment: str) -> str:
    """The device a benchmark ran on, as its result file names it; before it has run, the profile's choice."""
    r = site.res.result(experiment)
    if r and r.get("device"):
        return r["device"]
    return f"the profile's device (`{site.config.get('device')}`; not run yet)"


def encoder(site, _=None) -> str:
    return "both ways" if site.config["seq2seq"]["bidirectional"] else "forward only"


def wirings(site, _=None) -> str:
    """S1's wirings as its result ran them (before it has run, as the profile sets them): which variant is in
    which, and whether Luong's feeds its input. A result from before the two wirings ran every score in Luong's."""
    from attnlab.settings.seq2seq import WIRINGS

    r = site.res.result("seq2seq")
    s = site.config["seq2seq"] if r is None else r["settings"]
    variants = s["variants"]
    if r is not None and "wirings" not in r:
        return (f"Every score ({shown([v for v in variants if v != 'none'])}) in Luong's wiring without input "
                f"feeding (this version predates Bahdanau's wiring): the variant named after Bahdanau is his "
                f"additive score there, not his network")
    feeding = s["input_feeding"]
    bahdanau = [v for v in variants if WIRINGS[v] == "bahdanau"]
    luong = [v for v in variants if WIRINGS[v] == "luong"]
    parts = ([f"{shown(bahdanau)} in Bahdanau's wiring as the paper states it (deep output: one maxout layer)"]
             if bahdanau else []) + ([f"{shown(luong)} in Luong's, {'with' if feeding else 'without'} input feeding"]
                                     if luong else [])
    text = "; ".join(parts) or "no attention variant"
    return text[0].upper() + text[1:]


def declares(site, run: str) -> bool:
    """Whether the profile declares training run `run` (a published version may predate it)."""
    try:
        find_run(site.config, run)
        return True
    except AttnlabError:
        return False


def model(site, run: str) -> str:
    """A training run's model in words."""
    if not declares(site, run):
        return f"– (this profile declares no run {run})"
    return described(spec_from_config(site.config, run))


def budget(site, run: str) -> str:
    """A training run's steps and batch."""
    if not declares(site, run):
        return "–"
    t = train_settings(site.config, run)
    return f"{shown(t['steps'])} steps of {shown(t['batch_size'])} windows"


def fresh(site, experiment: str) -> dict:
    """The runs of a training experiment trained from scratch (no init_from)."""
    return {name: run for name, run in entries(site.config.get(experiment)).items() if not run.get("init_from")}


def kv_heads(site, experiment: str) -> str:
    """The key/value head counts of an experiment's runs trained from scratch."""
    counts = sorted({spec_from_config(site.config, name).kv_heads for name in fresh(site, experiment)}, reverse=True)
    return either([shown(n) for n in counts]) or "–"


def either(items: list[str]) -> str:
    """'a, b or c' (one item: itself; none: '')."""
    return " or ".join(filter(None, [", ".join(items[:-1]), *items[-1:]]))


def uptraining(site, experiment: str) -> str:
    """Each up-trained run's steps, and their share of the steps of the run it starts from."""
    cfg, parts = site.config, []
    for name, run in entries(cfg.get(experiment)).items():
        if run.get("init_from"):
            steps, source = train_settings(cfg, name)["steps"], run["init_from"]
            of = train_settings(cfg, source)["steps"]
            parts.append(f"{name} trains {shown(steps)} steps, {fmt(round(100 * steps / of, 1))} % of {source}'s "
                         f"{shown(of)}")
    return "; ".join(parts) or "– (this profile up-trains no run)"


def studied(site, _=None) -> str:
    """E8's model that S9 explains, in words (winograd.model with that model's overrides)."""
    w, name = site.config["winograd"], site.config["explanation"]["model"]
    spec = ModelSpec(**{**w["model"], **w["models"][name], "vocab_size": 2, "context": 2})
    return f"`{name}` model ({described(spec)})"


NORMS = {"pre": "a LayerNorm before each attention layer and one before the unembedding",
         "post": "a LayerNorm after each block", "none": "no LayerNorm"}
POSITIONS = {"learned": "learned positions added to the token embeddings",
             "sinusoidal": "sinusoidal positions added to the token embeddings",
             "rope": "rotary positions in the queries and keys", "alibi": "ALiBi's distance penalties on the scores",
             "none": "no positions"}


def attention_only(site, _=None) -> str:
    """S10's control models in words: what 'attention-only' keeps of the chapter's block."""
    s = site.config["induction"]
    spec = ModelSpec(**{**s["model"], "vocab_size": s["vocab_size"], "context": s["length"]})
    layers = " and ".join(map(str, s["layers"]))
    mlp = "an MLP in each block" if spec.mlp else "no MLP"
    return (f"{layers} layers of width {spec.d_model} with {counted(spec.heads, 'head')} and {mlp}, but "
            f"{NORMS[spec.norm]}, and {POSITIONS[spec.position]}")


def induction_budget(site, _=None) -> str:
    """S10's training of the control models: the profile's train section under induction.train."""
    t = {**site.config["train"], **site.config["induction"]["train"]}
    return f"{shown(t['steps'])} steps of {shown(t['batch_size'])} sequences"


def context(site, run: str) -> str:
    """The tokens a training run's model reads at once."""
    return shown(spec_from_config(site.config, run).context) if declares(site, run) else "–"


def icl(site, source: str) -> str:
    """Where the in-context-learning score reads an input: S10's control sequences ('induction') or a training
    run's windows (its context), as attnlab.experiments.induction.icl_score does."""
    if source == "induction":
        T = site.config["induction"]["length"]
    elif declares(site, source):
        T = spec_from_config(site.config, source).context
    else:
        return "–"
    early, late = window(T, EARLY), window(T, LATE)
    return f"positions {span(early)} and {span(late)} of {shown(T)}"


def icl_shares(site, _=None) -> str:
    """The shares of the length at which the in-context-learning score reads its two ends."""
    return f"{fmt(EARLY)} and {fmt(LATE)}"


def span(s: slice) -> str:
    return str(s.start) if s.stop - s.start == 1 else f"{s.start}–{s.stop - 1}"


def approximations(site, experiment: str, kind: str) -> list[tuple[str, ModelSpec]]:
    """An experiment's runs with attention `kind`, and their specs."""
    specs = [(name, spec_from_config(site.config, name)) for name in entries(site.config.get(experiment))]
    return [(name, spec) for name, spec in specs if spec.attention == kind]


def window_runs(site, experiment: str) -> str:
    """Each window run of an experiment: its window and which tokens are global."""
    def globals_(spec):
        if spec.global_every:
            k = spec.global_every
            return f", positions {k - 1}, {2 * k - 1}, … global"
        return f", the first {spec.n_global} tokens global" if spec.n_global else ""
    return "; ".join(f"{name} (window {spec.window}{globals_(spec)})"
                     for name, spec in approximations(site, experiment, "window")) or "– (no window run)"


def favor_runs(site, experiment: str) -> str:
    """Each FAVOR+ run of an experiment and its number of features."""
    return "; ".join(f"{name} ({spec.features} features)"
                     for name, spec in approximations(site, experiment, "favor")) or "– (no FAVOR+ run)"


DERIVED = {"seeds": seeds, "next_seed": next_seed, "device": device, "encoder": encoder, "wirings": wirings,
           "model": model, "budget": budget, "kv_heads": kv_heads, "uptraining": uptraining, "studied": studied,
           "attention_only": attention_only, "induction_budget": induction_budget, "context": context, "icl": icl,
           "icl_shares": icl_shares, "window_runs": window_runs, "favor_runs": favor_runs}
