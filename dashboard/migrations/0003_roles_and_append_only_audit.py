"""Roles as groups, and an audit table the database itself keeps append-only (PostgreSQL)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

VIEW = [
    "dashboard.view_workflowrun",
    "dashboard.view_checkpoint",
    "dashboard.view_checkpointblob",
    "dashboard.view_approvalrequest",
    "dashboard.view_runevent",
]
ROLES: dict[str, list[str]] = {
    "Viewer": VIEW,
    "Operator": [*VIEW, "dashboard.start_run", "dashboard.operate_run"],
    "Approver": [*VIEW, "dashboard.decide_approval"],
    "Admin": [
        *VIEW,
        "dashboard.start_run",
        "dashboard.operate_run",
        "dashboard.decide_approval",
        "dashboard.manage_retention",
        "dashboard.view_auditentry",
        "dashboard.add_retentionpolicy",
        "dashboard.change_retentionpolicy",
        "dashboard.delete_retentionpolicy",
        "dashboard.view_retentionpolicy",
        "dashboard.add_approvalrule",
        "dashboard.change_approvalrule",
        "dashboard.delete_approvalrule",
        "dashboard.view_approvalrule",
        "dashboard.change_workflowrun",
        "dashboard.change_checkpoint",
        "auth.add_user",
        "auth.change_user",
        "auth.view_user",
        "auth.view_group",
    ],
}

APPEND_ONLY_SQL = """
CREATE OR REPLACE FUNCTION superstep_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit entries are append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER dashboard_auditentry_append_only
    BEFORE UPDATE OR DELETE ON dashboard_auditentry
    FOR EACH ROW EXECUTE FUNCTION superstep_audit_append_only();
"""
DROP_APPEND_ONLY_SQL = """
DROP TRIGGER IF EXISTS dashboard_auditentry_append_only ON dashboard_auditentry;
DROP FUNCTION IF EXISTS superstep_audit_append_only();
"""


def create_roles(apps: Any, schema_editor: Any) -> None:
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after all migrations; the groups need them now. In
    # the database being migrated, which is not always "default".
    alias = schema_editor.connection.alias
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=alias)
        app_config.models_module = None
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for name, codes in ROLES.items():
        group, _ = group_model.objects.using(alias).get_or_create(name=name)
        for code in codes:
            app_label, codename = code.split(".")
            group.permissions.add(
                permission_model.objects.using(alias).get(
                    content_type__app_label=app_label, codename=codename
                )
            )


def remove_roles(apps: Any, schema_editor: Any) -> None:
    alias = schema_editor.connection.alias
    apps.get_model("auth", "Group").objects.using(alias).filter(name__in=list(ROLES)).delete()


def append_only(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY_SQL)


def drop_append_only(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_APPEND_ONLY_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0002_governance_audit_retention"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(create_roles, remove_roles),
        migrations.RunPython(append_only, drop_append_only),
    ]
