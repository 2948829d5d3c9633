"""The fork editor on the checkpoint page: a form over a checkpoint's shared state, executor
states and messages in flight, read back into the edits ``services.run_fork`` takes.

One field per shared-state key, per key an executor saved and per message in flight; a value
that is a dataclass or pydantic model is a group of fields, one per model field, by name. Each
field shows its value as the operator thinks of it, with its type beside it (``dict[int, int]``,
``date``); ``fork_editor`` reads the text back. Text that cannot be read, and what the service
refuses (``services.runs.fork_check``: the codec, the dataclass field types, the handler a
message goes to), is shown beside the field the error's path names, once. ``changes`` says, for
the confirmation, what the fork will start with that the checkpoint does not have.

Field names are ``f0``, ``f1``... in document order: a checkpoint never changes, so the form
posted back is read against the same list.
"""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dashboard.renderers.diff_values import shape, short_name, tree
from dashboard.renderers.jsondiff import diff_json
from dashboard.web.checkpoints import fork_conversation
from dashboard.web.checkpoints.fork_editor import (
    TAG,
    Invalid,
    canon,
    leaf_kind,
    parse_json,
    raw_pairs,
    rebuild,
    value_from_text,
    value_from_tree,
)

__all__ = ["Edits", "Field", "ForkEditor", "Group"]

MAX_CHANGES = 30
WIDTH = 76
Path = tuple[str | int, ...]
# "message": one message's text in a conversation; "note": what else a message holds (a tool
# call, a result), shown in its place and kept as it is.
Widget = Literal["input", "date", "textarea", "select", "message", "note"]

_LABELS = {
    "none": "None",
    "bool": "bool",
    "int": "int",
    "float": "float",
    "str": "str",
    "datetime": "datetime",
    "date": "date",
    "time": "time",
    "decimal": "Decimal",
    "uuid": "UUID",
    "timedelta": "timedelta",
    "bytes": "bytes (base64)",
}


@dataclass
class Field:
    """One input: ``path`` names the value in the checkpoint document, as the service's error
    paths do (``("messages", 0, "data", "remaining")``); ``original`` is its codec JSON."""

    name: str
    path: Path
    label: str
    type_label: str
    widget: Widget
    original: Any
    shown: str
    text: str = ""
    choices: tuple[str, ...] = ()
    errors: list[str] = field(default_factory=list)
    # A message's text: the role of who said it, its id and where the value holding it starts
    # (the same reply can be kept twice in one value, and an edit is an edit of both).
    role: str = ""
    message_id: str = ""
    root: Path = ()

    @property
    def id(self) -> str:
        return f"fork-{self.name}"

    @property
    def dotted(self) -> str:
        return ".".join(map(str, self.path))

    @property
    def rows(self) -> int:
        return min(14, max(3, self.text.count("\n") + 2))


@dataclass
class Group:
    """The fields of one executor's state, the shared state, one model value or one message."""

    section: Literal["executor_states", "state", "messages"]
    title: str
    note: str
    path: Path
    fields: list[Field] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    earlier: int = 0  # a conversation's earlier messages, kept as they are

    @property
    def dotted(self) -> str:
        return ".".join(map(str, self.path))

    @property
    def chat(self) -> bool:
        return any(item.widget in ("message", "note") for item in self.fields)


@dataclass(frozen=True)
class Edits:
    """The parts of the checkpoint the operator changed, in codec JSON (None: unchanged), as
    ``services.run_fork`` takes them."""

    state: dict[str, Any] | None = None
    executor_states: dict[str, dict[str, Any]] | None = None
    messages: list[dict[str, Any]] | None = None

    def as_kwargs(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "executor_states": self.executor_states,
            "messages": self.messages,
        }

    @property
    def changed(self) -> bool:
        return any(value is not None for value in self.as_kwargs().values())


