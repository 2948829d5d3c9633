"""Port of MAF's ``samples/03-workflows/tool-approval/group_chat_builder_tool_approval.py``.

A selector function runs a two-agent group chat for a deployment: the QA engineer runs the
tests, then the DevOps engineer checks staging, writes a rollback plan and calls
``deploy_to_production``, a tool that requires approval. The run pauses on that approval
request inside the participant, the sample approves it, and the resumed run finishes the
deployment; ``max_rounds=2`` then ends the chat. Each engineer has its own scripted model (the
sample shares one Foundry client between them). MAF 1.23 outputs the orchestrator's closing
message, not the list of messages the sample iterates, so the port reads that message instead.
"""

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated, cast

from agent_framework import (
    Agent,
    AgentResponse,
    Content,
    Message,
    tool,
)

from workflows import WorkflowEvent
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import GroupChatBuilder, GroupChatState


# 1. Define tools for different agents
# NOTE: approval_mode="never_require" is for sample brevity.
# Use "always_require" in production; see samples/02-agents/tools/function_tool_with_approval.py
# and samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def run_tests(test_suite: Annotated[str, "Name of the test suite to run"]) -> str:
    """Run automated tests for the application."""
    return f"Test suite '{test_suite}' completed: 47 passed, 0 failed, 0 skipped"


@tool(approval_mode="never_require")
def check_staging_status() -> str:
    """Check the current status of the staging environment."""
    return "Staging environment: Healthy, Version 2.3.0 deployed, All services running"


@tool(approval_mode="always_require")
def deploy_to_production(
    version: Annotated[str, "The version to deploy"],
    components: Annotated[str, "Comma-separated list of components to deploy"],
) -> str:
    """Deploy specified components to production. Requires human approval."""
    return f"Production deployment complete: Version {version}, Components: {components}"


@tool(approval_mode="never_require")
def create_rollback_plan(version: Annotated[str, "The version being deployed"]) -> str:
    """Create a rollback plan for the deployment."""
    return (
        f"Rollback plan created for version {version}: "
        "Automated rollback to v2.2.0 if health checks fail within 5 minutes"
    )


# The engineers' models: QA runs the integration suite and reports; DevOps checks staging,
# plans the rollback, then asks to deploy (the call waiting for approval) and reports.
QA_SCRIPT = [
    ToolCall("run_tests", {"test_suite": "integration"}),
    "Integration suite: 47 passed, 0 failed. Ready for deployment.",
]
DEVOPS_SCRIPT = [
    ToolCall("check_staging_status"),
    ToolCall("create_rollback_plan", {"version": "2.4.0"}),
    ToolCall("deploy_to_production", {"version": "2.4.0", "components": "api,web,worker"}),
    "Production deployment complete: version 2.4.0 (api, web, worker).",
]


# 2. Define the speaker selector function
def select_next_speaker(state: GroupChatState) -> str:
    """Select the next speaker based on the conversation flow.

    This simple selector follows a predefined flow:
    1. QA Engineer runs tests
    2. DevOps Engineer checks staging and creates rollback plan
    3. DevOps Engineer deploys to production (triggers approval)
    """
    if not state.conversation:
        raise RuntimeError("Conversation is empty; cannot select next speaker.")

    if len(state.conversation) == 1:
        return "QAEngineer"  # First speaker

    return "DevOpsEngineer"  # Subsequent speakers


async def process_event_stream(stream: AsyncIterable[WorkflowEvent]) -> dict[str, Content] | None:
    """Process events from the workflow stream to capture human feedback requests."""
    requests: dict[str, Content] = {}
    async for event in stream:
        if event.type == "request_info" and isinstance(event.data, Content):
            # We are only expecting tool approval requests in this sample
            requests[event.request_id] = event.data
        elif event.type == "output":
            # The output of the workflow comes from the orchestrator. In MAF 1.23 it is the
            # orchestrator's closing message, an AgentResponseUpdate in a streaming run (the
            # sample, written for a later MAF, reads a list of messages).
            print("\n" + "=" * 60)
            print("Workflow summary:")
            data = event.data
            outputs = cast(
                list[Message], data.messages if isinstance(data, AgentResponse) else [data]
            )
            for msg in outputs:
                speaker = msg.author_name or msg.role
                print(f"[{speaker}]: {msg.text}")

    responses: dict[str, Content] = {}
    if requests:
        for request_id, request in requests.items():
            if request.type == "function_approval_request" and request.function_call is not None:
                print("\n[APPROVAL REQUIRED]")
                print(f"  Tool: {request.function_call.name}")
                print(f"  Arguments: {request.function_call.arguments}")
                print(f"Simulating human approval for: {request.function_call.name}")
                # Create approval response
                responses[request_id] = request.to_function_approval_response(approved=True)

    return responses if responses else None


async def main() -> None:
    # 3. Create specialized agents
    qa_engineer = Agent(
        client=ScriptedChatClient(QA_SCRIPT, name="qa-model"),
        name="QAEngineer",
        instructions=(
            "You are a QA engineer responsible for running tests before deployment. "
            "Run the appropriate test suites and report results clearly."
        ),
        tools=[run_tests],
    )

    devops_engineer = Agent(
        client=ScriptedChatClient(DEVOPS_SCRIPT, name="devops-model"),
        name="DevOpsEngineer",
        instructions=(
            "You are a DevOps engineer responsible for deployments. First check staging "
            "status and create a rollback plan, then proceed with production deployment "
            "without the need for further instructions."
        ),
        tools=[check_staging_status, create_rollback_plan, deploy_to_production],
    )

    # 4. Build a group chat workflow with the selector function
    # max_rounds=2: Set a hard limit to 2 rounds
    # First round: QAEngineer speaks
    # Second round: DevOpsEngineer speaks
    # If the round limit is larger than 2, the selector will keep selecting DevOpsEngineer,
    # which could result in empty messages sent to the DevOpsEngineer after the second round
    # since there is no more input from the QAEngineer. This could lead to error from some LLMs
    # if they do not accept empty input. Setting max_rounds=2 prevents this issue.
    workflow = GroupChatBuilder(
        participants=[qa_engineer, devops_engineer],
        max_rounds=2,
        selection_func=select_next_speaker,
    ).build()

    # 5. Start the workflow
    print("Starting group chat workflow for software deployment...")
    print(f"Agents: {[qa_engineer.name, devops_engineer.name]}")
    print("-" * 60)

    # Initiate the first run of the workflow.
    # Runs are not isolated; state is preserved across multiple calls to run.
    stream = workflow.run(
        "We need to deploy version 2.4.0 to production. Please coordinate the deployment.",
        stream=True,
    )

    pending_responses = await process_event_stream(stream)
    while pending_responses is not None:
        # Run the workflow until there is no more human feedback to provide,
        # in which case this workflow completes.
        stream = workflow.run(stream=True, responses=pending_responses)
        pending_responses = await process_event_stream(stream)


if __name__ == "__main__":
    asyncio.run(main())
