"""One writer per run folder, and jobs that end with the driver that started them.

A job (a Snakemake rule's or the runner's `python -m attnlab VERB`) holds an flock on <folder>/.attnlab.lock while
it writes; a second writer of the same folder is refused in one line. The kernel drops an flock when its process
ends, however it ends, so a kill -9 leaves no stale lock behind.
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import signal
from contextlib import contextmanager
from pathlib import Path

from attnlab.errors import AttnlabError

LOCK = ".attnlab.lock"
PARENT = "ATTNLAB_PARENT"  # set by a driver (the runner, the rules' shell prefix): the pid this job dies with
PR_SET_PDEATHSIG = 1


@contextmanager
def held(folder: Path | None):
    """Hold `folder`'s lock for the duration; AttnlabError naming the holder's pid if another process has it."""
    if folder is None:
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        f = open(folder / LOCK, "a+")
    except OSError as err:
        raise AttnlabError(f"cannot write run folder {folder} ({err.strerror})") from None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            pid = f.read().strip()
            raise AttnlabError(f"{folder} is being written by another process{f' (pid {pid})' if pid else ''}; "
                               "wait for it to end, or stop it, then rerun") from None
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield


def die_with_parent() -> None:
    """Where a driver asked for it ($ATTNLAB_PARENT), have the kernel kill this process when its parent dies
    (Linux), so that a kill -9 of the runner or of Snakemake leaves no job writing behind it."""
    parent = os.environ.get(PARENT)
    if not parent:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the runner still kills its jobs when it is stopped cleanly
        return
    try:
        os.kill(int(parent), 0)  # the parent may have died before the prctl: then nothing would fire
    except ProcessLookupError:
        os._exit(1)
    except (OSError, ValueError):
        pass
