"""The site's chrome: the stamp atop every page, the commands that rerun it, the blocks every experiment page has
(its verdicts, the provenance of its run files, its seeds, the settings) and the HTML they are made of. What they
show (run files, verdicts, config, versions, pools) is attnlab/sitedata.py's SiteData, which Site extends.

Each page is a module attnlab.report.pages.<name> with `blocks(site) -> {marker: markdown}`, filling the
`<!-- attnlab:marker -->` places of docs/<name>.md (report/build.py renders and builds them); an experiment's page
makes it with report/context.py's experiment_page.
"""
from __future__ import annotations

import html
import math
from collections import Counter
from pathlib import Path

import pandas as pd

from attnlab import layout, registry
from attnlab.claims.checks import accepts, describe, distance, passes
from attnlab.claims.design import first_look
from attnlab.claims.outcome import UNMEASURED, VERDICTS, Outcome
from attnlab.claims.registry import DESCRIPTIVE, Registry
from attnlab.claims.verdicts import BUDGET, Verdict, dominant_words
from attnlab.config import digest, seeds as profile_seeds
from attnlab.report import charts, protocols
from attnlab.report.budget import sentence
from attnlab.report.format import (badge, breakable, cell, chart, clocks, code, fmt, md_table, nobreak, not_run,
                                   span, spread, total)
from attnlab.report.published import beside, differing
from attnlab.results import Results, row_order
from attnlab.sitedata import SiteData
from attnlab.crate import holding
from attnlab.versions import ALIAS


NOT_RUN = Outcome.NOT_RUN.value  # the key of a missing result's warning among a page's blocks (no marker has a space)
UNDECIDED = (Outcome.NOT_REPRODUCED, Outcome.INCONCLUSIVE)  # the claims a reader is pointed at first


def holds(manifest: dict) -> str:
    """' · holds only <experiments>' for a version that holds some experiments (its other pages show 'not
    run'), and ' · set over its profile: <setting> = <value>, …' for one published with settings laid over its
    profile's file (the manifest's `set`)."""
    out = ""
    if not manifest.get("complete", True):
        out += " · holds only " + html.escape(holding(manifest))
    if manifest.get("set"):
        out += " · set over its profile: " + ", ".join(f"<code>{html.escape(k)}</code>\u00a0=\u00a0"
                                                        f"{'unset' if v is None else html.escape(str(v))}"
                                                        for k, v in manifest["set"].items())
    return out


