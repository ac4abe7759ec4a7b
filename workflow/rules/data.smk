rule prepare_data:
    """Corpus (checksum-checked) -> byte-level BPE -> uint16 train/val tokens and stats.json (C0.x)."""
    input:
        code=code("prepare"),
        corpus=[config["data"]["path"]] if config["data"]["path"] else [],
    output:
        train=f"{R}/data/train.bin",
        val=f"{R}/data/val.bin",
        tokenizer=f"{R}/data/tokenizer.json",
        stats=f"{R}/data/stats.json",
    params:
        settings=lambda w: settings("data"),
        out=parent_of("output", "stats"),
    log:
        f"{LOGS}/prepare_data.log",
    benchmark:
        f"{R}/benchmarks/prepare_data.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab --log {log} prepare --config {params.settings:q} --out {params.out}"
