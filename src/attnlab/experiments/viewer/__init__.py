"""S11 · Attention viewer: its settings, its producer, its page and its claims, in one folder."""
