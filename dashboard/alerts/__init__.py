"""Alerts in the background: the periodic job that evaluates alert rules
(``dashboard.services.alert_evaluation``). Their notifications are delivered by
``dashboard.approvals``' outbox, like an approval's."""
