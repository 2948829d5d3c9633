"""dashboard/catalog/build_notes.py: the engine's graph-validation notes, once per workflow
version at DEBUG when the catalog builds; the engine itself still logs them on every build."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from dashboard import catalog
from dashboard.catalog import build_notes
from dashboard.demo.workflows import build_squares


@pytest.fixture(autouse=True)
def forgotten() -> Iterator[None]:
    build_notes.forget()
    yield
    build_notes.forget()


def notes(caplog: pytest.LogCaptureFixture, logger: str) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == logger]


def test_the_catalog_logs_a_versions_notes_once_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="dashboard.catalog"):
        first = catalog.build("squares")
        catalog.build("squares")
        catalog.build("squares", version=first.graph_signature_hash)

    assert notes(caplog, "workflows.validation") == []
    (note,) = notes(caplog, "dashboard.catalog")
    assert note[0] == logging.DEBUG
    assert note[1] == (
        f"workflow 'squares', version {first.graph_signature_hash[:12]}: executor 'worker' sends"
        " to itself: without a condition or a stop the loop runs until max_iterations"
    )


def test_nothing_of_a_catalog_build_shows_at_the_default_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        for name in catalog.names():
            catalog.build(name)

    assert caplog.records == []


def test_the_engine_still_logs_its_notes_on_every_build_outside_the_catalog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        build_squares()
        build_squares()

    sent_to_itself = [m for level, m in notes(caplog, "workflows.validation") if "itself" in m]
    assert len(sent_to_itself) == 2  # as Microsoft Agent Framework warns its users
