"""The run page's "Tokens and cost" card: the run's totals (its own columns) and a row per
executor and model (its ``model_call`` events summed in one query, ``selectors.run_usage``).

Drawn with the page, and again by the run's websocket after each batch of events with a model
call in it (``dashboard.web.live.fragments.run_update``), so the figures grow as the agents
answer. A run whose agents have not answered yet (or that has none) reads no event for it.
"""

from __future__ import annotations

from typing import Any

from dashboard import selectors
from dashboard.models import WorkflowRun
from dashboard.web.display import cost_label, tokens_label

__all__ = ["usage_context"]


def usage_context(run: WorkflowRun) -> dict[str, Any]:
    """``usage``: the card's figures, labelled; no rows for a run that made no model call."""
    used = bool(run.input_tokens or run.output_tokens)
    rows = selectors.run_usage(run.pk) if used else []
    return {
        "usage": {
            "input_tokens": tokens_label(run.input_tokens),
            "output_tokens": tokens_label(run.output_tokens),
            "cost": cost_label(run.cost),
            "priced": any(row.cost is not None for row in rows),
            "rows": [
                {
                    "executor_id": row.executor_id,
                    "model": row.model,
                    "calls": row.calls,
                    "input_tokens": tokens_label(row.input_tokens),
                    "output_tokens": tokens_label(row.output_tokens),
                    "cost": cost_label(row.cost),
                }
                for row in rows
            ],
        }
    }
