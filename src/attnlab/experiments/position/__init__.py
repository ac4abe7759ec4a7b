"""E5 · Position and length: its settings, its page and its claims, in one folder."""
