"""E4 · Pre- vs post-norm: its settings, its page and its claims, in one folder."""
