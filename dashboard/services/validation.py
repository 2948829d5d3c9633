"""Text and JSON from outside, refused before anything is stored when it cannot be.

PostgreSQL stores neither NUL characters (text or jsonb) nor lone UTF-16 surrogates
(``"\\ud800"``: not Unicode text at all, so it cannot even be encoded to UTF-8), and JSON has no
NaN or infinities (Django's JSON encoder writes them as ``NaN``, which jsonb refuses). Such
values reach the dashboard as JSON escapes (``"\\ud800"``, ``"\\u0000"``), as the constants
Python's parser accepts (``NaN``, ``Infinity``), as numbers too large for a float (``1e309``),
and through coercion (``"NaN"`` for a float field). Left alone they fail in the database or the
encoder, after part of the work is done, as a 500.

``parse_json`` reads JSON text keeping those numbers as markers, and ``unstorable`` finds the
first offending value and its path, so every refusal names the field. The engine's codec makes
the same refusals when it decodes checkpoint text (``workflows.storage.loads``); it stops at
the first one without saying where, which a checkpoint needs and a form field does not.
"""

from __future__ import annotations

import json
import math
import re
from typing import Final

from dashboard.core.errors import InvalidInput
from dashboard.core.types import Actor, is_user

__all__ = [
    "MAX_REASON",
    "UnstorableNumber",
    "parse_json",
    "printable",
    "reason_for",
    "require_storable",
    "unstorable",
]

# An operator's reason for an action: kept whole in the history up to this length.
MAX_REASON = 2000

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNPRINTABLE: Final = re.compile("[\x00\ud800-\udfff]")


class UnstorableNumber:
    """What ``parse_json`` puts where the text had ``NaN``, ``Infinity``, ``-Infinity`` or a
    number that overflows a float; ``unstorable`` reports it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"UnstorableNumber({self.text!r})"


def _finite_float(text: str) -> float | UnstorableNumber:
    value = float(text)
    return value if math.isfinite(value) else UnstorableNumber(text)


def parse_json(text: str | bytes) -> object:
    """JSON text as Python values, NaN/Infinity and overflowing numbers as ``UnstorableNumber``.

    Raises:
        ValueError: not JSON (``UnicodeDecodeError`` for bytes that are not UTF-8 is one).
        RecursionError: nested too deeply for the parser.
    """
    return json.loads(text, parse_constant=UnstorableNumber, parse_float=_finite_float)


def printable(text: str) -> str:
    """``text`` with NUL and lone surrogates written as escapes, safe to show and to encode."""
    return _UNPRINTABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character, which cannot be stored"
    found = _SURROGATE.search(text)
    if found is not None:
        return (
            f"contains a lone surrogate (\\u{ord(found.group()):04x}), which is not valid "
            "Unicode text"
        )
    return None


def _number_problem(value: object) -> str | None:
    if isinstance(value, UnstorableNumber):
        return f"{printable(value.text)[:40]} is not a finite JSON number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite JSON number"
    return None


def unstorable(value: object) -> tuple[str, str] | None:
    """The dotted path (``items.0.name``; "" for ``value`` itself) and the problem of the first
    string, key or number in ``value`` that cannot be stored, or None when there is none.

    Walks dicts, lists and tuples of JSON values (what parsers and ``to_json`` produce); other
    objects are not looked into.
    """
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                return path, problem
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                where = _join(path, printable(str(key)))
                if isinstance(key, str) and (problem := _text_problem(key)) is not None:
                    return where, f"the key {problem}"
                children.append((where, child))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            indexed = [(_join(path, str(index)), child) for index, child in enumerate(item)]
            stack.extend(reversed(indexed))
        elif (problem := _number_problem(item)) is not None:
            return path, problem
    return None


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def require_storable(value: object, *, field: str | None = None) -> None:
    """Refuse ``value`` when ``unstorable`` finds anything in it.

    With ``field`` (a request field such as ``reason``), ``errors`` names that field and the
    message the path inside it; without, ``errors`` is keyed by the path inside ``value``,
    like ``catalog.InputError`` (``items.0.name``), so forms put it beside their own field.

    Raises:
        InvalidInput: naming the field and what is wrong with it.
    """
    found = unstorable(value)
    if found is None:
        return
    path, problem = found
    if field is None:
        key = path or "__root__"
        raise InvalidInput(f"{path or 'the value'}: {problem}", errors={key: problem})
    where = _join(field, path)
    raise InvalidInput(
        f"{where}: {problem}", errors={field: f"{path}: {problem}" if path else problem}
    )


def reason_for(action: str, reason: object, *, user: Actor, required: bool = True) -> str:
    """``reason`` as stored: checked like any text a database keeps, trimmed, bounded, and,
    when ``required``, not empty for a person (a user or an API token's user). The README
    promises every action an operator takes is audited with the reason they gave; the
    system (schedules, sweepers) acts for reasons of its own and gives none. Services ask
    for it after finding the object and checking its state, so an unknown id is still a 404
    and an illegal transition a 409, whatever the reason.

    Raises:
        InvalidInput: ``errors["reason"]`` says what is wrong with it (missing, too long...).
    """
    if not isinstance(reason, str):
        raise InvalidInput("a reason is text", errors={"reason": "must be text"})
    require_storable(reason, field="reason")
    reason = reason.strip()
    if len(reason) > MAX_REASON:
        raise InvalidInput(
            f"a reason is at most {MAX_REASON} characters",
            errors={"reason": f"at most {MAX_REASON}"},
        )
    if required and not reason and is_user(user):
        raise InvalidInput(
            f"say why: a reason is required to {action}", errors={"reason": "required"}
        )
    return reason
