"""S6 · Sharing keys and values: its settings, its page and its claims, in one folder."""