class Site(SiteData):
    """What every page shows around its numbers: the stamp atop it, the commands that rerun it, the blocks every
    experiment page has (verdicts, provenance, seeds, settings) and their HTML; the data they draw from is
    SiteData's."""

    def __init__(self, res: Results, registry: Registry, verdicts: list[Verdict], config: dict,
                 manifest: dict | None = None, built_from: str = "unknown", selector: bool = False,
                 versions_root: Path | None = None, known: dict | None = None, pool=None,
                 folder: Path | None = None):
        super().__init__(res, registry, verdicts, config, manifest=manifest, versions_root=versions_root,
                         known=known, pool=pool, folder=folder)
        self.built_from = built_from  # the commit the site's code and prose come from
        self.selector = selector      # built among every published version (`attnlab versions`)

    def engine(self) -> str:
        """Which claims engine judged the verdicts this site shows, for the stamp (after the site's own commit):
        today's code over the run files, and for a published version, how its frozen claims.csv (the publish
        commit's) compares."""
        text = f" · verdicts: today's claims (that commit's) over {'its' if self.manifest else 'these'} run files"
        if not self.manifest:
            return text
        when = f"commit <code>{html.escape(str(self.manifest.get('published_from') or self.manifest['commit']))}</code>"
        if self.frozen() is None:
            return text + f"; published ({when}) without a claims.csv of its own"
        differ = differing(self.verdicts, self.frozen())
        return text + (f", not its frozen claims.csv ({when}), which differs on {len(differ)} claim"
                       f"{'s' if len(differ) != 1 else ''} (both shown, with why)" if differ else
                       f"; its frozen claims.csv ({when}) gives every claim the same verdict and value")

    def stamp(self, page: str) -> str:
        """The line atop every page: which results these are (version and commit, whether it is the version of
        record), the site's own commit, and links to the files behind the pages (the version's manifest, the
        verdicts as CSV); in a tree of versions, a selector that opens the same page, at the same anchor, in
        another version."""
        m, record = self.manifest, self.latest()
        if m:
            text = (f"Version <code>{html.escape(m['version'])}</code> · runs at commit <code>{m['commit']}</code> on "
                    f"{html.escape(m['hardware'])} · published {m['published'][:10]}" + holds(m)
                    + (" · the version of record" if m["version"] == record else "")
                    + (f" · with the seeds of {len(self.pool_versions()) - 1} other version"
                       f"{'s' if len(self.pool_versions()) > 2 else ''} pooled in" if len(self.pool_versions()) > 1 else ""))
        else:
            text = f"Unpublished results in <code>{html.escape(str(self.res.root.name))}/</code>"
        text += f" · site built from commit <code>{html.escape(self.built_from)}</code>" + self.engine()
        text += (' · <a href="downloads/manifest.json">manifest</a>' if m else "") + \
            ' · <a href="downloads/claims.csv">claims.csv</a>'
        if self.frozen() is not None:
            text += ' · <a href="downloads/claims-published.csv">claims.csv as published</a>'
        if self.selector and m:
            target = page.removesuffix(".md") + ".html"
            if record and m["version"] != record:
                text += f' · <a href="../{ALIAS}/{target}">the version of record</a>'
            options = "".join(
                f'<option value="../{v["version"]}/{target}"{" selected" if v["version"] == m["version"] else ""}>'
                f'{html.escape(v["version"])}{" (latest)" if v["version"] == record else ""}</option>'
                for v in self.versions())
            text += (' · <label>version <select class="attnlab-versions" aria-label="version" '
                     f'onchange="window.location.href = this.value + window.location.hash">{options}</select></label>')
            text += ' · <a href="../history/index.html">every claim across the versions</a>'
        return f'<div class="attnlab-stamp">{text}</div>'

    def snakemake(self, target: str = "", gpu: bool = False, cores: int = 4) -> str:
        """The command that (re)builds `target`. Targets go first: --resources and --config take several
        values and would swallow a target written after them."""
        gpu_flag = " --resources gpu=1" if gpu else ""
        target = f" {self.outdir}/{target}" if target else ""
        return f"snakemake{target} --cores {cores}{gpu_flag} --config profile={self.profile}"

    def rerun_code(self, commands: str) -> str:
        """Rerun commands as a code block; for a published version, first where its own files are and which
        commit ran them, since a rerun writes the profile's folder from the code checked out."""
        if self.manifest:
            commands = (f"# this version's run files: {self.rdir}/ (runs at commit {self.manifest['commit']}); "
                        f"a rerun writes {self.outdir}/ with the code checked out\n" + commands)
        return code(commands)

    def run_target(self, experiment: str, runs: list[str]) -> str:
        """The run files of training runs at every seed of the profile, as a Snakemake target (bash braces)."""
        return layout.run_file(experiment, braces(runs), braces(profile_seeds(self.config)))

    def skeleton(self, name: str, rerun: str | None = None) -> dict[str, str]:
        """The blocks every experiment page has; `rerun` replaces the default command (rebuild its run files). A
        survey page also has its papers' protocols beside this profile's (its page module's PROTOCOL). Where the
        experiment's result file is missing, they carry its not-run warning under NOT_RUN: the page module adds
        only what needs no result, and the renderer (build.render) fills every other marker of the template."""
        e = registry.get(name)
        if rerun is None:
            rerun = self.snakemake(e.result or "", gpu=e.gpu, cores=1 if e.kind == "analysis" else 2)
        out = {"verdicts": self.verdicts_block(name), "rerun": self.rerun_code(rerun),
               "provenance": self.provenance_block(self.files_of([name])),
               "seeds": self.seeds_block(name) if e.trains else "", **protocols.blocks(self, name)}
        if self.res.result(name) is None if e.result else not self.res.experiment(name):
            out[NOT_RUN] = self.missing(name)  # the renderer fills the page's other markers around it
        return out

    def missing(self, name: str) -> str:
        """The warning a page shows where an experiment's result file (a training experiment's every run) is not
        there yet."""
        e = registry.get(name)
        if e.trains:
            return not_run(f"{self.rdir}/{layout.run_file(name, '*', '*')}",
                           command=self.snakemake("claims.csv", gpu=True))
        return not_run(f"{self.rdir}/{e.result}", command=self.snakemake(e.result, gpu=e.gpu, cores=1))

    # ------------------------------------------------------------ shared blocks
    def seeds_block(self, name: str) -> str:
        """A training experiment's runs over seeds: validation and training perplexity as mean ± standard
        deviation (every seed on hover), a chart of every seed, and a sentence on the size of the spread."""
        res = self.res
        runs = row_order(res.experiment(name), self.config.get(name) or {})  # as the profile declares them
        if not runs:
            return "_No run yet._\n"
        seeds = sorted({s for r in runs for s in res.seeds(r) if s is not None})
        table = pd.DataFrame([{"run": r, "seeds": len(res.seeds(r)), "val": res.spread(r, "val_ppl"),
                               "train": res.spread(r, "train_ppl")} for r in runs])
        text = md_table(table, {"run": "run", "seeds": "seeds", "val": "val ppl (mean ± sd)",
                                "train": "train ppl (mean ± sd)"}, {"val": spread(2), "train": spread(2)})
        if len(seeds) < 2:
            return (f"Every run here was trained at one seed ({', '.join(map(str, seeds)) or 'unknown'}): the "
                    "profile lists one, so nothing on this page measures how much the seed moves a result.\n\n"
                    + text + "\n")
        widest = max((sp for sp in table["val"] if sp is not None and sp.sd is not None),
                     key=lambda sp: sp.sd / sp.mean, default=None)
        lead = (f"Every run was trained at {len(seeds)} seeds ({', '.join(map(str, seeds))}): the same data, "
                "model and budget; only the initial weights and the order of the batches change. Each claim "
                "below is computed once per seed, and its value is the mean (hover it for each seed's).")
        if widest is not None:
            run = table["run"][list(table["val"]).index(widest)]
            lead += (f" Relative to its mean, the widest spread of validation perplexity is {run}'s: a standard "
                     f"deviation of {widest.sd:.2f}, {100 * widest.sd / widest.mean:.1f} % of its mean.")
        per_seed = pd.DataFrame([{"run": r, "seed": str(k), "value": v} for r in runs
                                 if (sp := res.spread(r, "val_ppl")) for k, v in sp.by_seed.items()])
        drawn = chart(f"chart-seeds-{name}", charts.seeds_chart(per_seed, runs)) if len(per_seed) else ""
        return lead + "\n\n" + text + "\n\n" + drawn

    def settings_table(self) -> str:
        """The profile's training settings, as the runs received them."""
        cfg = self.config
        data, model, train = (cfg.get(k) or {} for k in ("data", "model", "train"))
        settings = pd.DataFrame([
            ("profile", self.profile), ("profile digest", breakable(digest(cfg))),
            ("seeds", seeds_setting(profile_seeds(cfg), self.seeds(), bool(self.pool and self.pool.pooled),
                                    {e: h[0] for e, h in sorted(self.pool.held_back.items())} if self.pool else {})),
            ("corpus sha256", breakable(data.get("sha256"))), ("vocabulary", data.get("vocab_size")),
            ("d_model", model.get("d_model")), ("context", model.get("context")),
            ("steps", train.get("steps")), ("batch", train.get("batch_size")),
            ("learning rate (AdamW)", train.get("lr")), ("weight decay", train.get("weight_decay")),
            ("warmup steps", train.get("warmup_steps")),
            ("precision", train.get("precision")), ("torch.compile", train.get("compile")),
            ("AdamW implementation", train.get("adamw")),  # the speed settings, where the profile sets them
        ], columns=["setting", "value"])
        return md_table(settings.dropna()) + (  # a blank line: a line right under a table is one more row of it
            "\n\nThe profile digest hashes the whole profile (a version's manifest records it as `config_digest`); "
            "each run file's config hash covers only the settings its job read.\n")

    def verdicts_block(self, page: str | None, link: bool = False) -> str:
        """The verdicts as a table narrow enough to keep the verdict in view; on an experiment's page, each
        claim's computation, test and run files follow, one expandable block per claim (its anchor)."""
        chosen = self.page_verdicts(page)
        if not chosen:
            return "_No claims registered for this page._\n"
        survey = {v.claim.id.startswith("S") for v in chosen}  # the survey's claims are S1...S11
        source = "chapter / survey" if len(survey) > 1 else "survey" if survey == {True} else "chapter"
        columns = [("claim", "id"), (f"what the {source} says", "text"), (source, "value"),
                   ("reproduced (± SE)", "value"), ("verdict", "verdict")]
        rows = [("", [f'<a href="{v.claim.experiment + ".html" if link else ""}#{anchor(v.claim.id)}">'
                      f"{html.escape(v.claim.id)}</a>{origin_mark(v.claim)}", html.escape(v.claim.claim),
                      parts_cell(v.claim.chapter_value), reproduced_cell(v),
                      f"{badge(v.verdict)}{why_not(v)}{alone(v)}{beside(v, self.frozen(), self.reads_elsewhere(v.claim))}"]) for v in chosen]
        out = cards_table("verdicts", columns, rows) + "\n"
        pooled = self.pool.words(page) if self.pool and page else ""
        if pooled and page in self.pool.second_looks:
            out += f"\nThese verdicts are {html.escape(pooled)}.\n"
        elif pooled:
            out += f"\nThese verdicts rest on the seeds of every version of this budget whose runs were shaped alike, {html.escape(pooled)}.\n"
        apart = self.pool.apart.get(page) if self.pool and page else ""
        if apart:
            out += f"\nAnother device's versions of this budget are {html.escape(apart)}.\n"
        if not link:
            out = f'<p class="page-tally">On this page: {html.escape(tally(chosen))}.</p>\n\n' + out
            out += "\n" + verdict_reading(chosen, len(self.seeds()), self.larger(),
                                           first_look(self.config, self.manifest), self.unplanned(chosen))
            out += "\n\n" + "\n".join(self.claim_details(v) for v in chosen)
        return out + "\n"

    def claim_details(self, v: Verdict) -> str:
        """One claim, expandable: how its value is computed, the test and its outcome, why that tolerance,
        and the run files it read (linked: the site carries a copy of each under runs/)."""
        c = v.claim
        values = "".join(f"<li>{html.escape(part + ' = ' if part else '')}<code>{html.escape(expr)}</code></li>"
                         for part, expr in c.values.items())
        links = ", ".join(f'<a href="runs/{html.escape(f)}"><code>{html.escape(f)}</code></a>'
                          if f in self.res.provenance() else f"<code>{html.escape(f)}</code> (not run)"
                          for f in self.claim_files(c))
        return (f'<details class="claim" id="{anchor(c.id)}"><summary><strong>{html.escape(c.id)}</strong>'
                f'{origin_mark(c)} · '
                f"{html.escape(v.verdict)} · how it is computed and tested</summary>\n"
                f"<p>Computed from the run files as</p><ul>{values}</ul>\n"
                f"<p>Test: {html.escape(v.note or '–')}</p>\n" + seed_lines(v) +
                f"<p>Why this tolerance: {html.escape(c.tolerance_note)}</p>\n"
                f"<p>Run files: {links or '–'}</p>" + self.history_link(c.id) + "</details>\n")

    def history_link(self, claim_id: str) -> str:
        """In a tree of versions, a link to the claim on the History page; '' for a site alone."""
        if not (self.selector and self.manifest):
            return ""
        return f'<p><a href="../history/index.html#{anchor(claim_id)}">{html.escape(claim_id)} in every version</a></p>'


    def provenance_block(self, files: list[str]) -> str:
        prov = self.res.provenance()
        used = [f for f in files if f in prov]
        if not used:
            return "No run files yet, so nothing on this page has a provenance; every number is *not run*.\n"
        fields = {"commit": "commit", "config_hash": "config hash", "profile": "profile", "device": "device",
                  "clocks": "GPU clocks", "torch": "torch", "date": "date", "wall_seconds": "wall (s)",
                  "seed": "seed"}
        rows = [{"file": f"`{self.shown(f)}`", **{k: prov[f].get(k) for k in fields}} for f in used]
        for r in rows:
            r["clocks"] = clocks(r["clocks"])
        shared = ("commit", "config_hash", "profile", "device", "torch", "seed")
        if len({tuple(r[k] for k in shared) for r in rows}) == 1:  # one kind of run: a list, not a table
            first = {**rows[0], "file": ", ".join(r["file"] for r in rows),
                     "date": span(r["date"] for r in rows),
                     "wall_seconds": total(r["wall_seconds"] for r in rows),
                     "clocks": "; ".join(sorted({r["clocks"] for r in rows if r["clocks"]})) or None}
            labels = {"file": "files" if len(rows) > 1 else "file", **fields,
                      "wall_seconds": "wall (s, total)" if len(rows) > 1 else "wall (s)"}
            items = "\n".join(f"- **{label}**: {cell(first[k]) if first[k] is not None else '–'}"
                              for k, label in labels.items())
            return items + "\n"
        note = mixed({f: prov[f] for f in used})
        same = {k: rows[0][k] for k in fields if len({str(r[k]) for r in rows}) == 1}  # said once, above
        shared = "\n".join(f"- **{fields[k]}**: {cell(v) if v is not None else '–'}" for k, v in same.items())
        table = md_table(pd.DataFrame(rows), {"file": "file", **{k: fields[k] for k in fields if k not in same}})
        return ((f'!!! note "mixed provenance"\n    {note}\n\n' if note else "")
                + f"Shared by all {len(rows)} run files:\n\n{shared}\n\nWhere they differ:\n\n{table}\n")

    def shown(self, rel: str) -> str:
        """A run file's path as a reader finds it in the repository: a published version's paths start at its
        own folder (or the folder of the version pooled with it)."""
        return f"results/{rel}" if self.pool else f"{self.rdir}/{rel}"


