"""A task for the real-worker smoke test (loaded with ``celery worker --include``)."""

from __future__ import annotations

from pathlib import Path

from celery import shared_task


@shared_task(name="tests.write_file")
def write_file(path: str, text: str) -> None:
    Path(path).write_text(text)
