"""The device jobs run on, read without importing torch: whether CUDA is usable, and how much memory there is."""
from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache
from pathlib import Path


def cuda_usable() -> tuple[bool, str]:
    """Whether torch can run on a CUDA GPU here, and why not; torch's build is read, not imported."""
    found = importlib.util.find_spec("torch")
    if found is None or not found.origin:
        return False, "torch is not installed"
    version = (Path(found.origin).parent / "version.py").read_text()
    built = re.search(r"^cuda\b[^=]*=\s*['\"]([^'\"]+)['\"]", version, re.M)
    if not built:
        return False, "this torch build has no CUDA support"
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception as err:  # no driver, no library: NVML says why
        return False, f"no NVIDIA driver answered ({err})"
    return (count > 0), f"{count} CUDA device(s)"


@lru_cache(maxsize=None)
def device_memory(device: str) -> tuple[int | None, str]:
    """All the memory of the device jobs run on, in bytes (None where NVML cannot say), and its words: the first
    GPU's where CUDA is usable and asked for (or `auto`), else this machine's."""
    if device != "cpu" and cuda_usable()[0]:
        try:
            import pynvml

            pynvml.nvmlInit()
            return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).total, "that the GPU has"
        except Exception:  # NVML refused: no estimate is better than a wrong one
            return None, "that the GPU has"
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "that this machine has"
