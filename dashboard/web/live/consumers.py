"""Websocket consumers: check access, join a group, relay. They decide nothing.

``/ws/runs/<id>/?after=N`` streams one run's events in order, exactly once, across
reconnects: the client says the last sequence number it has, the consumer replays what came
after from ``RunEvent`` and then relays live messages, filling any gap from the database.
``/ws/runs/`` and ``/ws/approvals/`` tell list pages that something changed.

Browser pages add ``?view=html`` and get, instead of JSON, HTML for htmx's ws extension to
swap out of band, rendered by ``dashboard.web.live.fragments`` (one protocol for every page):
``/ws/runs/<id>/`` one message per batch of events (the page's new rows, graph and redrawn
partials, led by the batch's last sequence number), a "run-changed" signal when the run's
actions may have changed, and its alerts card when an incident about it changed (also on
connecting and after a re-join that finds it changed, so a reconnect repairs it too);
``/ws/runs/`` a "runs-changed" signal at most once a second however many runs change, so the
runs list reloads its table without a storm of requests;
``/ws/approvals/`` the nav badge and an "approvals-changed" signal.

Every consumer joins its group again every ``REJOIN_SECONDS``. channels-redis keeps group
membership in Redis alone: a Redis that restarts empty forgets every group, and a consumer whose
receive loop did not happen to fail meanwhile keeps its socket open while no group message
reaches it any more (deaf, with the page still showing "Live"). Re-joining bounds that; the run
consumer then replays from the database what it may have missed, the approvals consumer resends
a count that changed. A layer that refuses the re-join, or does not bring back the message the
consumer sends itself, closes the socket (4011), and the client reconnects and replays.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from dashboard import broadcast, selectors
from dashboard.core.types import Actor
from dashboard.models import RunEvent
from dashboard.services import ServiceError, require, visible_workflows
from dashboard.web.live import fragments

__all__ = ["ApprovalsConsumer", "RunConsumer", "RunsConsumer"]

MAX_INBOUND_BYTES = 4096
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# Private-use codes (4000-4999) mirroring the standard 1009 and 1011: Daphne's websocket library
# refuses to send any server close code but 1000 and 3000-4999, and a refused close leaves the
# socket open, the very thing these closes exist to end.
CLOSE_TOO_BIG = 4009
CLOSE_LAYER_LOST = 4011
REJOIN_SECONDS = 10.0
# The runs list reloads its table at most this often (seconds), leading and trailing edge.
RUNS_REFRESH_INTERVAL = 1.0


class _Authenticated(AsyncJsonWebsocketConsumer):
    group: str = ""

    @property
    def user(self) -> Actor:
        # Channels' lazy wrapper stands in for the User it loads.
        return cast("Actor", self.scope.get("user"))

    async def connect(self) -> None:
        user = self.user
        if not getattr(user, "is_authenticated", False):
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if not await database_sync_to_async(_may_view)(user, self.scope.get("path", "")):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        if not await self.allowed():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        broadcast.remember_server_loop(asyncio.get_running_loop())
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.opened()
        self._rejoining = asyncio.ensure_future(self._keep_joined())

    async def allowed(self) -> bool:
        return True

    async def opened(self) -> None:
        return None

    async def rejoined(self) -> None:
        """After a re-join: catch up with what a forgotten membership may have missed."""

    async def _keep_joined(self) -> None:
        while True:
            await asyncio.sleep(REJOIN_SECONDS)
            self._heard_back = asyncio.Event()
            try:
                # Bounded as a whole: after a Redis restart a call on a half-dead pooled
                # connection can hang until the socket times out, far longer than a page may
                # stay deaf.
                async with asyncio.timeout(REJOIN_SECONDS):
                    await self.channel_layer.group_add(self.group, self.channel_name)
                    # Through the consumer's own channel, so the catch-up runs in turn with
                    # the group messages instead of racing them. Waiting for it to come back
                    # proves the layer still delivers to this consumer: a send can succeed
                    # into a channel whose receive a Redis restart left hanging, and then
                    # nothing would ever arrive.
                    await self.channel_layer.send(self.channel_name, {"type": "live.rejoined"})
                    await self._heard_back.wait()
            except Exception:  # noqa: BLE001 - whatever the layer raised, the client must reconnect
                await self.close(code=CLOSE_LAYER_LOST)
                return

    async def live_rejoined(self, message: dict[str, Any]) -> None:
        heard_back = getattr(self, "_heard_back", None)
        if heard_back is not None:
            heard_back.set()
        await self.rejoined()

    async def disconnect(self, code: int) -> None:
        rejoining = getattr(self, "_rejoining", None)
        if rejoining is not None:
            rejoining.cancel()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if bytes_data is not None or text_data is None or len(text_data) > MAX_INBOUND_BYTES:
            await self.close(code=CLOSE_TOO_BIG)
            return
        await super().receive(text_data=text_data)


class RunConsumer(_Authenticated):
    async def allowed(self) -> bool:
        self.run_uuid: uuid.UUID = self.scope["url_route"]["kwargs"]["run_id"]
        self.run_id = str(self.run_uuid)
        self.group = broadcast.run_group(self.run_id)
        self.last_seq = _after(self.scope)
        self.html = _view(self.scope) == "html"
        self._replies: dict[str, dict[str, Any]] = {}  # streamed replies this socket was told
        # Finished replies a page still shows whole, until the conversation has them (the
        # commit of their superstep): their last words must not wait for that commit.
        self._finished: dict[str, dict[str, Any]] = {}
        run = await database_sync_to_async(selectors.run_get)(self.run_uuid, user=self.user)
        return run is not None

    async def opened(self) -> None:
        await self._catch_up()
        # A reply streaming now, as far as it got: the rest follows in run.reply messages.
        await self._replies_so_far()
        if self.html:
            self._alerts: fragments.AlertsKey = ()  # what the page was drawn with, or last sent
            await self._alerts_if_changed()

    async def rejoined(self) -> None:
        await self._catch_up()
        await self._replies_so_far()
        if self.html:
            await self._alerts_if_changed()

    async def _replies_so_far(self) -> None:
        kept = await database_sync_to_async(broadcast.replies_so_far)(self.run_id)
        for reply in kept:
            await self.run_reply(reply)

    async def run_reply(self, message: dict[str, Any]) -> None:
        reply = {key: message[key] for key in ("executor_id", "reply_id", "text", "done")}
        if self._replies.get(reply["reply_id"]) == reply:
            return  # already shown (the cache and the stream both told it)
        if reply["done"]:
            # Finished: the page's conversation shows it once its superstep commits; until
            # then the card shows it whole.
            if self._replies.pop(reply["reply_id"], None) is None and self.html:
                return
            if self.html:
                self._finished[reply["reply_id"]] = reply
        else:
            self._replies[reply["reply_id"]] = reply
        if self.html:
            await self.send(text_data=self._live_card())
            return
        await self.send_json({"type": "reply", "run_id": self.run_id, **reply})

    async def _alerts_if_changed(self) -> None:
        # A run with no incident has its card hidden, as the page drew it: nothing to send.
        key = await database_sync_to_async(fragments.alerts_key)(self.run_uuid)
        if key != self._alerts:
            await self._send_alerts()

    async def _send_alerts(self) -> None:
        html, self._alerts = await database_sync_to_async(fragments.run_alerts)(self.run_uuid)
        await self.send(text_data=html)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "resume":
            after = content.get("after_seq")
            if isinstance(after, int) and after >= 0:
                self.last_seq = max(self.last_seq, after)
                await self._catch_up()

    async def _catch_up(self) -> None:
        fetch = database_sync_to_async(selectors.run_events_after)
        while True:
            rows = await fetch(self.run_uuid, self.last_seq)
            if self.html:
                if rows:
                    await self._send_html(rows)
            else:
                for row in rows:
                    await self._send_event(broadcast.event_payload(row))
            if len(rows) < selectors.REPLAY_BATCH:
                return

    def _live_card(self) -> str:
        return fragments.live_replies([*self._finished.values(), *self._replies.values()])

    async def _send_html(self, rows: list[RunEvent]) -> None:
        self.last_seq = rows[-1].seq
        html = await database_sync_to_async(fragments.run_update)(self.run_uuid, rows, self.user)
        if self._finished and any(row.type == "model_call" for row in rows):
            # The conversation in this update shows the finished replies: swapped together.
            self._finished.clear()
            html += self._live_card()
        if html:
            await self.send(text_data=html)

    async def _send_event(self, event: dict[str, Any]) -> None:
        self.last_seq = event["seq"]
        await self.send_json({"type": "event", "run_id": self.run_id, **event})

    async def run_events(self, message: dict[str, Any]) -> None:
        if self.html:
            await self._catch_up()  # the page's rows are rendered from the database anyway
            return
        for event in message["events"]:
            if event["seq"] <= self.last_seq:
                continue  # already sent by a replay
            if event["seq"] > self.last_seq + 1:
                await self._catch_up()  # a message went missing: the database has it
                continue
            await self._send_event(event)

    async def run_alerts(self, message: dict[str, Any]) -> None:
        if self.html:
            await self._send_alerts()
            return
        await self.send_json({"type": "alerts_changed", "run_id": self.run_id})

    async def run_changed(self, message: dict[str, Any]) -> None:
        if self.html:
            await self.send(text_data=fragments.signal(fragments.RUN_CHANGED))
            return
        await self.send_json({"type": "run_changed", "run_id": self.run_id})


class RunsConsumer(_Authenticated):
    group = broadcast.RUNS_GROUP

    async def allowed(self) -> bool:
        self.html = _view(self.scope) == "html"
        self._refresh: asyncio.Task[None] | None = None
        self._refreshed_at = float("-inf")
        # A user granted named workflows only is told of their runs alone (None: of every run).
        self._workflows = await database_sync_to_async(visible_workflows)(self.user)
        return True

    async def disconnect(self, code: int) -> None:
        if getattr(self, "_refresh", None) is not None:
            self._refresh.cancel()  # type: ignore[union-attr]
        await super().disconnect(code)

    async def runs_changed(self, message: dict[str, Any]) -> None:
        if not self.html:
            if self._workflows is None or await database_sync_to_async(self._may_see)(
                message["run_id"]
            ):
                await self.send_json({"type": "run_changed", "run_id": message["run_id"]})
            return
        if self._refresh is not None and not self._refresh.done():
            return  # a refresh is already on its way and will show this change too
        loop = asyncio.get_running_loop()
        wait = max(0.0, self._refreshed_at + RUNS_REFRESH_INTERVAL - loop.time())
        self._refresh = asyncio.ensure_future(self._send_refresh(wait))

    def _may_see(self, run_id: str) -> bool:
        run = selectors.run_get(run_id, user=self.user)
        return run is not None

    async def _send_refresh(self, wait: float) -> None:
        if wait:
            await asyncio.sleep(wait)
        self._refreshed_at = asyncio.get_running_loop().time()
        await self.send(text_data=fragments.signal(fragments.RUNS_CHANGED))


class ApprovalsConsumer(_Authenticated):
    group = broadcast.APPROVALS_GROUP

    async def allowed(self) -> bool:
        self.html = _view(self.scope) == "html"
        self._pending: int | None = None  # the count this socket was last sent
        return True

    async def opened(self) -> None:
        # Also after a reconnect: whatever changed while the socket was down shows now.
        await self.approvals_changed({})

    async def rejoined(self) -> None:
        count = await database_sync_to_async(selectors.pending_approval_count)(self.user)
        if count != self._pending:
            await self.approvals_changed({})

    async def approvals_changed(self, message: dict[str, Any]) -> None:
        user = self.user
        self._pending = await database_sync_to_async(selectors.pending_approval_count)(user)
        if self.html:
            html = await database_sync_to_async(fragments.approvals_update)(user)
            await self.send(text_data=html)
            return
        await self.send_json({"type": "approvals_changed", "pending": self._pending})


def _may_view(user: Any, path: str) -> bool:
    """The role check, with the refusal audited like any other."""
    try:
        require(user, "view", target=f"websocket {path}")
    except ServiceError:
        return False
    return True


def _query(scope: Mapping[str, object]) -> dict[str, list[str]]:
    raw = scope.get("query_string", b"")
    return parse_qs(raw.decode("latin-1") if isinstance(raw, bytes) else "")


def _view(scope: Mapping[str, object]) -> str:
    return _query(scope).get("view", [""])[0]


def _after(scope: Mapping[str, object]) -> int:
    try:
        return max(0, int(_query(scope).get("after", ["0"])[0]))
    except ValueError:
        return 0
