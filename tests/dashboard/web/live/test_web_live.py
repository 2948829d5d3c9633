"""The websockets in HTML mode (``?view=html``, ``dashboard.web.live.fragments``): HTML for
htmx's ws extension, every top-level element marked for an out-of-band swap. The run page gets
its rows, graph and partials rendered; regions that depend on the page's own query or on who
asks get a signal to reload themselves. The JSON messages API clients get stay as they were."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from dashboard import broadcast, services
from dashboard.models import RunEvent, WorkflowRun
from dashboard.web.live import consumers
from dashboard.web.live import fragments as live_fragments
from dashboard.web.live.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

NODE = re.compile(r'<g class="node state-(\w+)" data-executor="([^"]+)"')
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


class _TopLevel(HTMLParser):
    """The top-level elements of a fragment, as (tag, attributes): what the extension swaps."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0:
            self.found.append((tag, dict(attrs)))
        if tag not in VOID:
            self.depth += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0:
            self.found.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag not in VOID:
            self.depth -= 1


def top_level(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _TopLevel()
    parser.feed(html)
    parser.close()
    assert parser.depth == 0, "unbalanced fragment"
    return parser.found


def swaps(html: str) -> list[str]:
    """Where each top-level element goes: ``#id`` for a plain out-of-band swap, or the
    ``style:selector`` it names. Fails on an element the extension could not place."""
    found = []
    for tag, attrs in top_level(html):
        oob = attrs.get("hx-swap-oob")
        assert oob, f"<{tag}> without hx-swap-oob: the ws extension would not know where it goes"
        found.append(f"#{attrs['id']}" if oob == "true" else oob)
    return found


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    socket.scope["user"] = user
    return socket


async def messages_until_quiet(
    socket: WebsocketCommunicator, quiet: float = 0.5, *, first: float = 20.0
) -> list[str]:
    """Every text frame until none arrives for ``quiet`` seconds (receive_nothing does not
    cancel the consumer the way a timed-out receive does). The first frame may take up to
    ``first`` seconds (rendering a replay on a busy machine); ``first=0`` when none is due."""
    found = []
    if first and not await socket.receive_nothing(timeout=first, interval=0.02):
        found.append(await socket.receive_from(timeout=5))
    while not await socket.receive_nothing(timeout=quiet):
        found.append(await socket.receive_from(timeout=5))
    return found


@pytest.fixture
def waiting(operator_user: Any, drive: Callable[..., WorkflowRun]) -> WorkflowRun:
    return drive(
        services.run_start, workflow_name="return-replace", input={"work_ms": 0}, user=operator_user
    )


async def test_run_socket_in_html_mode_replays_rows_graph_and_partials_in_one_message(
    operator_user: Any, waiting: WorkflowRun
) -> None:
    socket = communicator(f"/ws/runs/{waiting.pk}/?view=html&after=0", operator_user)
    connected, _ = await socket.connect()
    assert connected
    sent = await messages_until_quiet(socket)
    await socket.disconnect()
    (message,) = sent
    assert swaps(message) == [
        "afterbegin:#event-log-rows",
        "#run-graph",
        "#run-header",
        "#run-outcome",
        "#run-details",
        "#run-timeline",
        "#run-gantt",
        "#masked-fields",  # the sensitive fields card, as the output adds to it
    ]
    # Led by the batch's last sequence number: live.js resumes from it and skips repeats.
    leading = re.match(r'\s*<[^>]*\sdata-seq="(\d+)"', message)
    assert leading is not None and leading.group(1) == str(waiting.last_event_seq)
    assert message.count('<li class="event-row"') == waiting.last_event_seq
    # Newest first, like the page: the batch goes on top of the log in one piece.
    assert message.index(f'id="event-{waiting.last_event_seq}"') < message.index('id="event-1"')
    states = {name: state for state, name in NODE.findall(message)}
    assert states["hitl-gate"] == "waiting" and states["check-eligibility"] == "done"
    assert states["finalize"] == "idle"


async def test_run_socket_in_html_mode_resumes_after_the_given_seq(
    operator_user: Any, waiting: WorkflowRun
) -> None:
    last = waiting.last_event_seq
    socket = communicator(f"/ws/runs/{waiting.pk}/?view=html&after={last - 2}", operator_user)
    assert (await socket.connect())[0]
    (message,) = await messages_until_quiet(socket)
    await socket.disconnect()
    # What a reconnecting page asks for: only the rows it does not have yet.
    assert re.findall(r'<li class="event-row" id="event-(\d+)"', message) == [
        str(last),
        str(last - 1),
    ]
    assert f'data-seq="{last}"' in message


async def test_run_socket_in_html_mode_sends_what_changed_live(
    operator_user: Any, waiting: WorkflowRun
) -> None:
    socket = communicator(
        f"/ws/runs/{waiting.pk}/?view=html&after={waiting.last_event_seq}", operator_user
    )
    assert (await socket.connect())[0]
    # Nothing new since the page was drawn.
    assert await messages_until_quiet(socket, 0.2, first=0) == []
    await database_sync_to_async(services.run_cancel)(waiting.pk, user=operator_user, reason="done")
    sent = await messages_until_quiet(socket)
    await socket.disconnect()
    rows = next(m for m in sent if "afterbegin:#event-log-rows" in m)
    assert "Run cancelled by olga" in rows
    assert f'data-seq="{waiting.last_event_seq + 1}"' in rows
    header = rows[rows.index('id="run-header"') :]
    assert "status-cancelled" in header[: header.index("</div>")]
    # The buttons hold a CSRF token and depend on the role: they reload through their view.
    signal = live_fragments.signal(live_fragments.RUN_CHANGED)
    assert signal in sent and swaps(signal) == ["innerHTML:#live-signals"]
    assert '<i class="live-run-changed"></i>' in signal


def test_run_update_skips_the_graph_of_an_unregistered_workflow(
    make_run: Callable[..., Any],
) -> None:
    run = make_run(status="running", workflow_name="gone-away")
    events = [
        RunEvent.objects.create(run=run, seq=1, type="run_status", data={"status": "running"})
    ]

    html = live_fragments.run_update(run.pk, events)

    # The page draws no graph for it either, and a fragment without its target is an error.
    assert swaps(html)[:1] == ["afterbegin:#event-log-rows"] and "#run-graph" not in swaps(html)
    assert live_fragments.run_update(run.pk, []) == ""


async def test_run_socket_without_html_mode_still_sends_json_events(
    operator_user: Any, waiting: WorkflowRun
) -> None:
    socket = communicator(
        f"/ws/runs/{waiting.pk}/?after={waiting.last_event_seq - 2}", operator_user
    )
    assert (await socket.connect())[0]
    sent = []
    while not await socket.receive_nothing(timeout=0.3):
        sent.append(await socket.receive_json_from(timeout=5))
    await socket.disconnect()
    # The event's own fields, as before: its type, data and sequence number (no rendered HTML).
    assert [m["seq"] for m in sent] == [waiting.last_event_seq - 1, waiting.last_event_seq]
    assert sent[-1]["type"] == "run_status" and sent[-1]["data"] == {"status": "waiting"}
    assert not [m for m in sent if "html" in m]


async def test_runs_socket_in_html_mode_throttles_refresh_signals(
    operator_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consumers, "RUNS_REFRESH_INTERVAL", 0.3)
    socket = communicator("/ws/runs/?view=html", operator_user)
    assert (await socket.connect())[0]
    layer = get_channel_layer()
    signal = live_fragments.signal(live_fragments.RUNS_CHANGED)
    assert '<i class="live-runs-changed"></i>' in signal
    for index in range(5):
        await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": str(index)})
    assert await socket.receive_from(timeout=1) == signal
    for index in range(5):
        await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": str(index)})
    trailing = await messages_until_quiet(socket, 0.8)
    await socket.disconnect()
    # The burst after the first refresh is one more refresh, not five.
    assert trailing == [signal]


async def test_runs_socket_for_api_clients_relays_every_change(operator_user: Any) -> None:
    socket = communicator("/ws/runs/", operator_user)
    assert (await socket.connect())[0]
    layer = get_channel_layer()
    await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": "a"})
    await layer.group_send(broadcast.RUNS_GROUP, {"type": "runs.changed", "run_id": "b"})
    sent = []
    while not await socket.receive_nothing(timeout=0.3):
        sent.append(await socket.receive_json_from(timeout=5))
    await socket.disconnect()
    assert sent == [{"type": "run_changed", "run_id": "a"}, {"type": "run_changed", "run_id": "b"}]


async def test_approvals_socket_in_html_mode_sends_the_badge_and_a_signal(
    operator_user: Any, drive: Callable[..., WorkflowRun]
) -> None:
    socket = communicator("/ws/approvals/?view=html", operator_user)
    assert (await socket.connect())[0]
    first = await socket.receive_from(timeout=5)  # on connect: what changed while away
    assert swaps(first) == ["#approval-count", "innerHTML:#live-signals"]
    assert 'data-count="0"' in first and '<i class="live-approvals-changed"></i>' in first
    await database_sync_to_async(drive)(
        services.run_start, workflow_name="return-replace", input={"work_ms": 0}, user=operator_user
    )
    sent = await messages_until_quiet(socket)
    await socket.disconnect()
    assert sent and 'data-count="1"' in sent[-1]
    assert all(swaps(m) == ["#approval-count", "innerHTML:#live-signals"] for m in sent)


def _incident_on(run: WorkflowRun) -> Any:
    """An open incident about ``run`` and its email notification, sent but not yet recorded:
    the moment between a webhook reaching its receiver and its delivery being written."""
    from dashboard.models import AlertIncident, Notification
    from dashboard.services import alerts

    rule = alerts.alert_rule_create(
        alerts.AlertRuleSpec(name="failures", condition="run_failed", emails="ops@example.com")
    )
    incident = AlertIncident.objects.create(
        rule=rule, subject=str(run.pk), run=run, workflow_name=run.workflow_name, summary="failed"
    )
    return Notification.objects.create(
        kind=Notification.EMAIL, event="alert_opened", incident=incident, target="ops@example.com"
    )


@pytest.fixture
def failed_with_incident(make_run: Callable[..., Any]) -> tuple[WorkflowRun, Any]:
    """A failed run with an open incident, and the incident's unrecorded notification."""
    run = make_run(status="failed")
    return run, _incident_on(run)


async def test_run_socket_in_html_mode_redraws_the_alerts_card_when_a_delivery_is_recorded(
    operator_user: Any, failed_with_incident: tuple[WorkflowRun, Any]
) -> None:
    from dashboard.services.alert_notifications import alert_notification_sent

    run, note = failed_with_incident
    socket = communicator(f"/ws/runs/{run.pk}/?view=html&after={run.last_event_seq}", operator_user)
    assert (await socket.connect())[0]
    # On connecting: the card as it is now, for a page drawn before the incident opened.
    (first,) = await messages_until_quiet(socket, 0.3)
    assert swaps(first) == ["#run-alerts"] and 'data-alert-state="opened"' in first
    assert "hidden" not in top_level(first)[0][1]

    await database_sync_to_async(alert_notification_sent)(note)
    sent = await messages_until_quiet(socket)
    await socket.disconnect()
    (card,) = sent
    assert swaps(card) == ["#run-alerts"] and 'data-alert-state="delivered"' in card


async def test_run_socket_tells_api_clients_that_the_runs_alerts_changed(
    operator_user: Any, failed_with_incident: tuple[WorkflowRun, Any]
) -> None:
    from dashboard.services.alert_notifications import alert_notification_sent

    run, note = failed_with_incident
    socket = communicator(f"/ws/runs/{run.pk}/?after={run.last_event_seq}", operator_user)
    assert (await socket.connect())[0]
    assert await socket.receive_nothing(timeout=0.3)
    await database_sync_to_async(alert_notification_sent)(note)
    message = await socket.receive_json_from(timeout=5)
    await socket.disconnect()
    assert message == {"type": "alerts_changed", "run_id": str(run.pk)}


def test_the_alerts_card_is_hidden_while_the_run_has_no_incident(
    make_run: Callable[..., Any],
) -> None:
    run = make_run(status="running")

    html, key = live_fragments.run_alerts(run.pk)

    # The page draws it hidden too, so that the socket has an element to swap it into.
    assert swaps(html) == ["#run-alerts"] and "hidden" in top_level(html)[0][1]
    assert key == ()
