"""The demo app (label ``superstep_demo``, no models): the example workflows, the seed data
and ``manage.py demo``.

Settings install it, and the workflow catalog adds its workflows (by dotted path,
``dashboard.catalog.sources.DEMO_WORKFLOWS``), only in demo mode
(``SUPERSTEP_DEMO``, on by default wherever ``DEBUG`` is, i.e. when neither ``DATABASE_URL`` nor
``REDIS_URL`` is set); a production deployment leaves it out and registers its own workflows.

* ``apps``: its app config;
* ``workflows``: the workflow builders (refund, squares, fan-out/fan-in, ...);
* ``agents``: the agent workflows (a research report, a support refund, a handoff triage, a
  Magentic team with plan review) on an offline model;
* ``planner``: the Magentic team's checklist manager, which needs no model;
* ``functional``: the functional (``@workflow`` / ``@step``) order pipeline;
* ``disputes``: a card dispute whose customer details are sensitive, masked on every page;
* ``data``: ``seed()``, demo runs in every state, through the real services and worker;
* ``management/commands/demo.py``: migrate, demo users, seed, then serve with Daphne.
"""
