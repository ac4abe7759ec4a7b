"""Data and tokenizer: its settings, its page and its claims, in one folder."""
