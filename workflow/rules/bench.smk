rule bench_throughput:
    """Training tokens/s of the one-block model beside a plain eager reference; tokenizer timings."""
    input:
        train=rules.prepare_data.output.train,
        stats=rules.prepare_data.output.stats,
        code=code("nn/*.py", "train.py", "bench/*.py"),
    output:
        json=f"{R}/bench/throughput.json",
    params:
        settings=settings("seed", "device", "data", "model", "train", "bench", ladder={"L9": config["ladder"]["L9"]}),
        data=parent_of("input", "train"),
    threads: 2
    resources:
        gpu=GPU,
    log:
        f"{LOGS}/bench_throughput.log",
    benchmark:
        f"{R}/benchmarks/bench_throughput.tsv"
    conda:
        ENV
    shell:
        "OMP_NUM_THREADS={threads} python -m attnlab --log {log} bench --config {params.settings:q} --threads {threads}"
        " --data {params.data} --out {output.json}"
