"""Who is calling and what they may do, and the trail of what they did.

* ``authz``: roles and per-workflow grants; ``can``, ``require`` and ``visible_workflows``,
  which every service and selector checks;
* ``audit``: the audit trail (every action and every refusal) and the middleware that gives
  its entries the client's address;
* ``audit_chain``: the audit log's hash chain (sealing, ``audit_verify``);
* ``permissions``: a signed-in user's permissions in one query (an authentication backend);
* ``tokens``: API bearer tokens (the JSON API's auth in ``dashboard.api.auth`` is the only
  place they are accepted);
* ``sso``: single sign-on with OpenID Connect;
* ``lockout``: login lockout after repeated failed passwords (django-axes), audited;
* ``rate_limits``: how often one token, user, address or account may call (429 beyond);
* ``masking``: sensitive fields shown masked wherever a run's data leaves the server.
"""
