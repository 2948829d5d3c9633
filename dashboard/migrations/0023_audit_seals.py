"""The audit log's hash chain (``AuditSeal``), append-only on PostgreSQL like the entries."""

from typing import Any

import django.utils.timezone
from django.db import migrations, models

SEALS_APPEND_ONLY_SQL = """
CREATE TRIGGER dashboard_auditseal_append_only
    BEFORE UPDATE OR DELETE ON dashboard_auditseal
    FOR EACH ROW EXECUTE FUNCTION superstep_audit_append_only();
"""
DROP_SEALS_APPEND_ONLY_SQL = """
DROP TRIGGER IF EXISTS dashboard_auditseal_append_only ON dashboard_auditseal;
"""


def append_only(apps: Any, schema_editor: Any) -> None:
    # The function is 0003's, which made the entries append-only.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(SEALS_APPEND_ONLY_SQL)


def drop_append_only(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_SEALS_APPEND_ONLY_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0022_alert_run_cost"),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditSeal",
            fields=[
                ("seq", models.PositiveBigIntegerField(primary_key=True, serialize=False)),
                ("entry_id", models.BigIntegerField(unique=True)),
                ("digest", models.CharField(max_length=64)),
                ("sealed_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "ordering": ("seq",),
            },
        ),
        migrations.RunPython(append_only, drop_append_only),
    ]
