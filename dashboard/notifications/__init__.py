"""Telling people: notifications about approval requests and alert incidents, sent by email,
Slack or signed webhook, with their retries, and the periodic alert evaluation that opens the
incidents. What is decided (approval rules, incidents) lives in ``services``; this layer only
delivers, above the services that write the ``Notification`` rows in their transactions.
"""
