"""The tools a handoff agent routes with, and the copy of the agent that carries them.

An agent in a handoff workflow signals "let another agent take over" by calling a tool named
``handoff_to_<target>``. Those tools have no body worth running: a function middleware
catches each call before it executes, answers it with ``{"handoff_to": "<target>"}`` and ends
the agent's tool loop, so the executor can read the target off the agent's last message.

The participant the user built is never changed: the executor runs a copy of it (same client,
instructions, middleware and providers) with the handoff tools added and parallel tool calls
turned off, so an agent cannot hand the conversation to two agents at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from agent_framework import (
    Agent,
    AgentResponse,
    AgentSession,
    ContextProvider,
    FunctionInvocationContext,
    FunctionMiddleware,
    FunctionTool,
    Message,
    MiddlewareTermination,
    SessionContext,
    SupportsAgentRun,
    tool,
)

from ..agents.executor import resolve_agent_id

__all__ = [
    "HANDOFF_FUNCTION_RESULT_KEY",
    "HandoffConfiguration",
    "HandoffInterceptor",
    "find_requested_handoff",
    "get_handoff_tool_name",
    "prepare_handoff_agent",
]

HANDOFF_FUNCTION_RESULT_KEY = "handoff_to"

# Providers accept letters, digits, "_" and "-" in tool names, up to 64 characters.
_NOT_IN_TOOL_NAMES = re.compile(r"[^a-zA-Z0-9_-]")
_TOOL_NAME_LIMIT = 64

# MAF's source id for the provider that installs the interceptor (kept: it names the provider
# in the agent's per-call context).
_PROVIDER_SOURCE_ID = "agent_framework.handoff"


@dataclass
class HandoffConfiguration:
    """One route of a handoff workflow: the agent a source may hand the conversation to.

    Two configurations are equal when they name the same target, whatever their descriptions.

    Attributes:
        target_id: the id of the target agent (its name, else its id).
        description: what the handoff tool tells the model about the target.
    """

    target_id: str
    description: str | None = None

    def __init__(self, *, target: str | SupportsAgentRun, description: str | None = None) -> None:
        """Args:
        target: the target agent, or its id.
        description: the handoff tool's description; None lets the builder use the target's.
        """
        self.target_id = (
            resolve_agent_id(target) if isinstance(target, SupportsAgentRun) else target
        )
        self.description = description

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HandoffConfiguration) and other.target_id == self.target_id

    def __hash__(self) -> int:
        return hash(self.target_id)


def get_handoff_tool_name(target_id: str) -> str:
    """The name of the tool that hands the conversation to ``target_id``: ``handoff_to_<id>``,
    with characters providers refuse in tool names replaced by ``_`` and cut to 64 characters."""
    return f"handoff_to_{_NOT_IN_TOOL_NAMES.sub('_', target_id)}"[:_TOOL_NAME_LIMIT]


class HandoffInterceptor(FunctionMiddleware):
    """Answers calls of the handoff tools without running them, and remembers which were made.

    The answer ends the tool loop (``MiddlewareTermination``), so a handoff call is the last
    thing in the agent's response.
    """

    def __init__(self, handoffs: Sequence[HandoffConfiguration]) -> None:
        self._targets = {get_handoff_tool_name(h.target_id): h.target_id for h in handoffs}
        self._caught: list[tuple[str, str]] = []

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        target_id = self._targets.get(context.function.name)
        if target_id is None:
            await call_next()
            return
        call_id = context.metadata.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise RuntimeError("Generated handoff invocation is missing its function call ID.")
        self._caught.append((call_id, target_id))
        context.result = FunctionTool.parse_result({HANDOFF_FUNCTION_RESULT_KEY: target_id})
        raise MiddlewareTermination(result=context.result)

    def take_caught(self) -> list[tuple[str, str]]:
        """The (call id, target id) of the handoff calls caught since the last take."""
        caught, self._caught = self._caught, []
        return caught


class _InterceptorProvider(ContextProvider):
    """Installs the interceptor after the agent's own providers have added their middleware,
    so their policies see (and may block) handoff calls first."""

    def __init__(self, interceptor: HandoffInterceptor) -> None:
        super().__init__(_PROVIDER_SOURCE_ID)
        self._interceptor = interceptor

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        context.extend_middleware(self.source_id, self._interceptor)


def prepare_handoff_agent(
    agent: Agent[Any], handoffs: Sequence[HandoffConfiguration], interceptor: HandoffInterceptor
) -> Agent[Any]:
    """A copy of ``agent`` with one handoff tool per route and ``interceptor`` installed.

    Raises:
        ValueError: the agent already has a tool with a handoff tool's name.
    """
    copied = _copy_agent(agent)
    tools = list(copied.default_options.get("tools") or [])
    names = {getattr(existing, "name", "") for existing in tools}
    for handoff in handoffs:
        handoff_tool = _handoff_tool(handoff.target_id, handoff.description)
        if handoff_tool.name in names:
            raise ValueError(
                f"Agent '{resolve_agent_id(copied)}' already has a tool named "
                f"'{handoff_tool.name}'. Handoff tool name '{handoff_tool.name}' conflicts with "
                "existing tool.Please rename the existing tool or modify the target agent ID to "
                "avoid conflicts."
            )
        names.add(handoff_tool.name)
        tools.append(handoff_tool)
    copied.default_options["tools"] = tools
    if copied.context_providers:
        copied.context_providers.append(_InterceptorProvider(interceptor))
    else:
        copied.middleware = [*(copied.middleware or []), interceptor]
    return copied


def _copy_agent(agent: Agent[Any]) -> Agent[Any]:
    """A new ``Agent`` configured as ``agent``; its options are deep copies, its tools the same
    objects (MCP tools put back among them: ``Agent`` keeps those apart)."""
    options = {key: value for key, value in agent.default_options.items() if key != "tools"}
    copied_options = deepcopy(options)
    copied_options["allow_multiple_tool_calls"] = False
    copied_options["tools"] = [*(agent.default_options.get("tools") or []), *agent.mcp_tools]
    return Agent(
        client=agent.client,
        id=agent.id,
        name=agent.name,
        description=agent.description,
        context_providers=agent.context_providers,
        middleware=agent.middleware,
        require_per_service_call_history_persistence=agent.require_per_service_call_history_persistence,
        # Shared, not copied: configuration the copy never changes (a tokenizer's vocabulary
        # can be large).
        compaction_strategy=agent.compaction_strategy,
        tokenizer=agent.tokenizer,
        default_options=copied_options,
        additional_properties=deepcopy(agent.additional_properties),
    )


def _handoff_tool(target_id: str, description: str | None) -> FunctionTool:
    # Never asks for approval: the interceptor answers it before anything would run.
    @tool(
        name=get_handoff_tool_name(target_id),
        description=description or f"Handoff to the {target_id} agent.",
        approval_mode="never_require",
    )
    def _hand_off() -> None:
        """Never runs: the handoff interceptor answers the call."""

    return _hand_off


def find_requested_handoff(
    response: AgentResponse, caught: Sequence[tuple[str, str]]
) -> tuple[str, Message] | None:
    """The target and the message holding its answer, when ``response`` ends with the answer
    to a handoff call the interceptor caught (the call id and the target must both agree)."""
    if not caught or not response.messages:
        return None
    last = response.messages[-1]
    for content in last.contents:
        if content.type != "function_result" or not content.call_id:
            continue
        targets = [target for call_id, target in caught if call_id == content.call_id]
        if len(targets) != 1:
            continue
        payload = _as_mapping(content.result)
        if payload is not None and payload.get(HANDOFF_FUNCTION_RESULT_KEY) == targets[0]:
            return targets[0], last
    return None


def _as_mapping(result: Any) -> Mapping[str, Any] | None:
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except json.JSONDecodeError:
            return None
    if isinstance(result, Mapping):
        return {key: value for key, value in result.items() if isinstance(key, str)}
    return None
