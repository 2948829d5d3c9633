"""Sensitive fields a workflow's registration names by JSON path.

A registration may declare, beside its builder, the places in a run's data that hold
sensitive values (``dashboard.access.masking`` masks them)::

    WORKFLOWS = {
        "refund": {
            "builder": build_refund,
            "sensitive": ["$.input.customer.email", "$.state.card", "$.executors.billing.iban"],
        },
    }

A path starts at one of four roots: ``$.input`` (the run's input), ``$.output`` (its output),
``$.state`` (shared state) or ``$.executors`` (the executors' saved state, by executor id).
Then come field names, ``*`` for every key, ``[*]`` for every item of a list and ``[N]`` for one
item. A model (dataclass or pydantic) is stepped through by its field names, as the program
sees it. A path points at places; to mask a value wherever it travels (messages, requests,
events), mark its field on the type instead (``workflows.Sensitive``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ROOTS", "SensitivePath", "SensitivePathError", "parse_path"]

ROOTS = ("input", "output", "state", "executors")
_SEGMENT = re.compile(r"\.(\*|[A-Za-z_][\w-]*)|\[(\*|\d+)\]")


class SensitivePathError(ValueError):
    """A sensitive path that cannot be read; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class SensitivePath:
    """``$.state.customer.email`` as its root ("state") and the steps below it
    (``("customer", "email")``); a list step is ``"[*]"`` or ``"[3]"``."""

    text: str
    root: str
    steps: tuple[str, ...]


def parse_path(text: object) -> SensitivePath:
    """Raises SensitivePathError unless ``text`` is a path of the form above."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise SensitivePathError(
            f"{text!r} is not a sensitive path: write it like '$.input.customer.email'"
        )
    steps: list[str] = []
    at = 1
    while at < len(text):
        found = _SEGMENT.match(text, at)
        if found is None:
            raise SensitivePathError(
                f"{text!r}: cannot read {text[at:]!r} (use .name, .*, [*] or [N])"
            )
        name, index = found.groups()
        steps.append(name if name is not None else f"[{index}]")
        at = found.end()
    if not steps or steps[0] not in ROOTS:
        raise SensitivePathError(
            f"{text!r} must start with one of " + ", ".join(f"$.{root}" for root in ROOTS)
        )
    if steps[0] == "executors" and len(steps) < 2:
        raise SensitivePathError(f"{text!r} must name an executor id (or *) after $.executors")
    return SensitivePath(text, steps[0], tuple(steps[1:]))
