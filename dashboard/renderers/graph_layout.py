"""Layered left-to-right layout of a workflow graph, drawn by ``components/workflow_graph.html``.

Why here and not a JavaScript graph library: the dashboard has no build step and no CDN, and the
picture must come out of a Django template so that every executor name is auto-escaped. This
module therefore computes *numbers only*; the SVG path strings (``PlacedEdge.d``) are formatted
from floats, so nothing that comes from a workflow ever reaches them.

The method is a compact Sugiyama layout:

1. A depth-first search from ``start`` (then from every node it did not reach, so disconnected
   parts still show) sets cycle-closing edges aside as *back edges*; self-loops are set aside too.
2. The remaining acyclic graph is layered by longest path; a source other than ``start`` is pulled
   right to sit just before its first successor, so it does not drag a long edge across the page.
3. Edges spanning several layers get one dummy node per layer crossed, so they take part in the
   ordering and bend around real nodes instead of through them.
4. Barycenter sweeps (down, then up) reorder each layer; the order with fewest crossings wins.
5. Within a column, vertical positions are pulled towards the neighbours' centres and then
   separated with an isotonic regression, which gives straight chains and centred fan-ins.
6. Forward edges become Bézier curves; back edges run as rounded orthogonal loops under the
   graph; self-loops sit on top of their node.

Everything is deterministic: ties break on the caller's order, never on hashing.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dashboard.renderers.graph_geometry import MAX_LABEL_CHARS, place

# Executor states the stylesheet colours (``.node.state-<name>``); anything else shows as idle.
# "cancelled": the run was cancelled while this executor was at work or waiting for a person.
NODE_STATES: tuple[str, ...] = ("idle", "running", "waiting", "done", "failed", "cancelled")
# What a node is drawn as (its ``data-kind`` attribute): a plain executor, or a whole workflow
# used as one executor (MAF's ``WorkflowExecutor``), which opens onto its inner graph.
NODE_KINDS: tuple[str, ...] = ("executor", "subworkflow")
# Output designation (``output_from`` / ``intermediate_output_from``), shown as a tag.
NODE_ROLES: tuple[str, ...] = ("output", "intermediate")


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What the picture says about an executor beyond its id: its kind, a caption line
    ("sub-workflow: <inner name>") and its output role ("output", "intermediate" or "")."""

    kind: str = "executor"
    caption: str = ""
    role: str = ""


@dataclass(frozen=True, slots=True)
class PlacedNode:
    """One executor box; ``x``/``y`` is its top-left corner in SVG user units."""

    id: str
    label: str
    x: float
    y: float
    width: float
    height: float
    layer: int
    order: int
    kind: str = "executor"
    caption: str = ""
    role: str = ""

    @property
    def is_subworkflow(self) -> bool:
        return self.kind == "subworkflow"

    @property
    def cx(self) -> float:
        return round(self.x + self.width / 2, 1)

    @property
    def cy(self) -> float:
        return round(self.y + self.height / 2, 1)

    @property
    def truncated(self) -> bool:
        return self.label != self.id


@dataclass(frozen=True, slots=True)
class PlacedEdge:
    """``kind`` is "forward", "back" (closes a cycle) or "self" (a self-loop)."""

    source: str
    target: str
    d: str
    kind: str


@dataclass(frozen=True, slots=True)
class GraphLayout:
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]
    width: float
    height: float

    def annotate(self, states: Mapping[str, str]) -> GraphView:
        """Pair each node with its live state, for the template (which cannot index a dict)."""
        subs = [n.id for n in self.nodes if n.is_subworkflow]
        return GraphView(
            layout=self,
            nodes=tuple(
                StatedNode(
                    n,
                    normalize_state(states.get(n.id)),
                    subs.index(n.id) if n.is_subworkflow else None,
                )
                for n in self.nodes
            ),
        )


@dataclass(frozen=True, slots=True)
class StatedNode:
    node: PlacedNode
    state: str
    # The position among the graph's sub-workflow nodes: the run page's panel for this node
    # is ``#subworkflow-<sub_index>`` (DOM ids never carry executor names).
    sub_index: int | None = None


@dataclass(frozen=True, slots=True)
class GraphView:
    """What ``components/workflow_graph.html`` renders: ``layout_graph(...).annotate(states)``."""

    layout: GraphLayout
    nodes: tuple[StatedNode, ...]

    @property
    def edges(self) -> tuple[PlacedEdge, ...]:
        return self.layout.edges

    @property
    def width(self) -> float:
        return self.layout.width

    @property
    def height(self) -> float:
        return self.layout.height

    @property
    def states(self) -> tuple[str, ...]:
        return NODE_STATES

    @property
    def has_subworkflows(self) -> bool:
        return any(n.is_subworkflow for n in self.layout.nodes)

    @property
    def roles(self) -> tuple[str, ...]:
        """The output roles some node has, for the legend."""
        return tuple(r for r in NODE_ROLES if any(n.role == r for n in self.layout.nodes))


