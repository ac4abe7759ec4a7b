# Every experiment that trains nothing (kind analysis or benchmark): one rule, `attnlab analyse NAME`.
rule analyse:
    """Write results/<profile>/<name>/result.json with the experiment's producer (see the registry)."""
    input:
        code=lambda w: code("analyse", EXPERIMENTS[w.name].producer),
        data=lambda w: [rules.prepare_data.output.train, rules.prepare_data.output.val] if MEASURED[w.name].data else [],
        needs=lambda w: needed(MEASURED[w.name]),
    output:
        json=report(f"{R}/{attnlab.layout.ANALYSIS_RESULT}", caption="../report/result.rst", category=title,
                    subcategory="run files", labels={"file": attnlab.layout.RESULT}),
    params:
        decided=decided,
        settings=lambda w: MEASURED[w.name].settings,
        data=lambda w, input: f"--data {Path(input.data[0]).parent}" if input.data else "",
    wildcard_constraints:
        name="|".join(MEASURED),
    threads: lambda w: 2 if MEASURED[w.name].kind == "benchmark" else 1
    resources:
        gpu=lambda w: gpu(MEASURED[w.name].gpu),
    log:
        f"{LOGS}/{{name}}.log",
    benchmark:
        f"{R}/benchmarks/{{name}}.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab.jobs --log {log} analyse {wildcards.name} --config {params.settings:q}"
        " --threads {threads} {params.data} --out {output.json}"
