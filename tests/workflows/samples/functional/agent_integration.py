"""Port of MAF's ``samples/03-workflows/functional/agent_integration.py``: agents called inside
functional workflows, first inline (plain calls), then each wrapped in a ``@step`` so its
result is saved.

Adapted to MAF 1.23: each ``.run(...)`` is on the built workflow (``simple_pipeline.build()``).
The Foundry client is replaced by a scripted one per agent (the classifier answers both
pipelines, so its script has two replies; so do the writer's and the reviewer's).
"""

import asyncio

from agent_framework import Agent

from workflows import step, workflow
from workflows.agents.local_chat import ScriptedChatClient

# ---------------------------------------------------------------------------
# Create agents
# ---------------------------------------------------------------------------

classifier_agent = Agent(
    name="ClassifierAgent",
    instructions=(
        "Classify documents into one category: Technical, Legal, Marketing, or Scientific. "
        "Reply with only the category name."
    ),
    client=ScriptedChatClient(["Technical", "Technical"], name="classifier-model"),
)

writer_agent = Agent(
    name="WriterAgent",
    instructions="Summarize the given content in one sentence.",
    client=ScriptedChatClient(
        [
            "The document explains how machine learning models learn from data.",
            "The document explains how machine learning models learn from data.",
        ],
        name="writer-model",
    ),
)

reviewer_agent = Agent(
    name="ReviewerAgent",
    instructions="Review the given summary in one sentence. Is it accurate and complete?",
    client=ScriptedChatClient(
        [
            "Accurate, though it could mention the kinds of models covered.",
            "Accurate, though it could mention the kinds of models covered.",
        ],
        name="reviewer-model",
    ),
)

# ---------------------------------------------------------------------------
# Simplest approach: agents called inline, no @step.
# ---------------------------------------------------------------------------


@workflow
async def simple_pipeline(document: str) -> str:
    """Process a document — agents called inline, no @step."""
    classification = (await classifier_agent.run(f"Classify this document: {document}")).text
    summary = (await writer_agent.run(f"Summarize: {document}")).text
    review = (await reviewer_agent.run(f"Review this summary: {summary}")).text

    return f"Classification: {classification}\nSummary: {summary}\nReview: {review}"


# ---------------------------------------------------------------------------
# With @step: each agent's answer is saved, so a resumed run does not call the model again.
# ---------------------------------------------------------------------------


@step
async def classify_document(doc: str) -> str:
    return (await classifier_agent.run(f"Classify this document: {doc}")).text


@step
async def generate_summary(doc: str) -> str:
    return (await writer_agent.run(f"Summarize: {doc}")).text


@step
async def review_summary(summary: str) -> str:
    return (await reviewer_agent.run(f"Review this summary: {summary}")).text


@workflow
async def cached_pipeline(document: str) -> str:
    """Same pipeline, but @step caches each agent call."""
    classification = await classify_document(document)
    summary = await generate_summary(document)
    review = await review_summary(summary)

    return f"Classification: {classification}\nSummary: {summary}\nReview: {review}"


async def main():
    # Simple version — agents called inline
    result = await simple_pipeline.build().run(
        "This is a technical document about machine learning..."
    )
    print(result.get_outputs()[0])

    # Cached version — same result, but steps won't re-execute on resume
    result = await cached_pipeline.build().run(
        "This is a technical document about machine learning..."
    )
    print(f"\nCached: {result.get_outputs()[0]}")


if __name__ == "__main__":
    asyncio.run(main())
