"""C0's derived numbers: the stats in order, the merges beside the chapter's, what the merges make."""
from __future__ import annotations

from attnlab.experiments.data import derive


def test_the_quantities_keep_their_order_and_skip_what_the_file_lacks():
    t = derive.quantities({"n_val": 10, "n_chars": 1000, "unknown": 1})
    assert t.values.tolist() == [["n_chars", 1000], ["n_val", 10]]


def test_the_merges_stand_beside_the_chapters_and_are_compared_only_where_both_have_one():
    t = derive.merges({"first_merges": [" t", "he", "in"]}, [" t", "th"])
    assert t["rank"].tolist() == [1, 2, 3] and t["chapter"][:2].tolist() == [" t", "th"] and t["chapter"].isna()[2]
    assert t["same"].tolist() == [True, False, None]
    assert derive.merges({}, None).empty


def test_the_merges_are_sorted_by_kind_and_the_first_longer_one_is_split_into_earlier_ones():
    first = [" t", "he", " a", "ou", "12", " the"]
    assert derive.space_and_letter(first) == [" t", " a"] and derive.two_letters(first) == ["he", "ou"]
    assert derive.first_longer(first) == (6, " the", [(" t", 1), ("he", 2)])
    assert derive.first_longer([" a", "he", " the"]) == (3, " the", [])  # ' t' never merged
    assert derive.first_longer([" a", "he"]) is None
