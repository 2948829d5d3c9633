"""Port of MAF's ``samples/03-workflows/checkpoint/checkpoint_with_human_in_the_loop.py``.

A brief preparer sends a prompt to a writer ``AgentExecutor``; a review gateway asks a human
to approve each draft (``request_info``) and sends revision guidance back to the writer. Every
superstep is checkpointed to a ``FileCheckpointStorage``. After the run the checkpoints are
listed, one is chosen, and a freshly built workflow resumes from it: the pending request comes
back, is answered, and the run finishes without asking the model again.

As on MAF 1.23, the writer's streamed updates are workflow outputs too (nothing designates
``output_from``), so the first session ends at the writer's first update, before the human is
asked; the resumed session is the one that answers the request.

Changes: the Foundry client is a ``ScriptedChatClient`` shared by the writer agents of both
workflows; the checkpoint folder is a temporary one, removed at the end, instead of a ``tmp``
folder beside the sample; the storage lists ``HumanApprovalRequest`` in
``allowed_checkpoint_types`` (MAF 1.23's file storage refuses to restore a class it was not
told of, and the original's pending-request checkpoint then fails to save); ``input()`` is
answered from ``INPUTS``: the checkpoint that holds the pending request, then an approval.

One deliberate difference (``compare``): restoring a checkpoint whose only work is a pending
request, MAF runs an empty superstep (``superstep_started``, ``superstep_completed`` and a
checkpoint of nothing new); ``workflows`` runs none.
"""

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import (
    Any,
    override,  # pragma: no cover
)

from agent_framework import Agent, Message

from workflows import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Executor,
    FileCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from workflows.agents.local_chat import ScriptedChatClient

INPUTS = ["3", "approve"]

TEMP_DIR = Path(tempfile.mkdtemp(prefix="checkpoints_hitl_"))

WRITER_CLIENT = ScriptedChatClient(
    [
        (
            "Meet our limited edition smart coffee grinder: its sensor tunes the grind for every "
            "bean, for $249. Pre-order today on our website."
        ),
    ],
    name="writer-model",
)


class BriefPreparer(Executor):
    """Normalises the user brief and sends a single AgentExecutorRequest."""

    def __init__(self, id: str, agent_id: str) -> None:
        super().__init__(id=id)
        self._agent_id = agent_id

    @handler
    async def prepare(self, brief: str, ctx: WorkflowContext[AgentExecutorRequest, str]) -> None:
        normalized = " ".join(brief.split()).strip()
        if not normalized.endswith("."):
            normalized += "."
        ctx.set_state("brief", normalized)
        prompt = (
            "You are drafting product release notes. Summarise the brief below in two sentences. "
            "Keep it positive and end with a call to action.\n\n"
            f"BRIEF: {normalized}"
        )
        await ctx.send_message(
            AgentExecutorRequest(
                messages=[Message("user", contents=[prompt])], should_respond=True
            ),
            target_id=self._agent_id,
        )


@dataclass
class HumanApprovalRequest:
    """Request sent to the human reviewer."""

    prompt: str = ""
    draft: str = ""
    iteration: int = 0


class ReviewGateway(Executor):
    """Routes agent drafts to humans and optionally back for revisions."""

    def __init__(self, id: str, writer_id: str) -> None:
        super().__init__(id=id)
        self._writer_id = writer_id
        self._iteration = 0

    @handler
    async def on_agent_response(
        self, response: AgentExecutorResponse, ctx: WorkflowContext
    ) -> None:
        self._iteration += 1
        await ctx.request_info(
            request_data=HumanApprovalRequest(
                prompt="Review the draft. Reply 'approve' or provide edit instructions.",
                draft=response.agent_response.text,
                iteration=self._iteration,
            ),
            response_type=str,
        )

    @response_handler
    async def on_human_feedback(
        self,
        original_request: HumanApprovalRequest,
        feedback: str,
        ctx: WorkflowContext[AgentExecutorRequest | str, str],
    ) -> None:
        reply = feedback.strip()

        if len(reply) == 0 or reply.lower() == "approve":
            await ctx.yield_output(original_request.draft)
            return

        prompt = (
            "Revise the launch note. Respond with the new copy only.\n\n"
            f"Previous draft:\n{original_request.draft}\n\n"
            f"Human guidance: {reply}"
        )
        await ctx.send_message(
            AgentExecutorRequest(
                messages=[Message("user", contents=[prompt])], should_respond=True
            ),
            target_id=self._writer_id,
        )

    @override
    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"iteration": self._iteration}

    @override
    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self._iteration = state.get("iteration", 0)


