"""A trigram index for the runs list's text search on PostgreSQL.

The runs list searches run inputs with ``input__icontains``, which PostgreSQL runs as
``UPPER(input::text) LIKE UPPER('%term%')``: a sequential scan, about 100 ms at 100,000 runs and
linear beyond. A GIN index with ``gin_trgm_ops`` on exactly that expression answers it in a few
milliseconds. The index is not on the model (Django has no portable way to say it); SQLite keeps
its scan. Where the ``pg_trgm`` extension cannot be created (no privilege, no contrib package),
the migration leaves search as it was instead of failing the deployment.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, migrations, transaction

logger = logging.getLogger(__name__)

CREATE = (
    "CREATE INDEX IF NOT EXISTS run_input_trgm ON dashboard_workflowrun "
    "USING gin ((UPPER(input::text)) gin_trgm_ops)"
)
DROP = "DROP INDEX IF EXISTS run_input_trgm"


def create_index(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            schema_editor.execute(CREATE)
    except DatabaseError as exc:
        logger.warning("runs list text search stays unindexed (pg_trgm unavailable): %s", exc)


def drop_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0004_system_decisions")]

    operations = [migrations.RunPython(create_index, drop_index)]