class ForkEditor:
    """The editor over one checkpoint ``document``; ``data`` (a POST) fills in the texts."""

    def __init__(self, document: Mapping[str, Any], data: Mapping[str, str] | None = None) -> None:
        self.document = document
        self.errors: list[str] = []
        self.texts: dict[Path, str] = {}
        names = (f"f{n}" for n in itertools.count())
        self.groups = list(_groups(document, lambda: next(names)))
        for item in self.fields:
            submitted = data.get(item.name) if data is not None else None
            item.text = (
                submitted.replace("\r\n", "\n") if isinstance(submitted, str) else item.shown
            )

    @property
    def fields(self) -> list[Field]:
        return [item for group in self.groups for item in group.fields]

    @property
    def has_errors(self) -> bool:
        return bool(self.errors) or any(
            g.errors or any(f.errors for f in g.fields) for g in self.groups
        )

    def read(self) -> Edits | None:
        """The edits, or None when some field's text cannot be read (its errors say why)."""
        values: dict[Path, Any] = {}
        for item in self.fields:
            try:
                values[item.path] = _field_value(item)
            except Invalid as exc:
                item.errors.append(exc.text)
        if self.has_errors:
            return None
        # Every message text the fork changes, with the text it had: the confirmation says
        # them as sentences and leaves them out of its diff.
        self.texts = _mirror_replies(self.document, self.fields, values)
        return _assemble(self.document, values)

    def add_errors(self, errors: Mapping[str, str], message: str) -> None:
        """The service's errors beside the field (or group) whose path is the longest prefix
        of theirs; what names none goes at the top of the editor, once."""
        for path, problem in errors.items():
            fields = [f for f in self.fields if _under(path, f.dotted)]
            if fields:
                best = max(fields, key=lambda f: len(f.dotted))
                best.errors.append(_beside(path, best.dotted, problem))
                continue
            groups = [g for g in self.groups if _under(path, g.dotted)]
            if groups:
                group = max(groups, key=lambda g: len(g.dotted))
                group.errors.append(_beside(path, group.dotted, problem))
            else:
                self.errors.append(f"{path}: {problem}" if path else problem)
        if not errors:
            self.errors.append(message)

    def changes(self, edits: Edits) -> list[str]:
        """What the fork will start with that the checkpoint does not have, one line each."""
        doc = self.document
        # A message's text is said as a sentence was edited, not as a path into its JSON (which
        # the diff below would show as two unreadable codec values).
        lines = [_said(item) for item in self.fields if _edited_message(item)]
        texts = self.texts

        def kept(edited: Any, root: Path) -> Any:
            """``edited`` with the message texts said above put back as they were."""
            restored = {"root": copy.deepcopy(edited)}
            for path, text in texts.items():
                if path[: len(root)] == root:
                    _put(restored, ("root", *path[len(root) :]), text)
            return restored["root"]

        if edits.executor_states is not None:
            before = doc.get("executor_states") or {}
            for eid in dict.fromkeys([*before, *edits.executor_states]):
                old = before.get(eid, {})
                edited = edits.executor_states.get(eid, {})
                lines += _rows(old, kept(edited, ("executor_states", eid)), eid)
        if edits.state is not None:
            old_state = doc.get("state") or {}
            lines += _rows(old_state, kept(edits.state, ("state",)), "shared state")
        if edits.messages is not None:
            before_messages = doc.get("messages") or []
            for index, message in enumerate(edits.messages):
                old = before_messages[index].get("data") if index < len(before_messages) else None
                data = kept(message.get("data"), ("messages", index, "data"))
                lines += _rows(old, data, f"message {index + 1}")
        if len(lines) > MAX_CHANGES:
            lines = [*lines[:MAX_CHANGES], f"… and {len(lines) - MAX_CHANGES} more changes."]
        return lines


def _edited_message(item: Field) -> bool:
    return item.widget == "message" and item.text != item.shown


def _said(item: Field) -> str:
    """One edited message, for the confirmation: where, who, and the text before and after."""
    section, *rest = item.root
    where = (
        f"message {int(rest[0]) + 1}"
        if section == "messages"
        else str(rest[0] if rest else section)
    )
    return f"{where} · {item.label}: {_quoted(item.shown)} → {_quoted(item.text)}"


def _quoted(text: str, limit: int = 80) -> str:
    one_line = " ".join(text.split())
    return "“" + (one_line if len(one_line) <= limit else one_line[: limit - 1] + "…") + "”"


def _groups(document: Mapping[str, Any], name: Callable[[], str]) -> Iterator[Group]:
    for eid, saved in (document.get("executor_states") or {}).items():
        if isinstance(saved, dict) and saved:
            yield from _entry_groups(
                "executor_states",
                eid,
                "saved by this executor",
                ("executor_states", eid),
                saved,
                name,
            )
    state = document.get("state") or {}
    if isinstance(state, dict) and state:
        yield from _entry_groups("state", "Shared state", "", ("state",), state, name)
    for index, message in enumerate(document.get("messages") or []):
        data = message.get("data")
        route = _route(message)
        title, path = f"Message {index + 1}", ("messages", index, "data")
        found = shape(data)
        chat = fork_conversation.chat_of(data)
        if chat is not None:
            group = Group("messages", title, f"a conversation, {route}", path, earlier=chat.earlier)
            group.fields = _chat_fields(name, path, path, "", chat)
        elif found.kind == "map" and found.type:
            group = Group("messages", title, f"{short_name(found.type)}, {route}", path)
            group.fields = _model_fields(name, path, path, found.pairs)
        else:
            group = Group("messages", title, route, path, [_field(name(), path, "data", data)])
        yield group


