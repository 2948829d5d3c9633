"""The checkpoint diff without Django: dashboard.renderers.jsondiff (rows), diff_values (how values
read) and checkpoint_diff (sections, direction, side by side)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest

from dashboard.renderers import checkpoint_diff, diff_values
from dashboard.renderers.jsondiff import DiffEntry, diff_json, join_path, preview


def entries(a: object, b: object) -> list[tuple[str, str, object, object]]:
    return [(e.path, e.kind, e.old, e.new) for e in diff_json(a, b)]


def rows(a: object, b: object) -> list[tuple[str, str, str]]:
    """Every row, the folded ones too: (path, kind, note)."""
    return [(r.path, r.kind, r.note) for r in diff_json(a, b).rows]


def model(name: str, **fields: object) -> dict[str, object]:
    return {"$t": "model", "name": f"shop.{name}", "v": fields}


def int_keyed(pairs: dict[int, object]) -> dict[str, object]:
    return {"$t": "dict", "v": [[k, v] for k, v in pairs.items()]}


# ------------------------------------------------------------------------------- sequences


def test_removing_the_first_of_89_items_is_one_removed_row() -> None:
    before, after = {"remaining": list(range(1, 90))}, {"remaining": list(range(2, 90))}
    assert rows(before, after) == [
        ("$.remaining[0]", "removed", ""),
        ("$.remaining", "unchanged", "88 unchanged items"),
    ]
    assert diff_json(before, after).counts == {
        "added": 0,
        "removed": 1,
        "changed": 0,
        "moved": 0,
        "unchanged": 88,
    }


def test_an_insertion_in_the_middle_is_one_added_row_between_folded_neighbours() -> None:
    before = [f"step {i}" for i in range(10)]
    after = [*before[:5], "retry", *before[5:]]
    assert rows(before, after) == [
        ("$", "unchanged", "5 unchanged items"),
        ("$[5]", "added", ""),
        ("$", "unchanged", "5 unchanged items"),
    ]
    assert entries(before, after) == [("$[5]", "added", None, "retry")]


def test_dict_items_are_matched_by_their_id_when_they_move() -> None:
    before = [{"id": "a", "qty": 1}, {"id": "b", "qty": 2}, {"id": "c", "qty": 3}]
    after = [{"id": "c", "qty": 30}, {"id": "a", "qty": 1}, {"id": "b", "qty": 2}]
    found = diff_json(before, after)
    assert [(e.path, e.kind, e.note) for e in found] == [
        ("$[0]", "moved", "from [2]"),
        ("$[0].qty", "changed", ""),
    ]
    assert (found.entries[1].old, found.entries[1].new) == (3, 30)
    assert found.counts["unchanged"] == 3  # a, b, and c's id


def test_items_are_matched_by_request_id_and_a_new_one_is_added_not_a_change() -> None:
    before = [model("Ask", request_id="r1", amount=5), model("Ask", request_id="r2", amount=7)]
    after = [model("Ask", request_id="r0", amount=1), *before]
    assert entries(before, after) == [("$[0]", "added", None, after[0])]


def test_records_without_a_usable_id_are_matched_by_content() -> None:
    # "id" repeats, so it is not an identity; whole records are.
    before = [{"id": 1, "v": "x"}, {"id": 1, "v": "y"}, {"id": 2, "v": "z"}]
    after = before[1:]
    assert entries(before, after) == [("$[0]", "removed", before[0], None)]


def test_a_value_that_moved_without_changing_is_one_moved_row() -> None:
    assert [(e.path, e.kind, e.note) for e in diff_json([1, 2, 3], [3, 1, 2])] == [
        ("$[0]", "moved", "from [2]")
    ]


def test_unmatched_items_in_the_same_place_are_compared_field_by_field() -> None:
    assert entries([1, 2, 3], [1, 5, 3]) == [("$[1]", "changed", 2, 5)]
    before = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 1}]
    after = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 4}]
    assert entries(before, after) == [("$[1].qty", "changed", 1, 4)]


def test_set_elements_are_added_and_removed_on_the_set_itself() -> None:
    before = {"tags": {"$t": "set", "v": ["a", "b"]}}
    after = {"tags": {"$t": "set", "v": ["a", "c"]}}
    assert entries(before, after) == [
        ("$.tags", "removed", "b", None),
        ("$.tags", "added", None, "c"),
    ]


# ----------------------------------------------------------------------------- dicts, models


def test_keys_are_reported_in_document_order_with_unchanged_ones_folded() -> None:
    a = {"keep": 1, "gone": 2, "edit": {"deep": "old"}}
    b = {"keep": 1, "edit": {"deep": "new"}, "fresh": [1]}
    assert entries(a, b) == [
        ("$.gone", "removed", 2, None),
        ("$.edit.deep", "changed", "old", "new"),
        ("$.fresh", "added", None, [1]),
    ]
    assert rows(a, b)[0] == ("$", "unchanged", "1 unchanged key")


def test_nested_unchanged_values_are_folded_with_a_count_at_each_level() -> None:
    a = {
        "order": model("Order", id=7, lines=[1, 2, 3], total=10, note="x"),
        "flags": {"a": 1, "b": 2},
    }
    b = {
        "order": model("Order", id=7, lines=[1, 2, 3, 4], total=14, note="x"),
        "flags": {"a": 1, "b": 2},
    }
    assert rows(a, b) == [
        ("$.order", "unchanged", "1 unchanged field"),
        ("$.order.lines", "unchanged", "3 unchanged items"),
        ("$.order.lines[3]", "added", ""),
        ("$.order.total", "changed", ""),
        ("$.order", "unchanged", "1 unchanged field"),
        ("$", "unchanged", "1 unchanged key"),
    ]


def test_equal_values_have_no_changes_and_one_folded_row() -> None:
    value = {"a": [1, {"b": None}], "c": "x"}
    found = diff_json(value, {"a": [1, {"b": None}], "c": "x"})
    assert found.entries == [] and not found.truncated
    assert rows(value, value) == [("$", "unchanged", "2 unchanged keys")]
    assert diff_json(1, 1).rows == []


def test_int_keys_and_string_keys_are_different_keys() -> None:
    before = {"results": int_keyed({1: 1, 2: 4})}
    after = {"results": int_keyed({1: 1, 2: 4, 3: 9})}
    assert entries(before, after) == [("$.results[3]", "added", None, 9)]
    # An empty dict is stored untagged; gaining an int key is still an added key.
    assert entries({"r": {}}, {"r": int_keyed({1: 1})}) == [("$.r[1]", "added", None, 1)]
    assert entries(int_keyed({1: "a"}), {"1": "a"}) == [
        ("$[1]", "removed", "a", None),
        ('$["1"]', "added", None, "a"),
    ]


def test_a_change_of_kind_or_class_is_one_change() -> None:
    assert entries({"x": {"a": 1}}, {"x": [1]}) == [("$.x", "changed", {"a": 1}, [1])]
    assert entries({"x": 1}, {"x": "1"}) == [("$.x", "changed", 1, "1")]
    one, other = model("Order", id=1), model("Refund", id=1)
    assert entries(one, other) == [("$", "changed", one, other)]
    tagged = {"$t": "tuple", "v": [1]}
    assert entries([1], tagged) == [("$", "changed", [1], tagged)]


def test_booleans_numbers_and_floats_stay_apart() -> None:
    assert entries([True], [1]) == [("$[0]", "changed", True, 1)]
    assert entries([1], [1.0]) == [("$[0]", "changed", 1, 1.0)]
    assert entries({"a": 0}, {"a": False}) == [("$.a", "changed", 0, False)]


def test_paths_quote_keys_that_are_not_identifiers() -> None:
    a = {"executors": {"worker": {"results": {"3": "a", "odd key": 1, 'q"uote': 1}}}}
    b = {"executors": {"worker": {"results": {"3": "b", "odd key": 2, 'q"uote': 2}}}}
    assert [e.path for e in diff_json(a, b)] == [
        '$.executors.worker.results["3"]',
        '$.executors.worker.results["odd key"]',
        '$.executors.worker.results["q\\"uote"]',
    ]


def test_the_diff_is_bounded_and_says_when_it_stopped() -> None:
    a = {f"k{i}": i for i in range(50)}
    b = {f"k{i}": i + 1 for i in range(50)}
    result = diff_json(a, b, max_entries=10)
    assert len(result.rows) == 10 and result.truncated
    exact = diff_json({"a": 1, "b": 1}, {"a": 2, "b": 2}, max_entries=2)
    assert len(exact) == 2 and not exact.truncated
    with pytest.raises(ValueError):
        diff_json(a, b, max_entries=-1)


def test_the_diff_is_deterministic_and_numbers_its_changes() -> None:
    a = {"z": [1, 2, {"y": 1}], "a": {"q": 1, "p": 2}}
    b = {"a": {"p": 3, "r": 1}, "z": [1, {"y": 2}]}
    assert diff_json(a, b) == diff_json(a, b)
    found = diff_json(a, b, first_number=5)
    assert [(e.path, e.number) for e in found] == [
        ("$.z[1]", 5),
        ("$.z[2]", 6),
        ("$.a.q", 7),
        ("$.a.p", 8),
        ("$.a.r", 9),
    ]


def test_top_level_scalars_and_deep_nesting() -> None:
    assert entries(1, 2) == [("$", "changed", 1, 2)]
    deep_a: object = 1
    deep_b: object = 2
    for _ in range(300):
        deep_a, deep_b = [deep_a], [deep_b]
    result = diff_json(deep_a, deep_b)
    assert len(result) == 1 and "too deeply" in result.entries[0].note


def test_a_long_list_full_of_duplicates_is_still_diffed() -> None:
    before = [i % 3 for i in range(20_000)]
    after = [*before[:10_000], 7, *before[10_000:]]
    assert entries(before, after) == [("$[10000]", "added", None, 7)]


# --------------------------------------------------------------------------- how values read


def test_values_read_as_the_operator_wrote_them_never_as_codec_tags() -> None:
    value = model(
        "Order",
        totals=int_keyed({1: 1, 2: 4}),
        due={"$t": "datetime", "v": "2026-08-21T14:03:22+00:00"},
        day={"$t": "date", "v": "2026-08-21"},
        price={"$t": "decimal", "v": "1.10"},
        ref={"$t": "uuid", "v": "12345678-1234-5678-1234-567812345678"},
        pair={"$t": "tuple", "v": [1]},
        tags={"$t": "set", "v": []},
        frozen={"$t": "frozenset", "v": ["a"]},
        colour={"$t": "enum", "name": "shop.Colour", "v": "RED"},
        wait={"$t": "timedelta", "v": [1, 7384, 0]},
        blob={"$t": "bytes", "v": "aGk="},
        huge={"$t": "int", "v": "-ff"},
        odd={"$t": "dict", "v": [[{"$t": "tuple", "v": [1, 2]}, "x"]]},
        data={"$t": "dict", "v": [["$t", "user data"]]},
    )
    assert diff_values.text(value, limit=None) == (
        "Order(totals={1: 1, 2: 4}, due=2026-08-21 14:03:22+00:00, day=2026-08-21, "
        'price=Decimal("1.10"), ref=UUID("12345678-1234-5678-1234-567812345678"), pair=(1,), '
        'tags=set(), frozen=frozenset({"a"}), colour=Colour.RED, '
        'wait=timedelta("1 day, 2:03:04"), blob=bytes(2): aGk=, huge=-0xff, odd={(1, 2): "x"}, '
        'data={"$t": "user data"})'
    )
    tree = diff_values.tree(value)
    assert tree["$model"] == "shop.Order"
    assert tree["totals"] == {"1": 1, "2": 4}
    assert tree["due"] == "2026-08-21 14:03:22+00:00" and tree["price"] == "1.10"
    assert tree["pair"] == [1] and tree["odd"] == {"(1, 2)": "x"}
    assert tree["data"] == {"$$t": "user data"}  # data cannot pass for a marker


def test_text_is_cut_with_an_ellipsis_and_pretty_breaks_long_values() -> None:
    assert diff_values.text("é" * 500) == '"' + "é" * 158 + "…"
    assert len(diff_values.text(list(range(1000)))) == 160
    lines, cut = diff_values.pretty(model("Task", remaining=list(range(40)), work_ms=0))
    assert not cut and lines[0] == "Task(" and lines[-1] == ")"
    assert lines[1] == "    remaining=["
    assert lines[2].startswith("        0, 1, 2, 3,") and len(lines[2]) <= 72
    assert lines[-2] == "    work_ms=0,"
    many, cut = diff_values.pretty([{"k": "x" * 80}] * 1000, max_lines=50)
    assert cut and len(many) == 50


def test_diff_entry_previews_are_bounded_and_blank_where_nothing_is_shown() -> None:
    entry = DiffEntry("$.x", "changed", {"a": [1, 2]}, "é" * 500)
    assert entry.old_text == '{"a": [1, 2]}'
    assert len(entry.new_text) == 100 and entry.new_text.endswith("…")
    assert DiffEntry("$.y", "added", new=1).old_text == ""
    assert DiffEntry("$.y", "removed", old=1).new_text == ""
    assert DiffEntry("$[0]", "moved", 1, 1, note="from [2]").old_text == ""
    assert preview(None) == "null"


def test_join_path_distinguishes_indexes_and_int_keys_from_string_keys() -> None:
    assert join_path("$", 3) == "$[3]"
    assert join_path("$", "3") == '$["3"]'
    assert join_path("$", "name_1") == "$.name_1"
    assert join_path("$", "") == '$[""]'
    assert join_path("$", diff_values.Shown("(1, 2)")) == "$[(1, 2)]"


# ------------------------------------------------------------------------ checkpoint diffs


def document(remaining: list[int], results: dict[int, int], **extra: Any) -> dict[str, Any]:
    return {
        "messages": [
            {
                "source": "worker",
                "target": None,
                "kind": "standard",
                "data": model("Task", remaining=remaining, work_ms=0),
            }
        ],
        "state": extra.get("state", {}),
        "executor_states": {"worker": {"results": int_keyed(results) if results else {}}},
        "pending_request_info_events": extra.get("pending", {}),
        "edge_states": {},
        "answered_request_ids": [],
        "metadata": {"kind": extra.get("kind", "superstep")},
    }


def test_a_checkpoint_diff_is_grouped_by_section() -> None:
    older = checkpoint_diff.parts(document(list(range(1, 90)), {}), superstep=1)
    newer = checkpoint_diff.parts(document(list(range(2, 90)), {1: 1}), superstep=2)
    diff = checkpoint_diff.checkpoint_diff(older, newer)
    assert [(s.title, s.summary) for s in diff.sections] == [
        ("Executor state", "1 added"),
        ("Shared state", "empty on both sides"),
        ("Messages in flight", "1 removed · 92 unchanged"),  # 88 items, 3 keys, 1 field
        ("Pending requests", "empty on both sides"),
        ("Checkpoint", "1 changed · 3 unchanged"),
    ]
    assert [(e.path, e.kind, e.number) for e in diff.entries] == [
        ("$.executor_states.worker.results[1]", "added", 1),
        ("$.messages[0].data.remaining[0]", "removed", 2),
        ("$.superstep", "changed", 3),
    ]
    assert diff.entry(2) is diff.entries[1] and diff.entry(9) is None


def test_the_older_checkpoint_comes_first_whichever_was_opened() -> None:
    at = dt.datetime(2026, 8, 21, tzinfo=dt.UTC)
    early = SimpleNamespace(created_at=at, superstep=3)
    late = SimpleNamespace(created_at=at + dt.timedelta(seconds=5), superstep=15)
    assert checkpoint_diff.older_first(late, early) == (early, late)
    assert checkpoint_diff.older_first(early, late) == (early, late)
    # A fork's first checkpoint may share its origin's instant; the superstep then decides.
    origin, fork = (
        SimpleNamespace(created_at=at, superstep=4),
        SimpleNamespace(created_at=at, superstep=5),
    )
    assert checkpoint_diff.older_first(fork, origin) == (origin, fork)


def test_a_fork_is_compared_with_its_origin_like_any_two_checkpoints() -> None:
    parked = model("ReturnState", order_id="ORD-7", refund_amount=120.0)
    edited = model("ReturnState", order_id="ORD-7", refund_amount=100.0)
    origin = document([1], {}, state={"pending:ORD-7": parked})
    fork = document([1], {}, state={"pending:ORD-7": edited}, kind="fork")
    diff = checkpoint_diff.checkpoint_diff(
        checkpoint_diff.parts(origin, superstep=4), checkpoint_diff.parts(fork, superstep=4)
    )
    assert [(e.path, e.kind, e.old, e.new) for e in diff.entries] == [
        ('$.state["pending:ORD-7"].refund_amount', "changed", 120.0, 100.0),
        ("$.metadata.kind", "changed", "superstep", "fork"),
    ]


def test_one_value_side_by_side_lines_up_what_changed() -> None:
    before = model("Task", remaining=[1, 2, 3], owner="ana", notes=["a"] * 12, due=None)
    after = model("Task", remaining=[2, 3], owner="ana", notes=["a"] * 12, due=None)
    entry = DiffEntry("$.task", "changed", before, after, number=1)
    side = checkpoint_diff.side_by_side(entry)
    shown = [(line.old, line.new, line.kind) for line in side.lines]
    assert shown[0] == ("Task(", "Task(", "same")
    assert ("    remaining=[1, 2, 3],", "    remaining=[2, 3],", "changed") in shown
    assert "$t" not in repr(shown)
    added = checkpoint_diff.side_by_side(DiffEntry("$.x", "added", new={"$t": "decimal", "v": "2"}))
    assert [(line.old, line.new, line.kind) for line in added.lines] == [
        (None, 'Decimal("2")', "added")
    ]


def test_long_equal_runs_fold_in_the_side_by_side_view() -> None:
    before = {f"key {i}": i for i in range(60)}
    after = {**before, "key 59": "last"}
    side = checkpoint_diff.side_by_side(DiffEntry("$", "changed", before, after))
    kinds = [line.kind for line in side.lines]
    assert "skipped" in kinds and len(side.lines) < 20
    skipped = next(line for line in side.lines if line.kind == "skipped")
    assert skipped.skipped > 40


def test_the_side_by_side_view_widens_to_the_record_a_change_is_in() -> None:
    before = {"orders": [model("Order", id=1, qty=1, sku="A")]}
    after = {"orders": [model("Order", id=1, qty=2, sku="A")]}
    (entry,) = diff_json(before, after).entries
    assert entry.path == "$.orders[0].qty"
    narrow = checkpoint_diff.side_by_side(entry)
    assert [(line.old, line.new) for line in narrow.lines] == [("1", "2")]
    assert narrow.wider == [(3, "$"), (2, "$.orders"), (1, "$.orders[0]"), (0, "$.orders[0].qty")]
    record = checkpoint_diff.side_by_side(entry, up=1)
    assert record.path == "$.orders[0]"
    assert [(line.old, line.new) for line in record.lines] == [
        ('Order(id=1, qty=1, sku="A")', 'Order(id=1, qty=2, sku="A")')
    ]
    assert checkpoint_diff.side_by_side(entry, up=99).path == "$"


def message(role: str, text: str, author: str = "") -> dict[str, object]:
    """A MAF message as a checkpoint holds it."""
    fields: dict[str, object] = {
        "type": "message",
        "role": role,
        "contents": [{"type": "text", "text": text}],
    }
    if author:
        fields["author_name"] = author
    return {"$t": "agent", "name": "Message", "v": fields}


def test_a_conversation_that_grew_is_one_row_saying_how_many_messages_and_who() -> None:
    before = {"full_conversation": [message("user", "refund A-17")]}
    after = {
        "full_conversation": [
            message("user", "refund A-17"),
            message("assistant", "Looking it up", "support"),
            message("tool", "order A-17: 40.00"),
            message("assistant", "Refunded", "support"),
        ]
    }

    assert rows(before, after) == [
        ("$.full_conversation", "unchanged", "1 unchanged message"),
        ("$.full_conversation", "added", "3 messages added (support, tool)"),
    ]
    [added] = diff_json(before, after).entries
    assert added.new_text.startswith('[Message(type="message", role="assistant"')


def test_a_conversation_whose_earlier_message_changed_is_compared_message_by_message() -> None:
    before = {"c": [message("user", "refund A-17")]}
    after = {"c": [message("user", "refund A-18"), message("assistant", "Done", "support")]}

    assert entries(before, after) == [
        ("$.c[0].contents[0].text", "changed", "refund A-17", "refund A-18"),
        ("$.c[1]", "added", None, after["c"][1]),
    ]


def test_a_maf_value_reads_as_its_class_and_fields_never_as_unreadable() -> None:
    value = message("assistant", "Refunded", "support")

    assert diff_values.text(value) == (
        'Message(type="message", role="assistant", contents=[{"type": "text", "text": '
        '"Refunded"}], author_name="support")'
    )
    assert diff_values.tree(value)["$model"] == "Message"
