"""One run's page and what it is built from, for the page and for its live updates alike.

* ``views``: the run page, its actions, its event log page, its sub-workflow panel, cancel and
  retry;
* ``detail``: the page's pieces (summary, graph, timeline), rendered the same way by the page
  and by the run websocket;
* ``events``: a run event as one readable line of the log;
* ``event_log``: the event log page's filters, grouping by superstep and density;
* ``gantt``: the per-executor timeline, from the run's stored events;
* ``graph_state``: which state each executor is in, for the coloured graph;
* ``subworkflows``: a sub-workflow node opening onto its inner graph and state;
* ``timeline``: the run's checkpoints as a timeline with branches;
* ``previews``: what an action will do, in words, for its confirmation dialog;
* ``usage``: the tokens and cost card, per executor and model;
* ``sensitive``: the sensitive-fields card and revealing one field (audited);
* ``steps``: a functional run's steps in call order, replayed or computed;
* ``version_panel``: which version the run executes on, and what a migration would lose;
* ``versions``: the version panel's views and the page of runs that need migration.
"""
