"""Live updates over websockets.

* ``broadcast``: what services send after a commit to the groups ``run.<id>``, ``runs`` and
  ``approvals``;
* ``consumers``: the websocket consumers that relay those messages, replaying missed events
  from the database: JSON for API clients, and for browser pages (``?view=html``) HTML that
  htmx's ws extension swaps out of band, rendered by ``dashboard.web.live_fragments``;
* ``routing``: their URLs, mounted by dashboard/config/asgi.py.
"""