SHARED = (("commit", "commits"), ("profile", "profiles"), ("torch", "torch versions"))  # one version: one of each
SHARED_IN_EXPERIMENT = ("device", "devices")  # one experiment's runs are set against each other


def mixed(prov: dict[str, dict]) -> str:
    """What the provenance of these run files (path -> record) must alarm on: files that should share a setting
    and do not. Every file shares the commit, the profile and torch; the runs of one experiment also share the
    device (their numbers are compared). Config hashes differ by design (each covers its own job's settings,
    its seed included), and so may devices across experiments (a rule's thread count). '' when nothing does."""
    notes = []
    for key, label in SHARED:
        distinct = {str(p.get(key)) for p in prov.values()}
        if len(distinct) > 1:
            notes.append(f"These run files come from {len(distinct)} different {label}.")
    key, label = SHARED_IN_EXPERIMENT
    by_experiment: dict[str, set] = {}
    for rel, p in prov.items():
        by_experiment.setdefault(rel.split("/")[0], set()).add(str(p.get(key)))
    split = [f"{name} ({len(found)})" for name, found in sorted(by_experiment.items()) if len(found) > 1]
    if split:
        notes.append(f"The runs of one experiment, set against each other, come from different {label}: "
                     f"{', '.join(split)}.")
    return " ".join(notes)