def create_workflow(checkpoint_storage: FileCheckpointStorage) -> Workflow:
    """Assemble the workflow graph used by both the initial run and resume."""
    writer_agent = Agent(
        client=WRITER_CLIENT,
        instructions="Write concise, warm release notes that sound human and helpful.",
        name="writer",
    )
    writer = AgentExecutor(writer_agent)
    review_gateway = ReviewGateway(id="review_gateway", writer_id="writer")
    prepare_brief = BriefPreparer(id="prepare_brief", agent_id="writer")

    workflow_builder = (
        WorkflowBuilder(
            max_iterations=6, start_executor=prepare_brief, checkpoint_storage=checkpoint_storage
        )
        .add_edge(prepare_brief, writer)
        .add_edge(writer, review_gateway)
        .add_edge(review_gateway, writer)
    )

    return workflow_builder.build()


def prompt_for_responses(requests: dict[str, HumanApprovalRequest]) -> dict[str, str]:
    """Interactive CLI prompt for any live RequestInfo requests."""
    responses: dict[str, str] = {}
    for request_id, request in requests.items():
        print("\n=== Human approval needed ===")
        print(f"request_id: {request_id}")
        print(f"Iteration: {request.iteration}")
        print(request.prompt)
        print("Draft: \n---\n" + request.draft + "\n---")
        response = input("Type 'approve' or enter revision guidance (or 'exit' to quit): ").strip()
        if response.lower() == "exit":
            raise SystemExit("Stopped by user.")
        responses[request_id] = response

    return responses


async def run_interactive_session(
    workflow: Workflow,
    initial_message: str | None = None,
    checkpoint_id: str | None = None,
) -> str:
    """Run the workflow until it either finishes or pauses for human input."""
    requests: dict[str, HumanApprovalRequest] = {}
    responses: dict[str, str] | None = None
    completed_output: str | None = None

    while True:
        if responses:
            event_stream = workflow.run(stream=True, responses=responses)
            requests.clear()
            responses = None
        else:
            if initial_message:
                print(f"\nStarting workflow with brief: {initial_message}\n")
                event_stream = workflow.run(message=initial_message, stream=True)
            elif checkpoint_id:
                print("\nStarting workflow from checkpoint...\n")
                event_stream = workflow.run(checkpoint_id=checkpoint_id, stream=True)
            else:
                raise ValueError("Either initial_message or checkpoint_id must be provided")

        async for event in event_stream:
            if event.type == "status":
                print(event)
            if event.type == "output":
                completed_output = event.data
            if event.type == "request_info":
                if isinstance(event.data, HumanApprovalRequest):
                    requests[event.request_id] = event.data
                else:
                    raise ValueError("Unexpected request data type")

        if completed_output:
            break

        if requests:
            responses = prompt_for_responses(requests)
            continue

        raise RuntimeError("Workflow stopped without completing or requesting input")

    return completed_output


async def main() -> None:
    """Entry point used by both the initial run and subsequent resumes."""
    try:
        await _main()
    finally:
        shutil.rmtree(TEMP_DIR, ignore_errors=True)


async def _main() -> None:
    for file in TEMP_DIR.glob("*.json"):
        file.unlink()

    storage = FileCheckpointStorage(
        storage_path=TEMP_DIR,
        allowed_checkpoint_types=[f"{__name__}:{HumanApprovalRequest.__qualname__}"],
    )
    workflow = create_workflow(checkpoint_storage=storage)

    brief = (
        "Introduce our limited edition smart coffee grinder. Mention the $249 price, highlight "
        "the sensor that auto-adjusts the grind, and invite customers to pre-order on the website."
    )

    print("Running workflow (human approval required)...")
    result = await run_interactive_session(workflow, initial_message=brief)
    print(f"Workflow completed with: {result}")

    checkpoints = await storage.list_checkpoints(workflow_name=workflow.name)
    if not checkpoints:
        print("No checkpoints recorded.")
        return

    sorted_cps = sorted(checkpoints, key=lambda cp: datetime.fromisoformat(cp.timestamp))
    print("\nAvailable checkpoints:")
    for idx, cp in enumerate(sorted_cps):
        print(f"  [{idx}] id={cp.checkpoint_id} iter={cp.iteration_count}")

    selection = input("\nResume from which checkpoint? (press Enter to skip): ").strip()
    if not selection:
        print("No resume selected. Exiting.")
        return

    try:
        idx = int(selection)
    except ValueError:
        print("Invalid input; exiting.")
        return

    if not 0 <= idx < len(sorted_cps):
        print("Index out of range; exiting.")
        return

    chosen = sorted_cps[idx]

    new_workflow = create_workflow(checkpoint_storage=storage)
    result = await run_interactive_session(new_workflow, checkpoint_id=chosen.checkpoint_id)
    print(f"Workflow completed with: {result}")


def compare(maf, ours):
    """Same output; the same events once MAF's empty supersteps are left out."""
    assert ours.error is None, ours.error
    assert ours.normalized == maf.normalized
    assert ours.events == _without_empty_supersteps(maf.events)


def _without_empty_supersteps(events):
    kept = []
    for event in events:
        if event == "superstep_completed" and kept and kept[-1] == "superstep_started":
            kept.pop()
        else:
            kept.append(event)
    return kept


if __name__ == "__main__":
    asyncio.run(main())
