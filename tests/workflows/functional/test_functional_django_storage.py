"""The dashboard's ``DjangoCheckpointStorage`` holds functional runs as it holds graph runs: a
paused run resumes from it in a freshly built workflow, and its step journal reads back.

Real commits (``transaction=True``), as in ``tests/dashboard/checkpoints/test_storage.py``:
the storage does its ORM work on asgiref's worker thread, which must see what the test's side
committed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async

from workflows import RunContext, WorkflowRunState, step, workflow
from workflows.functional import read_steps

pytestmark = pytest.mark.django_db(transaction=True)

COOKED: list[str] = []


@step
async def cook(dish: str) -> dict[str, str]:
    COOKED.append(dish)
    return {"dish": dish, "state": "cooked"}


@workflow(name="kitchen")
async def kitchen(dish: str, ctx: RunContext) -> str:
    meal = await cook(dish)
    taste = await ctx.request_info(meal, response_type=str, request_id="taste")
    return f"{meal['dish']} is {taste}"


@pytest.fixture
async def storage() -> AsyncIterator[object]:
    from django.db import connections

    from dashboard.checkpoints.storage import DjangoCheckpointStorage
    from dashboard.checkpoints.writes import forget_known_blobs

    forget_known_blobs()
    yield DjangoCheckpointStorage()
    await sync_to_async(connections.close_all)()  # on the storage's worker thread


async def test_a_functional_run_pauses_and_resumes_through_the_dashboard_storage(
    storage: object,
) -> None:
    paused = await kitchen.build(checkpoint_storage=storage).run("soup")  # type: ignore[arg-type]
    assert paused.get_final_state() is WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    latest = await storage.get_latest(workflow_name="kitchen")  # type: ignore[attr-defined]
    assert latest is not None

    COOKED.clear()
    fresh = kitchen.build(checkpoint_storage=storage)  # type: ignore[arg-type]
    done = await fresh.run(checkpoint_id=latest.checkpoint_id, responses={"taste": "good"})

    assert done.get_outputs() == ["soup is good"]
    assert COOKED == []
    final = await storage.get_latest(workflow_name="kitchen")  # type: ignore[attr-defined]
    assert [(r.step, r.status, r.result) for r in read_steps(final)] == [
        ("cook", "replayed", {"dish": "soup", "state": "cooked"})
    ]
    assert final.metadata["kind"] == "idle" and final.run_id == latest.run_id
