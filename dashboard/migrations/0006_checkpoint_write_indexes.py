"""Drop indexes that every checkpoint save maintains and no query uses (PostgreSQL only).

Every superstep inserts one checkpoint row and one link row per shared blob, so each index on
those tables is paid for on the hot path. Django adds, on PostgreSQL:

* a ``varchar_pattern_ops`` (``_like``) index beside every indexed text key, for ``LIKE``
  lookups; checkpoint ids and blob digests are only ever compared for equality;
* a single-column index on the link table's ``checkpoint_id``, which the unique
  ``(checkpoint_id, checkpointblob_id)`` index already serves as its leading column.

The model state is unchanged (Django does not track these indexes by name); reversing the
migration creates them again under the names Django gives them.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

# (table, column, suffix): suffix "_like" is a pattern-ops index, "" the plain one.
UNUSED = (
    ("dashboard_checkpoint", "checkpoint_id", "_like"),
    ("dashboard_checkpointblob", "digest", "_like"),
    ("dashboard_checkpoint_blobs", "checkpoint_id", "_like"),
    ("dashboard_checkpoint_blobs", "checkpointblob_id", "_like"),
    ("dashboard_checkpoint_blobs", "checkpoint_id", ""),
)


def _name(schema_editor: Any, table: str, column: str, suffix: str) -> str:
    return str(schema_editor._create_index_name(table, [column], suffix=suffix))


def drop_unused(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, column, suffix in UNUSED:
        name = schema_editor.quote_name(_name(schema_editor, table, column, suffix))
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


def create_again(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, column, suffix in UNUSED:
        name = schema_editor.quote_name(_name(schema_editor, table, column, suffix))
        ops = " varchar_pattern_ops" if suffix == "_like" else ""
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {schema_editor.quote_name(table)} "
            f"({schema_editor.quote_name(column)}{ops})"
        )


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0005_run_input_trigram")]

    operations = [migrations.RunPython(drop_unused, create_again)]
