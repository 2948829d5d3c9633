"""Scanning what the server sent for sensitive values that should have been masked.

``found_in(body, values)`` is the check; ``sensitive_values(runs)`` collects, from the
database, every value that the runs' data shows masked (the masker's own record of what it
hid), so a test need not know them in advance.

Values a test puts into sensitive fields are *in play* (``in_play``) for the rest of it: every
response the Django test client receives in the dashboard tests (``tests/dashboard/conftest.py``)
and every response and websocket frame a watched browser page receives
(``tests/browser/conftest.py``) is scanned for them, and one that holds any fails the test.
Only the reveal action answers with a value: its answers are not scanned.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["IN_PLAY", "REVEAL_PATH", "found_in", "in_play", "leaked", "sensitive_values"]

# The values in play in the current test (the fixtures empty it after each test).
IN_PLAY: set[str] = set()
# Where the server answers with a value, on purpose: the reveal action's URL ends so.
REVEAL_PATH = "/reveal/"


def in_play(*values: str) -> None:
    """Scan every response from now on until the test ends for ``values``."""
    IN_PLAY.update(v for v in values if v)


def leaked(url: str, body: bytes | str) -> list[str]:
    """The values in play that ``body``, answered for ``url``, shows; none for a reveal."""
    if not IN_PLAY or url.split("?", 1)[0].endswith(REVEAL_PATH):
        return []
    return found_in(body, IN_PLAY)


# Shorter values (a card's last four digits) are checked too, but only as whole JSON or text
# tokens: "4242" must not be found inside an unrelated id.
_WORD_EDGE = "\"'<> \n\t,:;()[]{}"


def found_in(body: bytes | str, values: Iterable[str]) -> list[str]:
    """The ``values`` that ``body`` contains, each standing on its own (not inside a longer
    word or number)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    found = []
    for value in values:
        at = text.find(value)
        while at != -1:
            before = text[at - 1] if at > 0 else " "
            after = text[at + len(value)] if at + len(value) < len(text) else " "
            if before in _WORD_EDGE and after in _WORD_EDGE:
                found.append(value)
                break
            at = text.find(value, at + 1)
    return found


def sensitive_values(runs: Iterable[Any]) -> set[str]:
    """Every text value the runs' input, output and checkpoints hold in a sensitive field."""
    from dashboard.access import masking
    from dashboard.checkpoints import documents

    values: set[str] = set()
    for run in runs:
        masker = masking.for_run(run)
        masker.input(run.input)
        if run.output is not None:
            masker.output(run.output)
        for checkpoint in run.checkpoints.all():
            masker.document(documents.checkpoint_document(checkpoint))
        for original in masker.originals.values():
            values.update(_texts(original))
    return values


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield json.dumps(value)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
