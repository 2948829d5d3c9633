"""The Gantt geometry without a run or a database (dashboard/renderers/gantt.py): supersteps
placed as columns sized by how long they took, bars inside their column, waits as fixed-width
columns said in words, links and durations from the functions the page passes in."""

from __future__ import annotations

import pytest

from dashboard.renderers.gantt import (
    BAR_MIN,
    LABELS,
    MIN_COLUMN,
    WAIT_COLUMN,
    WIDTH,
    Gantt,
    Step,
    place,
)

T0 = 1_000_000.0


def seconds(value: float) -> str:
    return f"{value:.0f} s"


def chart(
    steps: list[Step], decided: dict[str, float] | None = None, *, live: bool = False
) -> Gantt | None:
    return place(
        steps,
        decided or {},
        live=live,
        clock=T0 + 1000,
        hidden=0,
        href=lambda checkpoint: f"/cp/{checkpoint}/",
        said=seconds,
    )


def test_place_gives_each_superstep_room_by_duration_and_fills_the_width() -> None:
    short = Step(T0, T0 + 1, "a", [{"executor": "x", "start": T0, "end": T0 + 1}])
    long = Step(T0 + 1, T0 + 4, "b", [{"executor": "y", "start": T0 + 1, "end": T0 + 4}])
    placed = chart([short, long])

    assert placed is not None
    first, second = placed.columns
    assert first.x == LABELS and [first.label, second.label] == ["1", "2"]
    room = WIDTH - LABELS - 2 * MIN_COLUMN
    assert first.width == pytest.approx(MIN_COLUMN + room / 4)
    assert second.x + second.width == pytest.approx(WIDTH)
    assert [c.href for c in placed.columns] == ["/cp/a/", "/cp/b/"]
    assert placed.executors == ["x", "y"] and [bar.row for bar in placed.bars] == [0, 1]


def test_place_keeps_a_bar_inside_its_column_and_at_least_bar_min_wide() -> None:
    step = Step(
        T0,
        T0 + 10,
        "a",
        [
            {"executor": "quick", "start": T0 + 5, "end": T0 + 5.001},
            {"executor": "late", "start": T0 + 10, "end": T0 + 10},
        ],
    )
    placed = chart([step])

    assert placed is not None
    (column,) = placed.columns
    for bar in placed.bars:
        assert bar.width >= BAR_MIN
        assert column.x <= bar.x and bar.x + bar.width <= column.x + column.width + 1e-9
    assert placed.bars[0].title == "quick · superstep 1 · took 1 ms"


def test_place_draws_a_wait_for_a_decision_as_a_column_of_its_own() -> None:
    asked = Step(T0, T0 + 1, "a", [{"executor": "ask", "start": T0, "end": T0 + 1}])
    asked.requests.append(("ask", "r1"))
    later = Step(T0 + 7201, T0 + 7202, "b", [{"executor": "go", "start": T0 + 7201}])
    placed = chart([asked, later], {"r1": T0 + 7200})

    assert placed is not None
    wait = placed.columns[1]
    assert wait.waiting and wait.width == WAIT_COLUMN and wait.label == "waited 7200 s"
    assert ("ask", "waiting") in {(bar.executor, bar.state) for bar in placed.bars}
    # The invocation that never finished in a finished run failed; in a live run it runs.
    assert placed.bars[-1].state == "failed"
    live = chart([asked, later], {"r1": T0 + 7200}, live=True)
    assert live is not None and live.bars[-1].state == "running"


def test_place_of_no_superstep_or_no_executor_is_no_chart() -> None:
    assert chart([]) is None
    assert chart([Step(T0, T0 + 1)]) is None
