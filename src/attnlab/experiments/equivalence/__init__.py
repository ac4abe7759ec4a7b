"""E9 · Equal to PyTorch: its settings, its producer, its page and its claims, in one folder."""
