"""The demo app (label ``superstep_demo``, no models): the example workflows, the seed data
and ``manage.py demo``.

Settings install it, and the workflow registry adds ``DEMO_WORKFLOWS``, only in demo mode
(``SUPERSTEP_DEMO``, on by default wherever ``DEBUG`` is, i.e. when neither ``DATABASE_URL`` nor
``REDIS_URL`` is set); a production deployment leaves it out and registers its own workflows.

* ``workflows``: the workflow builders (refund, squares, fan-out/fan-in, ...);
* ``data``: ``seed()``, demo runs in every state, through the real services and worker;
* ``management/commands/demo.py``: migrate, demo users, seed, then serve with Daphne.
"""

# name -> dotted path of a builder, registered in demo mode (dashboard.execution.registry).
# Plain strings: reading them imports nothing, whether or not the demo app is installed.
DEMO_WORKFLOWS: dict[str, str] = {
    "refund": "dashboard.demo.workflows.build_refund",
    "squares": "dashboard.demo.workflows.build_squares",
    "fan-out-fan-in": "dashboard.demo.workflows.build_fan_out_fan_in",
    "fail-at-step": "dashboard.demo.workflows.build_fail_at_step",
    "return-replace": "dashboard.demo.workflows.build_return_replace",
    "expense-claim": "dashboard.demo.workflows.build_expense_claim",
}
