"""The runs list's rows: a finished run's row is rendered once per process and kept.

The list is the page operators keep open, and every open list reloads its table when any run
changes (the "runs-changed" signal): fifty operators make fifty renders of the same fifty rows.
Most rows are finished runs, and a finished run's row depends on nothing but the run itself: its
times are absolute, its duration runs from a fixed start to a fixed end (no "now" in it). So
each process keeps the HTML of such rows, keyed by every value the row shows; a run that
changes (a retry, a new status) gets a new key, and the old entry ages out of the bounded LRU.
Rows of runs still going (queued, running, waiting) show times relative to now and are rendered
with the page every time.

``run_list.html#run_row`` is the row's one definition: rendered inline for live runs, through
``render_to_string`` for kept ones. Anything added to the row must be added to ``_key`` too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from dashboard.models import TERMINAL_RUN_STATUSES, RunStatus, WorkflowRun
from dashboard.web.components import status_pill_html, time_html
from dashboard.web.display import cost_label, tokens_label
from dashboard.web.durations import RunDuration

__all__ = ["KEPT_ROWS", "forget_rows", "run_row"]

ROW_TEMPLATE = "dashboard/run_list.html#run_row"
KEPT_ROWS = 4096  # about 4 MB of HTML per process

_kept: OrderedDict[Hashable, SafeString] = OrderedDict()
_lock = threading.Lock()


def run_row(run: WorkflowRun, approvals: list[Any], duration: RunDuration) -> tuple[Any, ...]:
    """``(run, approvals, duration, cells, kept)`` for the template: ``cells`` are the row's
    repeated components rendered in Python (dashboard.web.components), ``kept`` the whole row's
    HTML for a finished run ("" for a live one, which the template renders)."""
    first = approvals[0] if approvals else None
    cells = {
        "status": status_pill_html(run.status),
        "started": time_html(run.started_at or run.created_at),
        "duration": time_html(duration.since, until=duration.until, mode="duration"),
        "waiting": time_html(first.created_at, mode="duration") if first else "",
        # A failed run's error, its first line: what went wrong, without opening the run.
        "error": (run.error_message or "").strip().split("\n", 1)[0][:140]
        if run.status == RunStatus.FAILED
        else "",
        "input_tokens": tokens_label(run.input_tokens),
        "output_tokens": tokens_label(run.output_tokens),
        "cost": cost_label(run.cost),
    }
    if run.status not in TERMINAL_RUN_STATUSES or approvals:
        return run, approvals, duration, cells, ""
    key = _key(run, duration)
    with _lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
            return run, approvals, duration, cells, kept
    context = {"run": run, "approvals": approvals, "duration": duration, "cells": cells}
    html = SafeString(render_to_string(ROW_TEMPLATE, context))
    with _lock:
        _kept[key] = html
        while len(_kept) > KEPT_ROWS:
            _kept.popitem(last=False)
    return run, approvals, duration, cells, html


def forget_rows() -> None:
    """Drop every kept row (tests; a deploy that changes the row restarts the process)."""
    with _lock:
        _kept.clear()


def _key(run: WorkflowRun, duration: RunDuration) -> Hashable:
    creator = run.created_by.username if run.created_by is not None else None
    return (
        run.pk,
        run.status,
        run.workflow_name,
        run.current_superstep,
        run.created_at,
        run.started_at,
        run.finished_at,
        run.error_message,
        run.parent_run_id,
        creator,
        run.schedule_id,
        run.schedule.name if run.schedule is not None else None,
        duration.since,
        duration.until,
        duration.waited_text,
        duration.waiting_since,
        duration.attempts,
        run.input_tokens,
        run.output_tokens,
        run.cost,
    )
