"""The runs list's filters read from a query string: the page itself and the actions on every
run matching them (``bulk``) read them the same way."""

from __future__ import annotations

from django.http import QueryDict

from dashboard import catalog, selectors, services
from dashboard.core.types import Actor
from dashboard.web.access import workflow_names
from dashboard.web.forms import day_start
from dashboard.web.runs.forms import RunFilterForm

__all__ = ["executor_names", "filters_from_query"]


def filters_from_query(query: QueryDict, user: Actor) -> tuple[RunFilterForm, selectors.RunFilters]:
    """The filter form and the filters it stands for; only the workflows ``user`` may see."""
    workflows = workflow_names(user)
    form = RunFilterForm(query, workflows=workflows, executors=executor_names(workflows))
    filters = selectors.RunFilters(
        status=form.value("status") or "",
        workflow=form.value("workflow") or "",
        created_from=day_start(form.value("created_from")),
        created_to=day_start(form.value("created_to"), plus_days=1),
        q=form.value("q") or "",
        workflows=services.visible_workflows(user),
        executor=form.value("executor") or "",
        trigger=form.value("trigger") or "",
        cost_min=form.value("cost_min"),
        cost_max=form.value("cost_max"),
        tokens_min=form.value("tokens_min"),
    )
    return form, filters


def executor_names(workflows: list[str]) -> list[str]:
    """The executors of these workflows' current graphs (a functional one's steps), for the
    "held up by" filter."""
    names: set[str] = set()
    for name in workflows:
        try:
            names.update(catalog.executor_ids(name))
        except catalog.UnknownWorkflowError:
            continue
    return sorted(names)
