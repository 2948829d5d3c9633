"""The cache's values in Redis as JSON, never pickle.

Django's Redis cache pickles every value that is not an int, so anyone who can write to the
Redis the web processes share could make them run code when they read it back. What the
dashboard caches (rate-limit counters, a streaming reply's text so far, sessions when the
cache holds them) is JSON already. Ints stay as Redis integers, which ``incr`` needs; a value
JSON cannot hold is refused when it is set, with ``TypeError``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JSONSerializer"]


class JSONSerializer:
    """``OPTIONS: {"serializer": "dashboard.core.cache_json.JSONSerializer"}`` of Django's
    ``RedisCache``: the same interface as its pickling serializer."""

    def __init__(self, protocol: int | None = None) -> None:
        del protocol  # the pickling serializer's argument; JSON has no protocols

    def dumps(self, obj: Any) -> bytes | int:
        if type(obj) is int:
            return obj
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()

    def loads(self, data: bytes | int) -> Any:
        if isinstance(data, int):
            return data
        try:
            return int(data)
        except ValueError:
            return json.loads(data)