def _route(message: Mapping[str, Any]) -> str:
    source, target = str(message.get("source") or ""), message.get("target")
    if source.startswith("internal:"):
        return f"the run's input, for {target}"
    if message.get("kind") == "response":
        return f"an answer, for {target}"
    return f"sent by {source}" + (f" to {target}" if target else "")


def _entry_groups(
    section: Literal["executor_states", "state"],
    title: str,
    note: str,
    path: Path,
    entries: dict[str, Any],
    name: Callable[[], str],
) -> Iterator[Group]:
    """One group of the plain entries, then one per entry that is a model (its fields)."""
    plain = Group(section, title, note, path)
    models: list[Group] = []
    for key, value in entries.items():
        found = shape(value)
        chat = fork_conversation.chat_of(value)
        if chat is not None:
            group = Group(section, f"{title} · {key}", "a conversation", (*path, key))
            group.earlier = chat.earlier
            group.fields = _chat_fields(name, (*path, key), path, "", chat)
            models.append(group)
        elif found.kind == "map" and found.type and found.pairs:
            group = Group(section, f"{title} · {key}", short_name(found.type), (*path, key))
            group.fields = _model_fields(name, (*path, key), path, found.pairs)
            models.append(group)
        else:
            plain.fields.append(_field(name(), (*path, key), key, value))
    if plain.fields:
        yield plain
    yield from models


def _model_fields(
    name: Callable[[], str], path: Path, root: Path, pairs: list[tuple[Any, Any, Any]]
) -> list[Field]:
    """A model's fields, one each; a field holding a conversation as its messages."""
    fields: list[Field] = []
    for _, key, value in pairs:
        chat = fork_conversation.chat_of(value)
        if chat is None:
            fields.append(_field(name(), (*path, str(key)), str(key), value))
        else:
            fields += _chat_fields(name, (*path, str(key)), root, f"{key} · ", chat)
    return fields


def _chat_fields(
    name: Callable[[], str], path: Path, root: Path, prefix: str, chat: fork_conversation.Chat
) -> list[Field]:
    fields = []
    for line in chat.lines:
        label = f"{prefix}{line.author}" + (f" ({line.role})" if line.role != line.author else "")
        fields.append(
            Field(
                name(),
                (*path, *line.path),
                label,
                "message" if line.editable else "kept as it is",
                "message" if line.editable else "note",
                line.text,
                line.text,
                role=line.role,
                message_id=line.message_id,
                root=root,
            )
        )
    return fields


def _mirror_replies(
    document: Mapping[str, Any], fields: list[Field], values: dict[Path, Any]
) -> dict[Path, str]:
    """An edited message's text is set in every copy of that message in the same value (a
    copy edited itself keeps its own edit). Returns each changed text's path with its text
    before."""
    edited = {item.path for item in fields if _edited_message(item)}
    changed = {item.path: item.shown for item in fields if item.path in edited}
    for item in fields:
        if item.path not in edited or not item.message_id:
            continue
        scope = item.root  # the executor's state, or the message's data
        container: Any = document
        for step in scope:
            container = container[step]
        content = item.path[-2]
        assert isinstance(content, int)
        for inside in fork_conversation.same_message_paths(container, item.message_id, content):
            other = (*scope, *inside)
            if other not in edited:
                values[other] = values[item.path]
                changed.setdefault(other, item.shown)
    return changed


def _field(name: str, path: Path, label: str, value: Any) -> Field:
    kind = leaf_kind(value)
    widget: Widget = "input"
    choices: tuple[str, ...] = ()
    if kind is None or kind == "strnul":
        widget, shown = "textarea", _json_text(tree(value) if kind is None else _joined(value))
    elif kind == "bool":
        widget, choices, shown = "select", ("true", "false"), json.dumps(value)
    elif kind == "date":
        widget, shown = "date", value["v"]
    else:
        shown = _leaf_shown(kind, value)
        if kind == "str" and ("\n" in shown or len(shown) > 80):
            widget = "textarea"
    return Field(name, path, label, _type_label(value), widget, value, shown, choices=choices)


def _leaf_shown(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, dict):
        return value if isinstance(value, str) else repr(value)
    inner = value["v"]
    if kind == "datetime":
        return str(inner).replace("T", " ", 1)
    if kind == "timedelta":
        return str(dt.timedelta(days=inner[0], seconds=inner[1], microseconds=inner[2]))
    if kind == "int":
        return str(int(inner, 16)) if len(inner) < 3000 else "0x" + inner
    return str(inner)


def _joined(value: dict[str, Any]) -> str:
    return "\x00".join(value["v"])


def _raw_keys(value: Any) -> list[Any]:
    return [key for key, _ in raw_pairs(value)]


