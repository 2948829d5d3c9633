"""Port of MAF's ``samples/03-workflows/state-management/workflow_kwargs_per_agent.py``: a
researcher -> writer ``SequentialBuilder`` run with ``function_invocation_kwargs`` keyed by
executor id (the agents' names), so each agent's tools receive only their own slice; each tool
prints what it received.

Each agent gets its own ``ScriptedChatClient`` (in place of the shared Foundry client) that calls
its tool once and then answers with the tool's result. MAF 1.23 hands a tool the run's kwargs
through a ``FunctionInvocationContext`` parameter (``ctx.kwargs``), not through ``**kwargs`` as the
sample (written for a later MAF) does, so the port's tools take ``ctx``. As in MAF 1.23, the
streamed outputs are ``AgentResponseUpdate`` chunks, which the sample's ``list`` check skips: only
the tools and the banners print."""

import asyncio
import json
from collections.abc import Mapping
from typing import Annotated, Any, cast

from agent_framework import Agent, FunctionInvocationContext, Message, tool
from pydantic import Field

from workflows.agents.local_chat import ScriptedChatClient, ToolCall
from workflows.orchestrations import SequentialBuilder


# 1. Define a tool for the research agent — queries a company's internal
#    database using credentials passed via per-agent kwargs.
@tool(approval_mode="never_require")
def query_company_database(
    query: Annotated[
        str,
        Field(
            description="The database query to run, e.g. 'Q3 revenue' or 'headcount by department'"
        ),
    ],
    ctx: FunctionInvocationContext,
) -> str:
    """Query the company's internal database for business metrics and data."""
    kwargs = ctx.kwargs
    db_config = kwargs.get("db_config", {})
    connection_string = db_config.get("connection_string", "")
    database = db_config.get("database", "")

    if not connection_string or not database:
        return f"ERROR: missing db_config — cannot run query '{query}'"

    print(f"\n  [query_company_database] Connecting to {database} at {connection_string[:30]}...")

    # Simulated company data that the LLM would not know on its own
    return (
        f"Query results from {database}:\n"
        f"- Contoso Q3 2025 revenue: $47.2M (up 12% YoY)\n"
        f"- Top product line: CloudSync Pro ($18.6M)\n"
        f"- Engineering headcount: 342 (up from 298 in Q2)\n"
        f"- Customer churn rate: 4.1% (down from 5.3% in Q2)\n"
        f"- Net new enterprise customers: 28"
    )


# 2. Define a tool for the writer agent — retrieves the formatting style
#    from user preferences passed via per-agent kwargs.
@tool(approval_mode="never_require")
def get_formatting_instructions(
    section_title: Annotated[
        str, Field(description="The title of the section or report to format")
    ],
    ctx: FunctionInvocationContext,
) -> str:
    """Get the formatting instructions based on user preferences."""
    kwargs = ctx.kwargs
    user_prefs = kwargs.get("user_preferences", {})
    output_format = user_prefs.get("format", "plain")
    language = user_prefs.get("language", "en")

    print(f"\n  [get_formatting_instructions] Format: {output_format}, Language: {language}")

    return (
        f"Formatting rules for '{section_title}':\n"
        f"- Output format: {output_format}\n"
        f"- Language/locale: {language}\n"
        f"- Include a footer: 'Generated in {output_format} for locale {language}'"
    )


def _answer_with_tool_result(messages: list[Message], options: Mapping[str, Any]) -> str:
    return f"Report based on: {messages[-1].contents[0].result}"


def _client(call: ToolCall) -> ScriptedChatClient:
    return ScriptedChatClient([call, _answer_with_tool_result], name=f"{call.name}-model")


async def main() -> None:
    print("=" * 70)
    print("Per-Agent Workflow kwargs Demo")
    print("=" * 70)

    # 4. Create two agents with different tools and responsibilities.
    researcher = Agent(
        client=_client(ToolCall("query_company_database", {"query": "Contoso Q3 2025"})),
        name="researcher",
        instructions=(
            "You are a data analyst. Call query_company_database exactly once "
            "with the user's request as the query. Return the raw results."
        ),
        tools=[query_company_database],
    )

    writer = Agent(
        client=_client(ToolCall("get_formatting_instructions", {"section_title": "Q3 summary"})),
        name="writer",
        instructions=(
            "You are a report writer. Call get_formatting_instructions exactly once, "
            "then rewrite the data you receive into a polished report following those rules."
        ),
        tools=[get_formatting_instructions],
    )

    # 5. Build a sequential workflow: researcher -> writer.
    workflow = SequentialBuilder(participants=[researcher, writer]).build()

    # 6. Define per-agent kwargs — each agent gets only its own config.
    #    The keys ("researcher", "writer") match the agent names, which are
    #    used as executor IDs by default.
    per_agent_fi_kwargs = {
        "researcher": {
            "db_config": {
                "connection_string": "Server=contoso-sql.database.windows.net;Database=metrics",
                "database": "contoso_metrics_prod",
            },
        },
        "writer": {
            "user_preferences": {
                "format": "markdown",
                "language": "en-US",
            },
        },
    }

    print("\nPer-agent function_invocation_kwargs:")
    print(json.dumps(per_agent_fi_kwargs, indent=2))
    print("\n" + "-" * 70)
    print("Workflow Execution:")
    print("-" * 70)

    # 7. Run the workflow — each agent receives only its targeted kwargs.
    async for event in workflow.run(
        "Pull Contoso's Q3 2025 performance data and write an executive summary.",
        function_invocation_kwargs=per_agent_fi_kwargs,
        stream=True,
    ):
        if event.type == "output":
            output_data = cast(list[Message], event.data)
            if isinstance(output_data, list):
                for item in output_data:
                    if isinstance(item, Message) and item.text:
                        print(f"\n[{item.author_name}]: {item.text}")

    print("\n" + "=" * 70)
    print("Sample Complete")
    print("=" * 70)


if __name__ == "__main__":
    asyncio.run(main())
