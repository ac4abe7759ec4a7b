"""S8 · Approximations on a trained layer: its settings, its producer, its page and its claims, in one folder."""
