"""`train.precision: auto`: bf16 where the CPU computes it natively (AVX512-BF16, AMX, Arm's BF16) and the
experiment's verdicts are known to stay put in bf16, fp32 everywhere else.

Decided when a profile is read (config.resolve), so that a run's settings, and their hash, hold the precision it
actually trains in: a run trained in bf16 never pools with one trained in fp32. Where auto comes out fp32 the key
is dropped, so the settings are byte for byte a plain fp32 profile's. An experiment is known to stay put when its
experiment.yaml names `bf16_kept`: a version of it trained in bf16 and one in fp32 whose verdicts are the same
(tests/test_precision.py recomputes both). A GPU keeps fp32: no version has been trained there in bf16.

No torch at import: the Snakefile reads profiles on every invocation.
"""
from __future__ import annotations

import sys
from pathlib import Path

from attnlab import registry
from attnlab.runs import entries, runs

AUTO = "auto"
BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}  # x86's AVX512-BF16 and AMX, Arm's BF16 extension
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags /proc/cpuinfo lists (x86's `flags`, Arm's `Features`)."""
    return {flag for line in cpuinfo.splitlines() if line.partition(":")[0].strip() in ("flags", "Features")
            for flag in line.partition(":")[2].split()}


def native_bf16(device, cpuinfo: str | None = None) -> tuple[bool, str]:
    """Whether the device computes bf16 natively, and how that was found (a CPU's from `cpuinfo`, by default
    /proc/cpuinfo)."""
    if str(device).startswith("cuda"):
        import torch

        ok = torch.cuda.is_bf16_supported()
        return ok, f"torch.cuda.is_bf16_supported() is {ok}"
    try:
        found = sorted(cpu_flags(cpuinfo if cpuinfo is not None else CPUINFO.read_text()) & BF16_FLAGS)
    except OSError:
        return False, f"no {CPUINFO} to read the CPU's flags from: taken as no native bf16"
    if found:
        return True, "the CPU's flags include " + ", ".join(found)
    return False, "none of " + ", ".join(sorted(BF16_FLAGS)) + " among the CPU's flags"


GPU_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd")  # NVIDIA's and ROCm's device files


def on_cpu(device: str) -> bool:
    """Whether a profile's `device` trains on the CPU. auto: where torch, if this process has imported it, sees
    no CUDA device; else where the machine has no GPU device file (reading a profile must not import torch)."""
    if device != "auto":
        return device == "cpu"
    if "torch" in sys.modules:
        return not sys.modules["torch"].cuda.is_available()
    return not any(Path(node).exists() for node in GPU_NODES)


def choose(experiment: registry.Experiment, cpu: bool, native: bool) -> str:
    """The precision auto means for a run of `experiment`."""
    return "bf16" if cpu and native and experiment.bf16_kept else "fp32"


def resolve(cfg: dict, cpuinfo: str | None = None) -> None:
    """Every training run whose train.precision is auto gets bf16 (written into the run's own train section) or
    fp32 (the key dropped); the profile's own `train.precision: auto` goes. In place."""
    own = [(e, name) for e, name in runs(cfg) if (entries(cfg.get(e))[name] or {}).get("train", {}).get("precision")
           == AUTO]
    if cfg.get("train", {}).get("precision") != AUTO and not own:
        return
    native = native_bf16("cpu", cpuinfo)[0]
    cpu = native and on_cpu(cfg.get("device", "auto"))  # asked only where it matters
    by_name = {e.name: e for e in registry.load()}
    profile_auto = cfg.get("train", {}).pop("precision", None) == AUTO
    for e, name in runs(cfg):
        run = dict(cfg[e][name] or {})
        train = dict(run.get("train") or {})
        if train.get("precision", AUTO if profile_auto else None) != AUTO:
            continue
        train.pop("precision", None)
        if choose(by_name[e], cpu, native) == "bf16":
            train["precision"] = "bf16"
        run["train"] = train
        if not train:
            run.pop("train")
        cfg[e][name] = run
