"""The benchmark harness and the NVML sampler: statistics, FLOP convention, memory, out of memory, throttle
reasons decoded from a recorded trace. Nothing here asserts a time."""
import pytest
import torch

from attnlab.bench import nvml
from attnlab.bench.harness import CPU_MEMORY, attention_flops, interleaved, measure, summary

# A trace as Sampler records it on a GPU: a clock dip (power cap) in the middle of a region.
TRACE = [
    {"sm_mhz": 1980, "mem_mhz": 2619, "temperature_c": 41, "power_w": 310.0, "reasons": 0x0},
    {"sm_mhz": 1410, "mem_mhz": 2619, "temperature_c": 44, "power_w": 698.0, "reasons": 0x4},
    {"sm_mhz": 1365, "mem_mhz": 2619, "temperature_c": 45, "power_w": 700.0, "reasons": 0x4 | 0x20},
    {"sm_mhz": 1980, "mem_mhz": 2619, "temperature_c": 43, "power_w": 120.0, "reasons": 0x1},
]


def test_the_reasons_are_decoded_and_idle_is_not_throttling():
    assert nvml.decode(0x1) == ["gpu idle"] and not nvml.throttled(0x1)
    assert nvml.decode(0x4 | 0x40) == ["software power cap", "hardware thermal slowdown"] and nvml.throttled(0x44)
    assert nvml.decode(0x10000) == ["unknown bits 0x10000"]


def test_a_recorded_trace_is_summarised_with_its_low_clock_samples():
    s = nvml.summarise(TRACE, max_sm_mhz=1980)
    assert s["sm_mhz"] == [1365, 1980] and s["power_w"] == [120.0, 700.0] and s["temperature_c"] == [41, 45]
    assert s["reasons_mask"] == 0x25 and s["throttled"]
    assert s["reasons"] == ["gpu idle", "software power cap", "software thermal slowdown"]
    assert s["low_clock_samples"] == 2  # 1410 and 1365 are below 75 % of 1980 (1485)


def test_without_nvml_the_record_says_why():
    sampler = nvml.Sampler(0)
    if sampler.error is None:
        pytest.skip("this machine has NVML")
    with sampler:
        pass
    assert sampler.record()["error"].startswith("NVML unavailable")


def test_statistics_of_known_samples():
    s = summary([0.001, 0.002, 0.003, 0.004, 0.005], flops=2e6, peak_flops=4e9)
    assert s["median_ms"] == pytest.approx(3.0) and s["p20_ms"] == pytest.approx(1.8) and s["p80_ms"] == pytest.approx(4.2)
    assert s["rsd"] == pytest.approx(0.5270, abs=1e-4) and s["samples"] == 5
    assert s["flops_per_s"] == pytest.approx(2e6 / 0.003) and s["share_of_peak"] == pytest.approx(2e6 / 0.003 / 4e9)


def test_the_flop_convention_is_flashattentions():
    fwd = attention_flops(2, 1024, 8, 64)
    assert fwd == 4 * 2 * 1024**2 * 8 * 64
    assert attention_flops(2, 1024, 8, 64, causal=True) == fwd / 2
    assert attention_flops(2, 1024, 8, 64, backward=True) == 2.5 * fwd


def test_measure_samples_until_the_spread_is_small_and_counts_memory():
    x = torch.randn(64, 64)
    r = measure(lambda: x @ x, min_samples=5, max_samples=50, target_rsd=10.0)  # any spread is small enough
    assert not r["oom"] and r["samples"] == 5 and r["p20_ms"] <= r["median_ms"] <= r["p80_ms"]
    big = measure(lambda: torch.ones(32 * 2**20 // 4), min_samples=2, max_samples=2)  # 32 MiB, touched
    if big["memory_method"] == CPU_MEMORY:
        assert big["peak_bytes"] >= 24 * 2**20


def test_the_time_cap_stops_a_noisy_benchmark():
    r = measure(lambda: None, min_samples=5, max_samples=10_000, target_rsd=0.0, max_seconds=0.05, memory=False)
    assert 5 <= r["samples"] < 10_000


def test_out_of_memory_is_a_row_not_an_exception():
    def fails():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")

    r = measure(fails)
    assert r["oom"] and "out of memory" in r["error"]
    with pytest.raises(ValueError):
        measure(lambda: (_ for _ in ()).throw(ValueError("a bug is not a result")))


def test_interleaved_rounds_rotate_the_order_and_pair_the_samples():
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    r = interleaved(fns, warmup=0, min_rounds=3, max_rounds=3, target_rsd=10.0)
    assert calls == list("abc" "bca" "cab")
    assert all(len(t) == 3 for t in r["rounds"].values()) and r["by"]["a"]["samples"] == 3


def test_a_freed_tensor_is_counted_again_when_allocated_again():
    """glibc would otherwise hand the second call the first call's pages, already resident: a peak of 0."""
    alloc = lambda: torch.ones(8 * 2**20 // 4)  # 8 MiB, touched  # noqa: E731
    first, second = measure(alloc, min_samples=2, max_samples=2), measure(alloc, min_samples=2, max_samples=2)
    if first["memory_method"] == CPU_MEMORY:
        assert first["peak_bytes"] >= 6 * 2**20 and second["peak_bytes"] >= 6 * 2**20
