"""S5 · The KV cache: its settings, its producer, its page and its claims, in one folder."""