def braces(items: list) -> str:
    """One item, or several in bash brace expansion."""
    return str(items[0]) if len(items) == 1 else "{" + ",".join(map(str, items)) + "}"


ROLES = ("id", "verdict", "text", "value", "aside")  # what a column of a claims table is; see cards_table


def cards_table(kind: str, columns: list[tuple[str, str]], rows: list[tuple[str, list[str]]]) -> str:
    """Every table of claims (each page's verdicts, the dashboard, the comparison), as one markup that
    attnlab.css (table.cards) shows as a table on a wide screen and as a card per claim on a narrow one: the
    claim and its verdict on the first line, the text below, each value led by its column's name (data-label),
    the asides left out; no cell scrolls. `columns`: (header, role in ROLES); `rows`: (the tr's attributes, its
    cells' markup; a cell that is already a <td> is kept as it is). Every number of a value never breaks."""
    unknown = {role for _, role in columns} - set(ROLES)
    if unknown:
        raise ValueError(f"cards_table: unknown column role {sorted(unknown)}; the roles are {ROLES}")
    head = "".join(f'<th class="c-{role}">{html.escape(label, quote=False)}</th>' for label, role in columns)

    def td(content: str, label: str, role: str) -> str:
        if content.startswith("<td"):
            return content
        shown = nobreak(content) if role == "value" else content
        return f'<td class="c-{role}" data-label="{html.escape(label)}">{shown}</td>'
    body = "".join(f"<tr{' ' + attrs if attrs else ''}>"
                   + "".join(td(c, label, role) for c, (label, role) in zip(cells, columns)) + "</tr>"
                   for attrs, cells in rows)
    return f'<table class="cards {kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def reproduced_cell(v: Verdict) -> str:
    """Our value (± its error) for a verdict table; where the claim was computed at several seeds, each seed's
    value on hover."""
    per_seed = v.per_seed()
    if not per_seed:
        return parts_cell(v.shown())
    hover = "; ".join(f"{part + ' ' if part else ''}at seeds {', '.join(map(str, v.seeds))}: "
                      f"{', '.join(fmt(x) for x in values)}" for part, values in per_seed.items())
    return f'<span class="seeds" title="{html.escape(hover)}">{parts_cell(v.shown())}</span>'


