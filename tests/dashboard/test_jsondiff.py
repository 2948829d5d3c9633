"""dashboard.web.jsondiff: checkpoint diffs by JSON path (no Django needed)."""

from __future__ import annotations

import pytest

from dashboard.web.jsondiff import DiffEntry, diff_json, flatten, join_path, preview


def entries(a: object, b: object) -> list[tuple[str, str, object, object]]:
    return [(e.path, e.kind, e.old, e.new) for e in diff_json(a, b)]


def test_diff_json_of_equal_values_is_empty() -> None:
    value = {"a": [1, {"b": None}], "c": "x"}
    result = diff_json(value, {"a": [1, {"b": None}], "c": "x"})
    assert list(result) == [] and not result.truncated


def test_diff_json_reports_added_removed_and_changed_keys_in_document_order() -> None:
    a = {"keep": 1, "gone": 2, "edit": {"deep": "old"}}
    b = {"keep": 1, "edit": {"deep": "new"}, "fresh": [1]}
    assert entries(a, b) == [
        ("$.gone", "removed", 2, None),
        ("$.edit.deep", "changed", "old", "new"),
        ("$.fresh", "added", None, [1]),
    ]


def test_diff_json_compares_lists_by_index_and_notes_a_length_change() -> None:
    result = diff_json({"items": [1, 2, 3]}, {"items": [1, 5]})
    assert [(e.path, e.kind) for e in result] == [
        ("$.items", "changed"),
        ("$.items[1]", "changed"),
        ("$.items[2]", "removed"),
    ]
    length = result.entries[0]
    assert length.length_change and length.note == "length 3 → 2"
    assert (length.old, length.new) == (3, 2)
    assert length.old_text == length.new_text == ""  # the note says it; no bare "3" → "2"
    # The length note is context, not a fourth difference.
    assert result.counts == {"added": 0, "removed": 1, "changed": 1}


def test_diff_json_treats_a_type_change_as_one_change() -> None:
    assert entries({"x": {"a": 1}}, {"x": [1]}) == [("$.x", "changed", {"a": 1}, [1])]
    assert entries({"x": 1}, {"x": "1"}) == [("$.x", "changed", 1, "1")]


def test_diff_json_does_not_confuse_booleans_with_numbers_or_ints_with_floats() -> None:
    assert entries([True], [1]) == [("$[0]", "changed", True, 1)]
    assert entries([1], [1.0]) == [("$[0]", "changed", 1, 1.0)]
    assert entries([0], [False]) == [("$[0]", "changed", 0, False)]


def test_diff_json_quotes_keys_that_are_not_identifiers() -> None:
    a = {"executors": {"worker": {"results": {"3": "a", "odd key": 1, 'q"uote': 1}}}}
    b = {"executors": {"worker": {"results": {"3": "b", "odd key": 2, 'q"uote': 2}}}}
    assert [e.path for e in diff_json(a, b)] == [
        '$.executors.worker.results["3"]',
        '$.executors.worker.results["odd key"]',
        '$.executors.worker.results["q\\"uote"]',
    ]


def test_diff_json_is_bounded_and_says_when_it_stopped() -> None:
    a = {f"k{i}": i for i in range(50)}
    b = {f"k{i}": i + 1 for i in range(50)}
    result = diff_json(a, b, max_entries=10)
    assert len(result) == 10 and result.truncated
    exact = diff_json({"a": 1, "b": 1}, {"a": 2, "b": 2}, max_entries=2)
    assert len(exact) == 2 and not exact.truncated
    with pytest.raises(ValueError):
        diff_json(a, b, max_entries=-1)


def test_diff_json_is_deterministic() -> None:
    a = {"z": [1, 2, {"y": 1}], "a": {"q": 1, "p": 2}}
    b = {"a": {"p": 3, "r": 1}, "z": [1, {"y": 2}]}
    assert diff_json(a, b) == diff_json(a, b)
    assert [e.path for e in diff_json(a, b)] == [
        "$.z",
        "$.z[1]",
        "$.z[2]",
        "$.a.q",
        "$.a.p",
        "$.a.r",
    ]


def test_diff_json_handles_top_level_scalars_and_deep_nesting() -> None:
    assert entries(1, 2) == [("$", "changed", 1, 2)]
    deep_a: object = 1
    deep_b: object = 2
    for _ in range(300):
        deep_a, deep_b = [deep_a], [deep_b]
    result = diff_json(deep_a, deep_b)
    assert len(result) == 1 and "too deeply" in result.entries[0].note


def test_diff_entry_text_previews_are_compact_json_and_bounded() -> None:
    entry = DiffEntry("$.x", "changed", {"a": [1, 2]}, "é" * 500)
    assert entry.old_text == '{"a": [1,2]}'
    assert len(entry.new_text) == 160 and entry.new_text.endswith("…")
    assert DiffEntry("$.y", "added", new=1).old_text == ""
    assert DiffEntry("$.y", "removed", old=1).new_text == ""
    assert preview(None) == "null"


def test_join_path_distinguishes_indexes_from_numeric_keys() -> None:
    assert join_path("$", 3) == "$[3]"
    assert join_path("$", "3") == '$["3"]'
    assert join_path("$", "name_1") == "$.name_1"
    assert join_path("$", "") == '$[""]'


def test_flatten_lists_leaves_with_paths_and_keeps_empty_containers() -> None:
    value = {"a": {"b": [1, {}]}, "c d": [], "e": None}
    assert flatten(value) == [
        ("$.a.b[0]", 1),
        ("$.a.b[1]", {}),
        ('$["c d"]', []),
        ("$.e", None),
    ]
    assert len(flatten(list(range(100)), max_entries=5)) == 5
