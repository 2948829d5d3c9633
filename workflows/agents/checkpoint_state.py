"""The checkpoint state of an ``AgentExecutor``: its shape, and the checks a restore makes.

The shape and the key names are MAF's (``AgentExecutorCheckpointState``), so a reader of a
checkpoint, or a subclass extending the state, finds what MAF documents. A restore refuses a
state whose known keys hold the wrong kinds of values with the messages MAF gives, naming the
key (and the item) at fault; missing keys are left to their empty defaults and unknown keys
are ignored, so states written by newer or older versions stay readable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict, cast

from agent_framework import Content, Message

from ..exceptions import CheckpointDecodeError

__all__ = ["AgentExecutorCheckpointState", "check_state"]


class AgentExecutorCheckpointState(TypedDict, total=False):
    """What ``AgentExecutor.on_checkpoint_save`` returns (MAF's keys and meaning).

    Keys:
        cache: messages given to the agent since it last answered.
        full_conversation: the conversation after its last answer.
        agent_session: its ``AgentSession.to_dict()``.
        pending_agent_requests: user-input requests waiting for an answer, by request id.
        pending_responses_to_agent: answers received, in request order, not yet given to it.
        pending_request_order: the request ids of the current batch, answered ones included.
    """

    cache: list[Message]
    full_conversation: list[Message]
    agent_session: dict[str, Any]
    pending_agent_requests: dict[str, Content]
    pending_responses_to_agent: list[Content]
    pending_request_order: list[str]


def _fail(text: str) -> CheckpointDecodeError:
    return CheckpointDecodeError(f"AgentExecutor checkpoint field {text}")


def _kind(value: object) -> str:
    return type(value).__name__


def _check_list_of(key: str, item_type: type) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not isinstance(value, list):
            raise _fail(f"'{key}' must be a list, got {_kind(value)}.")
        for index, item in enumerate(value):
            if not isinstance(item, item_type):
                raise _fail(f"'{key}'[{index}] must be {item_type.__name__}, got {_kind(item)}.")

    return check


def _check_requests(value: Any) -> None:
    if not isinstance(value, dict):
        raise _fail(f"'pending_agent_requests' must be a dict, got {_kind(value)}.")
    for request_id, request in value.items():
        if not isinstance(request_id, str):
            raise _fail(f"'pending_agent_requests' keys must be str, got {_kind(request_id)}.")
        if not isinstance(request, Content):
            raise _fail(
                f"'pending_agent_requests[{request_id!r}]' must be Content, got {_kind(request)}."
            )


def _check_session(value: Any) -> None:
    if not isinstance(value, dict):
        raise _fail(f"'agent_session' must be a dict, got {_kind(value)}.")
    session = cast(dict[str, Any], value)
    if not isinstance(session.get("session_id"), str):
        raise _fail(
            f"'agent_session.session_id' must be a str, got {_kind(session.get('session_id'))}."
        )
    optional: list[tuple[str, tuple[type, ...], str]] = [
        ("state", (dict,), "a dict"),
        ("service_session_id", (str, Mapping), "str, mapping, or None"),
        ("type", (str,), "a str"),
    ]
    for name, kinds, wanted in optional:
        field = session.get(name)
        if field is not None and not isinstance(field, kinds):
            raise _fail(f"'agent_session.{name}' must be {wanted}, got {_kind(field)}.")


# In MAF's order, so a state with several faults is refused for the same one.
_CHECKS: list[tuple[str, Callable[[Any], None]]] = [
    ("cache", _check_list_of("cache", Message)),
    ("full_conversation", _check_list_of("full_conversation", Message)),
    ("pending_responses_to_agent", _check_list_of("pending_responses_to_agent", Content)),
    ("pending_agent_requests", _check_requests),
    ("pending_request_order", _check_list_of("pending_request_order", str)),
]


def check_state(state: object) -> None:
    """Refuse a state to restore whose known keys hold the wrong kinds of values.

    Raises:
        CheckpointDecodeError: with MAF's message for the first fault found.
    """
    if not isinstance(state, Mapping):
        raise CheckpointDecodeError(
            f"AgentExecutor checkpoint state must be a mapping, got {_kind(state)}."
        )
    fields = cast(Mapping[str, Any], state)
    for key, check in _CHECKS:
        if fields.get(key) is not None:
            check(fields[key])
    order = fields.get("pending_request_order")
    if order is not None:
        if len(set(order)) != len(order):
            raise _fail("'pending_request_order' has duplicate IDs.")
        requests = fields.get("pending_agent_requests")
        if requests and not set(requests).issubset(order):
            raise _fail("'pending_request_order' must include every pending request ID.")
    if fields.get("agent_session") is not None:
        _check_session(fields["agent_session"])
