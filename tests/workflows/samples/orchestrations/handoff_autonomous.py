"""Port of MAF's ``samples/03-workflows/orchestrations/handoff_autonomous.py``: a coordinator,
a research agent and a summary agent in autonomous mode, streamed.

The hosted Foundry client is replaced by one ``ScriptedChatClient`` shared by the three agents
(as the sample shares its client); its script, in call order, plays the run the sample
describes: the coordinator hands off to the research agent, which answers three times on its
own (each time told "User did not respond...") before handing back; the coordinator hands off
to the summary agent, which answers once on its own and hands back; the coordinator then keeps
answering on its own until its fifth answer meets the termination condition. The sample's
``logging.basicConfig`` call is left out (it would configure the test process's logging).
"""

import asyncio
from typing import cast

from agent_framework import (
    Agent,
    AgentResponseUpdate,
    Message,
)

from workflows import resolve_agent_id
from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import HandoffBuilder

SCRIPT = [
    ToolCall("handoff_to_research_agent"),
    "Aspect one: the framework builds agents on chat clients with tools and middleware.",
    "Aspect two: workflows connect executors with typed edges and checkpoint every superstep.",
    "Aspect three: orchestrations such as handoff, group chat and magentic come built in.",
    ToolCall("handoff_to_coordinator"),
    ToolCall("handoff_to_summary_agent"),
    "Summary: agents, workflows and orchestrations are the framework's three layers.",
    ToolCall("handoff_to_coordinator"),
    "The research and the summary are complete.",
    "The findings cover agents, workflows and orchestrations.",
    "No further research is needed.",
    "The summary is ready for the user.",
    "This concludes the task.",
]


def create_agents(
    client: ScriptedChatClient,
) -> tuple[Agent, Agent, Agent]:
    """Create coordinator and specialists for autonomous iteration."""
    coordinator = Agent(
        client=client,
        instructions=(
            "You are a coordinator. You break down a user query into a research task and a "
            "summary task. Assign the two tasks to the appropriate specialists, one after the "
            "other."
        ),
        name="coordinator",
        require_per_service_call_history_persistence=True,
    )

    research_agent = Agent(
        client=client,
        instructions=(
            "You are a research specialist that explores topics thoroughly using web search. "
            "When given a research task, break it down into multiple aspects and explore each "
            "one. Continue your research across multiple responses - don't try to finish "
            "everything in one response. After each response, think about what else needs to "
            "be explored. When you have covered the topic comprehensively (at least 3-4 "
            "different aspects), return control to the coordinator. Keep each individual "
            "response focused on one aspect."
        ),
        name="research_agent",
        require_per_service_call_history_persistence=True,
    )

    summary_agent = Agent(
        client=client,
        instructions=(
            "You summarize research findings. Provide a concise, well-organized summary. When "
            "done, return control to the coordinator."
        ),
        name="summary_agent",
        require_per_service_call_history_persistence=True,
    )

    return coordinator, research_agent, summary_agent


async def main() -> None:
    """Run an autonomous handoff workflow with specialist iteration enabled."""
    client = ScriptedChatClient(SCRIPT)
    coordinator, research_agent, summary_agent = create_agents(client)

    workflow = (
        HandoffBuilder(
            name="autonomous_iteration_handoff",
            participants=[coordinator, research_agent, summary_agent],
            termination_condition=lambda conv: (
                sum(
                    1
                    for msg in conv
                    if msg.author_name == "coordinator" and msg.role == "assistant"
                )
                >= 5
            ),
        )
        .with_start_agent(coordinator)
        .add_handoff(coordinator, [research_agent, summary_agent])
        .add_handoff(research_agent, [coordinator])
        .add_handoff(summary_agent, [coordinator])
        .with_autonomous_mode(
            turn_limits={
                resolve_agent_id(coordinator): 5,
                resolve_agent_id(research_agent): 10,
                resolve_agent_id(summary_agent): 5,
            }
        )
        .build()
    )

    request = "Perform a comprehensive research on Microsoft Agent Framework."
    print("Request:", request)

    last_response_id: str | None = None
    async for event in workflow.run(request, stream=True):
        if event.type == "handoff_sent":
            print(f"\nHandoff Event: from {event.data.source} to {event.data.target}\n")
        elif event.type == "output":
            data = event.data
            if isinstance(data, AgentResponseUpdate):
                if not data.text:
                    continue
                rid = data.response_id
                if rid != last_response_id:
                    if last_response_id is not None:
                        print("\n")
                    print(f"{data.author_name}:", end=" ", flush=True)
                    last_response_id = rid
                print(data.text, end="", flush=True)
            elif event.type == "output":
                outputs = cast(list[Message], event.data)
                print("\n" + "=" * 80)
                print("\nFinal Conversation Transcript:\n")
                for message in outputs:
                    print(f"{message.author_name or message.role}: {message.text}\n")


if __name__ == "__main__":
    asyncio.run(main())
