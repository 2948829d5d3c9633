"""Reading the progress ledger out of a model's reply.

Models asked for "pure JSON" still wrap it in Markdown fences, put prose around it, or write
Python literals (``True``, ``None``). The standard manager accepts all of these, as MAF's does:
a fenced JSON object wins; otherwise the first balanced ``{...}`` (braces inside string values do
not count); then it is parsed as JSON, as JSON with Python's literals translated, and last as a
Python literal (``ast.literal_eval``, which evaluates no code).
"""

from __future__ import annotations

import ast
import contextlib
import json
from typing import Any, cast

from .helpers import extract_markdown_fence_bodies

__all__ = ["extract_json_object"]


def _first_balanced_object(text: str) -> str:
    """The first ``{...}`` of ``text`` whose braces balance outside string values.

    Raises:
        ValueError: no ``{``, or it never closes.
    """
    start = text.find("{")
    if start == -1:
        raise ValueError("No JSON object found.")
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    raise ValueError("Unbalanced JSON braces.")


def _candidate(text: str) -> str:
    for body in extract_markdown_fence_bodies(text):
        if body.startswith("{") and body.endswith("}"):
            return body
    return _first_balanced_object(text)


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object a model's reply holds (see the module docstring for what is accepted).

    Raises:
        ValueError: no object can be found or parsed.
    """
    candidate = _candidate(text)
    pythonic = candidate.replace("True", "true").replace("False", "false").replace("None", "null")
    for attempt in (candidate, pythonic):
        with contextlib.suppress(ValueError):
            value = json.loads(attempt)
            if isinstance(value, dict):
                return cast(dict[str, Any], value)
    with contextlib.suppress(ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        literal = ast.literal_eval(candidate)
        if isinstance(literal, dict):
            return cast(dict[str, Any], literal)
    raise ValueError("Unable to parse JSON from model output.")
