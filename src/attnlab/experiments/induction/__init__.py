"""S10 · Induction heads: its settings, its producer, its page and its claims, in one folder."""
