"""S11's numbers from the viewer's data: the models it holds, how many read each sentence, and how many
sentences carry S9's adversarial rows."""
from __future__ import annotations


def holdings(examples: list[dict]) -> tuple[list[str], list[int], int]:
    """(every model by name, each once; the distinct counts of models on one sentence, fewest first; the
    sentences that carry S9's adversarial rows) of the viewer's examples."""
    models = sorted({m for e in examples for m in e["models"]})
    per = sorted({len(e["models"]) for e in examples})
    return models, per, sum(bool(e.get("alternatives")) for e in examples)
