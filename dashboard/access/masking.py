"""Sensitive fields masked wherever a run's data leaves the server.

A workflow declares its sensitive fields on the type (``workflows.Sensitive``: masked wherever
a value of that class travels) or by JSON path in its registration
(``dashboard.catalog.sensitive``: masked where the path points). Every page, fragment, API
answer, export, event-log row and notification shows such a field as its mask, for everyone:
someone who holds "view sensitive data" for the workflow reveals one field at a time, by an
explicit action that is audited (``services.sensitive.reveal``). Masking therefore depends on
the run, never on who looks, and a page can be cached or broadcast to many viewers as it is.

A mask reads ``•••••• #3f9a1c2b``. The digest is an HMAC of the value under the server's
secret key and the run's id: within one run the same value always shows the same mask, so a
checkpoint diff still says whether a masked field changed; across runs the masks differ, so
they cannot link one customer's runs, and without the key nobody can test guesses against
one.

Masking works on the codec's JSON (``workflows.codec``), where a model is ``{"$t": "model",
"name": ..., "v": {fields}}``: nothing is decoded, so it works when a type is gone too.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.crypto import salted_hmac

from dashboard import catalog
from dashboard.catalog.sensitive import SensitivePath
from workflows import sensitive_fields
from workflows.registry import default_registry, is_restorable_class, resolve_type_name

__all__ = [
    "MASK_PREFIX",
    "Masked",
    "Masker",
    "changed_masks",
    "for_run",
    "masked_event",
    "is_mask",
]

MASK_PREFIX = "•••••• #"
TAG = "$t"
_DIGEST_CHARS = 8
_SALT = "superstep.masking"


@dataclass(frozen=True, slots=True)
class Masked:
    """One masked field: where (``input``, ``output`` or a checkpoint part), its path as the
    program sees it (``$.state.customer.email``), its mask and why it is sensitive."""

    where: str
    path: str
    mask: str
    reason: str = ""


@dataclass
class Masker:
    """Masks the data of one run. ``found`` lists what it masked, in order; ``originals`` maps
    each mask back to its value, for the server only (``restore``)."""

    run_id: str
    paths: tuple[SensitivePath, ...] = ()
    found: list[Masked] = field(default_factory=list)
    originals: dict[str, Any] = field(default_factory=dict)
    # The run's workflow: its start executor's input type reads the input, which is stored as
    # that type's plain JSON.
    workflow: str = ""

    @property
    def active(self) -> bool:
        """Whether anything could be masked at all (otherwise every call returns its value)."""
        return bool(self.paths) or bool(_sensitive_types())

    def input(self, value: Any) -> Any:
        """The run's input (plain JSON of the start executor's input type, as stored)."""
        if not self.active:
            return value
        shown = self._part("input", value, "input", "$.input")
        return self.typed(shown, _input_type(self.workflow), where="input", path="$.input")

    def typed(self, value: Any, annotation: Any, *, where: str = "data", path: str = "$") -> Any:
        """Plain JSON of a known type (a run's input, an answer of a request's response
        type): the fields its classes mark ``Sensitive`` masked, nested models included."""
        cls = _model_class(annotation)
        if cls is None:
            if isinstance(value, list) and (item := _item_class(annotation)) is not None:
                return [
                    self.typed(entry, item, where=where, path=f"{path}[{i}]")
                    for i, entry in enumerate(value)
                ]
            return value
        if not isinstance(value, dict):
            return value
        marked = sensitive_fields(cls)
        hints = _hints(cls)
        return {
            key: self._hide(item, where, f"{path}.{key}", marked[key].reason)
            if key in marked
            else self.typed(item, hints.get(key), where=where, path=f"{path}.{key}")
            for key, item in value.items()
        }

    def output(self, value: Any) -> Any:
        return self._part("output", value, "output", "$.output")

    def value(self, value: Any, *, where: str = "data", path: str = "$") -> Any:
        """A value found anywhere (a message, a request, an event): masked by type only."""
        if not self.active:
            return value
        return self._types(value, where, path)

    def document(self, document: Mapping[str, Any], *, where: str = "checkpoint") -> dict[str, Any]:
        """A checkpoint document (``selectors.checkpoint_document``): shared and executor
        state by the declared paths, and every part by type."""
        if not self.active:
            return dict(document)
        shown = dict(document)
        if isinstance(shown.get("state"), dict):
            shown["state"] = self._part("state", shown["state"], where, "$.state")
        if isinstance(shown.get("executor_states"), dict):
            shown["executor_states"] = self._part(
                "executors", shown["executor_states"], where, "$.executors"
            )
        for part, value in shown.items():  # messages, pending requests...: by type
            if part not in ("state", "executor_states"):
                shown[part] = self._types(value, where, f"$.{part}")
        return shown

    def response(self, value: Any, response_type: str) -> Any:
        """A request's answer (plain JSON of its response type, named as stored)."""
        shown = self.value(value, where="response", path="$.response")
        resolved = resolve_type_name(response_type) if response_type else None
        return self.typed(shown, resolved, where="response", path="$.response")

    def restore(self, value: Any, path: str = "$") -> Any:
        """``value`` (what an editor showed, rooted at ``path``) with each mask this masker
        made put back to its original value, where it stands at the path it was made for: a
        field left alone comes back as it was, and a mask copied into another field stays a
        mask (it must not carry the value somewhere that shows it)."""
        if not self.found:
            return value
        shown = {item.path: item.mask for item in self.found}
        return self._restore(value, path, shown)

    def _restore(self, value: Any, path: str, shown: Mapping[str, str]) -> Any:
        if isinstance(value, str):
            return self.originals[value] if shown.get(path) == value else value
        if isinstance(value, list):
            return [self._restore(item, f"{path}[{i}]", shown) for i, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        tag = value.get(TAG)
        if tag is None:
            return {k: self._restore(item, f"{path}.{k}", shown) for k, item in value.items()}
        if tag == "model" and isinstance(value.get("v"), dict):
            fields = value["v"].items()
            return {**value, "v": {k: self._restore(v, f"{path}.{k}", shown) for k, v in fields}}
        return {
            k: self._restore(item, path, shown) if k == "v" else item for k, item in value.items()
        }

    def mask_of(self, value: Any) -> str:
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        digest = salted_hmac(_SALT, f"{self.run_id}\x00{canonical}", algorithm="sha256")
        return MASK_PREFIX + digest.hexdigest()[:_DIGEST_CHARS]

    # ------------------------------------------------------------------ walking codec JSON

    def _part(self, root: str, value: Any, where: str, path: str) -> Any:
        if not self.active:
            return value
        for declared in self.paths:
            if declared.root == root:
                value = self._at(value, declared.steps, where, path)
        return self._types(value, where, path)

    def _hide(self, value: Any, where: str, path: str, reason: str) -> str:
        if is_mask(value):
            return str(value)  # already masked (a path and a type naming one field)
        mask = self.mask_of(value)
        self.originals[mask] = value
        self.found.append(Masked(where, path, mask, reason))
        return mask

    def _at(self, node: Any, steps: tuple[str, ...], where: str, path: str) -> Any:
        if not steps:
            return self._hide(node, where, path, "")
        if isinstance(node, dict) and node.get(TAG) == "model" and isinstance(node.get("v"), dict):
            return {**node, "v": self._at(node["v"], steps, where, path)}
        step, rest = steps[0], steps[1:]
        if isinstance(node, dict) and node.get(TAG) in ("tuple", "list"):
            return {**node, "v": self._at(node.get("v"), steps, where, path)}
        if isinstance(node, list) and step.startswith("["):
            wanted = None if step == "[*]" else int(step[1:-1])
            return [
                self._at(item, rest, where, f"{path}[{i}]") if wanted in (None, i) else item
                for i, item in enumerate(node)
            ]
        if isinstance(node, dict) and TAG not in node and not step.startswith("["):
            return {
                key: self._at(item, rest, where, f"{path}.{key}") if step in ("*", key) else item
                for key, item in node.items()
            }
        return node

    def _types(self, node: Any, where: str, path: str) -> Any:
        if isinstance(node, list):
            return [self._types(item, where, f"{path}[{i}]") for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        tag = node.get(TAG)
        if tag is None:
            return {key: self._types(item, where, f"{path}.{key}") for key, item in node.items()}
        if tag == "model" and isinstance(node.get("v"), dict):
            marked = _sensitive_types().get(str(node.get("name")), {})
            return {
                **node,
                "v": {
                    key: self._hide(item, where, f"{path}.{key}", marked[key])
                    if key in marked
                    else self._types(item, where, f"{path}.{key}")
                    for key, item in node["v"].items()
                },
            }
        return {
            key: self._types(item, where, path) if key == "v" else item
            for key, item in node.items()
        }


# Events whose data is (part of) the run's output: the output's declared paths apply to it.
_OUTPUT_EVENTS = frozenset({"output", "intermediate"})


def masked_event(masker: Masker, event: Mapping[str, Any]) -> dict[str, Any]:
    """A run event (``type`` plus its data) with its sensitive fields masked: by type
    everywhere, and by the output's paths in an output event's ``data``."""
    shown = dict(event)
    kind = shown.pop("type", None)
    shown = masker.value(shown, where="event")
    if kind in _OUTPUT_EVENTS and "data" in shown:
        shown["data"] = masker.output(shown["data"])
    return {"type": kind, **shown} if kind is not None else shown


def for_run(run: Any) -> Masker:
    """The masker of ``run`` (a ``WorkflowRun``, or anything with ``pk`` and
    ``workflow_name``)."""
    _register_types(run.workflow_name)
    return Masker(str(run.pk), _declared_paths(run.workflow_name), workflow=run.workflow_name)


def is_mask(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith(MASK_PREFIX)
        and len(value) == len(MASK_PREFIX) + _DIGEST_CHARS
    )


def changed_masks(before: Iterable[Masked], after: Iterable[Masked]) -> list[str]:
    """The paths of ``before`` whose mask ``after`` does not show at the same path: a masked
    field that was changed or removed."""
    shown = {item.path: item.mask for item in after}
    return [item.path for item in before if shown.get(item.path) != item.mask]


def _register_types(workflow: str) -> None:
    """Build the workflow's graphs once in this process (cached by the catalog): building
    registers its classes, so a page that shows a run first still knows which fields are
    marked."""
    try:
        catalog.versions(workflow)
    except catalog.UnknownWorkflowError:  # gone from this deployment: its runs show as they are
        return


def _input_type(workflow: str) -> Any:
    if not workflow:
        return None
    try:
        return catalog.input_type(workflow)
    except catalog.UnknownWorkflowError:
        return None


def _model_class(annotation: Any) -> type | None:
    """The dataclass or pydantic model ``annotation`` names, under ``Optional`` too."""
    if isinstance(annotation, type):
        return annotation if is_restorable_class(annotation) and _hints(annotation) else None
    if typing.get_origin(annotation) is typing.Annotated:
        return _model_class(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = [c for c in map(_model_class, typing.get_args(annotation)) if c is not None]
        return found[0] if len(found) == 1 else None
    return None


def _item_class(annotation: Any) -> type | None:
    """The model class of a ``list[Model]`` / ``tuple[Model, ...]`` annotation's items."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _item_class(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (list, tuple, set, frozenset):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return _model_class(args[0]) if len(args) == 1 else None
    return None


@functools.cache
def _hints(cls: type) -> Mapping[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError, AttributeError):  # a forward reference that does not resolve
        return {}


def _declared_paths(workflow: str) -> tuple[SensitivePath, ...]:
    found = catalog.load().get(workflow)
    return found.sensitive if found is not None else ()


def _sensitive_types() -> Mapping[str, Mapping[str, str]]:
    """Stored class name -> its sensitive fields -> their reasons, for every class registered
    so far; read again only when the registry has changed (every superstep asks)."""
    generation = default_registry.generation
    if _types_cache[0] != generation:
        _types_cache[:] = [generation, _types_of(default_registry.registered())]
    found: Mapping[str, Mapping[str, str]] = _types_cache[1]
    return found


_types_cache: list[Any] = [-1, {}]


def _types_of(registered: Mapping[str, type]) -> Mapping[str, Mapping[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for name, cls in registered.items():
        marked = sensitive_fields(cls)
        if marked:
            found[name] = {key: marker.reason for key, marker in marked.items()}
    return found