def why_not(v: Verdict) -> str:
    """Under a verdict that is not a value's test (not run, diverged): why, e.g. which run diverged at which step;
    under an inconclusive one, what would settle it; under a computed one, that it is arithmetic."""
    if v.verdict in UNMEASURED and v.note:
        return f'<div class="why">{html.escape(v.note)}</div>'
    if v.verdict == Outcome.INCONCLUSIVE:
        draws = all(p.draws for p in v.parts.values() if p.settle == BUDGET)
        return f'<div class="why">{html.escape(settle_words(v.settle, draws))}</div>'
    if v.claim.kind == DESCRIPTIVE:
        return '<div class="why">descriptive: shown, tested by nothing</div>'
    return '<div class="why">computed, not measured</div>' if v.claim.kind == "computed" else ""


def seeds_setting(listed: list, held: list, pooled: bool = False, waiting: dict | None = None) -> str:
    """The profile's seeds for the settings table, and the seeds the pages show where they differ: the run files'
    where those are at other seeds; for a version pooled with others, the pooled seeds, and `waiting` (experiment
    -> its seeds held back until its planned second look is in: pooling.Pool.held_back), by experiment."""
    text, shown = ", ".join(map(str, listed)), ", ".join(map(str, held))
    if pooled:
        late = "".join(f"; {e}'s {', '.join(map(str, seeds))} held back until its planned second look is in"
                       for e, seeds in (waiting or {}).items())
        return f"{text} (pooled with other versions: the pages show seeds {shown}{late})"
    return text if sorted(map(str, listed)) == sorted(map(str, held)) else f"{text} (its run files are at {shown})"


