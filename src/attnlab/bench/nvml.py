"""What the GPU was doing while a region ran, read through NVML (nvidia-ml-py), never changing its settings.

A `Sampler` polls in a background thread during a timed region: SM and memory clocks, temperature, power and
the clocks-event (throttle) reasons, which it ORs over the region. Samples taken while the SM clock sat below
`LOW_CLOCK` of its maximum are flagged, as nvbench does, so the timing can leave them out. Off a GPU, or
without NVML, the record says why and nothing fails.
"""
from __future__ import annotations

import threading
import time

LOW_CLOCK = 0.75  # a sample whose SM clock is below this share of the maximum is flagged (nvbench's rule)

# nvmlClocksEventReasons (nvml.h): bit -> what it means. "idle" is not throttling: the GPU had no work.
REASONS = {
    0x1: "gpu idle",
    0x2: "applications clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake slowdown",
    0x100: "display clock setting",
}
NOT_THROTTLING = 0x1 | 0x10  # idle, and following another GPU's clock


def decode(mask: int) -> list[str]:
    """The names of the reasons set in an NVML clocks-event bitmask (unknown bits named by their value)."""
    names = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return names + ([f"unknown bits {rest:#x}"] if rest else [])


def throttled(mask: int) -> bool:
    """Whether a bitmask says the clocks were held down (anything but idle or sync boost)."""
    return bool(mask & ~NOT_THROTTLING)


def summarise(samples: list[dict], max_sm_mhz: int | None) -> dict:
    """A region's record from its samples: ranges of the clocks, temperature and power, the OR-ed reasons
    (decoded), and how many samples sat below LOW_CLOCK of the maximum SM clock."""
    if not samples:
        return {"samples": 0, "note": "no sample taken: the region was shorter than one polling interval"}
    mask = 0
    for s in samples:
        mask |= s.get("reasons", 0)

    def span(key):
        values = [s[key] for s in samples if s.get(key) is not None]
        return [min(values), max(values)] if values else None

    low = sum(1 for s in samples if max_sm_mhz and s.get("sm_mhz") is not None and s["sm_mhz"] < LOW_CLOCK * max_sm_mhz)
    return {"samples": len(samples), "sm_mhz": span("sm_mhz"), "mem_mhz": span("mem_mhz"), "max_sm_mhz": max_sm_mhz,
            "temperature_c": span("temperature_c"), "power_w": span("power_w"), "reasons_mask": mask,
            "reasons": decode(mask), "throttled": throttled(mask), "low_clock_samples": low}


class Sampler:
    """`with Sampler(device_index) as s: ...` then `s.record()`; polls every `interval` seconds meanwhile."""

    def __init__(self, index: int = 0, interval: float = 0.005):
        self.index, self.interval, self.samples, self.error = index, interval, [], None
        self._stop, self._thread, self._nvml, self._handle = threading.Event(), None, None, None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml, self._handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
            self.max_sm_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self._handle, pynvml.NVML_CLOCK_SM)
        except Exception as err:  # no package, no driver, no GPU: say so
            self.error, self.max_sm_mhz = f"NVML unavailable: {type(err).__name__}: {err}", None

    def sample(self) -> dict:
        n, h = self._nvml, self._handle
        out = {"t": time.perf_counter(), "sm_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
               "mem_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
               "temperature_c": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
               "power_w": n.nvmlDeviceGetPowerUsage(h) / 1000}
        try:
            out["reasons"] = n.nvmlDeviceGetCurrentClocksEventReasons(h)
        except AttributeError:  # older bindings name it after throttling
            out["reasons"] = n.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        return out

    def _run(self):
        while not self._stop.is_set():
            self.samples.append(self.sample())
            self._stop.wait(self.interval)

    def __enter__(self):
        if self._nvml:
            self.samples.append(self.sample())
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread:
            self._stop.set()
            self._thread.join()
            self.samples.append(self.sample())
        return False

    def record(self) -> dict:
        return {"error": self.error} if self.error else summarise(self.samples, self.max_sm_mhz)


def device_facts(index: int = 0) -> dict:
    """GPU name, driver, power limit and NVML's view of the settings that are left as they are found."""
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        facts = {"name": pynvml.nvmlDeviceGetName(h), "driver": pynvml.nvmlSystemGetDriverVersion(),
                 "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000,
                 "max_sm_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                 "max_mem_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)}
        try:
            facts["persistence_mode"] = bool(pynvml.nvmlDeviceGetPersistenceMode(h))
        except Exception as err:
            facts["persistence_mode"] = f"unknown ({type(err).__name__})"
        return {k: v.decode() if isinstance(v, bytes) else v for k, v in facts.items()}
    except Exception as err:
        return {"error": f"NVML unavailable: {type(err).__name__}: {err}"}
