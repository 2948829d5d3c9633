"""What runs' agents used of their models: per executor and model of one run (from its
``model_call`` events), and the totals of the runs a filter matches (from the runs' own
columns, which each superstep's commit adds to: no event is read)."""

from __future__ import annotations

import dataclasses
import uuid
from decimal import Decimal

from django.db.models import BigIntegerField, Count, DecimalField, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from dashboard.models import RunEvent
from dashboard.selectors.runs import RunFilters, filtered_runs

__all__ = ["ModelUsageRow", "UsageTotals", "run_usage", "usage_totals"]

_COST = DecimalField(max_digits=18, decimal_places=6)


@dataclasses.dataclass(frozen=True)
class ModelUsageRow:
    """The calls one executor of a run made to one model. ``cost`` is None when none of them
    was priced (the model had no price when they were committed)."""

    executor_id: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal | None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def run_usage(run_id: uuid.UUID) -> list[ModelUsageRow]:
    """The run's model calls summed per executor and model, in one grouped query, dearest
    first (then by executor and model)."""
    grouped = (
        RunEvent.objects.filter(run_id=run_id, type="model_call")
        .values(executor=KT("data__executor_id"), model_name=KT("data__model"))
        .annotate(
            calls=Count("id"),
            input_sum=Sum(Cast(KT("data__input_tokens"), BigIntegerField())),
            output_sum=Sum(Cast(KT("data__output_tokens"), BigIntegerField())),
            # Unpriced calls hold a JSON null, which SQLite's KT reads as the text "null".
            cost_sum=Sum(Cast(KT("data__cost"), _COST), filter=~Q(data__cost=None)),
        )
        .order_by()
    )
    rows = [
        ModelUsageRow(
            executor_id=str(row["executor"] or ""),
            model=str(row["model_name"] or ""),
            calls=row["calls"],
            input_tokens=int(row["input_sum"] or 0),
            output_tokens=int(row["output_sum"] or 0),
            cost=None if row["cost_sum"] is None else Decimal(row["cost_sum"]),
        )
        for row in grouped
    ]
    rows.sort(key=lambda row: (-(row.cost or 0), row.executor_id, row.model))
    return rows


@dataclasses.dataclass(frozen=True)
class UsageTotals:
    runs: int
    input_tokens: int
    output_tokens: int
    cost: Decimal

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def usage_totals(filters: RunFilters) -> UsageTotals:
    """The tokens and cost of every run ``filters`` match, summed in one query."""
    found = (
        filtered_runs(filters)
        .order_by()
        .aggregate(
            runs=Count("id"),
            input_tokens=Coalesce(Sum("input_tokens"), 0),
            output_tokens=Coalesce(Sum("output_tokens"), 0),
            cost=Coalesce(Sum("cost"), Decimal(0), output_field=_COST),
        )
    )
    return UsageTotals(
        runs=found["runs"],
        input_tokens=int(found["input_tokens"]),
        output_tokens=int(found["output_tokens"]),
        cost=Decimal(found["cost"]),
    )
