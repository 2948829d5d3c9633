"""Who is calling: ``tokens`` (API bearer tokens; the JSON API's auth in ``dashboard.api.auth``
is the only place they are accepted).

Roles and permission checks are in ``services.authz``, the audit trail in ``services.audit``.
"""
