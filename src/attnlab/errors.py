import errno


class AttnlabError(Exception):
    """A problem with the user's input, reported as one clear line before any expensive work."""


REFUSED = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
           errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def refused(err: BaseException) -> str | None:
    """Why the disk or the folder refused a write ('no space left on device'), from the OSError that is `err` or
    lies behind it (torch's writer raises its own error over it); None for any other failure."""
    for e in (err, err.__cause__, err.__context__):
        if isinstance(e, OSError) and e.errno in REFUSED:
            return REFUSED[e.errno]
    return None
