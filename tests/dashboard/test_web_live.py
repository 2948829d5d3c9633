"""The websockets in HTML mode (``?view=html``): server-rendered rows and partials for the run
page, executor states for its graph, and a throttled refresh signal for the runs list. The JSON
messages API clients get stay as they were."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from dashboard import services
from dashboard.live import broadcast, consumers
from dashboard.live.routing import websocket_urlpatterns
from dashboard.models import WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    socket.scope["user"] = user
    return socket


async def messages_until_quiet(
    socket: WebsocketCommunicator, quiet: float = 0.5
) -> list[dict[str, Any]]:
    """Every message until none arrives for ``quiet`` seconds (receive_nothing does not cancel
    the consumer the way a timed-out receive does)."""
    found = []
    while not await socket.receive_nothing(timeout=quiet):
        found.append(await socket.receive_json_from(timeout=5))
    return found


@pytest.fixture
def operator(role_user: Callable[..., Any]) -> Any:
    return role_user("olga", "Operator")


@pytest.fixture
def waiting(operator: Any, drive: Callable[..., WorkflowRun]) -> WorkflowRun:
    return drive(
        services.run_start, workflow_name="return-replace", input={"work_ms": 0}, user=operator
    )


async def test_run_socket_in_html_mode_replays_rows_states_and_partials(
    operator: Any, waiting: WorkflowRun
) -> None:
    socket = communicator(f"/ws/runs/{waiting.pk}/?view=html&after=0", operator)
    connected, _ = await socket.connect()
    assert connected
    sent = await messages_until_quiet(socket)
    await socket.disconnect()
    rows = [m for m in sent if m["type"] == "html" and m["target"] == "#event-log-rows"]
    assert (
        len(rows) == 1
        and rows[0]["seq"] == waiting.last_event_seq
        and rows[0]["swap"] == "afterbegin"
    )
    assert rows[0]["html"].count('<li class="event-row"') == waiting.last_event_seq
    # Newest first, like the page: the batch goes on top of the log in one piece.
    assert rows[0]["html"].index(f'id="event-{waiting.last_event_seq}"') < rows[0]["html"].index(
        'id="event-1"'
    )
    states = {m["executor"]: m["state"] for m in sent if m["type"] == "executor_state"}
    assert states["hitl-gate"] == "waiting" and states["check-eligibility"] == "done"
    assert states["finalize"] == "idle"
    redrawn = {m["target"] for m in sent if m["type"] == "html" and m["swap"] == "outerHTML"}
    assert redrawn == {"#run-header", "#run-outcome", "#run-details", "#run-timeline"}
    assert not [m for m in sent if m["type"] == "event"]  # no JSON events in HTML mode


async def test_run_socket_in_html_mode_sends_what_changed_live(
    operator: Any, waiting: WorkflowRun
) -> None:
    socket = communicator(
        f"/ws/runs/{waiting.pk}/?view=html&after={waiting.last_event_seq}", operator
    )
    assert (await socket.connect())[0]
    assert await messages_until_quiet(socket, 0.2) == []  # nothing new since the page was drawn
    await database_sync_to_async(services.run_cancel)(waiting.pk, user=operator)
    sent = await messages_until_quiet(socket)
    await socket.disconnect()
    rows = next(m for m in sent if m.get("target") == "#event-log-rows")
    assert "Run cancelled by olga" in rows["html"] and rows["seq"] == waiting.last_event_seq + 1
    header = next(m for m in sent if m.get("target") == "#run-header")
    assert "status-cancelled" in header["html"]
    assert {"type": "run_changed", "run_id": str(waiting.pk)} in sent  # reloads the buttons


async def test_run_socket_without_html_mode_still_sends_json_events(
    operator: Any, waiting: WorkflowRun
) -> None:
    socket = communicator(f"/ws/runs/{waiting.pk}/?after={waiting.last_event_seq - 2}", operator)
    assert (await socket.connect())[0]
    sent = await messages_until_quiet(socket, 0.3)
    await socket.disconnect()
    # The event's own fields, as before: its type, data and sequence number (no rendered HTML).
    assert [m["seq"] for m in sent] == [waiting.last_event_seq - 1, waiting.last_event_seq]
    assert sent[-1]["type"] == "run_status" and sent[-1]["data"] == {"status": "waiting"}
    assert not [m for m in sent if "html" in m]


async def test_runs_socket_in_html_mode_throttles_refreshes(
    operator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "RUNS_REFRESH_INTERVAL", 0.3)
    socket = communicator("/ws/runs/?view=html", operator)
    assert (await socket.connect())[0]
    layer = get_channel_layer()
    for index in range(5):
        await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": str(index)})
    first = await socket.receive_json_from(timeout=1)
    assert first == {"type": "runs_refresh"}
    for index in range(5):
        await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": str(index)})
    trailing = await messages_until_quiet(socket, 0.8)
    await socket.disconnect()
    # The burst after the first refresh is one more refresh, not five.
    assert trailing == [{"type": "runs_refresh"}]


async def test_runs_socket_for_api_clients_relays_every_change(operator: Any) -> None:
    socket = communicator("/ws/runs/", operator)
    assert (await socket.connect())[0]
    layer = get_channel_layer()
    await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": "a"})
    await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": "b"})
    sent = await messages_until_quiet(socket, 0.3)
    await socket.disconnect()
    assert sent == [{"type": "run_changed", "run_id": "a"}, {"type": "run_changed", "run_id": "b"}]