def normalize_state(state: object) -> str:
    # The state becomes part of a class name; only known values may, so CSS and the live-update
    # script can rely on the closed set.
    text = str(state).lower() if state is not None else "idle"
    return text if text in NODE_STATES else "idle"


def layout_graph(
    executors: Sequence[str],
    edges: Iterable[tuple[str, str]],
    start: str,
    info: Mapping[str, NodeInfo] | None = None,
) -> GraphLayout:
    """Lay out the executor graph left to right, starting at ``start``.

    Unknown edge endpoints are added as nodes (showing too much beats hiding a broken edge);
    duplicate edges are drawn once. An empty graph gives an empty, margin-sized layout.
    ``info`` gives some executors a kind, a caption and an output role (kinds and roles
    outside ``NODE_KINDS`` / ``NODE_ROLES`` fall back to a plain executor with no role).
    """
    edge_list = list(edges)
    endpoints = [name for edge in edge_list for name in edge]
    names = _unique([*executors, *endpoints, *([start] if start else [])])
    index = {name: i for i, name in enumerate(names)}
    pairs = _unique([(index[a], index[b]) for a, b in edge_list])
    self_loops = [a for a, b in pairs if a == b]
    plain = [(a, b) for a, b in pairs if a != b]
    back = _back_edges(len(names), plain, index.get(start))
    forward = [edge for edge in plain if edge not in back]
    details = [_checked((info or {}).get(name)) for name in names]
    placed = place(
        names,
        _layers(len(names), forward, index.get(start)),
        forward,
        [edge for edge in plain if edge in back],
        self_loops,
        captions=[d.caption for d in details],
        tags=[d.role for d in details],
    )
    columns = zip(
        names, placed.labels, placed.boxes, placed.layers, placed.orders, details, strict=True
    )
    nodes = tuple(
        PlacedNode(
            name,
            label,
            box.x,
            box.y,
            box.width,
            box.height,
            layer,
            order,
            d.kind,
            d.caption,
            d.role,
        )
        for name, label, box, layer, order, d in columns
    )
    return GraphLayout(
        nodes=nodes,
        edges=tuple(PlacedEdge(names[a], names[b], d, kind) for a, b, d, kind in placed.edges),
        width=placed.width,
        height=placed.height,
    )


def _checked(detail: NodeInfo | None) -> NodeInfo:
    # Kind and role become class names; only known values may.
    if detail is None:
        return NodeInfo()
    caption = detail.caption
    if len(caption) > MAX_LABEL_CHARS:
        caption = caption[: MAX_LABEL_CHARS - 1] + "…"
    return NodeInfo(
        kind=detail.kind if detail.kind in NODE_KINDS else "executor",
        caption=caption,
        role=detail.role if detail.role in NODE_ROLES else "",
    )


def _unique[T](items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def _back_edges(
    count: int, edges: list[tuple[int, int]], start: int | None
) -> set[tuple[int, int]]:
    """Edges that close a cycle in a DFS from ``start``, then from every node left unvisited."""
    successors: list[list[int]] = [[] for _ in range(count)]
    indegree = [0] * count
    for a, b in edges:
        successors[a].append(b)
        indegree[b] += 1
    # Roots: the start first, then natural entry points, then anything left (pure cycles).
    roots = ([start] if start is not None else []) + [n for n in range(count) if not indegree[n]]
    roots += list(range(count))
    on_stack: set[int] = set()
    done: set[int] = set()
    back: set[tuple[int, int]] = set()
    for root in roots:
        if root in on_stack or root in done:
            continue
        on_stack.add(root)
        stack = [(root, iter(successors[root]))]
        while stack:
            node, pending = stack[-1]
            for nxt in pending:
                if nxt in on_stack:
                    back.add((node, nxt))
                elif nxt not in done:
                    on_stack.add(nxt)
                    stack.append((nxt, iter(successors[nxt])))
                    break
            else:
                stack.pop()
                on_stack.discard(node)
                done.add(node)
    return back


def _layers(count: int, edges: list[tuple[int, int]], start: int | None) -> list[int]:
    preds: list[list[int]] = [[] for _ in range(count)]
    succs: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        preds[b].append(a)
        succs[a].append(b)
    # Kahn's algorithm with a heap keyed on the caller's order keeps the result deterministic.
    remaining = [len(p) for p in preds]
    ready = [n for n in range(count) if not remaining[n]]
    heapq.heapify(ready)
    topo: list[int] = []
    while ready:
        node = heapq.heappop(ready)
        topo.append(node)
        for nxt in succs[node]:
            remaining[nxt] -= 1
            if not remaining[nxt]:
                heapq.heappush(ready, nxt)
    layer = [0] * count
    for node in topo:
        for nxt in succs[node]:
            layer[nxt] = max(layer[nxt], layer[node] + 1)
    for node in reversed(topo):
        if node != start and not preds[node] and succs[node]:
            layer[node] = min(layer[s] for s in succs[node]) - 1
    return layer
