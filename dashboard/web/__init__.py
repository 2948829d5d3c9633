"""The operator's pages (server-rendered, htmx): views by page (``views_runs``,
``views_run_detail``, ``views_checkpoints``, ``views_approvals``, ``views_storage``,
``views_auth``), their ``urls``, what the websockets send the pages (``live_fragments``), and
presentation helpers (graph layout and state, timeline, event rendering, JSON diff, forms,
pagination, CSP, context processors).
"""
