"""Tool approvals answered with edited arguments, or rejected with a reason.

MAF 1.23 binds a ``function_approval_response`` to the request it recorded in the agent's
session and runs the *recorded* call: the response's own ``function_call`` is replaced by it,
so arguments an approver changed would be dropped without a word. ``edit_recorded_call``
therefore writes the answer's arguments into the recorded request and into the call in the
session's history before the agent runs on: MAF's binding then finds the edited call, runs
the tool with it, and the conversation shows the call as it ran.

MAF's rejection has no reason: the tool's result is always "Error: Tool call invocation was
rejected by user.". A reason given with a rejection (``REASON_KEY`` in the response's
``additional_properties``) reaches the model as a user message right after that result
(``RejectionReasons``, a chat middleware of that one run).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from agent_framework import AgentSession, ChatContext, ChatMiddleware, Content, Message

__all__ = [
    "REASON_KEY",
    "RejectionReasons",
    "edit_recorded_call",
    "edited_arguments",
    "rejection_reasons",
]

# Where a rejection's reason travels in the approval response (MAF's own free-form mapping).
REASON_KEY = "reason"
# MAF's session keys for its tool-approval bookkeeping and the in-memory history.
_APPROVAL_STATE = "tool_approval"
_PENDING = "pending_approval_requests"


def _arguments(call: Content | None) -> Any:
    if call is None:
        return None
    try:
        return call.parse_arguments()
    except Exception:  # noqa: BLE001 - unparsable text stays text: it cannot be an edit
        return call.arguments


def edited_arguments(request: Content, response: Content) -> dict[str, Any] | None:
    """The arguments an approval grants when they differ from the ones the model asked for;
    None for anything else (a rejection, an unchanged call, another kind of answer)."""
    if request.type != "function_approval_request" or response.type != (
        "function_approval_response"
    ):
        return None
    if response.approved is not True or response.function_call is None:
        return None
    given = _arguments(response.function_call)
    if not isinstance(given, Mapping) or given == _arguments(request.function_call):
        return None
    return dict(given)


def edit_recorded_call(session: AgentSession, request: Content, arguments: dict[str, Any]) -> None:
    """Make ``arguments`` the recorded call of ``request`` in the session: in the pending
    request MAF binds the answer to, and in the call of the session's history (the request
    there keeps what the model asked for, so the conversation shows both)."""
    call = request.function_call
    approvals = session.state.get(_APPROVAL_STATE)
    if isinstance(approvals, MutableMapping):
        for recorded in approvals.get(_PENDING) or ():
            if _field(recorded, "id") == request.id and _field(recorded, "function_call"):
                _set_arguments(_field(recorded, "function_call"), arguments)
    occurrence = call.id if call is not None else None
    if occurrence is None:
        return
    for value in session.state.values():
        messages = value.get("messages") if isinstance(value, Mapping) else None
        for message in messages if isinstance(messages, list) else ():
            contents = message.get("contents") if isinstance(message, Mapping) else message.contents
            for content in contents or ():
                if _field(content, "type") == "function_call" and _field(content, "id") == (
                    occurrence
                ):
                    _set_arguments(content, arguments)


def _field(content: Any, name: str) -> Any:
    if isinstance(content, Mapping):
        return content.get(name)
    return getattr(content, name, None)


def _set_arguments(call: Any, arguments: Any) -> None:
    if isinstance(call, MutableMapping):
        call["arguments"] = dict(arguments)
    else:
        call.arguments = dict(arguments)


def rejection_reasons(answers: list[Content]) -> dict[str, str]:
    """call id -> reason, for each rejected tool call whose answer gave a reason."""
    reasons: dict[str, str] = {}
    for answer in answers:
        if answer.type != "function_approval_response" or answer.approved is True:
            continue
        reason = (answer.additional_properties or {}).get(REASON_KEY)
        call = answer.function_call
        if isinstance(reason, str) and reason.strip() and call is not None and call.call_id:
            reasons[call.call_id] = f"The call to {call.name} was rejected: {reason.strip()}"
    return reasons


class RejectionReasons(ChatMiddleware):
    """Tells the model why a person rejected its calls: a user message right after the tool
    messages holding MAF's rejection results (a provider wants a call's result right after
    the call, so the reason cannot come before it). Only the model's input changes; the
    session keeps MAF's messages, the reason being in the approval response they hold."""

    def __init__(self, reasons: Mapping[str, str]) -> None:
        self._reasons = dict(reasons)

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        messages = list(context.messages)
        last = max(
            (
                index
                for index, message in enumerate(messages)
                if any(
                    content.type == "function_result" and content.call_id in self._reasons
                    for content in message.contents
                )
            ),
            default=None,
        )
        if last is not None:
            while last + 1 < len(messages) and messages[last + 1].role == "tool":
                last += 1
            texts = [Content.from_text(text) for text in self._reasons.values()]
            messages.insert(last + 1, Message(role="user", contents=texts))
            context.messages = messages
        await call_next()
