"""Labels for the dashboard's pages. The readable form of codec JSON is the engine's
(``workflows.readable``): the engine owns its codec, so it owns how its tags read."""

from __future__ import annotations

from decimal import Decimal

from workflows.readable import readable, readable_checkpoint

__all__ = ["cost_label", "readable", "readable_checkpoint", "short_type_name", "tokens_label"]


def short_type_name(name: str | None) -> str:
    """``pkg.module.ReturnState`` → ``ReturnState``, for labels (the full name stays in data)."""
    if not name:
        return ""
    return name.rsplit(".", 1)[-1]


def tokens_label(count: int) -> str:
    """``12345`` → ``12,345``."""
    return f"{count:,}"


def cost_label(cost: Decimal | None) -> str:
    """A cost with two places at least and six at most, its trailing zeros dropped beyond two
    (``1.5`` → ``1.50``, ``0.000420`` → ``0.00042``); "—" for no cost (no priced call)."""
    if cost is None:
        return "—"
    text = f"{cost.quantize(Decimal('0.000001')):,f}"
    whole, _, places = text.partition(".")
    places = places.rstrip("0").ljust(2, "0")
    return f"{whole}.{places}"
