"""E8 · What a head does: its settings, its producer, its page and its claims, in one folder."""
