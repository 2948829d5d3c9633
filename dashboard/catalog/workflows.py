"""Workflows known to this deployment, by name.

``dashboard.catalog.sources`` finds them (installed packages' entry points, modules
named by ``SUPERSTEP_WORKFLOWS``, settings, the demo app in demo mode); ``load()`` does that once,
when Django starts (``DashboardConfig.ready``), so a broken source stops the process there. A
worker rebuilds any run's workflow from its name; the start executor's input type and each
request's response type give JSON schemas for the forms and validation for the API.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from pydantic import PydanticSchemaGenerationError, TypeAdapter, ValidationError

from dashboard.catalog.build_notes import built
from dashboard.catalog.sources import DEMO_WORKFLOWS, Builder, Registration, discover
from workflows import CheckpointStorage, FunctionalWorkflow, Workflow, WorkflowExecutor
from workflows.storage import chat_type_name, decode, encode, resolve_type_name

__all__ = [
    "InputError",
    "RequestType",
    "UnknownWorkflowError",
    "build",
    "current_version",
    "input_schema",
    "load",
    "names",
    "registration",
    "reload",
    "request_types",
    "response_type",
    "to_json",
    "unknown_fields",
    "validate_value",
    "value_schema",
    "versions",
]

# What decides which workflows exist; changing one (override_settings in tests) rediscovers.
_SOURCE_SETTINGS = frozenset(
    {"SUPERSTEP_WORKFLOWS", "SUPERSTEP_WORKFLOW_MODULES", "SUPERSTEP_DEMO"}
)


class UnknownWorkflowError(LookupError):
    """No workflow of that name is registered."""


class InputError(ValueError):
    """A value does not fit a type; ``errors`` maps a field path to a message, ``unknown``
    the paths among them that the type has no field for."""

    def __init__(self, errors: dict[str, str], *, unknown: frozenset[str] = frozenset()) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors
        self.unknown = unknown

    def summary(self, what: str, otherwise: str) -> str:
        """One line for a refusal of ``what`` ("the input"): the unknown fields by name, with
        the nearest known one, since a form has no field of theirs to show them beside;
        ``otherwise`` when every field is known."""
        if not self.unknown:
            return otherwise
        named = "; ".join(
            f"{path!r} ({self.errors[path].removeprefix('unknown field; ')})"
            for path in sorted(self.unknown)
        )
        noun = "an unknown field" if len(self.unknown) == 1 else "unknown fields"
        return f"{what} has {noun}: {named}"


@functools.cache
def load() -> Mapping[str, Registration]:
    """Every registered workflow by name, discovered on the first call.

    Raises:
        ImproperlyConfigured: a source is broken (see ``sources.discover``).
    """
    found = discover(
        modules=settings.SUPERSTEP_WORKFLOW_MODULES,
        settings_paths=settings.SUPERSTEP_WORKFLOWS,
        demo_paths=DEMO_WORKFLOWS if settings.SUPERSTEP_DEMO else None,
    )
    return MappingProxyType(found)


def reload() -> None:
    """Forget the discovered workflows and every graph built from them."""
    load.cache_clear()
    describe.cache_clear()
    versions.cache_clear()
    _describe_version.cache_clear()


def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in _SOURCE_SETTINGS:
        reload()


setting_changed.connect(_settings_changed, dispatch_uid="superstep-workflow-registry")


def names() -> list[str]:
    return list(load())


def registration(name: str) -> Registration:
    found = load().get(name)
    if found is None:
        raise UnknownWorkflowError(f"no workflow named {name!r} (known: {', '.join(names())})")
    return found


def build(
    name: str, checkpoint_storage: CheckpointStorage | None = None, *, version: str | None = None
) -> Workflow:
    """A fresh instance of the named workflow (fresh executors: runs never share state), of
    its current version or of ``version`` (a graph signature hash).

    Raises:
        UnknownWorkflowError: no such workflow, or that version of it is not registered.
    """
    if version is None:
        builder = registration(name).builder
    elif (found := versions(name).get(version)) is not None:
        builder = found
    else:
        raise UnknownWorkflowError(f"version {version[:12]} of workflow {name!r} is not registered")
    return built(name, builder, checkpoint_storage=checkpoint_storage)


@functools.cache
def describe(name: str) -> Workflow:
    """A shared instance for reading the graph and types; never run it."""
    return build(name)


def is_functional(name: str) -> bool:
    """Whether ``name`` is a functional workflow (``@workflow`` / ``@step``): a list of step
    calls, with no graph to draw. False for a name not registered here."""
    try:
        return isinstance(describe(name), FunctionalWorkflow)
    except UnknownWorkflowError:
        return False


def executor_ids(name: str) -> list[str]:
    """What the workflow's events name as executors: a graph's executor ids; a functional
    workflow's step names (each step call runs between executor events of its name)."""
    workflow = describe(name)
    if isinstance(workflow, FunctionalWorkflow):
        return [str(entry[0]) for entry in workflow.graph_signature.get("steps", [])]
    return list(workflow.executors)


