"""Live updates over websockets.

* ``broadcast``: what services send after a commit to the groups ``run.<id>``, ``runs`` and
  ``approvals``;
* ``consumers``: the websocket consumers that relay those messages to browsers, replaying
  missed events from the database;
* ``routing``: their URLs, mounted by dashboard/config/asgi.py.
"""
