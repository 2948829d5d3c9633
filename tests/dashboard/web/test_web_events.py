"""The event log's sentences (``dashboard/web/run_page/events.py``): what happened, in an operator's
words, never the engine's state names."""

from __future__ import annotations

import pytest

from dashboard.models import RunEvent
from dashboard.web.run_page.events import describe_event


def summary(type: str, **data: object) -> str:
    return describe_event(RunEvent(seq=1, type=type, data={"type": type, **data})).summary


@pytest.mark.parametrize(
    ("state", "said"),
    [
        ("IDLE_WITH_PENDING_REQUESTS", "Paused, waiting for approval"),
        ("IN_PROGRESS_PENDING_REQUESTS", "Running, with requests waiting for a decision"),
        ("IN_PROGRESS", "Running"),
        ("IDLE", "Finished: nothing left to do"),
        ("FAILED", "Stopped by an error"),
    ],
)
def test_engine_states_read_as_what_happened(state: str, said: str) -> None:
    assert summary("status", state=state) == said


def test_no_event_sentence_names_the_engine() -> None:
    assert "Engine" not in summary("started")
    assert "Engine" not in summary("status", state="SOMETHING_NEW")
