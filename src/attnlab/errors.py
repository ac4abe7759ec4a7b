import errno


class AttnlabError(Exception):
    """A problem with the user's input, reported as one clear line before any expensive work."""


class Diverged(AttnlabError):
    """A training run that diverged, asked for its finished model: it has none. That is a result, not a
    failure: `record` stands in for the run's measurements in a result file, and the report shows it as
    diverged (a claim that reads through it is "not run", naming the run and the step)."""

    def __init__(self, run: str, step: int | None, where: str | None = None, source: dict | None = None):
        self.record = diverged_record(run, step, source)
        super().__init__(f"{why_diverged(run, self.record)}: {where or 'it'} has no finished model")


def diverged_record(run: str, step: int | None, source: dict | None = None) -> dict:
    """What stands in a result file for the measurements of a run that diverged (at `step`; `source`: it never
    trained, because the run it was to start from diverged)."""
    return {"status": "diverged", "run": run, "diverged_at_step": step, **({"init_diverged": source} if source else {})}


def is_diverged(entry) -> bool:
    """Whether an entry of a result file is a Diverged record (or holds one's keys, with more of its own)."""
    return isinstance(entry, dict) and entry.get("status") == "diverged" and "run" in entry and "diverged_at_step" in entry


def why_diverged(run: str, entry: dict) -> str:
    """'L9 diverged at step 12' for a run's metrics or record; for a run that was to start from a diverged run's
    weights, which run that was."""
    source = entry.get("init_diverged")
    if source:
        return f"{run} starts from {source['run']}, which diverged at step {source['diverged_at_step']}"
    return f"{run} diverged at step {entry.get('diverged_at_step')}"


REFUSED = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
           errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def refused(err: BaseException) -> str | None:
    """Why the disk or the folder refused a write ('no space left on device'), from the OSError that is `err` or
    lies behind it (torch's writer raises its own error over it); None for any other failure."""
    for e in (err, err.__cause__, err.__context__):
        if isinstance(e, OSError) and e.errno in REFUSED:
            return REFUSED[e.errno]
    return None
