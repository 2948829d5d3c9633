"""The Redis cache stores JSON, never pickle: what another process wrote there is read back
as data, and a counter stays a Redis integer that ``incr`` counts."""

from __future__ import annotations

import uuid

import pytest
import redis
from django.core.cache import caches
from django.test import override_settings

from dashboard.core.cache_json import JSONSerializer


def test_values_round_trip_as_json_and_ints_stay_integers() -> None:
    serializer = JSONSerializer()
    assert serializer.dumps(7) == 7
    for value in ({"reply": "Hello", "n": [1, 2.5, None, True]}, "12", 1.5, False, "héllo"):
        assert serializer.loads(serializer.dumps(value)) == value
    with pytest.raises(TypeError):
        serializer.dumps({1, 2})  # not JSON: refused when set, never pickled
    with pytest.raises(ValueError):
        serializer.dumps(float("nan"))


@pytest.mark.redis
def test_the_redis_cache_writes_json_that_any_reader_can_check(redis_url: str) -> None:
    settings = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_url,
        "OPTIONS": {"serializer": "dashboard.core.cache_json.JSONSerializer"},
        "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
    }
    with override_settings(CACHES={"default": settings}):
        cache = caches["default"]
        cache.set("replies", {"r1": {"text": "so far"}}, 30)
        cache.add("counter", 1, 30)
        assert cache.incr("counter") == 2
        raw = redis.Redis.from_url(redis_url).get(cache.make_key("replies"))
        assert raw == b'{"r1":{"text":"so far"}}'
        assert cache.get("replies") == {"r1": {"text": "so far"}}
        cache.delete_many(["replies", "counter"])
