LADDER = list(config["ladder"])


rule train_ladder:
    """E2: train one ladder row; resumes from its checkpoint if a previous run was interrupted."""
    input:
        train=rules.prepare_data.output.train,
        val=rules.prepare_data.output.val,
        code=code("nn/*.py", "train.py"),
    output:
        metrics=f"{R}/ladder/{{row}}/metrics.json",
        curve=f"{R}/ladder/{{row}}/curve.csv",
    params:
        config=CONFIG,
        spec=lambda w: {**config["model"], **config["ladder"][w.row]},
        train=config["train"],
        seed=config["seed"],
        data=parent_of("input", "train"),
        out=parent_of("output", "metrics"),
    wildcard_constraints:
        row="|".join(LADDER),
    threads: config["threads"] or 2
    resources:
        gpu=GPU,
    log:
        f"{LOGS}/ladder/{{row}}.log",
    benchmark:
        f"{R}/benchmarks/ladder/{{row}}.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab train --config {params.config} --row {wildcards.row}"
        " --data {params.data} --out {params.out} > {log} 2>&1"
