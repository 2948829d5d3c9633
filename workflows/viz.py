"""Pictures of a workflow: Mermaid and Graphviz DOT text, and image files through Graphviz.

``WorkflowViz(workflow)`` has Microsoft Agent Framework's entry points (``to_mermaid``,
``to_digraph``, ``export``, ``save_svg``/``save_png``/``save_pdf``). The text is written here;
images need the optional ``graphviz`` Python package and its ``dot`` program, which the engine does
not depend on — without them ``export`` raises ``ImportError`` saying what to install.

Executor ids are user text: in DOT they are quoted and escaped; in Mermaid each node gets a
generated alias (letters, digits, ``_``) and the id appears only inside an escaped label, so an id
with spaces, quotes or arrows cannot change the drawing.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .edges import short_name

if TYPE_CHECKING:
    from .edges import EdgeGroup
    from .workflow import Workflow

__all__ = ["WorkflowViz"]

_IMAGE_FORMATS = ("svg", "png", "pdf")
_TEXT_FORMATS = {"dot": "dot", "mermaid": "mmd"}


@dataclass(frozen=True)
class _Link:
    """One arrow to draw: node keys at both ends and an optional label (dashed when set)."""

    source: str
    target: str
    label: str | None = None


class WorkflowViz:
    """Draws one workflow; sub-workflows (an executor with a ``workflow``) are drawn nested."""

    def __init__(self, workflow: Workflow) -> None:
        self._workflow = workflow

    # ------------------------------------------------------------------------------------ text

    def to_mermaid(self, include_internal_executors: bool = False) -> str:
        """A Mermaid ``flowchart TD``: the start executor is marked, a fan-in is a small circle
        node, conditional / switch-case / selection edges are dashed and labelled."""
        aliases = _Aliases()
        lines = ["flowchart TD"]
        self._mermaid(self._workflow, (), "  ", lines, aliases, include_internal_executors)
        return "\n".join(lines) + "\n"

    def to_digraph(self, include_internal_executors: bool = False) -> str:
        """A Graphviz ``digraph`` in DOT text, with the same shapes as the Mermaid picture."""
        lines = [
            "digraph Workflow {",
            "  rankdir=TD;",
            "  node [shape=box, style=filled, fillcolor=lightblue];",
            "  edge [color=black, arrowhead=vee];",
        ]
        self._dot(self._workflow, (), "  ", lines, include_internal_executors)
        lines.append("}")
        return "\n".join(lines) + "\n"

    # ---------------------------------------------------------------------------------- files

    def export(
        self,
        format: str = "svg",
        filename: str | None = None,
        include_internal_executors: bool = False,
    ) -> str:
        """Write the picture to ``filename`` (a temporary file when None) and return its path.

        ``format`` is ``svg``, ``png`` or ``pdf`` (rendered by Graphviz), or ``dot`` /
        ``mermaid`` (the text).

        Raises:
            ValueError: an unknown format, or a filename whose extension names another format.
            ImportError: an image format without the ``graphviz`` package or its ``dot`` program.
        """
        if format not in _IMAGE_FORMATS and format not in _TEXT_FORMATS:
            known = ", ".join([*_IMAGE_FORMATS, *_TEXT_FORMATS])
            raise ValueError(f"unknown format {format!r}; use one of: {known}")
        if format in _TEXT_FORMATS:
            text = (
                self.to_digraph(include_internal_executors)
                if format == "dot"
                else self.to_mermaid(include_internal_executors)
            )
            path = filename or _temp_path(_TEXT_FORMATS[format])
            Path(path).write_text(text, encoding="utf-8")
            return path
        return self._render(format, filename, include_internal_executors)

    def save_svg(self, filename: str, include_internal_executors: bool = False) -> str:
        return self.export("svg", filename, include_internal_executors)

    def save_png(self, filename: str, include_internal_executors: bool = False) -> str:
        return self.export("png", filename, include_internal_executors)

    def save_pdf(self, filename: str, include_internal_executors: bool = False) -> str:
        return self.export("pdf", filename, include_internal_executors)

    def _render(self, format: str, filename: str | None, internal: bool) -> str:
        try:
            import graphviz  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as exc:
            raise ImportError(
                f"exporting a workflow as {format} needs the graphviz Python package "
                "(pip install 'graphviz>=0.20') and the Graphviz programs (e.g. apt-get install "
                "graphviz); to_digraph() and to_mermaid() need neither"
            ) from exc
        target = Path(filename) if filename else Path(_temp_path(format))
        if target.suffix and target.suffix[1:] != format:
            raise ValueError(f"the file name {target.name!r} does not end in .{format}")
        base = str(target.with_suffix(""))
        source = graphviz.Source(self.to_digraph(internal))
        try:
            source.render(base, format=format, cleanup=True)
        except graphviz.backend.execute.ExecutableNotFound as exc:
            raise ImportError(
                "the graphviz Python package is installed but its 'dot' program is not on PATH; "
                "install Graphviz (e.g. apt-get install graphviz)"
            ) from exc
        return f"{base}.{format}"

    # --------------------------------------------------------------------------------- drawing

    def _mermaid(
        self,
        workflow: Workflow,
        ns: tuple[str, ...],
        indent: str,
        lines: list[str],
        aliases: _Aliases,
        internal: bool,
    ) -> None:
        start = workflow.start_executor_id
        for eid in workflow.executors:
            label = f"{eid} (Start)" if eid == start else eid
            lines.append(f'{indent}{aliases.get(ns, eid)}["{_mermaid_text(label)}"];')
        for node, _ in _fan_in_nodes(workflow):
            lines.append(f"{indent}{aliases.get(ns, node)}((fan-in));")
        if internal:
            for eid in workflow.executors:
                node = _internal(eid)
                lines.append(f'{indent}{aliases.get(ns, node)}(["{_mermaid_text(node)}"]);')
        for link in _links(workflow, internal):
            source, target = aliases.get(ns, link.source), aliases.get(ns, link.target)
            if link.label is None:
                lines.append(f"{indent}{source} --> {target};")
            else:
                lines.append(f'{indent}{source} -.->|"{_mermaid_text(link.label)}"| {target};')
        for eid, inner in _sub_workflows(workflow):
            lines.append(
                f"{indent}subgraph {aliases.get((*ns, eid), '')}"
                f'["{_mermaid_text("sub-workflow: " + eid)}"]'
            )
            self._mermaid(inner, (*ns, eid), indent + "  ", lines, aliases, internal)
            lines.append(f"{indent}end")
            lines.append(f"{indent}{aliases.get(ns, eid)} -.- {aliases.get((*ns, eid), '')};")

    def _dot(
        self,
        workflow: Workflow,
        ns: tuple[str, ...],
        indent: str,
        lines: list[str],
        internal: bool,
    ) -> None:
        def node(key: str) -> str:
            return _dot_quote("/".join((*ns, key)))

        start = workflow.start_executor_id
        for eid in workflow.executors:
            if eid == start:
                label = _dot_quote(eid)[:-1] + '\\n(Start)"'
                lines.append(f"{indent}{node(eid)} [fillcolor=lightgreen, label={label}];")
            else:
                lines.append(f"{indent}{node(eid)} [label={_dot_quote(eid)}];")
        for fan_in, _ in _fan_in_nodes(workflow):
            lines.append(
                f'{indent}{node(fan_in)} [shape=ellipse, fillcolor=lightgoldenrod, label="fan-in"];'
            )
        if internal:
            for eid in workflow.executors:
                lines.append(
                    f"{indent}{node(_internal(eid))} [shape=plaintext, style=solid, "
                    f"label={_dot_quote(_internal(eid))}];"
                )
        for link in _links(workflow, internal):
            attrs = "" if link.label is None else f" [style=dashed, label={_dot_quote(link.label)}]"
            lines.append(f"{indent}{node(link.source)} -> {node(link.target)}{attrs};")
        for eid, inner in _sub_workflows(workflow):
            digest = hashlib.sha256("/".join((*ns, eid)).encode()).hexdigest()[:10]
            lines.append(f"{indent}subgraph cluster_{digest} {{")
            lines.append(f"{indent}  label={_dot_quote('sub-workflow: ' + eid)};")
            lines.append(f"{indent}  style=dashed;")
            self._dot(inner, (*ns, eid), indent + "  ", lines, internal)
            lines.append(f"{indent}}}")


# ------------------------------------------------------------------------------------ helpers


def _internal(executor_id: str) -> str:
    return f"internal:{executor_id}"


def _fan_in_key(group: EdgeGroup) -> str:
    # Hashed so a fan-in node's key cannot equal an executor id.
    digest = hashlib.sha256(group.key.encode()).hexdigest()[:8]
    return f"fan_in::{group.targets[0]}::{digest}"


def _fan_in_nodes(workflow: Workflow) -> Iterator[tuple[str, EdgeGroup]]:
    for group in workflow.edge_groups:
        if group.kind == "fan_in":
            yield _fan_in_key(group), group


def _links(workflow: Workflow, internal: bool) -> Iterator[_Link]:
    for group in workflow.edge_groups:
        if group.kind == "internal":
            if internal:
                yield _Link(_internal(group.targets[0]), group.targets[0])
        elif group.kind == "fan_in":
            node = _fan_in_key(group)
            for source in group.sources:
                yield _Link(source, node)
            yield _Link(node, group.targets[0])
        elif group.kind == "switch_case":
            names: dict[str, list[str]] = {}
            for condition, target in group.cases:
                names.setdefault(target, []).append(short_name(condition) or "default")
            for target in group.targets:
                yield _Link(group.sources[0], target, " | ".join(names[target]))
        elif group.kind == "fan_out":
            label = short_name(group.selection)
            for target in group.targets:
                yield _Link(group.sources[0], target, label)
        else:
            label = short_name(group.condition)
            yield _Link(group.sources[0], group.targets[0], label)


def _sub_workflows(workflow: Workflow) -> Iterator[tuple[str, Workflow]]:
    from .workflow import Workflow as _Workflow

    for eid, executor in workflow.executors.items():
        inner: Any = getattr(executor, "workflow", None)
        if isinstance(inner, _Workflow):
            yield eid, inner


class _Aliases:
    """Mermaid node names: readable (from the id), safe (``[A-Za-z0-9_]``), never shared."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, ...], str] = {}
        self._used: set[str] = set()

    def get(self, ns: tuple[str, ...], key: str) -> str:
        full = (*ns, key)
        alias = self._by_key.get(full)
        if alias is None:
            base = "__".join(re.sub(r"[^0-9A-Za-z_]", "_", part) for part in full if part)
            # Mermaid reserves a few words and ids starting with a digit read badly.
            if not base or not base[0].isalpha() or base.lower() in ("end", "graph", "subgraph"):
                base = f"n_{base}"
            alias, n = base, 2
            while alias in self._used:
                alias, n = f"{base}_{n}", n + 1
            self._used.add(alias)
            self._by_key[full] = alias
        return alias


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for what would end or mark it up)."""
    replacements = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "|": "#124;"}
    out = "".join(replacements.get(ch, ch) for ch in text)
    return out.replace("\n", " ").replace("\r", " ")


def _dot_quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as ``\\n``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def _temp_path(suffix: str) -> str:
    with tempfile.NamedTemporaryFile(suffix=f".{suffix}", delete=False) as handle:
        return handle.name
