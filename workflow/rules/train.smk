# Every training run of every experiment (the ladder's rows, E3's heads, ...), at every seed of the profile,
# goes through this one rule.


rule train:
    """Train one run at one seed; resumes from its checkpoint if a previous attempt was interrupted."""
    input:
        train=rules.prepare_data.output.train,
        val=rules.prepare_data.output.val,
        code=code("train"),
        init=lambda w: needed(trained(w)),  # an up-trained run's source, at the same seed
    output:
        metrics=report(f"{R}/{attnlab.layout.TRAIN_DIR}/{attnlab.layout.METRICS}", caption="../report/train.rst",
                       category=title, subcategory="run files",
                       labels={"run": "{run}", "seed": "{seed}", "file": attnlab.layout.METRICS}),
        curve=report(f"{R}/{attnlab.layout.TRAIN_DIR}/{attnlab.layout.CURVE}", caption="../report/train.rst",
                     category=title, subcategory="run files",
                     labels={"run": "{run}", "seed": "{seed}", "file": attnlab.layout.CURVE}),
    params:
        decided=decided,
        settings=lambda w: trained(w).settings,
        data=parent_of("input", "train"),
        out=parent_of("output", "metrics"),
    wildcard_constraints:
        experiment="|".join(dict.fromkeys(job.experiment for job in TRAINED)),
        run="|".join(dict.fromkeys(job.run for job in TRAINED)),
        seed="|".join(dict.fromkeys(str(job.seed) for job in TRAINED)),  # the profile's, and an experiment's own
    threads: config["threads"] or 2
    resources:
        gpu=lambda w: gpu(),
    log:
        f"{LOGS}/{attnlab.layout.TRAIN_DIR}.log",
    benchmark:
        f"{R}/benchmarks/{attnlab.layout.TRAIN_DIR}.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab.jobs --log {log} train --config {params.settings:q} --run {wildcards.run}"
        " --threads {threads} --data {params.data} --out {params.out}"
