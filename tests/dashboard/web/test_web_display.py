"""dashboard.web.display: labels; the readable form itself is tested with the engine."""

from __future__ import annotations

from dashboard.web.display import short_type_name


def test_short_type_name_keeps_the_class_name() -> None:
    assert short_type_name("pkg.mod.ReturnState") == "ReturnState"
    assert short_type_name(None) == ""
