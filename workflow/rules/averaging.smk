rule averaging:
    """E1: shuffle invariance and three equal prefix means, computed exactly (C1.x)."""
    input:
        code=code("experiments/averaging.py", "nn/attention.py"),
    output:
        json=f"{R}/e1/averaging.json",
    params:
        config=CONFIG,
        seed=config["seed"],
    log:
        f"{LOGS}/averaging.log",
    benchmark:
        f"{R}/benchmarks/averaging.tsv"
    conda:
        ENV
    shell:
        "python -m attnlab averaging --config {params.config} --out {output.json} > {log} 2>&1"
