"""Migration 0024 (API token scopes and expiry) on a real schema, SQLite and PostgreSQL: a
token that existed before keeps every scope and gets no expiry ("created before expiry")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from dashboard.access import tokens

BEFORE = [("dashboard", "0023_audit_seals")]
AFTER = [("dashboard", "0024_api_token_scopes_expiry")]


@pytest.fixture
def executor(transactional_db_alias: str) -> Iterator[MigrationExecutor]:
    connection = connections[transactional_db_alias]
    yield MigrationExecutor(connection)
    latest = MigrationExecutor(connection)
    latest.migrate(latest.loader.graph.leaf_nodes())


def test_existing_tokens_keep_every_scope_and_no_expiry(
    executor: MigrationExecutor, transactional_db_alias: str
) -> None:
    alias = transactional_db_alias
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    old = executor.loader.project_state(BEFORE).apps.get_model("dashboard", "ApiToken")
    user = User.objects.db_manager(alias).create_user("legacy")
    old.objects.using(alias).create(user_id=user.pk, name="old", key_hash="h" * 64)

    executor.migrate(AFTER)
    executor.loader.build_graph()
    new = executor.loader.project_state(AFTER).apps.get_model("dashboard", "ApiToken")

    token = new.objects.using(alias).get()
    assert token.scopes == list(tokens.SCOPES)
    assert token.expires_at is None and token.revoked_by_id is None
