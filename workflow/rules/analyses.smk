# Measurements that train nothing: one rule, one `python -m attnlab analyse NAME` each.
rule analyse:
    """E1, E3's score statistics, E7's parameter counts, E9's equivalence, S4's head count timing."""
    input:
        code=lambda w: ANALYSES[w.name][1],
    output:
        json=f"{R}/{{folder}}/{{name}}.json",
    params:
        settings=lambda w: settings("seed", w.name, *(["device"] if w.name == "multihead" else [])),
    wildcard_constraints:
        name="|".join(ANALYSES),
        folder="|".join(folder for folder, _ in ANALYSES.values()),
    resources:
        gpu=lambda w: GPU if w.name == "multihead" else 0,
    log:
        f"{LOGS}/{{folder}}/{{name}}.log",
    benchmark:
        f"{R}/benchmarks/{{folder}}/{{name}}.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} analyse {wildcards.name} --config {params.settings:q} --out {output.json}"
