"""The orchestrations' own requests, answered with a person's words: a handoff waiting for the
user's next message, a Magentic plan to sign off, and an agent's answer to review
(``with_request_info``). Each is answered with messages (MAF's ``Message``), stored in the
checkpoint codec's form, so nothing here imports MAF:

=================  ==========================================  ==================================
request            Approve                                     Reject (with its reason)
=================  ==========================================  ==================================
handoff            sends the typed message as the user's turn  ends the conversation (no message)
plan review        the plan as shown; an edited plan is sent   asks for a new plan, the reason as
                   back for the manager to adopt (it replans)  the feedback
agent review       accepts the agent's answer                  sends the reason back to the agent,
                                                               which answers again
=================  ==========================================  ==================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dashboard.core.errors import InvalidInput
from dashboard.models import ApprovalRequest

__all__ = ["MessageRequest", "message_answer", "message_request_of", "response_schema"]

Kind = Literal["handoff", "plan_review", "agent_review"]
_ORCHESTRATIONS = "workflows.orchestrations."
# The request types' names in the engine (MAF's names, in workflows.orchestrations).
_BY_REQUEST = {
    f"{_ORCHESTRATIONS}handoff_messages.HandoffAgentUserRequest": "handoff",
    f"{_ORCHESTRATIONS}magentic_types.MagenticPlanReviewRequest": "plan_review",
}
_REVIEW_RESPONSE = f"{_ORCHESTRATIONS}request_info.AgentRequestInfoResponse"
MAX_TEXT = 20_000
EDITED_PLAN = "Use this plan instead:\n"


@dataclass(frozen=True)
class MessageRequest:
    """What the person answers: ``text`` is the agent's answer, or the plan to sign off."""

    kind: Kind
    agent: str
    text: str
    stalled: bool = False


def _untagged(value: Any) -> Any:
    """A codec-tagged MAF value as MAF's own dict (inside one, values are MAF's dicts)."""
    return value.get("v") if isinstance(value, dict) and value.get("$t") == "agent" else value


def _texts(message: Any) -> str:
    inner = _untagged(message)
    contents = inner.get("contents") if isinstance(inner, dict) else None
    return "".join(
        str(c.get("text") or "") for c in contents or () if isinstance(c, dict) and "text" in c
    )


def _answer_text(response: Any) -> str:
    inner = _untagged(response)
    messages = inner.get("messages") if isinstance(inner, dict) else None
    return "\n\n".join(t for m in messages or () if (t := _texts(m)))


def message_request_of(approval: ApprovalRequest) -> MessageRequest | None:
    """The orchestration request ``approval`` is, None for any other request."""
    data = approval.request_data
    if not isinstance(data, dict) or not isinstance(data.get("v"), dict):
        return None
    fields = data["v"]
    kind = _BY_REQUEST.get(str(data.get("name")))
    if kind == "handoff":
        return MessageRequest(
            "handoff", approval.executor_id, _answer_text(fields.get("agent_response"))
        )
    if kind == "plan_review":
        stalled = fields.get("is_stalled") is True
        return MessageRequest(
            "plan_review", approval.executor_id, _texts(fields.get("plan")), stalled
        )
    if approval.response_type == _REVIEW_RESPONSE:
        agent = str(fields.get("executor_id") or approval.executor_id)
        return MessageRequest("agent_review", agent, _answer_text(fields.get("agent_response")))
    return None


def response_schema(request: MessageRequest) -> dict[str, Any]:
    """The JSON schema of the answer the service takes for ``request``."""
    text = {"type": "string", "maxLength": MAX_TEXT}
    properties = {} if request.kind == "agent_review" else {"text": text}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _message(text: str) -> dict[str, Any]:
    content = {"type": "text", "text": text, "additional_properties": {}}
    body = {"type": "message", "role": "user", "contents": [content], "additional_properties": {}}
    return {"$t": "agent", "name": "Message", "v": body}


def _typed(response: Any) -> str | None:
    """The text a response carries (``{"text": ...}``), None for no response."""
    if response is None or response == {}:
        return None
    if not isinstance(response, dict) or set(response) - {"text"}:
        unknown = sorted(set(response) - {"text"}) if isinstance(response, dict) else []
        raise InvalidInput(
            "this request's answer holds only a text",
            errors={str(k): "unknown field; did you mean 'text'?" for k in unknown}
            or {"response": "must be an object with a text"},
        )
    text = response["text"]
    if not isinstance(text, str):
        raise InvalidInput("the answer's text is text", errors={"text": "must be a string"})
    if len(text) > MAX_TEXT:
        raise InvalidInput(
            f"the text is {len(text)} characters; at most {MAX_TEXT}",
            errors={"text": f"at most {MAX_TEXT} characters"},
        )
    return _lines(text).strip()


def _lines(text: str) -> str:
    """Text with one kind of line end: a browser posts a textarea's lines ended "\r\n", and
    a plan approved exactly as shown is not an edited one."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def message_answer(
    approval: ApprovalRequest, request: MessageRequest, approved: bool, response: Any, reason: str
) -> Any:
    """The answer to ``request`` in the codec's form (the table above).

    Raises:
        InvalidInput: a response of another shape; a handoff approved with no message.
    """
    text = _typed(response)
    if request.kind == "handoff":
        if not approved:
            return []
        if not text:
            raise InvalidInput(
                "type the message to send as the user's turn", errors={"text": "Field required"}
            )
        return [_message(text)]
    if request.kind == "plan_review":
        review = []
        if text and text != _lines(request.text).strip():
            review.append(_message(EDITED_PLAN + text))
        if not approved and reason:
            review.insert(0, _message(reason))
        name = approval.response_type
        return {"$t": "model", "name": name, "v": {"review": review}}
    messages = [] if approved or not reason else [_message(reason)]
    return {"$t": "model", "name": _REVIEW_RESPONSE, "v": {"messages": messages}}
