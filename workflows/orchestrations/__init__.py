"""Multi-agent orchestrations on the engine: Microsoft Agent Framework's
``agent_framework.orchestrations`` API, built on ``WorkflowBuilder`` and ``AgentExecutor``.

Each builder returns an ordinary ``Workflow``: its runs checkpoint after every superstep,
resume in any process, and pause for a person where the orchestration asks one.

Builders:
    ``SequentialBuilder`` (participants one after another), ``ConcurrentBuilder`` (all at once,
    then an aggregator), ``HandoffBuilder`` (agents hand the conversation to each other, with
    ``HandoffAgentExecutor``, ``HandoffConfiguration``, ``HandoffAgentUserRequest`` and
    ``HandoffSentEvent``), ``GroupChatBuilder`` (an orchestrator picks who speaks:
    ``GroupChatOrchestrator``, ``AgentBasedGroupChatOrchestrator``, ``GroupChatState``,
    ``GroupChatSelectionFunction``, ``AgentOrchestrationOutput``) and ``MagenticBuilder`` (a
    planning manager: ``MagenticOrchestrator``, ``MagenticManagerBase``,
    ``StandardMagenticManager``, ``MagenticAgentExecutor``, ``MagenticContext``,
    ``MagenticProgressLedger``, ``MagenticProgressLedgerItem``, ``MagenticResetSignal``,
    ``MagenticPlanReviewRequest`` / ``MagenticPlanReviewResponse``, ``MagenticOrchestratorEvent``
    of a ``MagenticOrchestratorEventType``, and the message kinds ``ORCH_MSG_KIND_INSTRUCTION``,
    ``ORCH_MSG_KIND_NOTICE``, ``ORCH_MSG_KIND_TASK_LEDGER``, ``ORCH_MSG_KIND_USER_TASK`` of the
    ``MAGENTIC_MANAGER_NAME``).
Shared pieces:
    ``BaseGroupChatOrchestrator`` with ``GroupChatRequestMessage``, ``GroupChatResponseMessage``,
    ``GroupChatParticipantMessage``, ``GroupChatRequestSentEvent``,
    ``GroupChatResponseReceivedEvent`` and ``TerminationCondition``; ``OrchestrationState``;
    ``AgentRequestInfoResponse`` (the answer to a request made after an agent's turn);
    ``clean_conversation_for_handoff`` and ``create_completion_message``.

Names load with the module that defines them, so importing one builder does not load the rest.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES: dict[str, str] = {
    "AgentRequestInfoResponse": "request_info",
    "OrchestrationState": "state",
    "clean_conversation_for_handoff": "helpers",
    "create_completion_message": "helpers",
    "SequentialBuilder": "sequential",
    "ConcurrentBuilder": "concurrent",
    "BaseGroupChatOrchestrator": "base_group_chat",
    "GroupChatParticipantMessage": "base_group_chat",
    "GroupChatRequestMessage": "base_group_chat",
    "GroupChatRequestSentEvent": "base_group_chat",
    "GroupChatResponseMessage": "base_group_chat",
    "GroupChatResponseReceivedEvent": "base_group_chat",
    "TerminationCondition": "base_group_chat",
    "AgentBasedGroupChatOrchestrator": "group_chat",
    "AgentOrchestrationOutput": "group_chat",
    "GroupChatBuilder": "group_chat",
    "GroupChatOrchestrator": "group_chat",
    "GroupChatSelectionFunction": "group_chat",
    "GroupChatState": "group_chat",
    "HandoffAgentExecutor": "handoff",
    "HandoffAgentUserRequest": "handoff",
    "HandoffBuilder": "handoff",
    "HandoffConfiguration": "handoff",
    "HandoffSentEvent": "handoff",
    "MAGENTIC_MANAGER_NAME": "magentic",
    "ORCH_MSG_KIND_INSTRUCTION": "magentic",
    "ORCH_MSG_KIND_NOTICE": "magentic",
    "ORCH_MSG_KIND_TASK_LEDGER": "magentic",
    "ORCH_MSG_KIND_USER_TASK": "magentic",
    "MagenticAgentExecutor": "magentic",
    "MagenticBuilder": "magentic",
    "MagenticContext": "magentic",
    "MagenticManagerBase": "magentic",
    "MagenticOrchestrator": "magentic",
    "MagenticOrchestratorEvent": "magentic",
    "MagenticOrchestratorEventType": "magentic",
    "MagenticPlanReviewRequest": "magentic",
    "MagenticPlanReviewResponse": "magentic",
    "MagenticProgressLedger": "magentic",
    "MagenticProgressLedgerItem": "magentic",
    "MagenticResetSignal": "magentic",
    "StandardMagenticManager": "magentic",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'workflows.orchestrations' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "AgentBasedGroupChatOrchestrator",
    "AgentOrchestrationOutput",
    "AgentRequestInfoResponse",
    "BaseGroupChatOrchestrator",
    "ConcurrentBuilder",
    "GroupChatBuilder",
    "GroupChatOrchestrator",
    "GroupChatParticipantMessage",
    "GroupChatRequestMessage",
    "GroupChatRequestSentEvent",
    "GroupChatResponseMessage",
    "GroupChatResponseReceivedEvent",
    "GroupChatSelectionFunction",
    "GroupChatState",
    "HandoffAgentExecutor",
    "HandoffAgentUserRequest",
    "HandoffBuilder",
    "HandoffConfiguration",
    "HandoffSentEvent",
    "MAGENTIC_MANAGER_NAME",
    "MagenticAgentExecutor",
    "MagenticBuilder",
    "MagenticContext",
    "MagenticManagerBase",
    "MagenticOrchestrator",
    "MagenticOrchestratorEvent",
    "MagenticOrchestratorEventType",
    "MagenticPlanReviewRequest",
    "MagenticPlanReviewResponse",
    "MagenticProgressLedger",
    "MagenticProgressLedgerItem",
    "MagenticResetSignal",
    "ORCH_MSG_KIND_INSTRUCTION",
    "ORCH_MSG_KIND_NOTICE",
    "ORCH_MSG_KIND_TASK_LEDGER",
    "ORCH_MSG_KIND_USER_TASK",
    "OrchestrationState",
    "SequentialBuilder",
    "StandardMagenticManager",
    "TerminationCondition",
    "clean_conversation_for_handoff",
    "create_completion_message",
]
