"""E6 · The quadratic cost: its settings, its producer, its page and its claims, in one folder."""
