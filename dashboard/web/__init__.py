"""Presentation helpers for the dashboard: graph layout, JSON diff, CSP, context processors."""
