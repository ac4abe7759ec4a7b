# Every training run of every experiment (the ladder's rows, E3's heads, ...), at every seed of the profile,
# goes through this one rule.


rule train:
    """Train one run at one seed; resumes from its checkpoint if a previous attempt was interrupted."""
    input:
        train=rules.prepare_data.output.train,
        val=rules.prepare_data.output.val,
        code=code("train"),
        init=lambda w: init_source(w.experiment, w.run, w.seed),
    output:
        metrics=f"{R}/{{experiment}}/{{run}}/seed{{seed}}/metrics.json",
        curve=f"{R}/{{experiment}}/{{run}}/seed{{seed}}/curve.csv",
    params:
        settings=lambda w: settings("device", "data", "model", "train", seed=int(w.seed), **run_sections(w.experiment, w.run)),
        data=parent_of("input", "train"),
        out=parent_of("output", "metrics"),
    wildcard_constraints:
        experiment="|".join(e for e, runs in TRAINING.items() if runs),
        run="|".join(r for runs in TRAINING.values() for r in runs),
        seed="|".join(map(str, config["seeds"])),
    threads: config["threads"] or 2
    resources:
        gpu=lambda w: gpu(),
    log:
        f"{LOGS}/{{experiment}}/{{run}}/seed{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/{{experiment}}/{{run}}/seed{{seed}}.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab --log {log} train --config {params.settings:q} --run {wildcards.run}"
        " --threads {threads} --data {params.data} --out {params.out}"