def verdict_reading(verdicts: list[Verdict], seeds: int, larger: dict | None = None, first: int | None = None,
                    unplanned: tuple[str, ...] = ()) -> str:
    """Under a page's verdict table: why each claim that is not reproduced or inconclusive is so, part by part,
    from its interval, its test and the profile's seeds: a real difference (the interval clear of the test) or
    an interval too wide for the distance to the bound (and what would narrow it); then, for a claim neither
    this version nor the version of record reproduces, whether a larger budget changed it (`larger`: claim id ->
    budget.Larger, where a version of a larger budget is published; `seeds`: how many the runs were trained at,
    where a claim does not say how many it was judged at, as some runs of an experiment may hold fewer seeds;
    `first`: the design's first look, past which a claim is at its second look, the last; `unplanned`: the
    experiments whose profile plans no second look). '' where there is none."""
    lines = [f"- **{html.escape(v.claim.id)}{', ' + html.escape(p.name) if p.name else ''}** "
             f"({p.outcome if p.outcome == v.verdict else f'{p.outcome}; the claim: {v.verdict}'}): "
             + html.escape(part_reading(p, v.claim.checks[p.name], n := v.seed_count if v.seed_count > 1 else seeds,
                                        bool(first) and n > first,
                                        v.claim.experiment if unplanned and v.claim.experiment in unplanned else None),
                           quote=False)
             for v in verdicts if v.verdict in UNDECIDED
             for p in v.parts.values() if p.outcome in UNDECIDED]
    lines += [f"- **{html.escape(v.claim.id)}** at a larger budget: " + html.escape(sentence(x), quote=False)
              for v in verdicts if v.verdict == Outcome.NOT_REPRODUCED
              and (x := (larger or {}).get(v.claim.id)) and x.record_verdict == Outcome.NOT_REPRODUCED]
    if not lines:
        return ""
    return "\n<p class=\"verdict-reading\">Why these verdicts:</p>\n\n" + "\n".join(lines) + "\n"


