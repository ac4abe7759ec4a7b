"""E7 · Parameter accounting: its settings, its producer, its page and its claims, in one folder."""
