"""E2 · The ladder: its settings, its page and its claims, in one folder."""
