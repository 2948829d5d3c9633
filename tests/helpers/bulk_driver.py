"""A process that asks for a bulk action, for the bulk fault test: production settings against
the database of ``DATABASE_URL``, publishing to the broker of ``REDIS_URL`` as Daphne would.
Prints one JSON value on its last line::

    python bulk_driver.py seed N           # an Operator "ops" and N waiting runs -> {"runs": N}
    python bulk_driver.py start ACTION     # ACTION on every run, as ops -> the bulk action's id

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import django


def seed(count: str) -> dict[str, int]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone

    from dashboard.models import RunStatus, WorkflowRun

    ops = get_user_model().objects.create_user("ops")
    ops.groups.add(Group.objects.get(name="Operator"))
    moment = timezone.now()
    WorkflowRun.objects.bulk_create(
        [
            WorkflowRun(
                workflow_name="squares",
                input={"limit": 1},
                status=RunStatus.WAITING,
                engine_run_id=uuid.uuid4().hex,
                created_at=moment,
                started_at=moment,
            )
            for _ in range(int(count))
        ],
        batch_size=1000,
    )
    return {"runs": WorkflowRun.objects.count()}


def start(action: str) -> str:
    from django.contrib.auth import get_user_model

    from dashboard.models import WorkflowRun
    from dashboard.services import bulk

    ops = get_user_model().objects.get(username="ops")
    run_ids = list(WorkflowRun.objects.order_by("created_at", "pk").values_list("pk", flat=True))
    started = bulk.bulk_start(action, run_ids, user=ops, reason="fault test")
    return str(started.pk)


COMMANDS: dict[str, Any] = {"seed": seed, "start": start}

if __name__ == "__main__":
    django.setup()
    command, *arguments = sys.argv[1:]
    print(json.dumps(COMMANDS[command](*arguments)), flush=True)
