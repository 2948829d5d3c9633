"""Port of MAF's ``samples/03-workflows/orchestrations/magentic_checkpoint.py``.

A Magentic workflow that needs plan sign-off runs until the plan review request, is rebuilt
from scratch and resumed from the checkpoint that holds the pending request (the request is
raised again and approved), runs to its final answer, and is then resumed a second time, in
another fresh workflow, from a checkpoint taken after the plan, with messages still in flight.

Changes from the sample: the Foundry clients are replaced by a ``ScriptedChatClient`` for the
manager (one entry that answers whichever Magentic prompt it is sent) and local models for the
participants; the checkpoints go to a temporary folder, removed at the end (``main`` wraps the
sample's stages, now ``run_stages``), rather than beside the sample. MAF 1.23's
streamed output is one ``AgentResponseUpdate``, not the list of messages the sample's HEAD
version expects, so the final answers print the update's text.

``compare`` accepts two differences by design. The sample opens ``<storage_path>/<id>.json``
to show the pending requests; this engine keeps checkpoint files under
``<storage_path>/checkpoints/``, so the file is not found and that line is not printed. And
restoring a checkpoint whose only work is a pending request, MAF runs an empty superstep
(``superstep_started``, ``superstep_completed``, one more checkpoint); ``workflows`` runs none,
so the later checkpoint of stage 3 is one iteration earlier here.
"""

import asyncio
import json
import re
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    Message,
)

from workflows import (
    FileCheckpointStorage,
    WorkflowCheckpoint,
    WorkflowEvent,
    WorkflowRunState,
)
from workflows.agents.local_chat import LocalChatClient, ScriptedChatClient
from workflows.orchestrations import MagenticBuilder, MagenticPlanReviewRequest

TASK = (
    "Draft a concise internal brief describing how our research and implementation teams should "
    "collaborate to launch a beta feature for data-driven email summarization. Highlight the key "
    "milestones, risks, and communication cadence."
)

TEAM = ("ResearcherAgent", "WriterAgent")


def _ledger(done: bool, speaker: str, instruction: str) -> str:
    return json.dumps(
        {
            "is_request_satisfied": {"reason": "Compared with the request.", "answer": done},
            "is_in_loop": {"reason": "No repetition.", "answer": False},
            "is_progress_being_made": {"reason": "Each turn adds to the brief.", "answer": True},
            "next_speaker": {"reason": "Owns the next step.", "answer": speaker},
            "instruction_or_question": {"reason": "The next step.", "answer": instruction},
        }
    )


def manager_model(messages: list[Message], options: object) -> str:
    """The manager's model: it answers whichever Magentic prompt it was sent."""
    prompt = messages[-1].text
    if "pre-survey" in prompt:
        return "1. GIVEN OR VERIFIED FACTS\n- The feature summarizes email threads."
    if "bullet-point plan" in prompt:
        return "- ResearcherAgent: list milestones and risks.\n- WriterAgent: write the brief."
    if "final answer" in prompt:
        return "Brief: kick off jointly, prototype, integrate, onboard beta users; sync weekly."
    spoken = [m.author_name for m in messages if m.role == "assistant" and m.author_name in TEAM]
    if not spoken:
        return _ledger(False, "ResearcherAgent", "List the milestones and the risks.")
    if spoken == ["ResearcherAgent"]:
        return _ledger(False, "WriterAgent", "Write the brief from the research notes.")
    return _ledger(True, "WriterAgent", "Nothing more.")


# The checkpoint folder of this run (the sample keeps one beside its file); set by main().
CHECKPOINT_DIR = Path(tempfile.gettempdir())


