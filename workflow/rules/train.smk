# Every training run of every experiment (the ladder's rows, E3's heads, ...) goes through this one rule.


rule train:
    """Train one run; resumes from its checkpoint if a previous attempt was interrupted."""
    input:
        train=rules.prepare_data.output.train,
        val=rules.prepare_data.output.val,
        code=code("train"),
        init=lambda w: init_source(w.experiment, w.run),
    output:
        metrics=f"{R}/{{experiment}}/{{run}}/metrics.json",
        curve=f"{R}/{{experiment}}/{{run}}/curve.csv",
    params:
        settings=lambda w: settings("seed", "device", "data", "model", "train", **run_sections(w.experiment, w.run)),
        data=parent_of("input", "train"),
        out=parent_of("output", "metrics"),
    wildcard_constraints:
        experiment="|".join(e for e, runs in TRAINING.items() if runs),
        run="|".join(r for runs in TRAINING.values() for r in runs),
    threads: config["threads"] or 2
    resources:
        gpu=lambda w: gpu(),
    log:
        f"{LOGS}/{{experiment}}/{{run}}.log",
    benchmark:
        f"{R}/benchmarks/{{experiment}}/{{run}}.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab --log {log} train --config {params.settings:q} --run {wildcards.run}"
        " --threads {threads} --data {params.data} --out {params.out}"
