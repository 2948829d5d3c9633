"""How a workflow agent's answers are made from its workflow's events: updates from outputs,
answers from the caller's function results, and streamed updates joined into one response."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from typing import Any

from agent_framework import AgentResponse, AgentResponseUpdate, Content, Message
from agent_framework._types import add_usage_details
from agent_framework.exceptions import AgentInvalidResponseException

from ..events import RequestInfoEvent

__all__ = [
    "FORWARDED_EVENT_TYPES",
    "computer_request_id",
    "contents_of",
    "forwarded_update",
    "function_result_answer",
    "merge_updates",
    "message_update",
    "now",
    "response_updates",
]

# The events a workflow agent turns into its answer; everything else stays inside the run.
FORWARDED_EVENT_TYPES = frozenset({"output", "intermediate", "data", "request_info"})


def now() -> str:
    return dt.datetime.now(tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def contents_of(data: Any) -> list[Content]:
    """Contents for an output that is no agent type: text for anything but contents."""
    if isinstance(data, list):
        return [c for item in data for c in contents_of(item)]
    if isinstance(data, Content):
        return [data]
    return [Content.from_text(text=data if isinstance(data, str) else str(data))]


def forwarded_update(data: AgentResponseUpdate, author: str | None) -> AgentResponseUpdate:
    # A copy: the agent executor still holds the update it yielded.
    update = AgentResponseUpdate(
        contents=list(data.contents),
        role=data.role,
        author_name=data.author_name or author,
        agent_id=data.agent_id,
        response_id=data.response_id,
        message_id=data.message_id,
        created_at=data.created_at,
        finish_reason=data.finish_reason,
        continuation_token=data.continuation_token,
        additional_properties=(
            dict(data.additional_properties) if data.additional_properties is not None else None
        ),
        raw_representation=data.raw_representation,
    )
    return update


def response_updates(
    data: AgentResponse, author: str | None, response_id: str
) -> list[AgentResponseUpdate]:
    updates = [
        AgentResponseUpdate(
            contents=list(message.contents),
            role=message.role,
            author_name=message.author_name or author,
            response_id=data.response_id or response_id,
            message_id=message.message_id or str(uuid.uuid4()),
            created_at=data.created_at or now(),
            raw_representation=message,
        )
        for message in data.messages
    ]
    if updates:
        last = updates[-1]
        last.agent_id = data.agent_id
        last.finish_reason = data.finish_reason
        last.continuation_token = data.continuation_token
        last.additional_properties = dict(data.additional_properties)
    return updates


def message_update(
    message: Message, author: str | None, response_id: str, *, new_id: bool = False
) -> AgentResponseUpdate:
    return AgentResponseUpdate(
        contents=list(message.contents),
        role=message.role,
        author_name=message.author_name or author,
        response_id=response_id,
        message_id=str(uuid.uuid4()) if new_id else (message.message_id or str(uuid.uuid4())),
        created_at=now(),
        raw_representation=message,
    )


def function_result_answer(
    content: Content, pending: Mapping[str, RequestInfoEvent]
) -> tuple[str, Any]:
    """(request id, answer) for a function result: a ``request_info`` call's result is the
    answer itself; the result of an agent's declaration-only call is the content."""
    call_id = content.call_id
    if call_id is None:
        raise AgentInvalidResponseException("Function result is missing its call ID.")
    request_id, request = call_id, pending.get(call_id)
    if request is None:
        matching = [
            (rid, event)
            for rid, event in pending.items()
            if isinstance(event.data, Content)
            and event.data.type == "function_call"
            and event.data.call_id == call_id
        ]
        if len(matching) == 1:
            request_id, request = matching[0]
    agent_call = (
        request is not None
        and request.response_type is Content
        and isinstance(request.data, Content)
        and request.data.type == "function_call"
    )
    return request_id, content if agent_call else content.result


def computer_request_id(content: Content, pending: Mapping[str, RequestInfoEvent]) -> str:
    if not content.call_id:
        raise AgentInvalidResponseException("Computer result is missing its call ID.")
    matching = [
        rid
        for rid, event in pending.items()
        if isinstance(event.data, Content)
        and event.data.type == "computer_tool_call"
        and event.data.call_id == content.call_id
    ]
    if len(matching) != 1:
        raise AgentInvalidResponseException(
            f"Computer result for call {content.call_id!r} must match exactly one pending request."
        )
    return matching[0]


def merge_updates(updates: list[AgentResponseUpdate], response_id: str) -> AgentResponse:
    """Join streamed updates into one response: grouped by response then by message, each
    response's messages in time order, updates belonging to no response last."""
    owner_of_call = {
        content.call_id: update.response_id
        for update in updates
        if update.response_id
        for content in update.contents
        if content.type == "function_call" and content.call_id
    }
    grouped: dict[str, dict[str, list[AgentResponseUpdate]]] = {}
    loose: list[AgentResponseUpdate] = []
    for update in updates:
        owner = update.response_id or next(
            (
                owner_of_call[c.call_id]
                for c in update.contents
                if c.type == "function_result" and c.call_id in owner_of_call
            ),
            None,
        )
        if owner is None:
            loose.append(update)
        else:
            key = update.message_id or ""
            grouped.setdefault(owner, {}).setdefault(key, []).append(update)
    parts: list[AgentResponse] = []
    for by_message in grouped.values():
        per_message = [AgentResponse.from_updates(group) for group in by_message.values()]
        per_message.sort(key=lambda r: (r.created_at is None, r.created_at or ""))
        parts.extend(per_message)
    if loose:
        parts.append(AgentResponse.from_updates(loose))
    messages = [m for part in parts for m in part.messages]
    usage = None
    for part in parts:
        usage = add_usage_details(usage, part.usage_details)
    stamps = [p.created_at for p in parts if p.created_at]
    return AgentResponse(
        messages=messages,
        response_id=response_id,
        created_at=max(stamps) if stamps else None,
        usage_details=usage,
    )
