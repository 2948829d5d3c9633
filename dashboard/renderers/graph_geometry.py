"""Coordinates and SVG path data for ``graph_layout`` (steps 3 to 6 of its docstring).

Kept apart from the public module so each stays readable; it returns plain numbers and
strings built from numbers, and knows nothing of templates or workflow objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import NamedTuple

NODE_HEIGHT = 44.0
# A node with a caption (a sub-workflow: "sub-workflow: <name>") has a third line of text.
CAPTION_HEIGHT = 16.0
# Captions and role tags use the stylesheet's 11 px text: about 6.2 px a character.
SMALL_CHAR_WIDTH = 6.2
STATE_CHARS = 8  # the longest state word ("waiting", "running") and a space
MIN_NODE_WIDTH = 112.0
MAX_NODE_WIDTH = 232.0
# The label width is estimated, not measured: the server has no fonts. 7.4 px is the mean advance
# of the 13 px system UI font in the stylesheet, so labels fit with a little room to spare.
CHAR_WIDTH = 7.4
NODE_PADDING_X = 28.0  # the label starts at x=28 in workflow_graph.html
MAX_LABEL_CHARS = 28
LAYER_GAP = 64.0  # room between columns for curves, back-edge lanes and the arrowheads
NODE_GAP = 22.0
DUMMY_HEIGHT = 10.0  # the lane a long edge occupies while it passes through a column
MARGIN = 16.0
SELF_LOOP_RISE = 30.0
BACK_EDGE_GAP = 16.0
BACK_EDGE_LANE = 6.0
CORNER = 8.0
ORDER_SWEEPS = 12
POSITION_ROUNDS = 6


class Box(NamedTuple):
    x: float
    y: float
    width: float
    height: float


class Placement(NamedTuple):
    """``boxes`` and ``labels`` are indexed like the names passed in; edges are (a, b, d, kind)."""

    boxes: list[Box]
    labels: list[str]
    layers: list[int]
    orders: list[int]
    edges: list[tuple[int, int, str, str]]
    width: float
    height: float


def place(
    names: list[str],
    layers: list[int],
    forward: list[tuple[int, int]],
    back: list[tuple[int, int]],
    self_loops: list[int],
    captions: list[str] | None = None,
    tags: list[str] | None = None,
) -> Placement:
    """``captions`` (a line under the label) and ``tags`` (text beside the state, such as
    "output") are indexed like ``names``; both only make their node bigger."""
    graph = VirtualGraph(names, layers, forward, set(self_loops), captions, tags)
    graph.order()
    graph.position()
    return graph.build(back, self_loops)


class VirtualGraph:
    """Real nodes plus dummies, with edges only between adjacent layers."""

    def __init__(
        self,
        names: list[str],
        layer: list[int],
        edges: list[tuple[int, int]],
        looped: set[int],
        captions: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> None:
        self.names = names
        self.real = len(names)
        self.layer = list(layer)
        self.up: list[list[int]] = [[] for _ in names]
        self.down: list[list[int]] = [[] for _ in names]
        self.labels = [_label(name) for name in names]
        captions = captions or [""] * len(names)
        tags = tags or [""] * len(names)
        self.width = [
            _node_width(label, caption, tag)
            for label, caption, tag in zip(self.labels, captions, tags, strict=True)
        ]
        self.height = [NODE_HEIGHT + (CAPTION_HEIGHT if c else 0.0) for c in captions]
        # A self-loop is drawn above its node, so that node claims extra room above it.
        self.headroom = [SELF_LOOP_RISE if n in looped else 0.0 for n in range(len(names))]
        self.chains: list[tuple[int, ...]] = []
        for a, b in edges:
            chain = [a]
            for lyr in range(layer[a] + 1, layer[b]):
                chain.append(self._add_dummy(lyr))
            chain.append(b)
            for u, v in pairwise(chain):
                self.down[u].append(v)
                self.up[v].append(u)
            self.chains.append(tuple(chain))
        depth = max(self.layer, default=-1) + 1
        self.rows: list[list[int]] = [[] for _ in range(depth)]
        self.center = [0.0] * len(self.layer)

    @property
    def count(self) -> int:
        """Real and dummy nodes together."""
        return len(self.layer)

    def _add_dummy(self, layer: int) -> int:
        self.layer.append(layer)
        self.up.append([])
        self.down.append([])
        self.width.append(0.0)
        self.height.append(DUMMY_HEIGHT)
        self.headroom.append(0.0)
        return len(self.layer) - 1

    # -- ordering -------------------------------------------------------------------------------

    def order(self) -> None:
        self._initial_order()
        best = [row[:] for row in self.rows]
        best_crossings = self._crossings()
        for sweep in range(ORDER_SWEEPS):
            if best_crossings == 0:
                break
            downward = sweep % 2 == 0
            span = range(1, len(self.rows)) if downward else range(len(self.rows) - 2, -1, -1)
            for i in span:
                self._reorder(i, self.up if downward else self.down)
            crossings = self._crossings()
            if crossings < best_crossings:
                best, best_crossings = [row[:] for row in self.rows], crossings
        self.rows = best

    def _initial_order(self) -> None:
        # Depth-first discovery order: a chain stays on one line and a fan-out stays together.
        seen: set[int] = set()
        starts = sorted(range(len(self.layer)), key=lambda n: (self.layer[n], n))
        for root in starts:
            if root in seen:
                continue
            stack = [root]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                self.rows[self.layer[node]].append(node)
                stack.extend(reversed([n for n in self.down[node] if n not in seen]))

    def _reorder(self, i: int, neighbours: list[list[int]]) -> None:
        position = self._positions()
        row = self.rows[i]

        def key(node: int) -> tuple[float, int]:
            linked = neighbours[node]
            if not linked:
                return (float(position[node]), position[node])
            return (sum(position[n] for n in linked) / len(linked), position[node])

        self.rows[i] = sorted(row, key=key)

    def _positions(self) -> dict[int, int]:
        return {node: pos for row in self.rows for pos, node in enumerate(row)}

    def _crossings(self) -> int:
        position = self._positions()
        total = 0
        for row in self.rows[:-1]:
            links = sorted((position[u], position[v]) for u in row for v in self.down[u])
            for k, (_, v1) in enumerate(links):
                total += sum(1 for u2, v2 in links[k + 1 :] if v2 < v1 and u2 != links[k][0])
        return total

    # -- coordinates ----------------------------------------------------------------------------

    def position(self) -> None:
        for row in self.rows:
            y = 0.0
            for node in row:
                y += self.headroom[node]
                self.center[node] = y + self.height[node] / 2
                y += self.height[node] + NODE_GAP
        for round_ in range(POSITION_ROUNDS):
            downward = round_ % 2 == 0
            rows = self.rows if downward else list(reversed(self.rows))
            for row in rows:
                self._settle(row, self.up if downward else self.down)

    def _settle(self, row: list[int], neighbours: list[list[int]]) -> None:
        if not row:
            return
        desired = []
        for node in row:
            linked = neighbours[node]
            if linked:
                desired.append(sum(self.center[n] for n in linked) / len(linked))
            else:
                desired.append(self.center[node])
        # Minimum centre-to-centre distances turn "no overlap" into "non-decreasing after an
        # offset", which pool-adjacent-violators solves exactly in least squares.
        offsets = [0.0]
        for prev, node in pairwise(row):
            gap = (self.height[prev] + self.height[node]) / 2 + NODE_GAP + self.headroom[node]
            offsets.append(offsets[-1] + gap)
        fitted = _isotonic([d - o for d, o in zip(desired, offsets, strict=True)])
        for node, value, offset in zip(row, fitted, offsets, strict=True):
            self.center[node] = value + offset

    # -- output ---------------------------------------------------------------------------------

    def build(self, back: list[tuple[int, int]], self_loops: list[int]) -> Placement:
        column_width = [max((self.width[n] for n in row), default=0.0) for row in self.rows]
        column_x: list[float] = []
        x = MARGIN
        for w in column_width:
            column_x.append(x)
            x += w + LAYER_GAP
        tops = (self.center[n] - self.height[n] / 2 - self.headroom[n] for n in range(self.count))
        top = min(tops, default=0.0)
        boxes: dict[int, Box] = {}
        for i, row in enumerate(self.rows):
            for node in row:
                w, h = self.width[node], self.height[node]
                left = column_x[i] + (column_width[i] - w) / 2
                top_y = self.center[node] - h / 2 - top + MARGIN
                boxes[node] = Box(round(left, 1), round(top_y, 1), w, h)
        bottom = max((box.y + box.height for box in boxes.values()), default=MARGIN)
        width = (column_x[-1] + column_width[-1] + MARGIN) if self.rows else 2 * MARGIN

        edges: list[tuple[int, int, str, str]] = []
        for chain in self.chains:
            d = _forward_path(chain, boxes, column_x, column_width, self.layer)
            edges.append((chain[0], chain[-1], d, "forward"))
        for k, (a, b) in enumerate(back):
            # Each back edge gets its own lane and floor, so parallel loops stay distinguishable.
            lane = min(k * BACK_EDGE_LANE, LAYER_GAP / 2 - 2 * CORNER - 4)
            exit_x = column_x[self.layer[a]] + column_width[self.layer[a]] + 2 * CORNER + lane
            entry_x = column_x[self.layer[b]] - 2 * CORNER - lane
            floor = bottom + BACK_EDGE_GAP * (k + 1)
            edges.append((a, b, _back_path(boxes[a], boxes[b], exit_x, entry_x, floor), "back"))
        for n in self_loops:
            edges.append((n, n, _self_loop_path(boxes[n]), "self"))
        height = bottom + (BACK_EDGE_GAP * (len(back) + 1) if back else 0.0) + MARGIN
        position = self._positions()
        real = range(self.real)
        return Placement(
            boxes=[boxes[n] for n in real],
            labels=self.labels,
            layers=self.layer[: self.real],
            orders=[position[n] for n in real],
            edges=edges,
            width=round(width, 1),
            height=round(height, 1),
        )


def _isotonic(values: list[float]) -> list[float]:
    blocks: list[list[float]] = []  # [mean, weight]
    for value in values:
        blocks.append([value, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight = blocks.pop()
            prev = blocks[-1]
            prev[0] = (prev[0] * prev[1] + mean * weight) / (prev[1] + weight)
            prev[1] += weight
    out: list[float] = []
    for mean, weight in blocks:
        out.extend([mean] * int(weight))
    return out


def _label(name: str) -> str:
    return name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1] + "…"


def _node_width(label: str, caption: str = "", tag: str = "") -> float:
    estimate = len(label) * CHAR_WIDTH + 2 * NODE_PADDING_X
    if caption:
        estimate = max(estimate, len(caption) * SMALL_CHAR_WIDTH + 2 * NODE_PADDING_X)
    if tag:
        estimate = max(estimate, (STATE_CHARS + len(tag)) * SMALL_CHAR_WIDTH + 2 * NODE_PADDING_X)
    return round(min(MAX_NODE_WIDTH, max(MIN_NODE_WIDTH, estimate)), 1)


def _num(value: float) -> str:
    text = f"{value:.1f}"
    text = text.removesuffix(".0")
    return "0" if text == "-0" else text


def _curve(x0: float, y0: float, x1: float, y1: float) -> str:
    bend = (x1 - x0) / 2
    return f"C{_num(x0 + bend)} {_num(y0)} {_num(x1 - bend)} {_num(y1)} {_num(x1)} {_num(y1)}"


def _forward_path(
    chain: tuple[int, ...],
    boxes: Mapping[int, Box],
    column_x: list[float],
    column_width: list[float],
    layer: list[int],
) -> str:
    sx, sy, sw, sh = boxes[chain[0]]
    x, y = sx + sw, sy + sh / 2
    parts = [f"M{_num(x)} {_num(y)}"]
    for dummy in chain[1:-1]:
        lyr = layer[dummy]
        lane_y = boxes[dummy][1] + boxes[dummy][3] / 2
        parts.append(_curve(x, y, column_x[lyr], lane_y))
        x, y = column_x[lyr] + column_width[lyr], lane_y
        parts.append(f"L{_num(x)} {_num(y)}")
    tx, ty, _, th = boxes[chain[-1]]
    parts.append(_curve(x, y, tx, ty + th / 2))
    return " ".join(parts)


def _back_path(
    source: Box,
    target: Box,
    exit_x: float,
    entry_x: float,
    floor: float,
) -> str:
    sx, sy, sw, sh = source
    tx, ty, _, th = target
    y0, y1, r = sy + sh / 2, ty + th / 2, CORNER
    return " ".join(
        [
            f"M{_num(sx + sw)} {_num(y0)}",
            f"H{_num(exit_x - r)}",
            f"Q{_num(exit_x)} {_num(y0)} {_num(exit_x)} {_num(y0 + r)}",
            f"V{_num(floor - r)}",
            f"Q{_num(exit_x)} {_num(floor)} {_num(exit_x - r)} {_num(floor)}",
            f"H{_num(entry_x + r)}",
            f"Q{_num(entry_x)} {_num(floor)} {_num(entry_x)} {_num(floor - r)}",
            f"V{_num(y1 + r)}",
            f"Q{_num(entry_x)} {_num(y1)} {_num(entry_x + r)} {_num(y1)}",
            f"H{_num(tx)}",
        ]
    )


def _self_loop_path(box: Box) -> str:
    x, y, w, _ = box
    right, left, peak = _num(x + w * 0.64), _num(x + w * 0.36), _num(y - SELF_LOOP_RISE * 1.3)
    return f"M{right} {_num(y)} C{right} {peak} {left} {peak} {left} {_num(y)}"
