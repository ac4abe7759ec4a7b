"""S1 · Where attention came from: its settings, its producer, its page and its claims, in one folder."""
