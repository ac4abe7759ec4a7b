"""S4 · Multi-head cost: its settings, its producer, its page and its claims, in one folder."""
