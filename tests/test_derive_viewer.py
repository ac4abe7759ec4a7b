"""S11's derived numbers: the viewer's models, how many read each sentence, the sentences with S9's rows."""
from __future__ import annotations

from attnlab.experiments.viewer import derive


def test_the_models_are_counted_once_and_the_sentences_by_how_many_read_them():
    examples = [{"models": {"B": [], "A": []}}, {"models": {"A": [], "C": [], "D": []}, "alternatives": [1]},
                {"models": {"A": []}, "alternatives": []}]
    assert derive.holdings(examples) == (["A", "B", "C", "D"], [1, 2, 3], 1)
    assert derive.holdings([{"models": {"A": []}}, {"models": {"B": []}}]) == (["A", "B"], [1], 0)
    assert derive.holdings([]) == ([], [], 0)
