REPORT_CODE = code("report/*.py")
CLAIMS = "claims/chapter.yaml"
RUNS = {
    "stats": rules.prepare_data.output.stats,
    "averaging": rules.averaging.output.json,
    "ladder": expand(rules.train_ladder.output.metrics, row=LADDER),
    "curves": expand(rules.train_ladder.output.curve, row=LADDER),
}


rule claims:
    """Verdicts on every claim, computed from the run files against claims/chapter.yaml."""
    input:
        **RUNS,
        claims=CLAIMS,
        code=REPORT_CODE,
    output:
        csv=f"{R}/claims.csv",
    log:
        f"{LOGS}/claims.log",
    benchmark:
        f"{R}/benchmarks/claims.tsv"
    shell:
        "python -m attnlab claims --config {CONFIG} --results {R} --claims {input.claims}"
        " --out {output.csv} > {log} 2>&1"


rule site:
    """Pages (prose, tables, charts, verdicts, provenance) -> mkdocs build --strict."""
    input:
        **RUNS,
        verdicts=rules.claims.output.csv,
        claims=CLAIMS,
        code=REPORT_CODE,
        docs=sorted(str(p) for p in Path("docs").rglob("*") if p.is_file()),
    output:
        index=f"{R}/site/index.html",
    params:
        docs=f"{R}/docs",
        site=f"{R}/site",
    log:
        f"{LOGS}/site.log",
    benchmark:
        f"{R}/benchmarks/site.tsv"
    shell:
        "python -m attnlab site --config {CONFIG} --results {R} --claims {input.claims}"
        " --docs {params.docs} --site {params.site} > {log} 2>&1"