def build_workflow(checkpoint_storage: FileCheckpointStorage):
    """Construct the Magentic workflow graph with checkpointing enabled."""

    # Two vanilla ChatAgents act as participants in the orchestration. They do not need
    # extra state handling because their inputs/outputs are fully described by chat messages.
    researcher = Agent(
        name="ResearcherAgent",
        description="Collects background facts and references for the project.",
        instructions="You are the research lead. Gather crisp bullet points the team should know.",
        client=LocalChatClient(name="researcher-model"),
    )

    writer = Agent(
        name="WriterAgent",
        description="Synthesizes the final brief for stakeholders.",
        instructions=(
            "You convert the research notes into a structured brief with milestones and risks."
        ),
        client=LocalChatClient(name="writer-model"),
    )

    # Create a manager agent for orchestration
    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the research and writing workflow",
        instructions="You coordinate a team to complete complex tasks efficiently.",
        client=ScriptedChatClient([manager_model] * 20, name="manager-model"),
    )

    # The builder wires in the Magentic orchestrator, sets the plan review path, and
    # stores the checkpoint backend so the runtime knows where to persist snapshots.
    return MagenticBuilder(
        participants=[researcher, writer],
        enable_plan_review=True,
        checkpoint_storage=checkpoint_storage,
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=3,
    ).build()


async def main() -> None:
    global CHECKPOINT_DIR
    CHECKPOINT_DIR = Path(tempfile.mkdtemp(prefix="magentic_checkpoints_"))
    try:
        await run_stages()
    finally:
        shutil.rmtree(CHECKPOINT_DIR, ignore_errors=True)


