# Every training run of every experiment (the ladder's rows, E3's heads, ...) goes through this one rule.
rule train:
    """Train one run; resumes from its checkpoint if a previous attempt was interrupted."""
    input:
        train=rules.prepare_data.output.train,
        val=rules.prepare_data.output.val,
        code=code("nn/*.py", "train.py", "experiments/probes.py"),
    output:
        metrics=f"{R}/{{experiment}}/{{run}}/metrics.json",
        curve=f"{R}/{{experiment}}/{{run}}/curve.csv",
    params:
        config=CONFIG,
        run=lambda w: {**config["model"], **config[w.experiment][w.run]},
        train=config["train"],
        seed=config["seed"],
        data=parent_of("input", "train"),
        out=parent_of("output", "metrics"),
    wildcard_constraints:
        experiment="|".join(e for e, runs in TRAINING.items() if runs),
        run="|".join(r for runs in TRAINING.values() for r in runs),
    threads: config["threads"] or 2
    resources:
        gpu=GPU,
    log:
        f"{LOGS}/{{experiment}}/{{run}}.log",
    benchmark:
        f"{R}/benchmarks/{{experiment}}/{{run}}.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab train --config {params.config} --run {wildcards.run}"
        " --data {params.data} --out {params.out} > {log} 2>&1"