def part_reading(p, check: dict, seeds: int, last_look: bool = False, unplanned: str | None = None) -> str:
    """One part that did not reproduce, in words: the value, its interval and the test, then which it is: a
    value clear of the test (a real difference), or an interval that holds a bound, and whether more seeds (at
    this spread), a longer evaluation or more of the run's own draws (the budget), or an error estimate would
    settle it; `last_look`: its seeds are the design's second look, after which the design adds none;
    `unplanned`: its experiment, where the profile plans no second look for it."""
    test = describe(check)
    if p.interval is None:
        if p.outcome == Outcome.NOT_REPRODUCED:
            return f"{fmt(p.value)} fails {test} as it stands (an exact test has no interval)."
        return f"{fmt(p.value)} against {test}: the run files state no error for it, so there is no interval to judge."
    lo, hi = p.interval
    half, gap = p.k * p.se, distance(check, p.value)
    text = (f"{fmt(p.value)} ± {fmt(half)} (k·SE; the error {dominant_words(p.dominant, p.draws)}) = "
            f"[{fmt(lo)}, {fmt(hi)}] against {test}: ")
    if p.outcome == Outcome.NOT_REPRODUCED:
        return text + (f"the value lies {fmt(gap)} past the test's bound, more than the interval's half-width: "
                       "a real difference, not the noise.")
    side = "passes" if passes(check, p.value) else "fails"
    text += f"the value itself {side} the test, {fmt(gap)} from its nearest bound, less than the half-width. "
    low, high, _ = accepts(check)
    if math.isfinite(low) and math.isfinite(high) and 2 * half > high - low:
        text += f"The interval is wider than the test's whole band ({fmt(high - low)}). "
    if p.settle == BUDGET and p.draws:
        return text + ("Its error is the spread the run files state over their own draws (seeds, initialisations "
                       "or points), and alone it spans that distance: more draws would shrink it, and how many is "
                       "the budget's (more draws would settle it).")
    if p.settle == BUDGET:
        return text + ("The evaluation's sampling error alone spans that distance, and more seeds do not shrink "
                       "it: the budget limits it (a longer evaluation would settle it).")
    if p.settle.isdigit():
        return text + (f"At this spread {p.settle} seeds would settle it; these runs were trained at {seeds}"
                       + (", the design's second look and its last, which adds no more seeds." if last_look else
                          f". The profile plans no second look for {unplanned}, so the design leaves it at this "
                          f"look." if unplanned else "."))
    return text + f"At this spread it {settle_words(p.settle)}; these runs were trained at {seeds}."


def settle_words(settle: str, draws: bool = False) -> str:
    """What an inconclusive verdict's settle says, in words (`draws`: its budget-limited parts' error is a stated
    spread over the run's own draws, not an evaluation's sampling)."""
    if settle.isdigit():
        return f"would settle with {settle} seeds at this spread"
    if settle == "budget":
        return "budget-limited: " + ("the spread over the run's own draws alone keeps it on the bound (more draws "
                                     "would shrink it)" if draws else "the sampling error alone keeps it on the bound")
    return f"would need {settle} seeds" if settle.startswith("more than") else settle


