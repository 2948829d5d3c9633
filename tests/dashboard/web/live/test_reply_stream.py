"""An agent's reply reaches the run's pages as it streams: over the run's websocket (JSON and
HTML), a page connecting mid-reply first gets the reply so far, and nothing of it is written
to the database until its superstep commits."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.cache import cache
from django.db import transaction
from django.test import Client

from dashboard import broadcast, services
from dashboard.config.asgi import application
from dashboard.execution import agent_replies, embedded
from dashboard.models import RunEvent, WorkflowRun
from dashboard.selectors import PriceTable

ORIGIN = (b"origin", b"http://testserver")


@pytest.fixture(autouse=True)
def database(services_transactional_db: str) -> Any:
    yield services_transactional_db
    cache.clear()  # the embedded cache is this process's memory


def _cookie(role_user: Callable[..., Any]) -> bytes:
    client = Client()
    client.force_login(role_user("watcher", "Viewer"))
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def _held_run() -> WorkflowRun:
    with transaction.atomic():
        run = services.run_start(workflow_name="squares", input={"limit": 1})
        transaction.get_connection().run_on_commit.clear()  # no task: the test plays the worker
    return run


@pytest.fixture
async def sockets() -> AsyncIterator[list[WebsocketCommunicator]]:
    opened: list[WebsocketCommunicator] = []
    yield opened
    for socket in opened:
        await socket.disconnect()
    assert await sync_to_async(embedded.wait_for_background_tasks, thread_sensitive=False)(30)


async def open_socket(
    sockets: list[WebsocketCommunicator], path: str, cookie: bytes
) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(application, path, headers=[ORIGIN, (b"cookie", cookie)])
    sockets.append(socket)
    connected, _ = await socket.connect(timeout=5)
    assert connected
    if "view=html" not in path:
        # The replayed "queued" event: the socket is in the run's group from here on.
        while "seq" not in json.loads(await socket.receive_from(5)):
            pass
    return socket


async def next_reply(socket: WebsocketCommunicator) -> dict[str, Any]:
    while True:
        frame = json.loads(await socket.receive_from(5))
        if frame.get("type") == "reply":
            return frame


async def next_card(socket: WebsocketCommunicator) -> str:
    while True:
        html = await socket.receive_from(5)
        if 'id="run-live-replies"' in html:
            return html


class Chunk:
    """What the observer reads of MAF's AgentResponseUpdate."""

    def __init__(self, text: str) -> None:
        self.text, self.message_id, self.response_id = text, "m-1", "r-1"


class Reply:
    def __init__(self) -> None:
        self.usage_details = {"input_token_count": 3, "output_token_count": 4}


@pytest.mark.asyncio
async def test_a_socket_is_told_the_reply_so_far_then_its_end(
    role_user: Callable[..., Any], sockets: list[WebsocketCommunicator]
) -> None:
    cookie = await sync_to_async(_cookie)(role_user)
    run = await sync_to_async(_held_run)()
    socket = await open_socket(sockets, f"/ws/runs/{run.pk}/", cookie)

    await sync_to_async(broadcast.broadcast_reply)(
        run.pk, executor_id="writer", reply_id="m-1", text="The report "
    )
    first = await next_reply(socket)
    await sync_to_async(broadcast.broadcast_reply)(
        run.pk, executor_id="writer", reply_id="m-1", text="The report is done.", done=True
    )
    last = await next_reply(socket)

    assert (first["text"], first["done"]) == ("The report ", False)
    assert (last["text"], last["done"], last["executor_id"]) == (
        "The report is done.",
        True,
        "writer",
    )
    assert not await sync_to_async(RunEvent.objects.filter(run=run, type="output").exists)()


@pytest.mark.asyncio
async def test_a_page_that_connects_mid_reply_gets_it_so_far_escaped(
    role_user: Callable[..., Any], sockets: list[WebsocketCommunicator]
) -> None:
    cookie = await sync_to_async(_cookie)(role_user)
    run = await sync_to_async(_held_run)()
    await sync_to_async(broadcast.broadcast_reply)(
        run.pk, executor_id="writer", reply_id="m-1", text="<script>x</script> so far"
    )

    page = await open_socket(sockets, f"/ws/runs/{run.pk}/?view=html", cookie)
    card = await next_card(page)

    assert 'hx-swap-oob="true"' in card and "writing" in card
    assert "&lt;script&gt;x&lt;/script&gt; so far" in card and "<script>x" not in card


class Clock:
    """The observer's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.asyncio
async def test_the_worker_tells_a_streaming_reply_a_few_chunks_at_a_time(
    role_user: Callable[..., Any],
    sockets: list[WebsocketCommunicator],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(agent_replies.time, "monotonic", clock)
    cookie = await sync_to_async(_cookie)(role_user)
    run = await sync_to_async(_held_run)()
    socket = await open_socket(sockets, f"/ws/runs/{run.pk}/", cookie)
    pending: list[Any] = []
    observer = agent_replies.ModelCalls(run.pk, pending, PriceTable({}))

    words = [f"w{n} " for n in range(40)]
    for word in words[:20]:  # a fast model: twenty chunks within one frame
        await sync_to_async(observer.reply_update)("writer", Chunk(word))
    clock.now += agent_replies.STREAM_SECONDS * 1.5  # then it pauses longer than a frame
    for word in words[20:]:
        await sync_to_async(observer.reply_update)("writer", Chunk(word))
    await sync_to_async(observer.reply_done)("writer", Reply(), "local")

    told = [await next_reply(socket)]
    while not told[-1]["done"]:
        told.append(await next_reply(socket))
    assert (
        [reply["text"] for reply in told]
        == [
            "w0 ",  # the first chunk at once
            "".join(words[:21]),  # the first chunk after the pause, with all before it
            "".join(words),  # the end
        ]
    )
    assert {reply["reply_id"] for reply in told} == {"writer:m-1"}
    assert [event["type"] for event in pending] == ["model_call"]


def test_text_held_back_by_a_frame_is_told_when_the_frame_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A model that writes three chunks at once and then thinks: the two held back by the frame
    # must not wait for its next chunk, however long it thinks.
    told: list[tuple[float, str, bool]] = []
    monkeypatch.setattr(
        broadcast,
        "broadcast_reply",
        lambda run_id, *, executor_id, reply_id, text, done: told.append(
            (time.monotonic(), text, done)
        ),
    )
    observer = agent_replies.ModelCalls("run-1", [], PriceTable({}))

    async def model() -> float:
        for word in ("one ", "two ", "three "):
            observer.reply_update("writer", Chunk(word))
        began = time.monotonic()
        while len(told) < 2 and time.monotonic() - began < 10:  # the model thinks
            await asyncio.sleep(0.005)
        return began

    began = asyncio.run(model())

    assert [(text, done) for _, text, done in told] == [("one ", False), ("one two three ", False)]
    assert told[1][0] - began <= agent_replies.STREAM_SECONDS + 0.5  # a frame, and a busy CPU
