"""Tool calls an agent asks a person to approve: what one is (the agent, the function, its
description and the JSON schema of its arguments, found on the workflow's agent executor) and
the answer that goes back to the agent: approved, possibly with edited arguments, or rejected
with a reason.

A request is a tool call when its data is MAF's ``function_approval_request`` content (an
``AgentExecutor`` raises one for a tool declared with ``approval_mode="always_require"``); it
is read from its stored JSON, so nothing here imports MAF. A workflow lets approvers edit a
tool's arguments by marking the tool (``catalog.tools.EDITABLE_ARGUMENTS``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashboard import catalog
from dashboard.catalog.tools import EDITABLE_ARGUMENTS
from dashboard.core.errors import InvalidInput
from dashboard.models import ApprovalRequest
from dashboard.services import validation
from workflows import WorkflowExecutor

__all__ = [
    "ToolCall",
    "answer_fields",
    "argument_edit",
    "check_arguments",
    "requested_call",
    "response_schema",
    "tool_call_of",
    "tool_response",
]

# Where MAF's approval response carries a rejection's reason to the agent executor.
REASON_KEY = "reason"


@dataclass(frozen=True)
class ToolCall:
    """A tool call waiting for approval. ``description`` is None when the workflow's agent has
    no tool of that name (a tool given at run time, or a graph that changed): then ``schema``
    is empty and the arguments cannot be edited."""

    executor_id: str
    agent_name: str
    name: str
    description: str | None
    schema: dict[str, Any]
    arguments: dict[str, Any]
    editable: bool


def _request_content(approval: ApprovalRequest) -> dict[str, Any] | None:
    data = approval.request_data
    if not (isinstance(data, dict) and data.get("$t") == "agent" and data.get("name") == "Content"):
        return None
    content = data.get("v")
    if not isinstance(content, dict) or content.get("type") != "function_approval_request":
        return None
    return content if isinstance(content.get("function_call"), dict) else None


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    given = call.get("arguments")
    if isinstance(given, str):  # a provider's raw JSON text
        try:
            given = json.loads(given)
        except ValueError:
            return {}
    return dict(given) if isinstance(given, dict) else {}


def requested_call(approval: ApprovalRequest) -> tuple[str, dict[str, Any]] | None:
    """The function and arguments a tool-call request asks for, from its data alone (no
    catalog: what a list of many requests shows), None for another kind of request."""
    content = _request_content(approval)
    if content is None:
        return None
    call = content["function_call"]
    return str(call.get("name") or ""), _arguments(call)


def tool_call_of(approval: ApprovalRequest) -> ToolCall | None:
    """The tool call ``approval`` asks about, None when it asks something else."""
    content = _request_content(approval)
    if content is None:
        return None
    call = content["function_call"]
    name = str(call.get("name") or "")
    agent, tool = _agent_tool(approval.run.workflow_name, approval.executor_id, name)
    schema = tool.parameters() if tool is not None else {}
    extra = getattr(tool, "additional_properties", None) or {}
    return ToolCall(
        executor_id=approval.executor_id,
        agent_name=str(getattr(agent, "name", "") or approval.executor_id),
        name=name,
        description=(tool.description or "") if tool is not None else None,
        schema=schema if isinstance(schema, dict) else {},
        arguments=_arguments(call),
        editable=tool is not None and extra.get(EDITABLE_ARGUMENTS) is True,
    )


def _agent_tool(workflow_name: str, executor_path: str, name: str) -> tuple[Any, Any]:
    """The agent of the executor at ``executor_path`` (``child/agent`` inside a sub-workflow)
    and its tool called ``name``; None for what cannot be found."""
    if workflow_name not in catalog.names():
        return None, None
    workflow: Any = catalog.describe(workflow_name)
    *parents, executor_id = executor_path.split("/")
    for parent in parents:
        child = workflow.executors.get(parent)
        if not isinstance(child, WorkflowExecutor):
            return None, None
        workflow = child.workflow
    agent = getattr(workflow.executors.get(executor_id), "agent", None)
    options = getattr(agent, "default_options", None)
    tools = options.get("tools") if isinstance(options, Mapping) else None
    for tool in tools or ():
        if getattr(tool, "name", None) == name and callable(getattr(tool, "parameters", None)):
            return agent, tool
    return agent, None


def response_schema(call: ToolCall) -> dict[str, Any]:
    """The JSON schema of the answer the service takes for ``call``: its arguments, when the
    workflow lets approvers edit them; nothing else."""
    properties = {"arguments": call.schema} if call.editable else {}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def tool_response(
    approval: ApprovalRequest, call: ToolCall, approved: bool, response: Any, reason: str
) -> dict[str, Any]:
    """MAF's ``function_approval_response`` for ``approval`` as the checkpoint codec stores
    it: the call as asked, or with the edited arguments ``response`` holds
    (``{"arguments": {...}}``), and a rejection's reason for the agent.

    Raises:
        InvalidInput: a response of another shape, an edit of a tool whose workflow does not
            allow it, an edit of a rejected call, or arguments that do not fit the schema
            (``errors`` names each field as ``arguments.<name>``).
    """
    content = _request_content(approval)
    assert content is not None  # a ToolCall comes from such a request
    arguments = _edited(call, approved, response)
    function_call = dict(content["function_call"])
    if arguments is not None:
        function_call["arguments"] = arguments
    properties = dict(content.get("additional_properties") or {})
    if not approved and reason:
        properties[REASON_KEY] = reason
    answer = {
        "type": "function_approval_response",
        "function_call": function_call,
        "approved": approved,
        "id": content.get("id"),
        "additional_properties": properties,
    }
    return {"$t": "agent", "name": "Content", "v": answer}


def _edited(call: ToolCall, approved: bool, response: Any) -> dict[str, Any] | None:
    if response is None or response == {}:
        return None
    if not isinstance(response, dict) or set(response) - {"arguments"}:
        unknown = sorted(set(response) - {"arguments"}) if isinstance(response, dict) else []
        raise InvalidInput(
            "a tool call's answer holds only its arguments"
            + (f", not {', '.join(map(repr, unknown))}" if unknown else ""),
            errors={str(k): "unknown field; did you mean 'arguments'?" for k in unknown}
            or {"response": "must be an object"},
        )
    given = response["arguments"]
    if given == call.arguments:
        return None
    if not call.editable:
        raise InvalidInput(
            f"the workflow does not let approvers edit the arguments of {call.name}",
            errors={"arguments": "not editable"},
        )
    if not approved:
        raise InvalidInput(
            "a rejected call runs with no arguments: send the edit with an approval",
            errors={"arguments": "only with an approval"},
        )
    return check_arguments(call, given)


def check_arguments(call: ToolCall, given: Any) -> dict[str, Any]:
    """``given`` when it fits the tool's schema: its properties only, each of its type,
    every required one present, numbers finite, text storable.

    Raises:
        InvalidInput: ``errors`` maps ``arguments.<name>`` to what is wrong with it.
    """
    if not isinstance(given, dict):
        raise InvalidInput("the arguments are an object", errors={"arguments": "must be an object"})
    validation.require_storable(given, field="arguments")
    properties = call.schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    errors: dict[str, str] = {}
    for key, value in given.items():
        prop = properties.get(key)
        if not isinstance(prop, dict):
            known = ", ".join(properties) or "none"
            errors[f"arguments.{key}"] = f"unknown argument; {call.name} takes {known}"
        elif (problem := _misfit(prop, value)) is not None:
            errors[f"arguments.{key}"] = problem
    for key in call.schema.get("required") or ():
        if key not in given:
            errors[f"arguments.{key}"] = "Field required"
    if errors:
        named = "; ".join(f"{path.removeprefix('arguments.')}: {m}" for path, m in errors.items())
        raise InvalidInput(f"the arguments do not fit {call.name}: {named}", errors=errors)
    return given


_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _misfit(prop: Mapping[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit the property's schema, None when it does (types, enums,
    nullables; bounds are the tool's own business when it runs)."""
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list) and options:
        problems = [_misfit(o, value) for o in options if isinstance(o, dict)]
        return None if any(p is None for p in problems) else (problems[0] or "does not fit")
    enum = prop.get("enum")
    if isinstance(enum, list) and value not in enum:
        return "must be one of " + ", ".join(json.dumps(v) for v in enum)
    kinds = prop.get("type")
    names = kinds if isinstance(kinds, list) else [kinds] if isinstance(kinds, str) else []
    if not names:
        return None
    for kind in names:
        if kind == "null" and value is None:
            return None
        expected = _KINDS.get(kind)
        is_bool = isinstance(value, bool)
        if expected is None or (isinstance(value, expected) and (kind == "boolean") == is_bool):
            if isinstance(value, float) and not math.isfinite(value):
                return "must be a finite number"
            return None
    return f"must be {' or '.join(str(n) for n in names)}"


