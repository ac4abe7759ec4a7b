"""E3a · √d_k on random scores: its settings, its producer, its page and its claims, in one folder."""
