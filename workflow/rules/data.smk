CORPUS = config["data"]["path"] or f"{R}/data/input.txt"  # a copy on this machine, or the one from data.url


if not config["data"]["path"]:

    rule download_corpus:
        """The corpus from data.url (checksum-checked), in a job of its own: Snakemake deletes a job's outputs
        before running it, so a download that fails here never starts prepare_data, and its token files stay."""
        output:
            CORPUS,
        params:  # only what the download reads: another vocabulary must not fetch the corpus again
            settings=lambda w: attnlab.config.canonical(
                {"profile": PROFILE, "data": {k: config["data"][k] for k in ("url", "sha256")}}
            ),
        log:
            f"{LOGS}/download_corpus.log",
        benchmark:
            f"{R}/benchmarks/download_corpus.tsv"
        conda:
            ENV
        shell:
            "python -m attnlab.jobs --log {log} download --config {params.settings:q} --out {output}"


rule prepare_data:
    """Corpus (checksum-checked) -> byte-level BPE -> uint16 train/val tokens and stats.json (C0.x)."""
    input:
        code=code("prepare"),
        corpus=CORPUS,
    output:
        train=f"{R}/data/train.bin",
        val=f"{R}/data/val.bin",
        tokenizer=f"{R}/data/tokenizer.json",
        stats=report(f"{R}/{attnlab.layout.STATS}", caption="../report/data.rst", category=EXPERIMENTS["data"].title,
                     subcategory="run files", labels={"file": attnlab.layout.STATS_FILE}),
    params:
        decided=lambda w, output: decides("data"),  # for its caption; derived from the outputs: reruns nothing
        settings=lambda w: JOBS[attnlab.plan.PREPARE].settings,
        out=parent_of("output", "stats"),
    log:
        f"{LOGS}/prepare_data.log",
    benchmark:
        f"{R}/benchmarks/prepare_data.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab.jobs --log {log} prepare --config {params.settings:q} --out {params.out}"
