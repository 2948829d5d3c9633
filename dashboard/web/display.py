"""Labels for the dashboard's pages. The readable form of codec JSON is the engine's
(``workflows.readable``): the engine owns its codec, so it owns how its tags read."""

from __future__ import annotations

from workflows.readable import readable, readable_checkpoint

__all__ = ["readable", "readable_checkpoint", "short_type_name"]


def short_type_name(name: str | None) -> str:
    """``pkg.module.ReturnState`` → ``ReturnState``, for labels (the full name stays in data)."""
    if not name:
        return ""
    return name.rsplit(".", 1)[-1]
