"""S8 · Trained with approximate attention: its settings, its page and its claims, in one folder."""
