"""Who is calling: ``tokens`` (API bearer tokens and the middleware that authenticates them).

Roles and permission checks are in ``services.authz``, the audit trail in ``services.audit``.
"""
