"""What tests load into a real worker with ``celery worker --include celery_test_tasks``.

* ``tests.write_file``: the task of the real-worker smoke test.
* With ``DELIVER_EACH_RUN_TASK_TIMES=N`` in the worker's environment, every
  ``dashboard.execute_run`` message is delivered N times, as a broker that redelivers would
  deliver it: when the first delivery starts, the worker publishes the same message again
  (same task id, same arguments) N-1 times, the first copy at once (it reaches the other worker
  while this one runs) and each further one a little later (mid-run or after the run ended).
  Copies carry a ``redelivery`` header and are not copied again. Only the test's worker does
  this: the product publishes each message once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Task, shared_task
from celery.signals import task_prerun

RUN_TASK = "dashboard.execute_run"
DELIVERIES = "DELIVER_EACH_RUN_TASK_TIMES"
COPY_DELAY_SECONDS = 1.5


@shared_task(name="tests.write_file")
def write_file(path: str, text: str) -> None:
    Path(path).write_text(text)


@task_prerun.connect
def deliver_again(
    sender: Task[Any, Any] | None = None,
    task_id: str | None = None,
    args: tuple[Any, ...] | None = None,
    kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> None:
    times = int(os.environ.get(DELIVERIES) or 1)
    if sender is None or sender.name != RUN_TASK or times <= 1:
        return
    if sender.request.get("redelivery"):
        return
    for copy in range(1, times):
        sender.apply_async(
            args=args,
            kwargs=kwargs,
            task_id=task_id,
            headers={"redelivery": copy},
            countdown=(copy - 1) * COPY_DELAY_SECONDS,
        )
