"""Workflows known to this deployment, by name (``settings.SUPERSTEP_WORKFLOWS``).

A worker rebuilds any run's workflow from its name; the start executor's input type and each
request's response type give JSON schemas for the forms and validation for the API.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string
from pydantic import TypeAdapter, ValidationError

from workflows import CheckpointStorage, Workflow
from workflows.storage import resolve_type_name

__all__ = [
    "InputError",
    "response_type",
    "to_json",
    "UnknownWorkflowError",
    "build",
    "input_schema",
    "names",
    "validate_value",
    "value_schema",
]


class UnknownWorkflowError(LookupError):
    """No workflow of that name is registered."""


class InputError(ValueError):
    """A value does not fit a type; ``errors`` maps a field path to a message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def names() -> list[str]:
    return list(settings.SUPERSTEP_WORKFLOWS)


@functools.cache
def _builder(name: str) -> Callable[..., Workflow]:
    path = settings.SUPERSTEP_WORKFLOWS.get(name)
    if path is None:
        raise UnknownWorkflowError(f"no workflow named {name!r} (known: {', '.join(names())})")
    builder: Callable[..., Workflow] = import_string(path)
    return builder


def build(name: str, checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    """A fresh instance of the named workflow (fresh executors: runs never share state)."""
    return _builder(name)(checkpoint_storage=checkpoint_storage)


@functools.cache
def describe(name: str) -> Workflow:
    """A shared instance for reading the graph and types; never run it."""
    return build(name)


def input_type(name: str) -> Any:
    return describe(name).input_types[0]


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
