"""What the websockets send a browser: HTML that htmx's ws extension swaps out of band.

A message is a piece of HTML whose every top-level element carries ``hx-swap-oob``; the
extension swaps each one into the element it names, exactly as an htmx response's out-of-band
parts. Everything is rendered from the pages' own templates and partials, so a page and its
live updates never disagree. Two kinds of fragment:

* **Rendered partials**, for what looks the same to everyone allowed to open the page (the
  consumers checked that in ``connect()``): the run page's new event-log rows, its graph, and
  after events that change them its header, outcome, details and timeline, after a model
  call its conversations and its "Tokens and cost" card; its alerts card
  when an incident about the run changes; the nav's approvals badge.
* **Signals** (``base.html#live_signal``), for regions whose content depends on what this page
  asked for or who asks: the runs table (its filters and page), the inbox list and the selected
  request's status, the run's action buttons (offered by role, posted with a CSRF token). The
  region reloads itself through its own view, which applies the role checks the page applies.

The run stream's messages start with the element that carries the batch's last sequence number
(``data-seq``), which is where ``static/js/live.js`` reads it to resume and to skip repeats.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.template.loader import render_to_string

from dashboard import selectors
from dashboard.core.types import Actor
from dashboard.models import AlertIncident, RunEvent
from dashboard.selectors import alerts as alert_selectors
from dashboard.web.access import allowed_actions
from dashboard.web.run_page import detail, graph_state, sensitive
from dashboard.web.run_page.detail import TEMPLATE, summary_context, timeline_context
from dashboard.web.run_page.events import event_views
from dashboard.web.run_page.gantt import gantt_context
from dashboard.web.run_page.steps import steps_view
from dashboard.web.run_page.usage import usage_context

__all__ = [
    "APPROVALS_CHANGED",
    "REDRAW_TYPES",
    "RUNS_CHANGED",
    "RUN_CHANGED",
    "AlertsKey",
    "alerts_key",
    "approvals_update",
    "live_replies",
    "run_alerts",
    "run_update",
    "signal",
]

RUN_CHANGED = "run-changed"
RUNS_CHANGED = "runs-changed"
APPROVALS_CHANGED = "approvals-changed"
# Events after which the header, details, outcome and timeline are drawn again.
REDRAW_TYPES = frozenset(
    {
        "run_status",
        "superstep_completed",
        "checkpoint",
        "approval_decided",
        "output",
        "run_forked",
        "failed",
        "run_recovered",
        "run_requeued",
        "intermediate",
    }
)
REDRAWN_PARTIALS = ("header", "outcome", "details", "timeline", "gantt")
# Events after which the orchestration card is drawn again (a superstep start changes nothing).
ORCHESTRATION_TYPES = frozenset(selectors.ORCHESTRATION_EVENT_TYPES) - {"superstep_started"}


def signal(*names: str) -> str:
    """Names for ``#live-signals``; regions listening for ``.live-<name>`` reload themselves."""
    return render_to_string("base.html#live_signal", {"signals": names})


def run_update(run_id: uuid.UUID, events: Sequence[RunEvent], user: Actor = None) -> str:
    """What the run page gets for these new events (oldest first): their log rows on top of the
    log, the graph with each executor's state, and, after events that change them, the
    header, outcome, details and timeline. Empty when there is nothing to show."""
    run = selectors.run_get(run_id)
    if run is None or not events:
        return ""
    parts = [
        # First: live.js reads the batch's sequence number from the message's first element.
        render_to_string(
            f"{TEMPLATE}#event_rows_live",
            {"events": event_views(list(events)), "run": run, "seq": events[-1].seq},
        )
    ]
    graph, _ = graph_state.run_graph(run)
    if graph is not None:  # the page draws no graph for an unregistered workflow either
        parts.append(
            render_to_string(f"{TEMPLATE}#graph", {"run": run, "graph": graph, "oob": True})
        )
    steps = steps_view(run)
    if steps is not None:  # a functional run: its step list stands for the graph
        parts.append(
            render_to_string("components/functional_steps.html", {"steps": steps, "oob": True})
        )
    if any(event.type in REDRAW_TYPES for event in events):
        context = {
            **summary_context(run),
            **timeline_context(run),
            **gantt_context(run),
            # Per page, as the page was drawn: who watches decides which links they are offered.
            "may": allowed_actions(user, run.workflow_name),
            "oob": True,
        }
        parts += [render_to_string(f"{TEMPLATE}#{name}", context) for name in REDRAWN_PARTIALS]
        masked = {**sensitive.masked_context(run, user), "oob": True}
        parts.append(render_to_string("components/masked_fields.html", masked))
    if any(event.type == "model_call" for event in events):  # an agent's reply is in: redraw
        parts.append(
            render_to_string(
                "components/conversation.html",
                {
                    "conversations": detail.conversations(run),
                    "run_id": run.pk,
                    "checkpoint_id": detail.conversations_at(run),
                    "oob": True,
                },
            )
        )
        parts.append(render_to_string(f"{TEMPLATE}#usage", {**usage_context(run), "oob": True}))
    if any(event.type in ORCHESTRATION_TYPES for event in events):
        parts.append(
            render_to_string(
                "components/orchestration.html",
                {"orchestration": detail.orchestration_view(run), "at": None, "oob": True},
            )
        )
    return "".join(parts)


AlertsKey = tuple[tuple[int, str], ...]


def live_replies(replies: Sequence[Mapping[str, Any]]) -> str:
    """The run page's "Agents writing" card with these replies (hidden when there are none)."""
    return render_to_string("components/live_replies.html", {"replies": list(replies), "oob": True})


def alerts_key(run_id: uuid.UUID) -> AlertsKey:
    """What the run page's alerts card shows, in short: each incident and its state. A
    consumer compares it with the last one it sent to tell whether the card changed."""
    return _key(alert_selectors.run_incidents(run_id))


def run_alerts(run_id: uuid.UUID) -> tuple[str, AlertsKey]:
    """The run page's alerts card (hidden while the run has no incident), and its key."""
    incidents = alert_selectors.run_incidents(run_id)
    html = render_to_string(f"{TEMPLATE}#alerts", {"alert_incidents": incidents, "oob": True})
    return html, _key(incidents)


def _key(incidents: Sequence[AlertIncident]) -> AlertsKey:
    return tuple((incident.pk, incident.state) for incident in incidents)


def approvals_update(user: Actor = None) -> str:
    """The nav badge with the pending count every signed-in page shows (of the requests
    ``user`` may see), and the signal the inbox's list and status reload on."""
    badge = render_to_string(
        "base.html#approval_count",
        {"pending_approval_count": selectors.pending_approval_count(user), "oob": True},
    )
    return badge + signal(APPROVALS_CHANGED)
