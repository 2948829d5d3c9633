"""dashboard.web.run_page.timeline (lineages, resumes and forks as branches), events and cursors."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from dashboard.models import RunEvent, WorkflowRun
from dashboard.web.pagination import decode_cursor, encode_cursor
from dashboard.web.run_page.events import describe_event
from dashboard.web.run_page.timeline import Gap, Item, build_timeline, duration_label

T0 = dt.datetime(2026, 8, 21, 12, 0, tzinfo=dt.UTC)


def row(
    cid: str,
    lineage: str,
    step: int,
    previous: str | None,
    *,
    kind: str = "superstep",
    pending: int = 0,
) -> dict[str, Any]:
    return {
        "checkpoint_id": cid,
        "engine_run_id": lineage,
        "superstep": step,
        "previous_checkpoint_id": previous,
        "graph_signature_hash": "h",
        "size_bytes": 100,
        "pending_request_count": pending,
        "created_at": T0 + dt.timedelta(seconds=len(cid) + step),
        "kind": kind,
    }


def test_a_resume_is_a_branch_under_its_checkpoint_and_a_fork_links_to_its_run() -> None:
    run = WorkflowRun(status="waiting", engine_run_id="L2")
    fork = WorkflowRun(id=uuid.uuid4(), status="running", origin_checkpoint_id="c1")
    rows = [
        row("c0", "L1", 0, None, kind="entry"),
        row("c1", "L1", 1, "c0"),
        row("c2", "L1", 2, "c1"),
        row("r1", "L2", 1, "c1", kind="fork"),
        row("r2", "L2", 2, "r1", pending=1),
    ]
    timeline = build_timeline(run, rows, [fork], deployed_hash="h", selected="r2")
    assert [e.checkpoint_id for e in timeline.entries if isinstance(e, Item)] == ["c0", "c1", "c2"]
    c1 = timeline.entries[1]
    assert isinstance(c1, Item)
    resume, forked = c1.branches
    assert resume.kind == "resume" and resume.current and resume.label == "Resumed from superstep 1"
    assert [
        (e.checkpoint_id, e.marker, e.selected) for e in resume.entries if isinstance(e, Item)
    ] == [("r1", "done", False), ("r2", "waiting", True)]
    assert forked.kind == "fork" and forked.run is fork
    assert timeline.entries[2].marker == "done"  # type: ignore[union-attr]
    assert timeline.entries[0].duration is None  # type: ignore[union-attr]
    assert timeline.entries[1].duration == dt.timedelta(seconds=1)  # type: ignore[union-attr]


def test_long_lineages_are_cut_to_head_and_tail_unless_asked_for_all() -> None:
    run = WorkflowRun(status="completed", engine_run_id="L")
    rows = [row(f"c{i:04d}", "L", i, f"c{i - 1:04d}" if i else None) for i in range(200)]
    cut = build_timeline(run, rows, [], deployed_hash="other", selected="c0100")
    gaps = [e for e in cut.entries if isinstance(e, Gap)]
    assert cut.truncated and [g.count for g in gaps] == [90, 59]
    assert any(isinstance(e, Item) and e.checkpoint_id == "c0100" for e in cut.entries)
    assert all(e.mismatch for e in cut.entries if isinstance(e, Item))
    full = build_timeline(run, rows, [], deployed_hash="h", full=True)
    assert not full.truncated and len(full.entries) == 200


def test_duration_labels() -> None:
    assert [duration_label(dt.timedelta(seconds=s)) for s in (0.35, 4.25, 185, 7620)] == [
        "350 ms",
        "4.2 s",
        "3 min 05 s",
        "2 h 07 min",
    ]
    assert duration_label(None) == ""


def test_events_read_as_sentences() -> None:
    def event(kind: str, **data: Any) -> RunEvent:
        return RunEvent(seq=3, type=kind, data=data, created_at=T0)

    assert describe_event(
        event("run_status", status="queued", action="resume", superstep=2, by="ann")
    ).summary == ("Run queued (resume from superstep 2) by ann")
    failed = describe_event(
        event("executor_failed", executor_id="w", iteration=3, details={"message": "boom"})
    )
    assert (
        failed.summary == "w failed (superstep 3): boom"
        and failed.tone == "danger"
        and "boom" in failed.details
    )
    request = describe_event(
        event(
            "request_info",
            executor_id="gate",
            response_type="pkg.Decision",
            data={"$t": "model", "name": "pkg.Q", "v": {"q": 1}},
        )
    )
    assert (
        request.summary == "gate asks for a decision (Decision)"
        and '"$model": "pkg.Q"' in request.details
    )
    assert describe_event(event("executor_invoked", executor_id="w", iteration=1)).details == ""
    assert describe_event(event("my_custom", executor_id="w")).summary == "My custom · w"


def test_cursors_round_trip_and_refuse_garbage() -> None:
    pk = uuid.uuid4()
    assert decode_cursor(encode_cursor(T0, pk), uuid.UUID) == (T0, pk)
    assert decode_cursor(encode_cursor(T0, 42), int) == (T0, 42)
    for bad in ("", "!!", "W10", encode_cursor(T0, "x")):
        assert decode_cursor(bad, uuid.UUID) is None
