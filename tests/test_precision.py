"""train.precision: auto (attnlab.precision): bf16 only where the CPU computes it natively and the experiment's
verdicts are known to hold in bf16, decided as a profile is read, so that the settings (and their hash) say which;
fp32 elsewhere, with settings identical to a profile that never said auto. And the evidence itself: the two
versions each experiment's bf16_kept names, their verdicts recomputed."""
from __future__ import annotations

import pytest

from attnlab import config, precision, registry
from attnlab.runs import train_settings
from helpers import REPO

NATIVE = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16\n"
PLAIN = "processor\t: 0\nflags\t\t: fpu avx2\n"


def load(profile: str, cpuinfo: str | None, tmp_path, monkeypatch, **settings) -> dict:
    """A profile read on a CPU whose /proc/cpuinfo is `cpuinfo` (None: unreadable), settings laid over it."""
    info = tmp_path / "cpuinfo"
    if cpuinfo is not None:
        info.write_text(cpuinfo)
    monkeypatch.setattr(precision, "CPUINFO", info)
    return config.validate(config.resolve({**config.read_profile(REPO / "config" / f"{profile}.yaml"), **settings}))


@pytest.mark.parametrize("flags, native", [("avx512_bf16", True), ("amx_bf16 amx_tile", True), ("avx512bw", False),
                                           ("", False)])
def test_native_bf16_is_read_from_the_cpus_flags(flags, native):
    ok, why = precision.native_bf16("cpu", f"processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f {flags}\n")
    assert ok is native and (flags.split()[0] in why if native else "among the CPU's flags" in why)


def test_arms_bf16_feature_counts_and_only_flag_lines_are_read():
    assert precision.native_bf16("cpu", "Features\t: fp asimd bf16 i8mm\n")[0]
    assert not precision.native_bf16("cpu", "model name\t: avx512_bf16 in a name\nflags\t: avx2\n")[0]


@pytest.mark.parametrize("profile", ["quick", "chapter"])
def test_auto_on_a_cpu_without_native_bf16_is_a_plain_fp32_profile(profile, tmp_path, monkeypatch):
    cfg = load(profile, PLAIN, tmp_path, monkeypatch, device="cpu")
    assert "precision" not in cfg["train"]
    assert all("precision" not in train_settings(cfg, name) for name in ("L1", "L9", "E3-h1024-raw"))
    train = {k: v for k, v in config.read_profile(REPO / "config" / f"{profile}.yaml")["train"].items()
             if k != "precision"}
    plain = load(profile, PLAIN, tmp_path, monkeypatch, device="cpu", train=train)
    assert config.digest(cfg) == config.digest(plain)  # byte for byte: every run's hash as before
    unreadable = load(profile, None, tmp_path, monkeypatch, device="cpu")
    assert config.digest(unreadable) == config.digest(plain)


def test_auto_on_a_native_cpu_trains_in_bf16_only_what_is_known_to_keep_its_verdicts(tmp_path, monkeypatch):
    cfg = load("quick", NATIVE, tmp_path, monkeypatch, device="cpu")
    kept = {e.name for e in registry.load() if e.bf16_kept}
    assert kept == {"ladder"}
    assert train_settings(cfg, "L9")["precision"] == "bf16" and train_settings(cfg, "L1")["precision"] == "bf16"
    assert "precision" not in train_settings(cfg, "E3-h1024-raw")  # scaling: never checked in bf16
    assert "precision" not in cfg["train"]
    on_gpu = load("quick", NATIVE, tmp_path, monkeypatch, device="cuda")
    assert "precision" not in train_settings(on_gpu, "L9")  # no version was trained in bf16 on a GPU


def test_a_run_that_names_its_precision_keeps_it_and_a_runs_own_auto_is_decided_too(tmp_path, monkeypatch):
    profile = config.read_profile(REPO / "config" / "quick.yaml")
    ladder = {**profile.get("ladder", {}), "L1": {"train": {"precision": "fp32"}}, "L2": {"train": {"precision": "auto"}}}
    cfg = load("quick", NATIVE, tmp_path, monkeypatch, device="cpu", ladder=ladder)
    assert train_settings(cfg, "L1")["precision"] == "fp32" and train_settings(cfg, "L2")["precision"] == "bf16"
    plain = load("quick", PLAIN, tmp_path, monkeypatch, device="cpu", ladder=ladder,
                 train={**profile["train"], "precision": "fp32"})
    assert "precision" not in (plain["ladder"]["L2"] or {}).get("train", {})


def test_a_published_config_read_again_keeps_the_precision_it_was_trained_in(tmp_path, monkeypatch):
    """A version's config.yaml holds the decided precision, never auto: read again on a native CPU, its fp32 runs
    stay fp32 (base.yaml does not say auto)."""
    cfg = load("quick", PLAIN, tmp_path, monkeypatch, device="cpu")
    again = load("quick", NATIVE, tmp_path, monkeypatch, device="cpu", train=cfg["train"])
    assert "precision" not in train_settings(again, "L9")


@pytest.mark.parametrize("experiment", [e for e in registry.load() if e.bf16_kept], ids=lambda e: e.name)
def test_the_named_versions_show_every_verdict_of_the_experiment_unmoved_by_bf16(experiment):
    from attnlab.report import build

    bf16, fp32 = experiment.bf16_kept
    results = REPO / "results"
    assert config.load(results / bf16 / "config.yaml")["train"].get("precision") == "bf16"
    assert "precision" not in config.load(results / fp32 / "config.yaml")["train"]
    verdicts = {v: {x.claim.id: x.verdict for x in build.context(results / v, None).verdicts
                    if x.claim.experiment == experiment.name} for v in (bf16, fp32)}
    assert verdicts[bf16] and verdicts[bf16] == verdicts[fp32]
    assert "not run" not in verdicts[bf16].values()


def test_auto_reads_the_device_without_importing_torch(tmp_path, monkeypatch):
    import sys

    assert precision.on_cpu("cpu") and not precision.on_cpu("cuda")
    monkeypatch.delitem(sys.modules, "torch")  # as when a profile is checked: torch not imported
    monkeypatch.setattr(precision, "GPU_NODES", (str(tmp_path / "nvidia0"),))
    assert precision.on_cpu("auto")
    (tmp_path / "nvidia0").touch()
    assert not precision.on_cpu("auto")
