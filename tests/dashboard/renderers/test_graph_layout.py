"""dashboard.renderers.graph_layout: layered layout of the workflow graph (no Django needed)."""

from __future__ import annotations

import re

import pytest

from dashboard.renderers.graph_layout import (
    NODE_STATES,
    GraphLayout,
    PlacedNode,
    layout_graph,
    normalize_state,
)

# SVG path data made of commands and numbers only: nothing from the workflow can reach it.
PATH_DATA = re.compile(r"^[MCLHVQ0-9. -]+$")


def by_id(layout: GraphLayout) -> dict[str, PlacedNode]:
    return {node.id: node for node in layout.nodes}


def overlaps(a: PlacedNode, b: PlacedNode) -> bool:
    return not (
        a.x + a.width <= b.x
        or b.x + b.width <= a.x
        or a.y + a.height <= b.y
        or b.y + b.height <= a.y
    )


def assert_well_formed(layout: GraphLayout) -> None:
    nodes = list(layout.nodes)
    for i, a in enumerate(nodes):
        assert a.x >= 0 and a.y >= 0
        assert a.x + a.width <= layout.width and a.y + a.height <= layout.height
        for b in nodes[i + 1 :]:
            assert not overlaps(a, b), (a, b)
    for edge in layout.edges:
        assert PATH_DATA.match(edge.d), edge.d
        assert edge.kind in {"forward", "back", "self"}


def test_layout_graph_places_a_chain_left_to_right_on_one_line() -> None:
    layout = layout_graph(["a", "b", "c"], [("a", "b"), ("b", "c")], "a")
    nodes = by_id(layout)
    assert [nodes[n].layer for n in "abc"] == [0, 1, 2]
    assert nodes["a"].x < nodes["b"].x < nodes["c"].x
    assert nodes["a"].cy == nodes["b"].cy == nodes["c"].cy
    assert [e.kind for e in layout.edges] == ["forward", "forward"]
    assert_well_formed(layout)


def test_layout_graph_fans_out_and_in_around_the_middle() -> None:
    edges = [("start", "w1"), ("start", "w2"), ("start", "w3")]
    edges += [("w1", "join"), ("w2", "join"), ("w3", "join")]
    layout = layout_graph(["start", "w1", "w2", "w3", "join"], edges, "start")
    nodes = by_id(layout)
    workers = [nodes[w] for w in ("w1", "w2", "w3")]
    assert {w.layer for w in workers} == {1}
    assert nodes["join"].layer == 2
    assert sorted(w.order for w in workers) == [0, 1, 2]
    # The fan-out source and the fan-in target sit at the middle of their workers.
    assert nodes["start"].cy == pytest.approx(nodes["w2"].cy, abs=1)
    assert nodes["join"].cy == pytest.approx(nodes["w2"].cy, abs=1)
    assert_well_formed(layout)


