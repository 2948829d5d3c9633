"""The operator's pages (server-rendered, htmx), one folder per section of the navigation bar,
and the helpers every page shares at the root. Renderers that need no Django (graph layout,
diffs, Gantt geometry) live apart, in ``dashboard.renderers``.

* ``runs``: the runs list, starting a run, bulk actions, saved views, comparing two runs;
* ``run_page``: one run: its graph, timeline, Gantt, event log, sub-workflows and versions;
* ``checkpoints``: the checkpoint inspector and the fork editor;
* ``approvals``: the approval inbox, deciding, and the archive;
* ``operations``: alerts, schedules, retention, storage and the audit log;
* ``tokens``: a user's API tokens (everyone's for an Admin), from the account menu;
* ``live``: the websocket consumers and the HTML fragments they send;
* ``urls``, ``urls_auth``: the pages' URLs, and sign-in's at the root;
* ``views_auth``: sign in and out, and single sign-on's button;
* ``access``: who may open a page, and how htmx learns to sign in again;
* ``forms``: forms generated from a JSON schema, and the fields and helpers pages share (a
  form of one section lives in its folder);
* ``components``, ``display``, ``timefmt``, ``durations``: how a status, a type name, a time
  and a run's time at work read on every page;
* ``conflicts``: what a refused action tells the person who tried it;
* ``pagination``: keyset cursors in the URL and the page object;
* ``csp``: the Content-Security-Policy;
* ``context_processors``: what every template gets.
"""