def graph_document(name: str) -> dict[str, Any]:
    """The workflow's shape as JSON: a graph's ``to_dict()``; for a functional workflow, which
    has no graph, ``{"kind": "functional", "name", "steps"}`` (its step names)."""
    workflow = describe(name)
    if isinstance(workflow, FunctionalWorkflow):
        return {"kind": "functional", "name": workflow.name, "steps": executor_ids(name)}
    return workflow.to_dict()


def current_version(name: str) -> str:
    """The version new runs of ``name`` start on: its current graph's signature hash."""
    return describe(name).graph_signature_hash


@functools.cache
def versions(name: str) -> Mapping[str, Builder]:
    """Every registered version of ``name`` by graph signature hash, oldest first.

    Building each one also registers its types, so checkpoints of every version decode.
    Two builders of one graph are one version (the later wins).
    """
    found: dict[str, Builder] = {}
    for builder in registration(name).builders:
        signature = built(name, builder, checkpoint_storage=None).graph_signature_hash
        found.pop(signature, None)
        found[signature] = builder
    return MappingProxyType(found)


def input_type(name: str, version: str | None = None) -> Any:
    """The start executor's input type, of the current version or of ``version``: the first
    of its types that a form and the API can describe (a handoff's start executor takes an
    ``AgentExecutorRequest`` first, which holds MAF's messages, and plain text too)."""
    if version is None or version == current_version(name):
        types = describe(name).input_types
    else:
        types = _describe_version(name, version).input_types
    return next((t for t in types if not _codec_only(t)), types[0])


@functools.cache
def _describe_version(name: str, version: str) -> Workflow:
    return build(name, version=version)


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def value_schema(annotation: Any) -> dict[str, Any]:
    """JSON schema of a type, or {} when it has none (the forms fall back to raw JSON)."""
    try:
        return _adapter(annotation).json_schema()
    except Exception:  # noqa: BLE001 - an author's type pydantic cannot describe: raw JSON it is
        return {}


def input_schema(name: str) -> dict[str, Any]:
    return value_schema(input_type(name))


def validate_value(annotation: Any, value: Any, *, known_fields_only: bool = False) -> Any:
    """Turn JSON input into ``annotation`` (a dataclass, model, scalar...).

    ``known_fields_only``: refuse fields the type does not have (``unknown_fields``), which
    pydantic otherwise drops without a word. New input from a person asks for it; values
    stored before (a run's input, a decided response) are read back without it, so what was
    accepted once still loads.

    Raises:
        InputError: with one message per offending field path (``limit``, ``items.0.qty``).
    """
    if _codec_only(annotation):
        return _codec_value(annotation, value)
    unknown = unknown_fields(annotation, value) if known_fields_only else {}
    errors = dict(unknown)
    typed: Any = None
    try:
        typed = _adapter(annotation).validate_python(value, strict=False)
    except ValidationError as exc:
        for error in exc.errors():
            path = ".".join(str(p) for p in error["loc"]) or "__root__"
            errors.setdefault(path, error["msg"])
    if errors:
        raise InputError(errors, unknown=frozenset(unknown))
    return typed


def _is_chat_type(annotation: Any) -> bool:
    return isinstance(annotation, type) and chat_type_name(annotation) is not None


@functools.cache  # pydantic's refusal is not cached by _adapter: one attempt per type
def _codec_only(annotation: Any) -> bool:
    """A type only the checkpoint codec can store: one of MAF's chat types (an agent's request
    answered with a ``Content``) or a type holding them (``list[Message]``, a dataclass with a
    ``list[Message]`` field), which pydantic cannot describe. Their values are kept in the
    codec's own form."""
    if _is_chat_type(annotation):
        return True
    try:
        _adapter(annotation)
    except PydanticSchemaGenerationError:
        return True
    return False


def _codec_value(annotation: Any, value: Any) -> Any:
    try:
        typed = decode(value)
    except Exception as exc:  # noqa: BLE001 - the codec's refusals, whatever their kind
        raise InputError({"__root__": f"not a stored {_label(annotation)}: {exc}"}) from None
    if not _fits(annotation, typed):
        raise InputError({"__root__": f"not a {_label(annotation)}"})
    return typed


