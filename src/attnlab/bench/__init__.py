"""Benchmarks: the one-block model's training throughput beside a plain eager reference."""
