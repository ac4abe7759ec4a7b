"""E3b · √d_k in training: its settings, its page and its claims, in one folder."""
