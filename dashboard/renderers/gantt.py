"""The geometry of the run page's per-executor timeline: supersteps in, columns and bars out.

``dashboard/web/run_page/gantt.py`` reads a run's stored events into ``Step`` records (when
each superstep started and ended, which executor ran when, which requests it asked) and hands
them here; this module only places them, in SVG units, for ``components/gantt.html``. Links
and durations in words come in as functions, so nothing here needs a URL resolver or a clock.

Columns are as wide as their superstep lasted, with a minimum so that a 1 ms superstep stays
clickable; a wait for a decision gets a fixed width however long it took, its length said in
words, so two days of waiting do not squeeze the work into a hairline.

Numbers: a column is labelled with the superstep its events name (``Step.number``, the number
the checkpoint list shows), not its position: a resumed or retried run runs some numbers again,
and a fork starts at its checkpoint's number. The columns whose numbers ran again later are an
earlier attempt, marked so, with a band under them that says it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Bar", "Column", "Gantt", "Span", "Step", "mark_superseded", "place"]

WIDTH = 1000.0
LABELS = 150.0
ROW = 22.0
AXIS = 20.0
MIN_COLUMN = 8.0
WAIT_COLUMN = 96.0
BAR_MIN = 6.0
BAND = 16.0  # under the rows: "earlier attempt" below the columns a resume or retry replaced
# Waits shorter than this are part of the work (a resume picked up at once), not a column.
WAIT_SHOWN_AFTER = 1.0


@dataclasses.dataclass(frozen=True)
class Bar:
    executor: str
    row: int
    x: float
    width: float
    state: str  # done, failed, running, waiting
    title: str
    href: str = ""
    superseded: bool = False

    @property
    def y(self) -> float:
        return AXIS + self.row * ROW + 4


@dataclasses.dataclass(frozen=True)
class Column:
    x: float
    width: float
    label: str  # "3" for superstep 3, "waited 2 h" for a wait
    waiting: bool = False
    href: str = ""
    superseded: bool = False  # ran again later (a resume or a retry): an earlier attempt

    @property
    def title(self) -> str:
        if self.waiting:
            return self.label
        earlier = ", an earlier attempt" if self.superseded else ""
        return f"Superstep {self.label}{earlier}"


@dataclasses.dataclass(frozen=True)
class Span:
    """Columns side by side that one later attempt replaced."""

    x: float
    width: float
    label: str = "earlier attempt"

    @property
    def end(self) -> float:
        return self.x + self.width


@dataclasses.dataclass(frozen=True)
class Gantt:
    executors: list[str]
    columns: list[Column]
    bars: list[Bar]
    hidden_supersteps: int
    earlier: list[Span] = dataclasses.field(default_factory=list)

    @property
    def rows_bottom(self) -> float:
        return AXIS + len(self.executors) * ROW + 4

    @property
    def height(self) -> float:
        return self.rows_bottom + (BAND if self.earlier else 0.0)

    @property
    def band_y(self) -> float:
        return self.rows_bottom + BAND - 4

    @property
    def rows(self) -> list[tuple[str, float]]:
        return [(name, AXIS + i * ROW + 15) for i, name in enumerate(self.executors)]

    width = WIDTH
    label_width = LABELS


@dataclasses.dataclass
class Step:
    """One superstep as it ran (Unix seconds): its invocations are ``{"executor", "start"}``
    dicts, with ``"end"`` and ``"failed"`` once the executor finished; its requests are
    ``(executor, request id)`` pairs."""

    started: float
    ended: float | None = None
    checkpoint_id: str = ""
    invocations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    requests: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    number: int | None = None  # as its events name it; None: counted by position
    superseded: bool = False


def mark_superseded(steps: Sequence[Step]) -> None:
    """A superstep whose number ran again later belongs to an attempt a resume or retry
    replaced."""
    lowest_later: int | None = None
    for step in reversed(steps):
        if step.number is None:
            continue
        step.superseded = lowest_later is not None and step.number >= lowest_later
        lowest_later = step.number if lowest_later is None else min(lowest_later, step.number)


def place(
    steps: Sequence[Step],
    decided: Mapping[str, float],
    *,
    live: bool,
    clock: float,
    hidden: int,
    href: Callable[[str], str],
    said: Callable[[float], str],
) -> Gantt | None:
    """The chart of ``steps`` (None when no executor ran yet).

    ``decided`` says when each request was decided; ``live`` whether the run may still go on
    (an unfinished invocation is then running, else failed); ``clock`` is now; ``hidden`` how
    many supersteps came before the first shown; ``href`` the link of a checkpoint id;
    ``said`` a number of seconds in words.
    """
    if not steps:
        return None
    executors: list[str] = []
    for step in steps:
        for call in step.invocations:
            if call["executor"] not in executors:
                executors.append(call["executor"])
        for executor, _ in step.requests:
            if executor not in executors:
                executors.append(executor)
    if not executors:
        return None

    # Columns in order: ("step", superstep, its seconds, "") or ("wait", the superstep that
    # asked, seconds waited, what to say).
    plan: list[tuple[str, Step, float, str]] = []
    for i, step in enumerate(steps):
        last_end = max([c.get("end", step.started) for c in step.invocations] + [step.started])
        end = step.ended or (clock if live and i == len(steps) - 1 else last_end)
        step.ended = max(end, step.started)
        plan.append(("step", step, max(step.ended - step.started, 1e-6), ""))
        if step.requests:
            following = steps[i + 1].started if i + 1 < len(steps) else None
            answered = [decided[r] for _, r in step.requests if r in decided]
            until = following or (max(answered) if answered else clock)
            waited = until - step.ended
            if waited >= WAIT_SHOWN_AFTER or following is None:
                pending = following is None and not answered
                text = f"{'waiting' if pending else 'waited'} {said(max(waited, 0))}"
                plan.append(("wait", step, waited, text))

    work = sum(seconds for kind, _, seconds, _ in plan if kind == "step")
    waits = sum(1 for kind, *_ in plan if kind == "wait")
    room = WIDTH - LABELS - waits * WAIT_COLUMN
    steps_count = len(steps)
    # Every superstep gets its minimum; the rest of the room goes by duration.
    share = max(room - steps_count * MIN_COLUMN, 0.0)
    x = LABELS
    columns: list[Column] = []
    bars: list[Bar] = []
    row_of = {name: i for i, name in enumerate(executors)}
    for kind, step, seconds, text in plan:
        if kind == "wait":
            columns.append(Column(x, WAIT_COLUMN, text, waiting=True, superseded=step.superseded))
            for executor, _ in step.requests:
                bars.append(
                    Bar(
                        executor,
                        row_of[executor],
                        x + 2,
                        WAIT_COLUMN - 4,
                        "waiting",
                        f"{executor} {text} for a decision",
                        superseded=step.superseded,
                    )
                )
            x += WAIT_COLUMN
            continue
        width = MIN_COLUMN + (share * seconds / work if work > 0 else share / steps_count)
        link = href(step.checkpoint_id) if step.checkpoint_id else ""
        number = (
            step.number
            if step.number is not None
            else len([c for c in columns if not c.waiting]) + 1 + hidden
        )
        columns.append(Column(x, width, str(number), href=link, superseded=step.superseded))
        span = seconds
        for call in step.invocations:
            start = call["start"]
            end = call.get("end")
            state = (
                "failed"
                if call.get("failed")
                else "done"
                if end is not None
                else ("running" if live else "failed")
            )
            finish: float = end if end is not None else (step.ended or step.started)
            left = x + (start - step.started) / span * width if span > 0 else x
            right = x + (finish - step.started) / span * width if span > 0 else x + width
            left = min(max(left, x), x + width - BAR_MIN)
            length = max(min(right, x + width) - left, BAR_MIN)
            took = (
                f"{(finish - start) * 1000:.0f} ms" if finish - start < 1 else said(finish - start)
            )
            verb = {"done": "took", "failed": "failed after", "running": "running for"}[state]
            bars.append(
                Bar(
                    call["executor"],
                    row_of[call["executor"]],
                    left,
                    length,
                    state,
                    f"{call['executor']} · superstep {number}"
                    f"{' (earlier attempt)' if step.superseded else ''} · {verb} {took}",
                    link,
                    superseded=step.superseded,
                )
            )
        x += width
    return Gantt(executors, columns, bars, hidden, _earlier(columns))


def _earlier(columns: list[Column]) -> list[Span]:
    spans: list[Span] = []
    for column in columns:
        if not column.superseded:
            continue
        last = spans[-1] if spans else None
        if last is not None and abs(last.x + last.width - column.x) < 1e-6:
            spans[-1] = Span(last.x, last.width + column.width)
        else:
            spans.append(Span(column.x, column.width))
    return spans