def test_layout_graph_draws_a_self_loop_above_its_node_without_touching_a_neighbour() -> None:
    layout = layout_graph(
        ["a", "retry", "b"], [("a", "retry"), ("retry", "retry"), ("a", "b")], "a"
    )
    loops = [e for e in layout.edges if e.kind == "self"]
    assert [(e.source, e.target) for e in loops] == [("retry", "retry")]
    retry = by_id(layout)["retry"]
    peak = min(float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", loops[0].d)[1::2])
    assert peak < retry.y  # the loop rises above the box
    for other in layout.nodes:
        if other.id != "retry" and other.layer == retry.layer:
            assert other.y + other.height <= peak or other.y >= retry.y + retry.height
    assert_well_formed(layout)


def test_layout_graph_turns_a_cycle_into_a_back_edge_and_keeps_layers_acyclic() -> None:
    edges = [("plan", "act"), ("act", "review"), ("review", "plan"), ("review", "done")]
    layout = layout_graph(["plan", "act", "review", "done"], edges, "plan")
    nodes = by_id(layout)
    kinds = {(e.source, e.target): e.kind for e in layout.edges}
    assert kinds[("review", "plan")] == "back"
    assert {k for pair, k in kinds.items() if pair != ("review", "plan")} == {"forward"}
    assert nodes["plan"].layer < nodes["act"].layer < nodes["review"].layer < nodes["done"].layer
    back = next(e for e in layout.edges if e.kind == "back")
    # The loop runs under every node and ends at the target's left side.
    lowest = max(n.y + n.height for n in layout.nodes)
    assert max(float(v) for v in re.findall(r"V(-?[\d.]+)", back.d)) < layout.height
    assert any(float(v) > lowest for v in re.findall(r"V(-?[\d.]+)", back.d))
    assert back.d.endswith(f"H{nodes['plan'].x:g}")
    assert_well_formed(layout)


def test_layout_graph_routes_long_edges_through_every_layer_they_cross() -> None:
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    layout = layout_graph(list("abcd"), edges, "a")
    skip = next(e for e in layout.edges if (e.source, e.target) == ("a", "d"))
    # One straight passage per intermediate column (two dummies), between curves.
    assert skip.d.count("L") == 2
    assert skip.d.count("C") == 3
    assert_well_formed(layout)


def test_layout_graph_reduces_crossings_with_barycenter_ordering() -> None:
    # Declared in an order that crosses: a->y, b->x. The layout should uncross them.
    edges = [("s", "a"), ("s", "b"), ("a", "y"), ("b", "x")]
    layout = layout_graph(["s", "a", "b", "x", "y"], edges, "s")
    nodes = by_id(layout)
    assert (nodes["a"].order < nodes["b"].order) == (nodes["y"].order < nodes["x"].order)


def test_layout_graph_shows_disconnected_and_unknown_nodes() -> None:
    layout = layout_graph(["a", "b", "lonely"], [("a", "b"), ("ghost", "b")], "a")
    ids = [n.id for n in layout.nodes]
    assert ids == ["a", "b", "lonely", "ghost"]
    nodes = by_id(layout)
    assert nodes["lonely"].layer == 0
    # A source feeding a later node sits just before it, not at the far left.
    assert nodes["ghost"].layer == nodes["b"].layer - 1
    assert_well_formed(layout)


def test_layout_graph_copes_with_a_start_outside_the_graph_and_a_pure_cycle() -> None:
    layout = layout_graph(["x", "y"], [("x", "y"), ("y", "x")], "missing")
    assert {n.id for n in layout.nodes} == {"x", "y", "missing"}
    assert sorted(e.kind for e in layout.edges) == ["back", "forward"]
    assert_well_formed(layout)


def test_layout_graph_of_nothing_is_an_empty_canvas() -> None:
    layout = layout_graph([], [], "")
    assert layout.nodes == () and layout.edges == ()
    assert layout.width > 0 and layout.height > 0


def test_layout_graph_is_deterministic_and_ignores_duplicate_edges() -> None:
    executors = [f"step_{i}" for i in range(12)]
    edges = [(executors[i], executors[(i * 7 + 3) % 12]) for i in range(12)]
    edges += [(executors[i], executors[i + 1]) for i in range(11)]
    first = layout_graph(executors, edges, "step_0")
    second = layout_graph(list(executors), list(edges) + edges[:3], "step_0")
    assert first == second
    assert_well_formed(first)


def test_layout_graph_sizes_nodes_by_label_and_truncates_long_names() -> None:
    short, long_name = "ok", "a_really_long_executor_name_that_goes_on_and_on"
    layout = layout_graph([short, "medium_length_name", long_name], [], short)
    nodes = by_id(layout)
    assert nodes[short].width < nodes["medium_length_name"].width <= nodes[long_name].width
    assert nodes[long_name].label.endswith("…") and nodes[long_name].truncated
    assert not nodes[short].truncated


def test_annotate_pairs_nodes_with_known_states_only() -> None:
    layout = layout_graph(["a", "b", "c"], [("a", "b"), ("b", "c")], "a")
    view = layout.annotate({"a": "done", "b": "RUNNING", "c": '"><script>'})
    assert [(s.node.id, s.state) for s in view.nodes] == [
        ("a", "done"),
        ("b", "running"),
        ("c", "idle"),
    ]
    assert view.edges == layout.edges and view.states == NODE_STATES
    assert normalize_state(None) == "idle"
