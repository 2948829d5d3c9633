"""Data migrations, run forwards and backwards on a real schema (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("dashboard", "0006_checkpoint_write_indexes")]
AFTER = [("dashboard", "0007_blob_uses_per_lineage")]


@pytest.fixture
def executor(transactional_db_alias: str) -> Iterator[MigrationExecutor]:
    connection = connections[transactional_db_alias]
    yield MigrationExecutor(connection)
    latest = MigrationExecutor(connection)
    latest.migrate(latest.loader.graph.leaf_nodes())


def _migrate(executor: MigrationExecutor, target: list[tuple[str, str]]) -> Any:
    executor.loader.build_graph()
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def _checkpoint(apps: Any, alias: str, checkpoint_id: str, lineage: str, digests: list[str]) -> Any:
    return (
        apps.get_model("dashboard", "Checkpoint")
        .objects.using(alias)
        .create(
            checkpoint_id=checkpoint_id,
            engine_run_id=lineage,
            workflow_name="wf",
            superstep=0,
            graph_signature_hash="g",
            document={
                "checkpoint_id": checkpoint_id,
                "blob_refs": [[["state", d], d] for d in digests],
            },
            size_bytes=10,
            created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        )
    )


def test_links_become_one_use_per_lineage_and_come_back_from_the_documents(
    executor: MigrationExecutor, transactional_db_alias: str
) -> None:
    alias = transactional_db_alias
    apps = _migrate(executor, BEFORE)
    blobs = apps.get_model("dashboard", "CheckpointBlob").objects.using(alias)
    for digest in ("d1", "d2"):
        blobs.create(digest=digest, data={}, size_bytes=2)
    for checkpoint_id, lineage, digests in (
        ("a1", "A", ["d1", "d2"]),
        ("a2", "A", ["d1"]),
        ("b1", "B", ["d1"]),
    ):
        _checkpoint(apps, alias, checkpoint_id, lineage, digests).blobs.add(*digests)

    apps = _migrate(executor, AFTER)
    uses = apps.get_model("dashboard", "CheckpointBlobUse").objects.using(alias)
    assert sorted(uses.values_list("engine_run_id", "blob_id")) == [
        ("A", "d1"),
        ("A", "d2"),
        ("B", "d1"),
    ]

    apps = _migrate(executor, BEFORE)
    links = apps.get_model("dashboard", "Checkpoint").blobs.through.objects.using(alias)
    assert sorted(links.values_list("checkpoint_id", "checkpointblob_id")) == [
        ("a1", "d1"),
        ("a1", "d2"),
        ("a2", "d1"),
        ("b1", "d1"),
    ]


BLOB_TEXT = ("dashboard", "0016_checkpoint_blob_text")


def test_blob_values_become_json_text_and_come_back(
    executor: MigrationExecutor, transactional_db_alias: str
) -> None:
    alias = transactional_db_alias
    before = sorted(
        p for p in executor.loader.graph.node_map[BLOB_TEXT].parents if p[0] == "dashboard"
    )
    apps = _migrate(executor, [before[0].key])
    value = {"items": [1, "é", None], "n": 2.5}
    apps.get_model("dashboard", "CheckpointBlob").objects.using(alias).create(
        digest="d1", data=value, size_bytes=10
    )

    _migrate(executor, [BLOB_TEXT])
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT data FROM dashboard_checkpointblob WHERE digest = 'd1'")
        (text,) = cursor.fetchone()
        if connections[alias].vendor == "postgresql":
            cursor.execute(
                "SELECT a.attcompression, (SELECT 'lz4' = ANY(enumvals) FROM pg_settings"
                " WHERE name = 'default_toast_compression') FROM pg_attribute a"
                " WHERE a.attrelid = 'dashboard_checkpointblob'::regclass AND a.attname = 'data'"
            )
            compression, lz4 = cursor.fetchone()
            assert compression == ("l" if lz4 else "")
    assert isinstance(text, str) and json.loads(text) == value

    apps = _migrate(executor, [before[0].key])
    blob = apps.get_model("dashboard", "CheckpointBlob").objects.using(alias).get(digest="d1")
    assert blob.data == value


TOKENS_BEFORE = [("dashboard", "0023_audit_seals")]
TOKENS_AFTER = [("dashboard", "0024_api_token_scopes_expiry")]


def test_existing_api_tokens_keep_every_scope_and_no_expiry(
    executor: MigrationExecutor, transactional_db_alias: str
) -> None:
    """Tokens made before scopes existed work as they did: every scope there was then (still
    bounded by their user's roles; not ``reveal``, which came later and must be asked for)
    and no expiry, which marks "created before expiry existed"."""
    alias = transactional_db_alias
    old = _migrate(executor, TOKENS_BEFORE).get_model("dashboard", "ApiToken")
    user = User.objects.db_manager(alias).create_user("legacy")
    old.objects.using(alias).create(user_id=user.pk, name="old", key_hash="h" * 64)

    new = _migrate(executor, TOKENS_AFTER).get_model("dashboard", "ApiToken")

    token = new.objects.using(alias).get()
    assert token.scopes == ["read", "operate", "decide", "admin"]
    assert token.expires_at is None and token.revoked_by_id is None