def _label(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return re.sub(r"[\w.]+\.(\w+)", r"\1", repr(annotation))  # list[Message]


def _fits(annotation: Any, value: Any) -> bool:
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    if typing.get_origin(annotation) is list:
        [item] = typing.get_args(annotation) or [Any]
        return isinstance(value, list) and all(_fits(item, v) for v in value)
    return True  # another generic: the executor's own handler checks it when it arrives


def unknown_fields(annotation: Any, value: Any) -> dict[str, str]:
    """The fields of ``value`` that ``annotation`` has no place for, by path (``extra``,
    ``items.0.colour``), each message naming the nearest known field when one is close.

    Read from the type's JSON schema: an object with ``properties`` and no
    ``additionalProperties`` (a dataclass, a model that ignores extras, a TypedDict) takes only
    those; a mapping's values and a list's items are looked into; a union of several objects
    is not (which branch a value meant is the validator's business).
    """
    schema = value_schema(annotation)
    found: dict[str, str] = {}
    _unknown(schema, schema.get("$defs") or {}, value, "", found)
    return found


def _unknown(node: Any, defs: dict[str, Any], value: Any, path: str, found: dict[str, str]) -> None:
    node = _branch(node, defs, value)
    if node is None:
        return
    if isinstance(value, dict):
        props, extra = node.get("properties"), node.get("additionalProperties")
        if isinstance(props, dict) and extra is None:
            for key, child in value.items():
                where = f"{path}.{key}" if path else str(key)
                if key in props:
                    _unknown(props[key], defs, child, where, found)
                else:
                    found[where] = _unknown_message(str(key), list(props))
        elif isinstance(extra, dict):
            for key, child in value.items():
                _unknown(extra, defs, child, f"{path}.{key}" if path else str(key), found)
    elif isinstance(value, list):
        prefix, items = node.get("prefixItems") or [], node.get("items")
        for index, child in enumerate(value):
            schema = prefix[index] if index < len(prefix) else items
            _unknown(schema, defs, child, f"{path}.{index}" if path else str(index), found)


def _branch(node: Any, defs: dict[str, Any], value: Any) -> dict[str, Any] | None:
    """``node`` with its reference followed and, for a union, the one branch that can take a
    container like ``value`` (None when there is no such single branch)."""
    for _ in range(50):  # references to references end; a cycle of them must not hang
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = defs.get(ref.removeprefix("#/$defs/"))
            continue
        branches = node.get("anyOf") or node.get("oneOf") or node.get("allOf")
        if not isinstance(branches, list):
            return node
        kind = "object" if isinstance(value, dict) else "array"
        fitting = [b for b in branches if _kind(b, defs) in (kind, None)]
        if len(fitting) != 1:
            return None
        node = fitting[0]
    return None


def _kind(node: Any, defs: dict[str, Any]) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        node = defs.get(node["$ref"].removeprefix("#/$defs/"))
    if not isinstance(node, dict):
        return "none"
    kind = node.get("type")
    return kind if isinstance(kind, str) else None


def _unknown_message(key: str, known: list[str]) -> str:
    if not known:
        return "unknown field: this type has no fields"
    nearest = difflib.get_close_matches(key, known, n=1, cutoff=0.0)[0]
    if difflib.SequenceMatcher(None, key, nearest).ratio() >= 0.6:
        return f"unknown field; did you mean {nearest!r}?"
    return f"unknown field; did you mean {nearest!r}? The fields are " + ", ".join(known[:20])


_LIST_NAME = re.compile(r"list\[([\w.]+)\]")


def response_type(workflow_name: str, type_name: str) -> Any:
    """The response type a request of this workflow names (its graph registers the types)."""
    describe(workflow_name)
    listed = _LIST_NAME.fullmatch(type_name or "")
    if listed is not None:  # a generic alias is stored as its repr: list[module.Name]
        return list[response_type(workflow_name, listed.group(1))]  # type: ignore[misc]
    resolved = resolve_type_name(type_name or None)
    if resolved is None:
        raise InputError({"response": f"response type {type_name!r} is not known here"})
    return resolved


@dataclass(frozen=True, slots=True)
class RequestType:
    """A request some executor of the workflow can raise, and the answer it takes.

    ``executor`` is a path: ``claim/manager-approval`` inside the sub-workflow ``claim``.
    """

    executor: str
    request_type: Any
    response_type: Any


def request_types(name: str) -> list[RequestType]:
    """Every request type the workflow's executors answer (sub-workflows included)."""
    return _request_types(describe(name), prefix="")


def _request_types(workflow: Workflow | FunctionalWorkflow, *, prefix: str) -> list[RequestType]:
    found: list[RequestType] = []
    if isinstance(workflow, FunctionalWorkflow):
        # Its requests name their answer's type where ``ctx.request_info`` is called.
        return found
    for executor_id, executor in workflow.executors.items():
        path = f"{prefix}{executor_id}"
        if isinstance(executor, WorkflowExecutor):
            # Its own response handler only relays answers to the child, whose types count.
            found.extend(_request_types(executor.workflow, prefix=f"{path}/"))
            continue
        found.extend(
            RequestType(path, spec.request_type, spec.response_type)
            for spec in executor.response_handler_specs
        )
    return found


def to_json(annotation: Any, value: Any) -> Any:
    """A validated value back to plain JSON (what the API stores and shows); MAF's chat types
    in the checkpoint codec's form."""
    if _codec_only(annotation):
        return encode(value)
    return _adapter(annotation).dump_python(value, mode="json")


def default_input(name: str) -> Any:
    """The input type's defaults as JSON, to prefill forms (None when it has no defaults)."""
    annotation = input_type(name)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        try:
            return _adapter(annotation).dump_python(annotation(), mode="json")
        except TypeError:
            return None
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        try:
            return annotation().model_dump(mode="json")
        except Exception:  # noqa: BLE001 - the author's model rejects its own defaults: no prefill
            return None
    return None


def type_label(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(typing.get_origin(annotation) or annotation)
