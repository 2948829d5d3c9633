"""Port of MAF's ``samples/03-workflows/functional/hitl_review.py``: a ``@step`` writes a draft,
``ctx.request_info`` pauses the run for a human review, and ``run(responses=...)`` resumes it;
the draft step is not called again (its saved result comes back), the revision step runs.

Adapted to MAF 1.23: both runs use one built workflow (``review_pipeline.build()``), which holds
the paused run between them.
"""

import asyncio

from workflows import RunContext, WorkflowRunState, step, workflow


# @step saves the result: after the pause, the resumed run gets it back without calling it.
@step
async def write_draft(topic: str) -> str:
    """Simulate writing a draft — expensive, shouldn't re-run on resume."""
    print(f"  write_draft executing for '{topic}'")
    return f"Draft document about '{topic}': Lorem ipsum dolor sit amet..."


@step
async def revise_draft(draft: str, feedback: str) -> str:
    """Revise the draft based on feedback."""
    return f"Revised: {draft[:50]}... [Applied feedback: {feedback}]"


@workflow
async def review_pipeline(topic: str, ctx: RunContext) -> str:
    """Write a draft, get human review, then revise."""
    draft = await write_draft(topic)

    # The run pauses here: the caller gets a result in IDLE_WITH_PENDING_REQUESTS with the
    # request in get_request_info_events().
    feedback = await ctx.request_info(
        {"draft": draft, "instructions": "Please review this draft"},
        response_type=str,
        request_id="review_request",
    )

    # Reached once the caller resumes with run(responses={...}).
    return await revise_draft(draft, feedback)


async def main():
    pipeline = review_pipeline.build()

    # Phase 1: run until the workflow pauses for human input
    print("=== Phase 1: Initial run ===")
    result1 = await pipeline.run("AI Safety")

    print(f"State: {(final_state := result1.get_final_state())}")
    assert final_state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS

    requests = result1.get_request_info_events()
    print(f"Pending request: {requests[0].request_id}")

    # Phase 2: resume with the human's response
    print("\n=== Phase 2: Resume with feedback ===")
    print("(write_draft should NOT execute again — saved by @step)")
    result2 = await pipeline.run(
        responses={"review_request": "Add more details about alignment research"}
    )

    print(f"State: {result2.get_final_state()}")
    print(f"Output: {result2.get_outputs()[0]}")


if __name__ == "__main__":
    asyncio.run(main())
