"""The pages that run the dashboard itself, most of them for admins.

* ``alerts``: alert rules with their incidents, and the rule form;
* ``schedules``: cron schedules with their next and last ticks, and the schedule form;
* ``retention``: retention policies with what they would delete now, the policy form, holds;
* ``storage``: checkpoint bytes and counts, the largest runs, growth over 30 days;
* ``audit``: the audit log, filtered and paged, and its CSV export;
* ``prices``: the model price table that costs agents' tokens, and its form;
* ``forms``: the forms of these pages;
* ``crud``: the form page and save that alert rules, schedules and policies share.
"""
