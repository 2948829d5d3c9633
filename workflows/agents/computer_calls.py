"""Computer-use calls in an agent's turn, handled as MAF's ``AgentExecutor`` handles them.

A computer call (``computer_tool_call`` content asking for user input) is carried out by the
application, which answers with a ``computer_tool_result``. MAF's agent layer, told by the
session that a workflow runs the agent, keeps the results of ordinary tools that ran in the
same turn aside, so that the whole turn goes back to the model in order once the computer
results arrive. Three consequences for the executor live here:

- while streaming, once a computer call appears the updates are held back until the turn is
  final, since later output can complete a call (those are then passed on as informational);
- the batch's order interleaves the computer calls with the local calls that already have a
  result, and those results are queued as answers already given;
- on resuming, those results leave the session's local history for the one call, so the model
  does not see them twice.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, cast

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    Content,
    InMemoryHistoryProvider,
    Message,
    SupportsAgentRun,
)
from agent_framework._sessions import _paired_local_function_results
from agent_framework.exceptions import AgentInvalidResponseException

__all__ = [
    "batch_order",
    "check_computer_result",
    "opens_computer_call",
    "release_held",
    "set_aside_replayed_results",
]


def check_computer_result(request: Any, response: Any) -> None:
    """A computer call is answered by its own result, acknowledging exactly its safety checks.

    Raises:
        AgentInvalidResponseException: ``response`` is not that result.
    """
    if (
        not isinstance(response, Content)
        or response.type != "computer_tool_result"
        or response.call_id != request.call_id
    ):
        raise AgentInvalidResponseException(
            "Computer result must match its pending computer call ID."
        )
    pending = {check["id"] for check in request.pending_safety_checks or []}
    acknowledged = {check["id"] for check in response.acknowledged_safety_checks or []}
    if pending != acknowledged:
        raise AgentInvalidResponseException(
            "Computer result must explicitly acknowledge exactly the pending safety checks."
        )


def _is_open_call(content: Content) -> bool:
    return content.type == "computer_tool_call" and bool(content.user_input_request)


def opens_computer_call(update: AgentResponseUpdate) -> bool:
    """Whether ``update`` holds a computer call waiting for the application."""
    return any(_is_open_call(content) for content in update.contents)


def release_held(
    held: Sequence[AgentResponseUpdate], final: AgentResponse
) -> list[AgentResponseUpdate]:
    """The held-back updates to pass on once the turn is final: calls the final response shows
    completed become informational; contents still waiting for input are left out."""
    completed = {
        (content.id, content.call_id)
        for message in final.messages
        for content in message.contents
        if content.type == "computer_tool_call" and not content.user_input_request
    }
    released: list[AgentResponseUpdate] = []
    for update in held:
        for content in update.contents:
            if content.type == "computer_tool_call" and (content.id, content.call_id) in completed:
                content.user_input_request = False
                content.informational_only = True
        shown = [content for content in update.contents if not content.user_input_request]
        if len(shown) == len(update.contents):
            released.append(update)
        elif shown:
            partial = copy.copy(update)
            partial.contents = shown
            released.append(partial)
    return released


def batch_order(request_ids: set[str], response: AgentResponse) -> tuple[list[str], list[Content]]:
    """(the batch's order, the local results already in hand) for a turn with computer calls.

    Raises:
        AgentInvalidResponseException: the final response lacks the calls, or names one twice.
    """
    start = next(
        (
            index
            for index, message in enumerate(response.messages)
            if any(_is_open_call(c) and c.id in request_ids for c in message.contents)
        ),
        None,
    )
    if start is None:
        raise AgentInvalidResponseException(
            "Pending computer call is absent from the final response."
        )
    contents = [content for message in response.messages[start:] for content in message.contents]
    results = _paired_local_function_results(contents)
    order: list[str] = []
    done: list[Content] = []
    for content in contents:
        if content.user_input_request and isinstance(content.id, str) and content.id in request_ids:
            order.append(content.id)
        elif _is_local_call(content) and id(content) in results:
            order.append(cast(str, content.id))
            done.append(results[id(content)])
    if len(order) != len(set(order)) or not request_ids.issubset(order):
        raise AgentInvalidResponseException(
            "Computer batch has missing or duplicate call occurrence IDs."
        )
    return order, done


def _is_local_call(content: Content) -> bool:
    return (
        content.type == "function_call"
        and not content.informational_only
        and bool(content.id)
        and bool(content.call_id)
    )


def set_aside_replayed_results(
    agent: SupportsAgentRun,
    session: AgentSession,
    answers: Sequence[Content],
    batch: Sequence[str],
) -> Callable[[], None] | None:
    """Take the local results about to be replayed out of the session's history.

    Returns:
        A function putting the history back (for a resume that fails), or None when nothing
        was taken out.
    """
    state = session.state.get(_history_source(agent))
    history = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(history, list) or not all(isinstance(m, Message) for m in history):
        return None
    replayed = [answer for answer in answers if answer.type == "function_result"]
    start = next(
        (
            index
            for index in range(len(history) - 1, -1, -1)
            if any(
                c.type == "computer_tool_call" and c.id in batch for c in history[index].contents
            )
        ),
        None,
    )
    if not replayed or start is None:
        return None
    kept, removed = _without(cast(list[Message], history[start:]), replayed)
    if not removed:
        return None
    original = history
    cast(dict[str, Any], state)["messages"] = [*history[:start], *kept]

    def put_back() -> None:
        cast(dict[str, Any], state)["messages"] = original

    return put_back


def _history_source(agent: SupportsAgentRun) -> str:
    providers = getattr(agent, "context_providers", ())
    for provider in providers if isinstance(providers, Sequence) else ():
        if isinstance(provider, InMemoryHistoryProvider) and provider.load_messages:
            return provider.source_id
    return InMemoryHistoryProvider.DEFAULT_SOURCE_ID


def _without(messages: list[Message], replayed: list[Content]) -> tuple[list[Message], bool]:
    """``messages`` less one occurrence of each replayed result (by identity or by ids)."""
    left = list(replayed)
    kept: list[Message] = []
    removed = False
    for message in messages:
        contents: list[Content] = []
        for content in message.contents:
            match = next((i for i, r in enumerate(left) if _same_result(content, r)), None)
            if match is None:
                contents.append(content)
            else:
                removed = True
                left.pop(match)
        if len(contents) == len(message.contents):
            kept.append(message)
        elif contents:
            trimmed = copy.copy(message)
            trimmed.contents = contents
            kept.append(trimmed)
    return kept, removed


def _same_result(content: Content, result: Content) -> bool:
    return content is result or (
        content.type == "function_result"
        and content.id == result.id
        and content.call_id == result.call_id
    )
