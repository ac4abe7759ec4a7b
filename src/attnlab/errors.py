class AttnlabError(Exception):
    """A problem with the user's input, reported as one clear line before any expensive work."""
