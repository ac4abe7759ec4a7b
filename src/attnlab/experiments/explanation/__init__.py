"""S9 · Attention as explanation: its settings, its producer, its page and its claims, in one folder."""
