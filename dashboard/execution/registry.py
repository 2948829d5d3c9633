"""Workflows known to this deployment, by name.

``dashboard.execution.workflow_sources`` finds them (installed packages' entry points, modules
named by ``SUPERSTEP_WORKFLOWS``, settings, the demo app in demo mode); ``load()`` does that once,
when Django starts (``DashboardConfig.ready``), so a broken source stops the process there. A
worker rebuilds any run's workflow from its name; the start executor's input type and each
request's response type give JSON schemas for the forms and validation for the API.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from pydantic import TypeAdapter, ValidationError

# A plain dict of dotted paths: reading it needs no demo app installed, and imports nothing.
from dashboard.demo import DEMO_WORKFLOWS
from dashboard.execution.workflow_sources import Builder, Registration, discover
from workflows import CheckpointStorage, Workflow, WorkflowExecutor
from workflows.storage import resolve_type_name

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
    "validate_value",
    "value_schema",
    "versions",
]

# What decides which workflows exist; changing one (override_settings in tests) rediscovers.
_SOURCE_SETTINGS = frozenset({"SUPERSTEP_WORKFLOWS", "SUPERSTEP_WORKFLOW_MODULES", "SUPERSTEP_DEMO"})


class UnknownWorkflowError(LookupError):
    """No workflow of that name is registered."""


class InputError(ValueError):
    """A value does not fit a type; ``errors`` maps a field path to a message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@functools.cache
def load() -> Mapping[str, Registration]:
    """Every registered workflow by name, discovered on the first call.

    Raises:
        ImproperlyConfigured: a source is broken (see ``workflow_sources.discover``).
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
        return registration(name).builder(checkpoint_storage=checkpoint_storage)
    builder = versions(name).get(version)
    if builder is None:
        raise UnknownWorkflowError(f"version {version[:12]} of workflow {name!r} is not registered")
    return builder(checkpoint_storage=checkpoint_storage)


@functools.cache
def describe(name: str) -> Workflow:
    """A shared instance for reading the graph and types; never run it."""
    return build(name)


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
        signature = builder(checkpoint_storage=None).graph_signature_hash
        found.pop(signature, None)
        found[signature] = builder
    return MappingProxyType(found)


def input_type(name: str, version: str | None = None) -> Any:
    """The start executor's input type, of the current version or of ``version``."""
    if version is None or version == current_version(name):
        return describe(name).input_types[0]
    return _describe_version(name, version).input_types[0]


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


def validate_value(annotation: Any, value: Any) -> Any:
    """Turn JSON input into ``annotation`` (a dataclass, model, scalar...).

    Raises:
        InputError: with one message per offending field path (``limit``, ``items.0.qty``).
    """
    try:
        return _adapter(annotation).validate_python(value, strict=False)
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for error in exc.errors():
            path = ".".join(str(p) for p in error["loc"]) or "__root__"
            errors.setdefault(path, error["msg"])
        raise InputError(errors) from None


def response_type(workflow_name: str, type_name: str) -> Any:
    """The response type a request of this workflow names (its graph registers the types)."""
    describe(workflow_name)
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


def _request_types(workflow: Workflow, *, prefix: str) -> list[RequestType]:
    found: list[RequestType] = []
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
    """A validated value back to plain JSON (what the API stores and shows)."""
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
