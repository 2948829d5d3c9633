"""The same functional workflows on MAF 1.23 and on ours emit the same events, in the same
order, with the same data, origins, states and request ids, where the behaviour is subtle:
parallel steps that pause, replays after a pause and after a checkpoint, failures, swallowed
pauses, task groups, and ``return_exceptions``.

Each scenario is a function of one engine's public names (the ``engine_names`` fixture); the
test runs it on both and compares what each saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

Seen = list[Any]


def describe(event: Any) -> tuple[Any, ...]:
    # Of a failure, the type: MAF leaves the message out unless sensitive data is on, the
    # engine keeps it (as for graph runs) for the operator who reads the failure.
    failure = event.type in ("failed", "executor_failed")
    return (
        event.type,
        event.executor_id,
        event.state.value if event.state is not None else None,
        event.request_id if event.type == "request_info" else None,
        event.details.error_type if failure else repr(event.data),
        event.origin.value,
    )


async def events_of(stream: Any) -> Seen:
    seen: Seen = []
    try:
        async for event in stream:
            seen.append(describe(event))
    except Exception as error:  # noqa: BLE001 - the failure is part of what is compared
        seen.append(("raised", type(error).__name__, str(error)))
    return seen


Scenario = Callable[[Any], Awaitable[Seen]]


async def on_both(scenario: Scenario, engine_names: Any) -> Seen:
    maf = await scenario(engine_names("maf"))
    ours = await scenario(engine_names("ours"))
    assert ours == maf
    return ours


async def parallel_reviews(E: Any) -> Seen:
    @E.step
    async def add(x: int) -> int:
        return x + 1

    @E.step
    async def review(x: int, ctx: Any) -> str:
        await asyncio.sleep(0)  # both reviews are inside their steps when the first asks
        return str(await ctx.request_info({"x": x}, response_type=str))

    @E.step
    async def slow(x: int) -> int:
        await asyncio.sleep(0.01)
        return x * 10

    @E.workflow
    async def flow(x: int, ctx: Any) -> str:
        v = await add(x)
        await ctx.add_event(E.WorkflowEvent("progress", data={"v": v}))
        first, tenfold, second = await asyncio.gather(review(v), slow(v), review(v + 1))
        ctx.set_state("tenfold", tenfold)
        return f"{first}/{second}/{ctx.get_state('tenfold')}"

    storage = E.InMemoryCheckpointStorage()
    built = flow.build(checkpoint_storage=storage)
    seen: Seen = []
    answers: dict[str, str] = {}
    result = await built.run(1, include_status_events=True)
    for _ in range(3):
        seen.append([describe(e) for e in result])
        asked = [e.request_id for e in result.get_request_info_events()]
        if not asked:
            break
        answers.update({rid: f"answer-{rid}" for rid in asked})
        result = await built.run(responses=dict(answers), include_status_events=True)
    checkpoints = await storage.list_checkpoints(workflow_name="flow")
    seen.append([sorted(c.pending_request_info_events) for c in checkpoints])
    again = flow.build(checkpoint_storage=storage)
    restored = await again.run(checkpoint_id=checkpoints[-1].checkpoint_id)
    seen.append([describe(e) for e in restored])
    return seen


async def test_parallel_steps_that_ask_for_input_pause_resume_and_replay_as_on_maf(
    engine_names: Any,
) -> None:
    seen = await on_both(parallel_reviews, engine_names)
    # Each parallel review saved the automatic request ids used while it ran (its sibling's
    # too), so the replay numbers the requests on: MAF does the same.
    output = ("output", "flow", None, None, "'answer-auto::2/answer-auto::3/20'", "FRAMEWORK")
    assert seen[-1][-1] == output


async def failures(E: Any) -> Seen:
    @E.step
    async def add(x: int) -> int:
        return x + 1

    @E.step
    async def explode(x: int) -> int:
        raise KeyError(f"no {x}")

    @E.workflow
    async def flow(x: int) -> int:
        return await explode(await add(x))

    @E.workflow
    async def plain_failure(x: int) -> int:
        await add(x)
        raise RuntimeError("plain code broke")

    return [
        await events_of(flow.build().run(1, stream=True)),
        await events_of(plain_failure.build().run(1, stream=True)),
    ]


async def test_step_and_plain_failures_emit_the_same_events_as_on_maf(engine_names: Any) -> None:
    await on_both(failures, engine_names)


async def concurrency(E: Any) -> Seen:
    failed = asyncio.Event()

    @E.step
    async def slow(x: int) -> int:
        await asyncio.sleep(0.005)
        return x * 10

    # These two capture ``failed``: a closure, so they name their calls with a replay_key.
    @E.step(replay_key=lambda x: f"boom:{x}")
    async def boom(x: int) -> int:
        await asyncio.sleep(0)
        failed.set()
        raise ValueError(f"bad {x}")

    @E.step(replay_key=lambda x: f"after:{x}")
    async def after_failure(x: int) -> int:
        await failed.wait()  # completes after boom failed, whatever the timers do
        return x * 10

    async def ask(ctx: Any, x: int) -> str:
        return str(await ctx.request_info({"plain": x}, response_type=str))

    @E.workflow
    async def task_group(x: int, ctx: Any) -> str:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(slow(1)), group.create_task(ask(ctx, 2))]
        return str([t.result() for t in tasks])

    @E.workflow
    async def ask_beside_failure(x: int, ctx: Any) -> str:
        return str(await asyncio.gather(ask(ctx, 1), boom(2)))

    @E.workflow
    async def collected_failure(x: int) -> str:
        return str(await asyncio.gather(after_failure(1), boom(2), return_exceptions=True))

    @E.workflow
    async def swallowed(x: int, ctx: Any) -> str:
        try:
            await ctx.request_info("q", response_type=str, request_id="q1")
        except BaseException:  # noqa: BLE001, S110 - user code that swallows the pause
            pass
        return "swallowed"

    @E.workflow
    async def detached(x: int, ctx: Any) -> str:
        pending = asyncio.create_task(ask(ctx, 1))
        await asyncio.sleep(0.01)
        value = str(await slow(2))
        pending.cancel()
        return value

    grouped = task_group.build()
    return [
        await events_of(grouped.run(1, stream=True)),
        await events_of(grouped.run(responses={"auto::0": "yes"}, stream=True)),
        await events_of(ask_beside_failure.build().run(1, stream=True)),
        await events_of(collected_failure.build().run(1, stream=True)),
        await events_of(swallowed.build().run(1, stream=True)),
        await events_of(detached.build().run(1, stream=True)),
    ]


async def test_task_groups_swallowed_pauses_and_collected_failures_behave_as_on_maf(
    engine_names: Any,
) -> None:
    await on_both(concurrency, engine_names)


async def winding_down(E: Any) -> Seen:
    asked = asyncio.Event()

    @E.step(replay_key=lambda x: f"inner:{x}")
    async def inner(x: int) -> int:
        return x * 100

    @E.step(replay_key=lambda: "fan")
    async def fan() -> list[int]:
        await asked.wait()  # the run has paused: the tasks started here may still run steps
        return list(await asyncio.gather(inner(1), inner(2)))

    @E.step(replay_key=lambda: "nested")
    async def nested() -> int:
        await asked.wait()
        await asyncio.sleep(0)
        return int(await inner(7))  # this task already ran a step: refused after the pause

    @E.step(replay_key=lambda: "asker")
    async def asker(ctx: Any) -> str:
        await asyncio.sleep(0)
        asked.set()
        return str(await ctx.request_info("go on?", response_type=str, request_id="go"))

    @E.workflow
    async def flow(x: int) -> str:
        return str(await asyncio.gather(fan(), asker(), nested()))

    built = flow.build()
    return [
        await events_of(built.run(1, stream=True)),
        await events_of(built.run(responses={"go": "yes"}, stream=True)),
    ]


async def test_steps_started_by_a_running_step_after_a_pause_run_as_on_maf(
    engine_names: Any,
) -> None:
    await on_both(winding_down, engine_names)


async def replay_identity(E: Any) -> Seen:
    calls: list[str] = []

    @E.step(name="shared", replay_key=lambda value: f"k:{value}")
    async def keyed(value: str) -> str:
        calls.append(value)
        await asyncio.sleep(0.001 if value == "A" else 0)
        return value.lower()

    @E.step
    async def echo(value: str) -> str:
        return value

    @E.workflow
    async def flow(text: str) -> list[str]:
        first = await asyncio.gather(keyed("A"), keyed("B"))
        return [*first, await echo(text), await echo(text)]

    storage = E.InMemoryCheckpointStorage()
    initial = await flow.build(checkpoint_storage=storage).run("same")
    checkpoints = await storage.list_checkpoints(workflow_name="flow")
    replays = []
    for checkpoint in checkpoints:
        replay = await flow.build(checkpoint_storage=storage).run(
            checkpoint_id=checkpoint.checkpoint_id
        )
        replays.append([describe(e) for e in replay])
    return [[describe(e) for e in initial], replays, calls, len(checkpoints)]


async def test_concurrent_keyed_and_repeated_calls_pair_with_their_results_as_on_maf(
    engine_names: Any,
) -> None:
    await on_both(replay_identity, engine_names)


async def agents(E: Any) -> Seen:
    @E.workflow(description="asks, then answers")
    async def flow(topic: str, ctx: Any) -> str:
        answer = await ctx.request_info({"topic": topic}, response_type=str, request_id="r1")
        return f"{topic}:{answer}"

    agent = flow.build().as_agent(name="asker")
    first = await agent.run("tea")
    pending = sorted(agent.pending_requests)
    stream = agent.run(responses={"r1": "green"}, stream=True)
    updates = [u.text for u in [update async for update in stream]]
    final = await stream.get_final_response()
    return [
        agent.id,
        agent.name,
        agent.description,
        [m.to_dict() for m in first.messages],
        pending,
        updates,
        final.text,
    ]


async def test_the_workflow_as_an_agent_answers_and_resumes_as_on_maf(engine_names: Any) -> None:
    seen = await on_both(agents, engine_names)
    assert seen[0] == "FunctionalWorkflowAgent_asker" and seen[-1] == "tea:green"
