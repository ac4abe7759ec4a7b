"""E1 · Averaging: its settings, its producer, its page and its claims, in one folder."""
