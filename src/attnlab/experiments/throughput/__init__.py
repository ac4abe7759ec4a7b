"""Performance: its settings, its producer, its page and its claims, in one folder."""
