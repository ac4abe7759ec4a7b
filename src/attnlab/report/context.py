"""What an experiment's page draws from (PageContext), and the one helper that makes its `blocks(site)`.

An experiment's page module (report/pages/<name>.py) writes `render(ctx) -> {marker: markdown}` for when the
experiment has run, optionally `unrun(ctx)` for the blocks that need no result, and ends with
`blocks = experiment_page(NAME, render, ...)`. The blocks every experiment page has (its verdicts, the rerun
command, the provenance, the protocol; Site.skeleton) and the not-run warning come from here, so no page fetches
its result, builds its skeleton or checks that it ran by itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from attnlab import registry
from attnlab.report.site import NOT_RUN, Site

Blocks = dict[str, str]


@dataclass(frozen=True)
class PageContext:
    """One experiment's page: its result file (None for a training experiment, or where it has not run), the
    version's recorded settings (its config.yaml, resolved: every section), its claims' verdicts, its training
    runs' run files (run -> metrics), the blocks every experiment page has, and the site (the commands, the
    shared blocks, the other experiments' results)."""
    name: str
    result: dict | None
    settings: dict
    verdicts: list
    runs: dict
    blocks: Blocks
    site: Site

    @property
    def ran(self) -> bool:
        """Whether its result file (a training experiment's runs) is there."""
        return NOT_RUN not in self.blocks


def page_context(site: Site, name: str, rerun: str | None = None) -> PageContext:
    """Experiment `name`'s page context; `rerun` replaces its default rerun command."""
    e = registry.get(name)
    return PageContext(name=name, result=None if e.trains else site.res.result(name), settings=site.config,
                       verdicts=site.page_verdicts(name), runs=site.res.experiment(name) if e.trains else {},
                       blocks=site.skeleton(name, rerun), site=site)


def experiment_page(name: str, render: Callable[[PageContext], Blocks],
                    unrun: Callable[[PageContext], Blocks] | None = None,
                    rerun: Callable[[Site, str], str] | None = None,
                    settings: Callable[[dict], str] | None = None) -> Callable[[Site], Blocks]:
    """The `blocks(site)` of experiment `name`'s page: the blocks every experiment page has, then `render(ctx)`
    where the experiment has run, else `unrun(ctx)` (what needs no result; nothing by default). `rerun(site,
    name)`: the page's own rerun command; `settings(result)`: its settings block, what the result ran, in words."""
    def blocks(site: Site) -> Blocks:
        ctx = page_context(site, name, rerun(site, name) if rerun else None)
        if not ctx.ran:
            return ctx.blocks | (unrun(ctx) if unrun else {})
        return ctx.blocks | ({"settings": settings(ctx.result)} if settings else {}) | render(ctx)
    blocks.__doc__ = f"The blocks of the {name} page (report.context.experiment_page)."
    return blocks


def one_run_then_every(run: str, label: str) -> Callable[[Site, str], str]:
    """A training page's rerun command: run `run` at every seed, then every run of the experiment (called
    `label` in the comment) with the claims."""
    def rerun(site: Site, name: str) -> str:
        return (site.snakemake(site.run_target(name, [run]), gpu=True) + f"\n# every run of {label}\n"
                + site.snakemake("claims.csv", gpu=True))
    return rerun
