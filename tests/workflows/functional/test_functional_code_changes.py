"""When the code changed so that a checkpoint's saved steps no longer pair with the calls the new
code makes, the resume fails with ``StepMismatchError`` naming what changed, and no step result
is handed to a call it was not computed for.

Each test defines the same module twice, as it was when the checkpoint was written and as it
is after a deploy, under one module name (so names and qualified names are those of a real
module that changed), and resumes the first version's checkpoint with the second.
"""

from __future__ import annotations

import json
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workflows import (
    FileCheckpointStorage,
    GraphMismatchError,
    StepMismatchError,
    WorkflowCheckpoint,
)

MODULE = "orders_flow_under_change"

ORIGINAL = """
from workflows import RunContext, step, workflow

CALLS = []


@step
async def price(item: str) -> int:
    CALLS.append("price")
    return len(item) * 10


@step
async def discount(total: int) -> int:
    CALLS.append("discount")
    return total - 5


async def label(total: int) -> str:
    return f"{total} EUR"


@workflow(name="orders")
async def orders(item: str, ctx: RunContext) -> str:
    total = await discount(await price(item))
    await ctx.request_info({"total": total}, response_type=str, request_id="confirm")
    return await label(total)
"""


def load(source: str) -> types.ModuleType:
    module = types.ModuleType(MODULE)
    module.__file__ = f"<{MODULE}>"
    sys.modules[MODULE] = module
    exec(compile(textwrap.dedent(source), module.__file__, "exec"), module.__dict__)  # noqa: S102
    return module


@pytest.fixture(autouse=True)
def forget_module() -> Iterator[None]:
    yield
    sys.modules.pop(MODULE, None)


async def paused_checkpoint(tmp_path: Path) -> tuple[FileCheckpointStorage, WorkflowCheckpoint]:
    storage = FileCheckpointStorage(tmp_path)
    await load(ORIGINAL).orders.build(checkpoint_storage=storage).run("book")
    latest = await storage.get_latest(workflow_name="orders")
    assert latest is not None
    return storage, latest


async def resume_with(source: str, tmp_path: Path) -> tuple[types.ModuleType, Any]:
    storage, latest = await paused_checkpoint(tmp_path)
    changed = load(source)
    pipeline = changed.orders.build(checkpoint_storage=storage)
    run = pipeline.run(checkpoint_id=latest.checkpoint_id, responses={"confirm": "yes"})
    return changed, run


async def test_a_changed_step_body_fails_the_resume_naming_the_step(tmp_path: Path) -> None:
    changed, run = await resume_with(
        ORIGINAL.replace("return total - 5", "return total - 50"), tmp_path
    )

    with pytest.raises(StepMismatchError, match="not compatible") as caught:
        await run

    assert caught.value.changed == ("step 'discount' changed",)
    assert caught.value.workflow_name == "orders"
    assert "step 'discount' changed" in str(caught.value)
    assert isinstance(caught.value, GraphMismatchError) and isinstance(caught.value, ValueError)
    assert changed.CALLS == []  # nothing ran, nothing was replayed


async def test_a_changed_workflow_function_fails_the_resume_naming_it(tmp_path: Path) -> None:
    changed, run = await resume_with(
        ORIGINAL.replace('{"total": total}', '{"total": total, "currency": "EUR"}'), tmp_path
    )

    with pytest.raises(StepMismatchError) as caught:
        await run

    assert caught.value.changed == (f"function '{MODULE}.orders' changed",)
    assert changed.CALLS == []


async def test_a_new_step_and_a_changed_helper_are_both_named(tmp_path: Path) -> None:
    source = ORIGINAL.replace('f"{total} EUR"', 'f"EUR {total}"').replace(
        "async def label",
        "@step\nasync def audit(x: int) -> int:\n    return x\n\n\nasync def label",
    )
    source = source.replace("return await label(total)", "return await label(await audit(total))")

    _, run = await resume_with(source, tmp_path)

    with pytest.raises(StepMismatchError) as caught:
        await run
    assert set(caught.value.changed) == {
        "step 'audit' was added",
        f"function '{MODULE}.label' changed",
        f"function '{MODULE}.orders' changed",
    }


async def test_the_unchanged_code_resumes_and_replays_every_saved_step(tmp_path: Path) -> None:
    changed, run = await resume_with(ORIGINAL, tmp_path)

    result = await run

    assert result.get_outputs() == ["35 EUR"]
    assert changed.CALLS == []


async def test_a_saved_result_of_another_step_definition_is_refused_at_its_call(
    tmp_path: Path,
) -> None:
    # A checkpoint whose signature matches but whose saved key for this place was written by
    # other code for the step (a tampered or hand-made checkpoint): the call does not pair.
    storage, latest = await paused_checkpoint(tmp_path)
    cache = latest.state["_functional.cache.0"]
    key = json.loads(cache[0]["key"])
    assert key[:2] == ["auto", "price"]
    key[2] = "0" * 64  # another code fingerprint at the same (step, occurrence) place
    cache[0]["key"] = json.dumps(key)
    tampered = WorkflowCheckpoint(
        workflow_name=latest.workflow_name,
        graph_signature_hash=latest.graph_signature_hash,
        graph_signature=latest.graph_signature,
        state=latest.state,
    )
    await storage.save(tampered)
    module = sys.modules[MODULE]

    with pytest.raises(StepMismatchError, match="step 'price'") as caught:
        await module.orders.build(checkpoint_storage=storage).run(
            checkpoint_id=tampered.checkpoint_id
        )
    assert caught.value.changed == ("step 'price'",)
    assert module.CALLS == ["price", "discount"]  # from the first run only


OPAQUE = """
from workflows import step, workflow

CALLS = []


class Client:
    name = "v1"


def make_client():
    return Client()


@step
async def call(client, item: str) -> str:
    CALLS.append(client.name)
    return f"{client.name}:{item}"


@workflow(name="opaque")
async def opaque(item: str) -> str:
    return await call(make_client(), item)
"""


async def test_a_call_paired_by_order_with_arguments_of_another_type_is_refused(
    tmp_path: Path,
) -> None:
    # The client has no fingerprint, so the call pairs by its place among call()'s calls;
    # another module's factory now makes another type: the saved result is not for this call.
    storage = FileCheckpointStorage(tmp_path)
    module = load(OPAQUE)
    await module.opaque.build(checkpoint_storage=storage).run("x")
    latest = await storage.get_latest(workflow_name="opaque")
    assert latest is not None

    class OtherClient:
        name = "v2"

    module.Client = OtherClient
    with pytest.raises(StepMismatchError, match="step 'call'|'call'"):
        await module.opaque.build(checkpoint_storage=storage).run(
            checkpoint_id=latest.checkpoint_id
        )
    assert module.CALLS == ["v1"]
