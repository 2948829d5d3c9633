"""The run-event catalogue: every type the log can hold is declared once, with its payload."""

from __future__ import annotations

import datetime as dt
import inspect
from typing import Any, get_args, get_type_hints

from dashboard.core import run_events
from dashboard.models import RunEvent
from dashboard.web.run_page.events import describe_event
from workflows import EVENT_KINDS

CONSTRUCTED: list[dict[str, Any]] = [
    dict(run_events.run_status("queued", by="ana", action="retry")),
    dict(run_events.run_recovered(2, "worker-1")),
    dict(run_events.run_requeued("lease expired")),
    dict(run_events.run_forked("f" * 32, "c" * 32, "ana")),
    dict(
        run_events.run_migrated(
            from_version="a" * 64,
            to_version="b" * 64,
            checkpoint_id="c" * 32,
            from_checkpoint_id="d" * 32,
            changes="executors added: ['x']",
            discarded=["saved state of executor 'y', which was removed"],
            by="ana",
        )
    ),
    dict(run_events.run_hold(True, "ana", "audit")),
    dict(run_events.run_hold(False, "ana", "")),
    dict(run_events.approval_vote("r1", "ana", True, 1, 2)),
    dict(run_events.approval_decided("r1", "approved", "ana", "fine")),
    dict(run_events.approval_overdue("r1")),
    dict(
        run_events.approval_override("r1", "ada", "approve", "assigned to another user", "on call")
    ),
    dict(run_events.checkpoints_pruned(3, "keep-5", "2026-12-01T00:00:00+00:00")),
    dict(run_events.model_call("writer", "gpt-x", 120, 48, "0.000792", 1764633600.0)),
    dict(run_events.checkpoint_marker("entry", 0, "c" * 32, 900, 0)),
    dict(run_events.checkpoint_marker("superstep", 1, "d" * 32, 900, 1)),
]


def test_every_constructed_event_and_every_engine_event_is_in_the_catalogue() -> None:
    for event in CONSTRUCTED:
        assert event["type"] in run_events.RUN_EVENT_KINDS, event["type"]
    assert set(EVENT_KINDS) <= set(run_events.RUN_EVENT_KINDS)
    assert all(run_events.RUN_EVENT_KINDS[t].engine for t in EVENT_KINDS)


def test_constructors_build_exactly_their_declared_payload() -> None:
    # Each constructor's return annotation is the TypedDict its payload must match.
    for name in run_events.__all__:
        fn = getattr(run_events, name)
        if not inspect.isfunction(fn):
            continue
        declared = get_type_hints(fn)["return"]
        keys = set(get_type_hints(declared))
        types = get_args(get_type_hints(declared)["type"])
        built = [e for e in CONSTRUCTED if e["type"] in types]
        assert built, f"{name} is not exercised here"
        for event in built:
            assert set(event) <= keys and declared.__required_keys__ <= set(event), (name, event)


def test_the_log_has_its_own_sentence_for_every_dashboard_event() -> None:
    for event in CONSTRUCTED:
        data = {k: v for k, v in event.items() if k != "type"}
        row = RunEvent(seq=1, type=event["type"], data=data, created_at=dt.datetime.now(dt.UTC))
        view = describe_event(row)
        fallback = event["type"].replace("_", " ").capitalize()
        assert view.summary and view.summary != fallback, (event["type"], view.summary)
