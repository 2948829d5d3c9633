"""The fork editor's page as a test reads and posts it: where a checkpoint's page is, and the
editor's fields as a browser would post them, with some of them changed."""

from __future__ import annotations

import html as markup
import re

from dashboard.models import Checkpoint, WorkflowRun

__all__ = ["form_of", "page_url", "post_data"]


def page_url(run: WorkflowRun, superstep: int) -> str:
    checkpoint = (
        Checkpoint.objects.filter(run=run, superstep=superstep).order_by("created_at").first()
    )
    assert checkpoint is not None
    return f"/runs/{run.pk}/checkpoints/{checkpoint.checkpoint_id}/"


def form_of(html: str) -> dict[str, str]:
    """The editor's fields as the browser would post them untouched, by document path."""
    found = {}
    for name, path in re.findall(r'name="(f\d+)"[^>]*data-fork-field="([^"]+)"', html):
        found[path] = name
    return found


def post_data(html: str, **changes: str) -> dict[str, str]:
    names = form_of(html)
    values = dict(re.findall(r'name="(f\d+)"[^>]*>\n(.*?)</textarea>', html, re.DOTALL))
    values.update(re.findall(r'name="(f\d+)" value="([^"]*)"', html))
    data = {name: markup.unescape(values.get(name, "")) for name in names.values()}
    data.update({names[path.replace("__", ".")]: value for path, value in changes.items()})
    data["reason"] = "Trying the edited state"  # a fork is refused without one
    return data
