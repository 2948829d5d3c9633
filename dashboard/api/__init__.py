"""The JSON API under ``/api/``, on django-ninja: ``views`` (the operations), ``schemas`` (their
request and response shapes), ``auth`` (bearer token or session with CSRF, then the checks every
request gets), ``errors`` (one error format, the body parser) and ``urls`` (the ninja API and its
OpenAPI document at ``/api/openapi.json``). Rules live in ``dashboard.services``, reads in
``dashboard.selectors``.
"""