def answer_fields(stored: Any) -> dict[str, Any] | None:
    """A stored tool-call answer as what a person reads of it (the function, the arguments it
    runs with, approved or not, the reason), None for any other answer."""
    answer = stored.get("v") if isinstance(stored, dict) and stored.get("$t") == "agent" else None
    if not isinstance(answer, dict) or answer.get("type") != "function_approval_response":
        return None
    call = answer.get("function_call")
    call = call if isinstance(call, dict) else {}
    fields: dict[str, Any] = {
        "function": str(call.get("name") or ""),
        "arguments": _arguments(call),
        "approved": answer.get("approved") is True,
    }
    reason = (answer.get("additional_properties") or {}).get(REASON_KEY)
    if isinstance(reason, str) and reason:
        fields["reason"] = reason
    return fields


def argument_edit(approval: ApprovalRequest, stored: Any) -> dict[str, Any] | None:
    """``{"original": ..., "edited": ...}`` when the stored answer runs the call with other
    arguments than the agent asked for (what the audit log records), else None."""
    content = _request_content(approval)
    answer = stored.get("v") if isinstance(stored, dict) else None
    if content is None or not isinstance(answer, dict):
        return None
    original = _arguments(content["function_call"])
    call = answer.get("function_call")
    edited = _arguments(call) if isinstance(call, dict) else original
    return None if edited == original else {"original": original, "edited": edited}
