"""The "Runs" section: the list of runs and what acts on it.

* ``views``: the runs list (filters, sort, keyset pages; live) and the "Start run" form;
* ``forms``: the list's filter form;
* ``filters``: the list's filters read from a query string, by the list and the bulk actions;
* ``rows``: a row of the list, kept once its run has finished;
* ``bulk``: one action on every run matching the filters: review, confirm, progress;
* ``saved``: saved views of the list (pinned, shared, opened by link);
* ``compare``: two runs side by side, what differs in their facts, data and checkpoints;
* ``compare_page``: the page that shows them, asking for the second run when one is given.
"""