async def run_stages() -> None:
    # Stage 0: make sure the checkpoint folder is empty so we inspect only checkpoints
    # written by this invocation. This prevents stale files from previous runs from
    # confusing the analysis.
    CHECKPOINT_DIR.mkdir(parents=True, exist_ok=True)
    for file in CHECKPOINT_DIR.glob("*.json"):
        file.unlink()

    checkpoint_storage = FileCheckpointStorage(CHECKPOINT_DIR)

    print("\n=== Stage 1: run until plan review request (checkpointing active) ===")
    workflow = build_workflow(checkpoint_storage)

    # Run the workflow until the first  is surfaced. The event carries the
    # request_id we must reuse on resume. In a real system this is where the UI would present
    # the plan for human review.
    plan_review_request: MagenticPlanReviewRequest | None = None
    async for event in workflow.run(TASK, stream=True):
        if event.type == "request_info" and event.request_type is MagenticPlanReviewRequest:
            plan_review_request = event.data
            print(f"Captured plan review request: {event.request_id}")

        if event.type == "status" and event.state is WorkflowRunState.IDLE_WITH_PENDING_REQUESTS:
            break

    if plan_review_request is None:
        print("No plan review request emitted; nothing to resume.")
        return

    resume_checkpoint = await checkpoint_storage.get_latest(workflow_name=workflow.name)
    if not resume_checkpoint:
        print("No checkpoints persisted.")
        return

    print(
        f"Using checkpoint {resume_checkpoint.checkpoint_id} at iteration "
        f"{resume_checkpoint.iteration_count}"
    )

    # Show that the checkpoint JSON indeed contains the pending plan-review request record.
    checkpoint_path = checkpoint_storage.storage_path / f"{resume_checkpoint.checkpoint_id}.json"
    if checkpoint_path.exists():
        with checkpoint_path.open() as f:
            snapshot = json.load(f)
        request_map = snapshot.get("pending_request_info_events", {})
        print(f"Pending plan-review requests persisted in checkpoint: {list(request_map.keys())}")

    print("\n=== Stage 2: resume from checkpoint and approve plan ===")
    resumed_workflow = build_workflow(checkpoint_storage)

    # Construct an approval reply to supply when the plan review request is re-emitted.
    approval = plan_review_request.approve()

    # Resume execution and capture the re-emitted plan review request.
    request_info_event: WorkflowEvent | None = None
    async for event in resumed_workflow.run(
        checkpoint_id=resume_checkpoint.checkpoint_id, stream=True
    ):
        if event.type == "request_info" and isinstance(event.data, MagenticPlanReviewRequest):
            request_info_event = event

    if request_info_event is None:
        print("No plan review request re-emitted on resume; cannot approve.")
        return
    print(f"Resumed plan review request: {request_info_event.request_id}")

    # Supply the approval and continue to run to completion.
    final_event: WorkflowEvent | None = None
    async for event in resumed_workflow.run(
        stream=True, responses={request_info_event.request_id: approval}
    ):
        if event.type == "output":
            final_event = event

    if final_event is None:
        print("Workflow did not complete after resume.")
        return

    # Final sanity check: display the assistant's answer as proof the orchestration reached
    # a natural completion after resuming from the checkpoint.
    result = final_event.data
    if not result:
        print("No result data from workflow.")
        return
    print("\n=== Final Answer ===")
    # MAF 1.23 streams the orchestrator's final answer as one AgentResponseUpdate.
    final_text = result.text
    print(final_text)

    # ------------------------------------------------------------------
    # Stage 3: demonstrate resuming from a later checkpoint (post-plan)
    # ------------------------------------------------------------------

    def _pending_message_count(cp: WorkflowCheckpoint) -> int:
        return sum(len(msg_list) for msg_list in cp.messages.values() if isinstance(msg_list, list))

    all_checkpoints = await checkpoint_storage.list_checkpoints(
        workflow_name=resume_checkpoint.workflow_name
    )
    later_checkpoints_with_messages = [
        cp
        for cp in all_checkpoints
        if cp.iteration_count > resume_checkpoint.iteration_count and _pending_message_count(cp) > 0
    ]

    if later_checkpoints_with_messages:
        post_plan_checkpoint = max(
            later_checkpoints_with_messages, key=lambda cp: datetime.fromisoformat(cp.timestamp)
        )
    else:
        later_checkpoints = [
            cp for cp in all_checkpoints if cp.iteration_count > resume_checkpoint.iteration_count
        ]

        if not later_checkpoints:
            print("\nNo additional checkpoints recorded beyond plan approval; sample complete.")
            return

        post_plan_checkpoint = max(
            later_checkpoints, key=lambda cp: datetime.fromisoformat(cp.timestamp)
        )
    print("\n=== Stage 3: resume from post-plan checkpoint ===")
    pending_messages = _pending_message_count(post_plan_checkpoint)
    print(
        f"Resuming from checkpoint {post_plan_checkpoint.checkpoint_id} at iteration "
        f"{post_plan_checkpoint.iteration_count} (pending messages: {pending_messages})"
    )
    if pending_messages == 0:
        print("Checkpoint has no pending messages; no additional work expected on resume.")

    final_event_post: WorkflowEvent | None = None
    post_emitted_events = False
    post_plan_workflow = build_workflow(checkpoint_storage)
    async for event in post_plan_workflow.run(
        checkpoint_id=post_plan_checkpoint.checkpoint_id, stream=True
    ):
        post_emitted_events = True
        if event.type == "output":
            final_event_post = event

    if final_event_post is None:
        if not post_emitted_events:
            print("No new events were emitted; checkpoint already captured a completed run.")
            print("\n=== Final Answer (post-plan resume) ===")
            print(final_text)
            return
        print("Workflow did not complete after post-plan resume.")
        return

    post_result = final_event_post.data
    if not post_result:
        print("No result data from post-plan resume.")
        return

    print("\n=== Final Answer (post-plan resume) ===")
    print(post_result.text)


def compare(maf: Any, ours: Any) -> None:
    """The same run, but for MAF's checkpoint file layout and its empty superstep on resume."""
    assert ours.error is None, ours.error
    skipped = "Pending plan-review requests persisted in checkpoint:"
    maf_lines = [line for line in maf.normalized.splitlines() if not line.startswith(skipped)]
    assert len(maf_lines) == len(maf.normalized.splitlines()) - 1
    stage_3 = re.compile(r"(Resuming from checkpoint <uuid> at iteration )(\d+)")

    def one_superstep_earlier(line: str) -> str:
        return stage_3.sub(lambda m: f"{m[1]}{int(m[2]) - 1}", line)

    assert ours.normalized.splitlines() == [one_superstep_earlier(line) for line in maf_lines]
    assert ours.events == _without_empty_supersteps(maf.events)


def _without_empty_supersteps(events: list[str]) -> list[str]:
    kept: list[str] = []
    for event in events:
        if event == "superstep_completed" and kept and kept[-1] == "superstep_started":
            kept.pop()
        else:
            kept.append(event)
    return kept


if __name__ == "__main__":
    asyncio.run(main())
