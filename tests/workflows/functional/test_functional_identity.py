"""How a resumed run pairs each step call with its saved result: by the step's code, its bound
arguments and its occurrence among identical calls (MAF 1.23's scheme), so concurrent calls
find their own results whatever order they run in; ``replay_key`` for calls that have no
fingerprint; and the call's place among the step's calls only when nothing else identifies
it and nothing runs beside it.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from agent_framework import Message

from workflows import (
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    StepReplayError,
    step,
    workflow,
)
from workflows.functional.layout import read_records

CALLS: list[str] = []
GATES: dict[str, asyncio.Event] = {}


@pytest.fixture(autouse=True)
def fresh() -> None:
    CALLS.clear()
    GATES.clear()


@step
async def fetch(source: str, *, pages: int = 1) -> str:
    CALLS.append(source)
    gate = GATES.get(source)
    if gate is not None:
        await gate.wait()
    return f"{source}x{pages}"


@workflow(name="fan-out")
async def fan_out(order: list[str]) -> list[str]:
    return list(await asyncio.gather(*(fetch(source) for source in order)))


async def test_concurrent_calls_resume_with_their_own_results_in_any_order(
    tmp_path: Path,
) -> None:
    storage = FileCheckpointStorage(tmp_path)
    GATES["a"] = asyncio.Event()
    first_run = asyncio.ensure_future(fan_out.build(checkpoint_storage=storage).run(["a", "b"]))
    while not (await storage.list_checkpoints(workflow_name="fan-out")):
        await asyncio.sleep(0)  # "b" completed (and was saved) while "a" still runs
    after_b = (await storage.list_checkpoints(workflow_name="fan-out"))[0]
    GATES["a"].set()
    assert (await first_run).get_outputs() == [["ax1", "bx1"]]

    CALLS.clear()
    GATES.clear()
    resumed = await fan_out.build(checkpoint_storage=storage).run(
        checkpoint_id=after_b.checkpoint_id
    )

    assert resumed.get_outputs() == [["ax1", "bx1"]]
    assert CALLS == ["a"]  # "b" came back from the checkpoint; only "a" ran again


@workflow(name="spelled")
async def spelled(source: str) -> list[str]:
    return [await fetch(source), await fetch(source, pages=1), await fetch(source, pages=2)]


async def test_calls_pair_by_bound_arguments_and_occurrence() -> None:
    storage = InMemoryCheckpointStorage()
    await spelled.build(checkpoint_storage=storage).run("s")
    assert CALLS == ["s", "s", "s"]
    latest = await storage.get_latest(workflow_name="spelled")
    assert latest is not None

    CALLS.clear()
    replay = await spelled.build(checkpoint_storage=storage).run(checkpoint_id=latest.checkpoint_id)

    # fetch("s") and fetch("s", pages=1) bind alike: the first and second occurrence of one call.
    assert replay.get_outputs() == [["sx1", "sx1", "sx2"]]
    assert CALLS == []
    keys = [r["key"] for r in read_records(latest.state, "cache")]
    assert len(set(keys)) == 3


@step
async def reply_to(history: list[Message]) -> str:
    CALLS.append(history[-1].text)
    await asyncio.sleep(0)
    return f"re: {history[-1].text}"


@workflow(name="chat-fan-out")
async def chat_fan_out(question: str) -> list[str]:
    threads = [[Message("user", [question]), Message("user", [f"{question} #{i}"])] for i in (1, 2)]
    return list(await asyncio.gather(*(reply_to(thread) for thread in threads)))


async def test_messages_have_a_fingerprint_so_agent_steps_may_run_concurrently() -> None:
    # Beyond MAF (which has no fingerprint for a Message and needs a replay_key here): values
    # the checkpoint codec stores are identified by what it stores.
    storage = InMemoryCheckpointStorage()
    first = await chat_fan_out.build(checkpoint_storage=storage).run("why?")
    latest = await storage.get_latest(workflow_name="chat-fan-out")
    assert latest is not None

    CALLS.clear()
    replay = await chat_fan_out.build(checkpoint_storage=storage).run(
        checkpoint_id=latest.checkpoint_id
    )

    assert replay.get_outputs() == first.get_outputs() == [["re: why? #1", "re: why? #2"]]
    assert CALLS == []


@step
async def locked(lock: threading.Lock, label: str) -> str:
    CALLS.append(label)
    return label


@workflow(name="locks")
async def locks(label: str) -> list[str]:
    return list(
        await asyncio.gather(locked(threading.Lock(), label), locked(threading.Lock(), "b"))
    )


async def test_concurrent_calls_without_a_fingerprint_need_a_replay_key() -> None:
    with pytest.raises(StepReplayError, match="replay_key") as caught:
        await locks.build().run("a")

    assert caught.value.step_name == "locked"
    assert CALLS == []


@step(replay_key=lambda lock, label: label)
async def keyed_lock(lock: threading.Lock, label: str) -> str:
    CALLS.append(label)
    return label


@workflow(name="keyed-locks")
async def keyed_locks(label: str) -> list[str]:
    return list(
        await asyncio.gather(keyed_lock(threading.Lock(), label), keyed_lock(threading.Lock(), "b"))
    )


async def test_a_replay_key_names_calls_that_have_no_fingerprint() -> None:
    storage = InMemoryCheckpointStorage()
    await keyed_locks.build(checkpoint_storage=storage).run("a")
    latest = await storage.get_latest(workflow_name="keyed-locks")
    assert latest is not None

    CALLS.clear()
    replay = await keyed_locks.build(checkpoint_storage=storage).run(
        checkpoint_id=latest.checkpoint_id
    )

    assert replay.get_outputs() == [["a", "b"]]
    assert CALLS == []


@workflow(name="one-lock")
async def one_lock(label: str) -> str:
    return await locked(threading.Lock(), label)


async def test_a_sequential_call_without_a_fingerprint_pairs_by_its_place() -> None:
    storage = InMemoryCheckpointStorage()
    await one_lock.build(checkpoint_storage=storage).run("a")
    latest = await storage.get_latest(workflow_name="one-lock")
    assert latest is not None
    [saved] = read_records(latest.state, "cache")
    assert saved["key"] == '["order", "locked", 0]'
    assert saved["shape"] == ["_thread.lock", "builtins.str"]

    CALLS.clear()
    replay = await one_lock.build(checkpoint_storage=storage).run(
        checkpoint_id=latest.checkpoint_id
    )
    assert replay.get_outputs() == ["a"]
    assert CALLS == []
