"""Group chat: an orchestrator picks who speaks next, participant after participant, until the
chat ends (a termination condition, ``max_rounds``, or the orchestrator's own decision).

Who speaks is chosen by a plain function over a ``GroupChatState``
(``GroupChatOrchestrator``), by an agent answering with an ``AgentOrchestrationOutput``
(``AgentBasedGroupChatOrchestrator``), or by a user's ``BaseGroupChatOrchestrator``.
``GroupChatBuilder`` wires the orchestrator and the participants into a star: an edge each way
between the orchestrator and every participant. Agents run in ``AgentExecutor`` (or, with
``with_request_info``, in an ``AgentApprovalExecutor`` that pauses for a person after each of
their turns); every participant keeps the whole conversation because the orchestrator
broadcasts each turn to the others.

Public names, events and observable behaviour follow Microsoft Agent Framework 1.23's
``agent_framework_orchestrations._group_chat``.
"""

from .group_chat_agent import AgentBasedGroupChatOrchestrator, AgentOrchestrationOutput
from .group_chat_builder import GroupChatBuilder
from .group_chat_selection import GroupChatOrchestrator, GroupChatSelectionFunction, GroupChatState

__all__ = [
    "AgentBasedGroupChatOrchestrator",
    "AgentOrchestrationOutput",
    "GroupChatBuilder",
    "GroupChatOrchestrator",
    "GroupChatSelectionFunction",
    "GroupChatState",
]