def _type_label(value: Any) -> str:
    kind = leaf_kind(value)
    if kind == "enum":
        return short_name(value["name"])
    if kind is not None:
        return _LABELS.get(kind, "str")
    found = shape(value)
    if found.kind == "map":
        if found.type:
            return short_name(found.type)
        keys = _union([_key_label(k) for k in _raw_keys(value)])
        values = _union([_type_label(v) for _, _, v in found.pairs[:100]])
        return f"dict[{keys}, {values}]" if keys else "dict"
    if found.kind == "seq":
        items = _union([_type_label(v) for v in found.items[:100]])
        if found.type == "tuple" and items:
            items += ", ..."
        return f"{found.type or 'list'}[{items}]" if items else (found.type or "list")
    return "value"


def _key_label(key: Any) -> str:
    return "str" if isinstance(key, str) else "int" if type(key) is int else _type_label(key)


def _union(labels: list[str]) -> str:
    unique = list(dict.fromkeys(labels))
    return " | ".join(unique) if len(unique) <= 3 else "…"


def _json_text(value: Any, indent: int = 0) -> str:
    """JSON a person can edit: short values on one line, a long list of scalars packed
    several to a line, other containers one child per line."""
    one = json.dumps(value, ensure_ascii=False)
    if indent + len(one) <= WIDTH or not isinstance(value, dict | list) or not value:
        return one
    pad = " " * (indent + 2)
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        lines, line = [], ""
        for piece in (json.dumps(v, ensure_ascii=False) for v in value):
            if line and len(pad) + len(line) + len(piece) + 1 > WIDTH:
                lines.append(pad + line.rstrip())
                line = ""
            line += piece + ", "
        lines.append(pad + line.rstrip().rstrip(","))
        return "[\n" + "\n".join(lines) + "\n" + " " * indent + "]"
    if isinstance(value, dict):
        parts = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {_json_text(v, indent + 2)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(parts) + "\n" + " " * indent + "}"
    parts = [pad + _json_text(v, indent + 2) for v in value]
    return "[\n" + ",\n".join(parts) + "\n" + " " * indent + "]"


# ------------------------------------------------------------------------------ reading back


def _field_value(item: Field) -> Any:
    if item.text == item.shown or item.widget == "note":
        return item.original
    if item.widget == "message":
        return item.text
    if item.widget == "textarea" and leaf_kind(item.original) != "str":
        return value_from_tree(parse_json(item.text), item.original)
    return value_from_text(item.text, item.original)


# ------------------------------------------------------------------------------- assembling


def _assemble(document: Mapping[str, Any], values: dict[Path, Any]) -> Edits:
    parts: dict[str, Any] = {
        "executor_states": copy.deepcopy(document.get("executor_states") or {}),
        "state": copy.deepcopy(document.get("state") or {}),
        "messages": copy.deepcopy(document.get("messages") or []),
    }
    for path, value in values.items():
        _put(parts, path, value)
    same = {
        name: canon(part) == canon(document.get(name) or part.__class__())
        for name, part in parts.items()
    }
    return Edits(
        state=None if same["state"] else parts["state"],
        executor_states=None if same["executor_states"] else parts["executor_states"],
        messages=None if same["messages"] else parts["messages"],
    )


_MODELS = ("model", "agent")


def _put(parts: dict[str, Any], path: Path, value: Any) -> None:
    """Set the value at ``path``; a step into a model replaces that field of the model."""
    *head, last = path
    container: Any = parts
    for step in head:
        if isinstance(container, dict) and container.get(TAG) in _MODELS and step not in container:
            container = container["v"]  # into a model's field, by name
        container = container[step]
    if isinstance(container, dict) and container.get(TAG) == "agent":
        container["v"][last] = value  # MAF's own dict of fields, which MAF reads back
    elif isinstance(container, dict) and container.get(TAG) == "model":
        pairs = [(k, value if k == last else v) for k, v in raw_pairs(container)]
        rebuilt = rebuild(pairs, container["name"])
        container.clear()
        container.update(rebuilt)
    else:
        container[last] = value


# ----------------------------------------------------------------------------- errors, changes


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".")


def _beside(path: str, prefix: str, problem: str) -> str:
    rest = path[len(prefix) + 1 :]
    if not rest:
        return problem
    where = "".join(f"[{p}]" if p.lstrip("-").isdigit() else f".{p}" for p in rest.split("."))
    return f"{where.lstrip('.')}: {problem}"


def _rows(old: Any, new: Any, root: str) -> list[str]:
    lines = []
    for entry in diff_json(old, new, path=root, max_entries=MAX_CHANGES + 1).entries:
        if entry.kind == "changed":
            lines.append(f"{entry.path}: {entry.old_text} → {entry.new_text}")
        elif entry.kind in ("added", "removed"):
            shown = entry.new_text if entry.kind == "added" else entry.old_text
            lines.append(f"{entry.path}: {entry.kind} {shown}")
        elif entry.kind == "moved":
            lines.append(f"{entry.path}: moved {entry.note}".rstrip())
    return lines
