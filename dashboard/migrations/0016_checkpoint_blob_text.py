"""Checkpoint blobs as JSON text, compressed with lz4 where the server has it.

A blob is only ever read back whole, by digest, and parsed by the storage; as ``jsonb`` the
server parsed every 64 KiB value on every write, most of a large save's cost (measured with
tests/bench/worker_bench.py). Its text is what the digest was computed over. On PostgreSQL the
conversion rewrites the table once (``USING data::text``).

lz4 (PostgreSQL 14+, when built with it) compresses a value several times faster than the
default pglz and gives up on incompressible data as cheaply as storing it uncompressed
(``SET STORAGE EXTERNAL``), while structured state still shrinks about threefold; where the
server lacks it the column keeps the default.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

_LZ4_AVAILABLE = (
    "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
)


def _set_compression(method: str) -> Any:
    def apply(apps: Any, schema_editor: Any) -> None:
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(_LZ4_AVAILABLE)
            row = cursor.fetchone()
        if method == "lz4" and not (row and row[0]):
            return
        schema_editor.execute(
            f"ALTER TABLE dashboard_checkpointblob ALTER COLUMN data SET COMPRESSION {method}"
        )

    return apply


class Migration(migrations.Migration):
    # Written against 0012_run_trace_id; after the migrations other work added meanwhile.
    dependencies = [("dashboard", "0015_alerts")]

    operations = [
        migrations.AlterField(
            model_name="checkpointblob",
            name="data",
            field=models.TextField(),
        ),
        migrations.RunPython(_set_compression("lz4"), _set_compression("default")),
    ]
