"""Blob references per lineage instead of per checkpoint.

Until now every checkpoint wrote one link row per blob it referred to: a run whose large state
never changed still wrote a row (and checked two foreign keys) at every superstep. A
``CheckpointBlobUse`` row now says that a lineage's checkpoints refer to a blob; it is written
once, at the lineage's first reference. The links are copied over (one use per lineage and
blob), then dropped. Reversing rebuilds the links from each checkpoint's ``blob_refs``.
"""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

_BATCH = 2000


def copy_links(apps: Any, schema_editor: Any) -> None:
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"INSERT INTO {quote('dashboard_checkpointblobuse')} (engine_run_id, blob_id) "
        f"SELECT DISTINCT c.engine_run_id, l.checkpointblob_id "
        f"FROM {quote('dashboard_checkpoint_blobs')} l "
        f"JOIN {quote('dashboard_checkpoint')} c ON c.checkpoint_id = l.checkpoint_id"
    )


def rebuild_links(apps: Any, schema_editor: Any) -> None:
    checkpoint = apps.get_model("dashboard", "Checkpoint")
    links = checkpoint.blobs.through
    alias = schema_editor.connection.alias
    rows = checkpoint.objects.using(alias).values_list("checkpoint_id", "document").iterator(_BATCH)
    batch: list[Any] = []
    for checkpoint_id, document in rows:
        refs = document.get("blob_refs") if isinstance(document, dict) else None
        for digest in dict.fromkeys(r[1] for r in refs or () if isinstance(r, list) and len(r) == 2):
            batch.append(links(checkpoint_id=checkpoint_id, checkpointblob_id=digest))
        if len(batch) >= _BATCH:
            links.objects.using(alias).bulk_create(batch, ignore_conflicts=True)
            batch = []
    links.objects.using(alias).bulk_create(batch, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0006_checkpoint_write_indexes")]

    operations = [
        migrations.CreateModel(
            name="CheckpointBlobUse",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("engine_run_id", models.CharField(max_length=128)),
                (
                    "blob",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="uses",
                        to="dashboard.checkpointblob",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["blob"], name="blob_use_blob")],
                "constraints": [
                    models.UniqueConstraint(fields=("engine_run_id", "blob"), name="blob_use_once")
                ],
            },
        ),
        migrations.RunPython(copy_links, rebuild_links),
        migrations.RemoveField(model_name="checkpoint", name="blobs"),
    ]
