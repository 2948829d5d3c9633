"""The JSON API under ``/api/``, on django-ninja. Rules live in ``dashboard.services``, reads in
``dashboard.selectors``.

* ``views``: the run, checkpoint and approval operations;
* ``alerts``, ``schedules``: the alert rule and schedule operations, mounted beside them;
* ``audit``: the audit log's export (JSON lines or CSV), for Admins;
* ``schemas``: the request and response shapes;
* ``auth``: bearer token or session with CSRF, then the checks every request gets;
* ``errors``: one error format, and the body parser;
* ``urls``: the ninja API and its OpenAPI document at ``/api/openapi.json``.
"""
