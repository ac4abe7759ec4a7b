"""attnlab: re-derive a chapter on attention by measurement."""

__version__ = "0.1.0"
