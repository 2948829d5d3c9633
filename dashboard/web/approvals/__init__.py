"""The approvals inbox: pending requests, the decision form, and the archive of decisions.

* ``views``: the inbox (live), assigning, claiming and deciding, one or many, and the archive;
* ``forms``: the inbox's filters and the decision's reason;
* ``request_summary``: what a request asks, as short lines for the panel and the inbox list;
* ``tool_call``: an agent's tool call: its function, arguments form and conversation;
* ``message_request``: the orchestrations' own requests (handoff reply, plan, agent review).
"""