def alone(v: Verdict) -> str:
    """Under a verdict computed at several seeds: how many seeds would have given it alone, as one run would."""
    if not v.survives():
        return ""
    if v.survives() == "no error alone":
        return f'<div class="why">one seed alone: no error to judge {html.escape(errorless_words(v))} by</div>'
    held = sum(x == Outcome.REPRODUCED for x in v.single.values())
    return f'<div class="why">one seed alone: {held} of {len(v.single)} reproduce</div>'


def errorless_words(v: Verdict) -> str:
    """What one seed alone has no error to judge: 'it' where no part has an error of its own at one seed, else
    the parts that have none ('average_minus_block')."""
    return ", ".join(v.errorless_alone()) if v.judged_alone() else "it"


def parts_cell(value) -> str:
    """A value for a verdict table cell: a several-part value one named part per line, so the table wraps at
    part boundaries and spaces rather than inside a word."""
    if isinstance(value, dict):
        if list(value) == [""]:
            return html.escape(value[""])
        return "".join(f'<div class="part"><span class="part-name">{html.escape(str(k))}</span> '
                       f"{html.escape(v if isinstance(v, str) else fmt(v))}</div>" for k, v in value.items())
    return html.escape(fmt(value))


def seed_lines(v: Verdict) -> str:
    """Each seed's value and the verdict it alone would give (a claim computed at several seeds)."""
    if len(v.seeds) < 2:
        return ""
    items = "".join(f"<li>seed {seed}: {html.escape(fmt(value))} → {html.escape(v.single[seed])}"
                    f"{f' (no error of its own to judge {html.escape(errorless_words(v))} by)' if seed in v.unjudged else ''}"
                    "</li>"
                    for seed, value in v.seeds.items())
    return f"<p>At each seed alone (as one run would have judged it):</p><ul>{items}</ul>\n"


OURS = "our finding"  # the mark beside a claim of origin: ours
OURS_TITLE = "the project's own finding: a statement the chapter and the survey never make"


def origin_mark(claim) -> str:
    """Beside a claim's id wherever it is listed: 'ours' for a statement the sources never make ('' for theirs)."""
    return f' <span class="origin-ours" title="{html.escape(OURS_TITLE)}">{OURS}</span>' if claim.ours else ""


def by_kind(verdicts, noun: str = "claims", bold: bool = False) -> str:
    """Verdicts counted by kind: the measured ones' verdicts, then the computed ones' (arithmetic: hold or fail)
    and the descriptive ones (tested by nothing), each apart; '' for none. `bold`: the counts in Markdown bold."""
    def number(n: int) -> str:
        return f"**{n}**" if bold else str(n)

    def listed(vs) -> str:
        counts = Counter(v.verdict for v in vs)
        return ", ".join(f"{number(counts[k])} {k}" for k in VERDICTS if counts[k])

    groups = [(kind, [v for v in verdicts if v.claim.kind == kind]) for kind in ("measured", "computed", "descriptive")]
    words = {"measured": "{listed} of {n} measured {noun}",
             "computed": "{listed} of {n} computed {noun}, which hold or fail by arithmetic",
             "descriptive": "{n} descriptive {noun}, shown and tested by nothing"}
    one = {"claims": "claim", "findings": "finding"}.get(noun, noun)
    return "; ".join(words[kind].format(listed=listed(vs), n=len(vs), noun=noun if len(vs) != 1 else one)
                     .replace("which hold or fail", "which hold or fail" if len(vs) != 1 else "which holds or fails")
                     for kind, vs in groups if vs)


def tally(verdicts, bold: bool = False) -> str:
    """A list of claims counted, as a clause: the sources' claims (the chapter's and the survey's) by kind and
    verdict, then the project's own findings (origin: ours) apart from them, never in the same count."""
    sources = [v for v in verdicts if not v.claim.ours]
    ours = [v for v in verdicts if v.claim.ours]
    out = by_kind(sources, bold=bold)
    if ours:
        out += ("; counted apart, " if out else "") + (f"the project's own findings (marked “{OURS}”; the sources "
                                                       f"never state them): {by_kind(ours, 'findings', bold)}")
    return out or "no claims registered"


def anchor(claim_id: str) -> str:
    """A claim's own anchor on its page: C2.1 -> claim-C2-1."""
    return "claim-" + claim_id.replace(".", "-")
