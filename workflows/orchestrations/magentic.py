"""Magentic-One orchestration: a manager that plans, assigns each step to a team member, notices
when the team stalls and replans, and writes the final answer (MAF's ``MagenticBuilder``).

Usage, as in Microsoft Agent Framework::

    workflow = MagenticBuilder(
        participants=[researcher, coder], manager_agent=manager_agent, max_round_count=10
    ).build()
    async for event in workflow.run(task, stream=True):
        if event.type == "magentic_orchestrator":
            ...  # a MagenticOrchestratorEvent: plan created, replanned, progress ledger

The pieces live in ``magentic_*`` modules, named for what they hold: ``magentic_types`` (ledgers,
context, events, plan review, reset signal), ``magentic_prompts``, ``magentic_json`` (reading
the model's JSON), ``magentic_manager``, ``magentic_orchestrator``, ``magentic_agent`` and
``magentic_builder``, with the checkpoint shape in ``magentic_state``. Every public name is
importable from here.
"""

from __future__ import annotations

from .magentic_agent import MagenticAgentExecutor
from .magentic_builder import DEFAULT_WORKFLOW_NAME, MagenticBuilder
from .magentic_manager import MagenticManagerBase, StandardMagenticManager
from .magentic_orchestrator import MagenticOrchestrator
from .magentic_prompts import (
    FINAL_ANSWER_PROMPT,
    PROGRESS_LEDGER_PROMPT,
    TASK_LEDGER_FACTS_PROMPT,
    TASK_LEDGER_FACTS_UPDATE_PROMPT,
    TASK_LEDGER_FULL_PROMPT,
    TASK_LEDGER_PLAN_PROMPT,
    TASK_LEDGER_PLAN_UPDATE_PROMPT,
)
from .magentic_types import (
    MAGENTIC_MANAGER_NAME,
    ORCH_MSG_KIND_INSTRUCTION,
    ORCH_MSG_KIND_NOTICE,
    ORCH_MSG_KIND_TASK_LEDGER,
    ORCH_MSG_KIND_USER_TASK,
    MagenticContext,
    MagenticOrchestratorEvent,
    MagenticOrchestratorEventType,
    MagenticPlanReviewRequest,
    MagenticPlanReviewResponse,
    MagenticProgressLedger,
    MagenticProgressLedgerItem,
    MagenticResetSignal,
    TaskLedger,
)

# MAF's module-level names for the prompts, kept for code that imports them from here.
ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT = TASK_LEDGER_FACTS_PROMPT
ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT = TASK_LEDGER_PLAN_PROMPT
ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT = TASK_LEDGER_FULL_PROMPT
ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT = TASK_LEDGER_FACTS_UPDATE_PROMPT
ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT = TASK_LEDGER_PLAN_UPDATE_PROMPT
ORCHESTRATOR_PROGRESS_LEDGER_PROMPT = PROGRESS_LEDGER_PROMPT
ORCHESTRATOR_FINAL_ANSWER_PROMPT = FINAL_ANSWER_PROMPT

__all__ = [
    "DEFAULT_WORKFLOW_NAME",
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
    "ORCHESTRATOR_FINAL_ANSWER_PROMPT",
    "ORCHESTRATOR_PROGRESS_LEDGER_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT",
    "ORCH_MSG_KIND_INSTRUCTION",
    "ORCH_MSG_KIND_NOTICE",
    "ORCH_MSG_KIND_TASK_LEDGER",
    "ORCH_MSG_KIND_USER_TASK",
    "StandardMagenticManager",
    "TaskLedger",
]
