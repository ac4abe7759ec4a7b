"""Where a number came from: commit, config hash, profile, device, versions, clocks, time."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

from attnlab import calibration
from attnlab.precision import native_bf16
from attnlab.config import digest
from attnlab.errors import AttnlabError, refused


GIVEN_COMMIT = "ATTNLAB_COMMIT"  # where a tree travels without .git (a GPU machine): the commit it was copied at


def git_head() -> str | None:
    """HEAD's short commit, '+dirty' when tracked files changed; None outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5)
        if head.returncode or not head.stdout.strip():
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def git_commit() -> str:
    """The commit these files came from: HEAD in a checkout; outside one, $ATTNLAB_COMMIT or 'unknown'."""
    return git_head() or os.environ.get(GIVEN_COMMIT) or "unknown"


def device_name(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu: {platform.processor() or platform.machine()} ({torch.get_num_threads()} threads)"


def gpu_clocks(device: torch.device | str) -> dict | None:
    """SM and memory clocks (MHz), temperature and power from NVML, or None off the GPU."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        return {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "max_sm_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
        }
    except Exception as err:  # NVML missing or refused: say so rather than guess
        return {"error": str(err)}


def record(cfg: dict, *, device="cpu", wall_seconds: float | None = None, seed: int | None = None,
           speed: dict | None = None) -> dict:
    """`speed`: a training run's speed settings (precision, compile, AdamW, threads), recorded where given."""
    head = git_head()
    return {
        "commit": head or os.environ.get(GIVEN_COMMIT) or "unknown",
        "commit_given": True if head is None and os.environ.get(GIVEN_COMMIT) else None,  # from $ATTNLAB_COMMIT
        "config_hash": digest(cfg),
        "profile": cfg.get("profile"),
        "device": device_name(device),
        "clocks": gpu_clocks(device),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": None if wall_seconds is None else round(wall_seconds, 3),
        "process_seconds": process_seconds(),  # the job's whole process so far: its start and imports too
        "seed": cfg.get("seed") if seed is None else seed,
        "host": platform.node(),
        "calibration": calibration.here(),  # this machine's speed, so that the run time scales to another (eta)
        "native_bf16": dict(zip(("native", "why"), native_bf16(torch.device(device).type))),  # what precision: auto reads
        **({"speed": speed} if speed is not None else {}),
    }


def process_seconds() -> float | None:
    """Seconds since this process started (Linux's /proc; None elsewhere): what a job costs from its command to its
    run file, the interpreter's start and torch's import included, which `wall_seconds` leaves out."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])  # both count from the boot
        return round(uptime - ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError):
        return None


def replace_into(path: str | Path, write) -> None:
    """Call write(tmp), then move tmp over `path`, so that readers never see half a file. A write the disk or the
    folder refuses (full, read-only, not ours) is one line naming `path`, whatever did the writing."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        why = refused(err) or short_write(err, path.parent)
        if why is None:
            raise
        raise AttnlabError(f"{why} writing {path}") from None
    finally:
        with contextlib.suppress(OSError):  # a read-only folder refuses this too; the error above says why
            tmp.unlink(missing_ok=True)


def short_write(err: BaseException, folder: Path) -> str | None:
    """Why torch's writer stopped short ("[enforce fail at inline_container.cc] unexpected pos ..." with no OSError
    behind it): a full disk where the folder has (almost) no room left."""
    if not (isinstance(err, RuntimeError) and "inline_container" in str(err)):
        return None
    with contextlib.suppress(OSError):
        if shutil.disk_usage(folder).free < 2**20:
            return "no space left on device"
    return f"torch's writer stopped short ({str(err).strip().splitlines()[0][:160]})"


def save_torch(path: str | Path, obj) -> None:
    """torch.save through a Python file, so that a refused write keeps its OSError (and its reason)."""
    def write(tmp):
        with open(tmp, "wb") as f:
            torch.save(obj, f)

    replace_into(path, write)


def write_json(path: str | Path, payload: dict) -> None:
    """Write atomically, so an interrupted run never leaves half a file behind."""
    replace_into(path, lambda tmp: tmp.write_text(json.dumps(payload, indent=2, default=float) + "\n"))


def read_json(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def measured(cfg: dict, out_path: str | Path, measure, device="cpu") -> dict:
    """Run `measure()`, stamp its result with provenance (wall time included) and write it atomically."""
    t0 = time.perf_counter()
    result = measure()
    result["provenance"] = record(cfg, device=device, wall_seconds=time.perf_counter() - t0)
    write_json(out_path, result)
    return result
