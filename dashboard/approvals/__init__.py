"""Approval notifications (the approval rules, decisions and sweeps are in
``services.approvals``; reads in ``selectors.approvals``; pages in ``web.views_approvals``).

* ``notifications``: sending one email or signed webhook, and which ones are due for a retry;
* ``tasks``: the Celery task that delivers them, its periodic retry, and the notification
  sender plugged into ``services.dispatch``.
"""
