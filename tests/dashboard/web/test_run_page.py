"""The run page's presenters (``dashboard/web/run_page.py``): a failed run's own frame."""

from __future__ import annotations

from dashboard.web.run_page.detail import Frame, user_frame

TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/workflows/workflow.py", line 391, in _superstep
    await scope.run()
  File "/srv/app/dashboard/execution/worker.py", line 80, in run
    return await handler(message)
  File "/srv/orders/pricing.py", line 12, in quote
    total = price(order)
  File "/srv/orders/pricing.py", line 30, in price
    raise ValueError("no stock")
  File "/usr/lib/python3.13/asyncio/tasks.py", line 300, in __step
    result = coro.send(None)
ValueError: no stock
"""


def test_the_user_frame_is_the_innermost_outside_engine_dashboard_and_stdlib() -> None:
    assert user_frame(TRACEBACK) == Frame(
        "/srv/orders/pricing.py", 30, "price", 'raise ValueError("no stock")'
    )


def test_the_demo_workflows_are_user_code() -> None:
    text = TRACEBACK.replace("/srv/orders/pricing.py", "/srv/app/dashboard/demo/workflows.py")
    found = user_frame(text)
    assert found is not None and found.file.endswith("dashboard/demo/workflows.py")


def test_no_user_frame_without_one() -> None:
    assert user_frame("") is None
    assert user_frame(TRACEBACK.replace("/srv/orders/", "/srv/app/workflows/")) is None
