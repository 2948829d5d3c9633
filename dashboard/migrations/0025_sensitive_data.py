"""Revealing masked fields: the ``view_sensitive`` permission, held by Admin and by a new
"Sensitive data" role that is given beside another one (as a group, or per workflow)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

ROLE = "Sensitive data"
PERMISSION = "view_sensitive"


def add_role(apps: Any, schema_editor: Any) -> None:
    from django.contrib.auth.management import create_permissions

    alias = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=alias)
        app_config.models_module = None
    groups = apps.get_model("auth", "Group").objects.using(alias)
    permission = (
        apps.get_model("auth", "Permission")
        .objects.using(alias)
        .get(content_type__app_label="dashboard", codename=PERMISSION)
    )
    groups.get_or_create(name=ROLE)[0].permissions.add(permission)
    for admin in groups.filter(name="Admin"):
        admin.permissions.add(permission)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0024_api_token_scopes_expiry"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="workflowrun",
            options={
                "get_latest_by": "created_at",
                "permissions": (
                    ("start_run", "Can start runs"),
                    ("operate_run", "Can resume, fork, cancel and retry runs"),
                    ("view_sensitive", "Can reveal sensitive fields"),
                ),
            },
        ),
        # Unapplied, the role stays: deleting a group reaches every table that refers to one
        # (assignments, grants), which a migration's historical models cannot follow.
        migrations.RunPython(add_role, migrations.RunPython.noop),
    ]
