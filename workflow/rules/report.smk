REPORT_CODE = code("report/*.py")
CLAIMS = "claims"  # the registry: every claims/*.yaml
CLAIMS_FILES = sorted(str(p) for p in Path(CLAIMS).glob("*.yaml"))
RUNS = {
    "stats": rules.prepare_data.output.stats,
    "analyses": [analysis(name) for name in ANALYSES],
    "ladder": trained("ladder"),
    "curves": trained("ladder", "curve.csv"),
    "scaling": trained("scaling"),
    "depth": trained("depth"),
    "position": trained("position"),
    "bench": rules.bench_throughput.output.json,
}


rule claims:
    """Verdicts on every claim, computed from the run files against claims/*.yaml."""
    input:
        **RUNS,
        claims=CLAIMS_FILES,
        code=REPORT_CODE,
    output:
        csv=update(f"{R}/claims.csv"),  # a failed step leaves the previous verdicts in place
    params:
        claims=lambda w, input: Path(input.claims[0]).parent,
        results=parent_of("output", "csv"),
    log:
        f"{LOGS}/claims.log",
    benchmark:
        f"{R}/benchmarks/claims.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} claims --results {params.results} --claims {params.claims} --out {output.csv}"


rule site:
    """Pages (prose, tables, charts, verdicts, provenance) -> mkdocs build --strict."""
    input:
        **RUNS,
        verdicts=rules.claims.output.csv,
        claims=CLAIMS_FILES,
        code=REPORT_CODE,
        docs=sorted(str(p) for p in Path("docs").rglob("*") if p.is_file()),
    output:
        index=update(f"{R}/site/index.html"),  # the site is built aside and swapped in whole, so a failed
    params:                                    # build leaves the previous one in place
        settings=settings(*config),
        claims=lambda w, input: Path(input.claims[0]).parent,
        results=parent_of("input", "verdicts"),
        docs=f"{R}/docs",
        site=parent_of("output", "index"),
    log:
        f"{LOGS}/site.log",
    benchmark:
        f"{R}/benchmarks/site.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} site --config {params.settings:q} --results {params.results} --claims {params.claims}"
        " --docs {params.docs} --site {params.site}"
