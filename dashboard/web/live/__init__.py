"""The pages' live updates: websocket consumers, their routes, and the HTML they send.

* ``consumers``: check access, join a group, relay what ``dashboard.broadcast`` sent after a
  commit, replaying missed events from the database;
* ``routing``: their URLs, mounted by dashboard/config/asgi.py;
* ``fragments``: the HTML a browser page gets, rendered from the pages' own templates and
  partials for htmx's ws extension to swap out of band.
"""
