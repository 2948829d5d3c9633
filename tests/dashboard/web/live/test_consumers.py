"""dashboard/web/live/consumers.py: websockets through the real ASGI stack (origin check, session
auth, routing), with the in-memory channel layer and runs executing in embedded mode.

Every test connects through ``dashboard.config.asgi.application`` with a session cookie, exactly
as a browser does, so origin validation, ``AuthMiddlewareStack`` and the URL router are part of
what is tested. Broadcasts from the embedded worker threads reach the consumers through
``broadcast.remember_server_loop`` (the consumer registers the test's event loop on connect).
Real transactions (``services_transactional_db``, SQLite and PostgreSQL): consumers and the
embedded worker read the database on other threads.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.test import Client

from dashboard import broadcast, services
from dashboard.config.asgi import application
from dashboard.execution import embedded
from dashboard.models import TERMINAL_RUN_STATUSES, RunEvent, RunStatus, WorkflowRun
from dashboard.web.live import consumers
from dashboard.web.live.consumers import MAX_INBOUND_BYTES


@pytest.fixture(autouse=True)
def database(services_transactional_db: str) -> str:
    """Every test runs on SQLite and on PostgreSQL (``default`` answers with each in turn)."""
    return services_transactional_db


ORIGIN = (b"origin", b"http://testserver")
WAIT = 30.0


# ------------------------------------------------------------------------------ helpers


def _session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@pytest.fixture
async def cookie(role_user: Callable[..., Any]) -> bytes:
    """The session cookie of a logged-in user with the Viewer role."""
    return await sync_to_async(lambda: _session_cookie(role_user("watcher", "Viewer")))()


@pytest.fixture
def open_sockets() -> Any:
    return []


@pytest.fixture
async def connect(open_sockets: list[WebsocketCommunicator]) -> AsyncIterator[Callable[..., Any]]:
    async def connect(
        path: str, *, cookie: bytes | None = None, origin: bytes = ORIGIN[1]
    ) -> tuple[WebsocketCommunicator, bool, Any]:
        headers = [(b"origin", origin)]
        if cookie is not None:
            headers.append((b"cookie", cookie))
        communicator = WebsocketCommunicator(application, path, headers=headers)
        open_sockets.append(communicator)
        connected, detail = await communicator.connect(timeout=5)
        return communicator, connected, detail

    yield connect
    for communicator in open_sockets:
        await communicator.disconnect()
    # Background runs must end before the tables are flushed.
    assert await sync_to_async(embedded.wait_for_background_tasks, thread_sensitive=False)(WAIT)


def _held_run() -> WorkflowRun:
    """A queued run whose task never executes (its events are written by the test)."""
    with transaction.atomic():
        run = services.run_start(workflow_name="squares", input={"limit": 1})
        transaction.get_connection().run_on_commit.clear()  # nobody is told: no task, no broadcast
    return run


held_run = sync_to_async(_held_run)


def _append(run_id: Any, *types: str) -> None:
    with transaction.atomic():
        run = WorkflowRun.objects.select_for_update().get(pk=run_id)
        services.record_events(run, [{"type": t} for t in types])


append = sync_to_async(_append)


async def next_event(communicator: WebsocketCommunicator, timeout: float = 5) -> dict[str, Any]:
    """The next frame carrying a run event (one with a ``seq``; ``run_changed`` nudges are
    skipped), parsed from the JSON text the browser would get."""
    while True:
        frame = json.loads(await communicator.receive_from(timeout))
        if "seq" in frame:
            return frame


# ------------------------------------------------------------------------------ access


async def test_run_socket_refuses_anonymous_users(connect: Any) -> None:
    run = await held_run()

    _, connected, code = await connect(f"/ws/runs/{run.pk}/")

    assert not connected and code == 4401


@pytest.mark.parametrize("path", ["/ws/runs/", "/ws/approvals/"])
async def test_list_sockets_refuse_anonymous_users(connect: Any, path: str) -> None:
    _, connected, code = await connect(path)

    assert not connected and code == 4401


@pytest.mark.parametrize(
    "origin", [b"https://evil.example", b"http://testserver.evil.example", b"null", b"file://"]
)
async def test_run_socket_refuses_a_foreign_origin_even_with_a_session(
    connect: Any, cookie: bytes, origin: bytes
) -> None:
    run = await held_run()

    _, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie, origin=origin)

    assert not connected


async def test_run_socket_refuses_an_unknown_run(connect: Any, cookie: bytes) -> None:
    _, connected, code = await connect(f"/ws/runs/{uuid.uuid4()}/", cookie=cookie)

    assert not connected and code == 4404


async def test_run_socket_closes_on_an_oversized_frame(connect: Any, cookie: bytes) -> None:
    run = await held_run()
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)
    assert connected
    await next_event(communicator)  # the replayed "queued"

    await communicator.send_to(
        text_data=json.dumps({"type": "resume", "pad": "x" * MAX_INBOUND_BYTES})
    )

    assert await communicator.receive_output(5) == {"type": "websocket.close", "code": 4009}


async def test_run_socket_closes_on_a_binary_frame(connect: Any, cookie: bytes) -> None:
    run = await held_run()
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)
    assert connected
    await next_event(communicator)

    await communicator.send_to(bytes_data=b"\x00\x01")

    assert (await communicator.receive_output(5))["type"] == "websocket.close"


async def test_run_socket_ignores_malformed_client_messages(connect: Any, cookie: bytes) -> None:
    run = await held_run()
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)
    assert connected
    await next_event(communicator)

    for text in [
        "[]",
        '{"type": "resume", "after_seq": "1"}',
        '{"type": "resume", "after_seq": -4}',
        '"resume"',
        '{"type": "unknown"}',
    ]:
        await communicator.send_to(text_data=text)
    await append(run.pk, "after_noise")

    assert (await next_event(communicator))["seq"] == 2


# ------------------------------------------------------------------------------ replay


async def test_run_socket_replays_events_after_the_given_seq(connect: Any, cookie: bytes) -> None:
    run = await held_run()
    await append(run.pk, "a", "b", "c", "d")

    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/?after=2", cookie=cookie)

    assert connected
    received = [await next_event(communicator) for _ in range(3)]
    assert [(e["seq"], e["type"]) for e in received] == [(3, "b"), (4, "c"), (5, "d")]
    assert all(e["run_id"] == str(run.pk) for e in received)
    assert await communicator.receive_nothing(0.2)


@pytest.mark.parametrize("after", ["abc", "-5", ""])
async def test_run_socket_treats_a_bad_after_as_zero(
    connect: Any, cookie: bytes, after: str
) -> None:
    run = await held_run()

    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/?after={after}", cookie=cookie)

    assert connected and (await next_event(communicator))["seq"] == 1


async def test_run_socket_replays_more_than_one_batch_in_order(connect: Any, cookie: bytes) -> None:
    run = await held_run()
    total = 1 + 1234

    def many() -> None:
        RunEvent.objects.bulk_create(
            RunEvent(run_id=run.pk, seq=seq, type="bulk") for seq in range(2, total + 1)
        )
        WorkflowRun.objects.filter(pk=run.pk).update(last_event_seq=total)

    await sync_to_async(many)()

    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)

    assert connected
    seqs = [(await next_event(communicator))["seq"] for _ in range(total)]
    assert seqs == list(range(1, total + 1))
    assert await communicator.receive_nothing(0.2)


async def test_run_socket_fills_a_gap_from_the_database_when_a_broadcast_is_missed(
    connect: Any, cookie: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await held_run()
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)
    assert connected
    assert (await next_event(communicator))["seq"] == 1
    real = broadcast.broadcast_run_events
    dropped: list[Any] = []

    def drop_first(run_id: Any, events: list[dict[str, Any]]) -> None:
        if not dropped:
            dropped.append(events)  # the channel layer lost it (at-most-once)
            return
        real(run_id, events)

    monkeypatch.setattr(broadcast, "broadcast_run_events", drop_first)

    await append(run.pk, "lost-1", "lost-2")
    await append(run.pk, "delivered")

    received = [await next_event(communicator) for _ in range(3)]
    assert [(e["seq"], e["type"]) for e in received] == [
        (2, "lost-1"),
        (3, "lost-2"),
        (4, "delivered"),
    ]
    assert dropped and await communicator.receive_nothing(0.2)


async def test_run_socket_client_resume_message_replays_from_its_seq(
    connect: Any, cookie: bytes
) -> None:
    run = await held_run()
    await append(run.pk, "a", "b")
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/?after=3", cookie=cookie)
    assert connected
    assert await communicator.receive_nothing(0.1)

    await communicator.send_json_to({"type": "resume", "after_seq": 1})

    # The consumer never goes backwards: it already told this client about everything <= 3.
    assert await communicator.receive_nothing(0.2)
    await append(run.pk, "c")
    assert (await next_event(communicator))["seq"] == 4


async def test_broadcast_events_round_trip_through_json(connect: Any, cookie: bytes) -> None:
    run = await held_run()
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)
    assert connected
    await next_event(communicator)

    def append_rich() -> None:
        with transaction.atomic():
            locked = WorkflowRun.objects.select_for_update().get(pk=run.pk)
            services.record_events(
                locked, [{"type": "rich", "text": "é </script> \u2028", "n": [1, None]}]
            )

    await sync_to_async(append_rich)()

    event = await next_event(communicator)
    assert event["data"] == {"text": "é </script> \u2028", "n": [1, None]}


# ------------------------------------------------------------------------- a real run, live


async def _receive_until_finished(
    communicator: WebsocketCommunicator, seen: list[int], stop_after: int | None = None
) -> None:
    while True:
        event = await next_event(communicator, timeout=WAIT)
        seen.append(event["seq"])
        if stop_after is not None and len(seen) >= stop_after:
            return
        if event["type"] == "run_status" and event["data"]["status"] in TERMINAL_RUN_STATUSES:
            return


async def more_events(communicator: WebsocketCommunicator, wait: float = 0.3) -> list[int]:
    """Seqs of event frames still arriving within ``wait`` seconds (nudges ignored)."""
    seqs = []
    while not await communicator.receive_nothing(wait):
        frame = json.loads(await communicator.receive_from())
        if "seq" in frame:
            seqs.append(frame["seq"])
    return seqs


async def test_a_client_reconnecting_mid_run_gets_every_event_exactly_once_in_order(
    connect: Any, cookie: bytes
) -> None:
    start = sync_to_async(services.run_start)
    run = await start(workflow_name="squares", input={"limit": 60, "work_ms": 20})
    seen: list[int] = []
    status = sync_to_async(lambda: WorkflowRun.objects.get(pk=run.pk).status)

    first, connected, _ = await connect(f"/ws/runs/{run.pk}/?after=0", cookie=cookie)
    assert connected
    await _receive_until_finished(first, seen, stop_after=25)
    await first.disconnect()
    await asyncio.sleep(0.2)  # the run moves on while nobody listens
    assert await status() == RunStatus.RUNNING  # so the second socket replays *and* goes live

    second, connected, _ = await connect(f"/ws/runs/{run.pk}/?after={seen[-1]}", cookie=cookie)
    assert connected
    await _receive_until_finished(second, seen)
    assert await more_events(second) == []

    stored = await sync_to_async(
        lambda: list(
            RunEvent.objects.filter(run_id=run.pk).order_by("seq").values_list("seq", flat=True)
        )
    )()
    assert seen == stored == list(range(1, len(stored) + 1))
    assert await status() == RunStatus.COMPLETED


async def test_a_client_connected_for_the_whole_run_receives_it_live(
    connect: Any, cookie: bytes
) -> None:
    run = await held_run()
    communicator, connected, _ = await connect(f"/ws/runs/{run.pk}/", cookie=cookie)
    assert connected
    assert (await next_event(communicator))["seq"] == 1
    seen = [1]

    # Now let the held run execute: its events can only arrive by broadcast.
    from dashboard.execution.tasks import execute_run

    await sync_to_async(embedded.enqueue)(execute_run, str(run.pk))
    await _receive_until_finished(communicator, seen)
    assert await more_events(communicator) == []

    stored = await sync_to_async(
        lambda: list(RunEvent.objects.filter(run_id=run.pk).values_list("seq", flat=True))
    )()
    assert seen == sorted(stored)


# ------------------------------------------------------------------------------ lists


async def test_runs_socket_is_told_when_a_run_changes(connect: Any, cookie: bytes) -> None:
    communicator, connected, _ = await connect("/ws/runs/", cookie=cookie)
    assert connected

    run = await sync_to_async(services.run_start)(
        workflow_name="squares", input={"limit": 1, "work_ms": 0}
    )

    frame = json.loads(await communicator.receive_from(5))
    assert frame == {"type": "run_changed", "run_id": str(run.pk)}


async def test_approvals_socket_reports_the_pending_count(connect: Any, cookie: bytes) -> None:
    communicator, connected, _ = await connect("/ws/approvals/", cookie=cookie)
    assert connected
    assert json.loads(await communicator.receive_from(5)) == {
        "type": "approvals_changed",
        "pending": 0,
    }

    await sync_to_async(services.run_start)(workflow_name="return-replace", input={"work_ms": 0})

    while (frame := json.loads(await communicator.receive_from(WAIT)))["pending"] == 0:
        pass
    assert frame == {"type": "approvals_changed", "pending": 1}


# ------------------------------------------------------------------------------ browser pages


async def test_a_page_socket_gets_out_of_band_html_and_resumes_after_its_seq(
    connect: Any, cookie: bytes
) -> None:
    run = await held_run()
    await append(run.pk, "a", "b")

    communicator, connected, _ = await connect(
        f"/ws/runs/{run.pk}/?view=html&after=2", cookie=cookie
    )

    assert connected
    frame = await communicator.receive_from(5)
    # Led by the batch's last sequence number, the rows the page lacks on top of its log.
    assert frame.lstrip().startswith('<ol hx-swap-oob="afterbegin:#event-log-rows" data-seq="3"')
    assert 'id="event-3"' in frame and 'id="event-2"' not in frame
    assert '<figure class="graph" id="run-graph" data-workflow-graph hx-swap-oob="true"' in frame
    await append(run.pk, "c")
    frame = await communicator.receive_from(5)
    assert 'data-seq="4"' in frame and 'id="event-4"' in frame and 'id="event-3"' not in frame
    assert await communicator.receive_nothing(0.2)


# ------------------------------------------------------------------------------ layer health


async def test_a_socket_whose_layer_still_delivers_stays_open(
    connect: Any, cookie: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.1)
    communicator, connected, _ = await connect("/ws/approvals/", cookie=cookie)
    assert connected
    await communicator.receive_json_from(5)  # the count, on connect

    await asyncio.sleep(1)  # several re-joins, each heard back

    assert await communicator.receive_nothing(0.2)


async def test_a_socket_whose_layer_stops_delivering_is_closed_for_the_client_to_reconnect(
    connect: Any, cookie: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a Redis restart can leave: sends succeed, nothing comes back to this consumer."""
    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.1)
    layer = get_channel_layer()
    send = layer.send

    async def deaf_send(channel: str, message: dict[str, Any]) -> None:
        if message.get("type") != "live.rejoined":
            await send(channel, message)

    monkeypatch.setattr(layer, "send", deaf_send)
    communicator, connected, _ = await connect("/ws/approvals/", cookie=cookie)
    assert connected
    await communicator.receive_json_from(5)

    closed = await communicator.receive_output(5)

    assert closed == {"type": "websocket.close", "code": consumers.CLOSE_LAYER_LOST}
