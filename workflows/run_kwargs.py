"""The agent arguments of ``run()``: ``function_invocation_kwargs`` and ``client_kwargs``.

An agent inside a workflow passes the first to its tools and the second to its chat client, as
in Microsoft Agent Framework. A plain mapping is either global (no key names an executor: every
agent gets all of it) or per executor (some key is an executor id: each agent gets its entry,
merged over a legacy ``"__global__"`` entry if there is one). ``WorkflowInvocationKwargs``
says which explicitly, and its executor keys may also name an agent by its name.

A fresh run starts with the arguments it is given (none carry over from the run before); a
resumed run or one answering requests keeps the arguments its lineage had, unless new ones
are given. They live in the run's checkpoints (``metadata["run_kwargs"]``, through the codec:
values must be storable), never in the shared state.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .exceptions import RunArgumentsError

__all__ = [
    "GLOBAL_KWARGS_KEY",
    "KWARG_KINDS",
    "Given",
    "WorkflowInvocationKwargs",
    "check",
    "for_executor",
    "from_stored",
    "stored",
]

logger = logging.getLogger("workflows")

GLOBAL_KWARGS_KEY = "__global__"
KWARG_KINDS = ("function_invocation_kwargs", "client_kwargs")


@dataclass(frozen=True)
class WorkflowInvocationKwargs:
    """Arguments for every agent (``global_kwargs``) and for some (``executor_kwargs``, keyed by
    executor id or agent name); an executor's own values win over the global ones."""

    global_kwargs: Mapping[str, Any] = field(default_factory=dict)
    executor_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


# What the caller passed, by kind ("function_invocation_kwargs", "client_kwargs").
Given = WorkflowInvocationKwargs | Mapping[str, Any]


def check(given: Any, kind: str) -> Given:
    """``given`` if it is a mapping or a ``WorkflowInvocationKwargs``.

    Raises:
        RunArgumentsError: anything else.
    """
    if isinstance(given, (WorkflowInvocationKwargs, Mapping)):
        return given
    raise RunArgumentsError(f"{kind} must be a mapping, not {type(given).__name__}")


def for_executor(
    given: Given | None,
    kind: str,
    executor_id: str,
    executor_ids: set[str],
    agent_names: Mapping[str, str],
) -> dict[str, Any] | None:
    """What one executor gets: its own values over the global ones, or None if neither exists.

    Args:
        given: what the caller passed for this kind (None: nothing).
        kind: the kind's name, for messages.
        executor_id: the executor asking.
        executor_ids: every executor id of its workflow (a plain mapping is per executor when
            one of its keys is among them).
        agent_names: agent name -> executor id, for agents whose name is not their id (only
            ``WorkflowInvocationKwargs`` may target an agent by name).

    Raises:
        RunArgumentsError: one executor targeted both by id and by agent name.
    """
    if given is None:
        return None
    shared, own = _split(given, kind, executor_id, executor_ids, agent_names)
    if shared is None and own is None:
        return None
    for name, value in (("global", shared), (executor_id, own)):
        if value is not None and not isinstance(value, Mapping):
            logger.warning(
                "executor %s expected a mapping for its %s %s, got %s; ignored",
                executor_id,
                name,
                kind,
                type(value).__name__,
            )
            return None
    return {**(shared or {}), **(own or {})}


def _split(
    given: Given,
    kind: str,
    executor_id: str,
    executor_ids: set[str],
    agent_names: Mapping[str, str],
) -> tuple[Any, Any]:
    """(the global values, this executor's own) of what the caller passed."""
    if isinstance(given, WorkflowInvocationKwargs):
        own = None
        targeted_by: str | None = None
        for key, value in given.executor_kwargs.items():
            if agent_names.get(key, key) != executor_id:
                continue
            if targeted_by is not None:
                raise RunArgumentsError(
                    f"{kind} targets executor {executor_id!r} both by its id and by its agent name"
                )
            targeted_by, own = key, value
        return dict(given.global_kwargs), own
    if not set(given) & executor_ids:
        return dict(given), None
    shared = given.get(GLOBAL_KWARGS_KEY) if GLOBAL_KWARGS_KEY not in executor_ids else None
    return shared, given.get(executor_id)


def stored(run_kwargs: Mapping[str, Given]) -> dict[str, Any]:
    """The form kept in a checkpoint's metadata."""
    out: dict[str, Any] = {}
    for kind, given in run_kwargs.items():
        if isinstance(given, WorkflowInvocationKwargs):
            out[kind] = {
                "global_kwargs": dict(given.global_kwargs),
                "executor_kwargs": {k: dict(v) for k, v in given.executor_kwargs.items()},
            }
        else:
            out[kind] = {"mapping": dict(given)}
    return out


def from_stored(value: Any) -> dict[str, Given]:
    """``stored``'s form back; an entry that is not of that form is left out."""
    given: dict[str, Given] = {}
    if not isinstance(value, dict):
        return given
    for kind in KWARG_KINDS:
        entry = value.get(kind)
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("mapping"), dict):
            given[kind] = entry["mapping"]
        elif isinstance(entry.get("global_kwargs"), dict) and isinstance(
            entry.get("executor_kwargs"), dict
        ):
            given[kind] = WorkflowInvocationKwargs(
                global_kwargs=entry["global_kwargs"], executor_kwargs=entry["executor_kwargs"]
            )
    return given
