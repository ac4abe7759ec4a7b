# the claims registry: each experiment's claims.yaml, in its folder
CLAIMS_FILES = [attnlab.registry.relative(e.claims_file) for e in EXPERIMENTS.values() if e.claims]
# every run file the report reads, by experiment
RUNS = {name: [f"{R}/{job.output}" for job in PLAN if job.experiment == name] for name in EXPERIMENTS}
# what `mkdocs build` runs besides the site verb: the hook (mkdocs.yml) and every page module it calls
PAGES = ["attnlab.report.hooks", attnlab.registry.page_module("about"),  # How verdicts work: examples generated
         *map(attnlab.registry.page_module, attnlab.registry.pages())]


rule claims:
    """Verdicts on every claim, computed from the run files against claims/*.yaml."""
    input:
        **RUNS,
        claims=CLAIMS_FILES,
        code=code("claims"),
    output:  # update(): a failed step leaves the previous verdicts in place; the verb writes both files
        csv=report(update(f"{R}/claims.csv"), caption="../report/claims.rst", category="Claims",
                   labels={"table": "claims.csv"}),
        by_seed=report(update(f"{R}/claims_by_seed.csv"), caption="../report/claims.rst", category="Claims",
                       labels={"table": "claims_by_seed.csv"}),
    params:
        results=parent_of("output", "csv"),
    log:
        f"{LOGS}/claims.log",
    benchmark:
        f"{R}/benchmarks/claims.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} claims --results {params.results} --out {output.csv}"


rule site:
    """Pages (prose, tables, charts, verdicts, provenance) -> mkdocs build --strict."""
    input:
        **RUNS,
        verdicts=rules.claims.output.csv,
        claims=CLAIMS_FILES,
        code=code("site", *PAGES),
        docs=sorted(str(p) for p in Path("docs").rglob("*") if p.is_file()),
        templates=[attnlab.registry.relative(e.template) for e in EXPERIMENTS.values()],
        mkdocs="mkdocs.yml",
    output:
        index=update(f"{R}/site/index.html"),  # the site is built aside and swapped in whole, so a failed
    params:                                    # build leaves the previous one in place
        settings=lambda w: settings(*config),  # a function: settings may hold braces ({x} in E8's template)
        results=parent_of("input", "verdicts"),
        site=parent_of("output", "index"),
    log:
        f"{LOGS}/site.log",
    benchmark:
        f"{R}/benchmarks/site.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} site --config {params.settings:q} --results {params.results}"
        " --site {params.site}"


rule charts:
    """Every experiment's charts, as its page draws them, as files the Snakemake report holds (`snakemake --report`)."""
    input:
        **RUNS,
        verdicts=rules.claims.output.csv,  # after the claims: a failed claims step draws no charts
        claims=CLAIMS_FILES,
        code=code("charts", *PAGES),
        assets=["docs/assets/attnlab-viewer.js", "docs/assets/attnlab-viewer.css"],  # inlined into each viewer
    output:
        charts=report(directory(f"{R}/charts"), patterns=["{experiment}/{chart}.svg", "{experiment}/{chart}.html"],
                      caption="../report/chart.rst", category=title, subcategory="charts", labels={"chart": "{chart}"}),
    params:
        settings=lambda w: settings(*config),  # a function: settings may hold braces ({x} in E8's template)
        results=parent_of("input", "verdicts"),
        titles={name: e.title for name, e in EXPERIMENTS.items()},  # for the captions
        decided={name: decides(name) for name in EXPERIMENTS},
    log:
        f"{LOGS}/charts.log",
    benchmark:
        f"{R}/benchmarks/charts.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} charts --config {params.settings:q} --results {params.results}"
        " --out {output.charts}"
