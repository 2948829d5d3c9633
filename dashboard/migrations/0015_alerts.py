"""Alerts: rules and their incidents (one open incident per rule and subject), and
notifications generalized to carry an alert incident instead of an approval request, and to
go to Slack."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0014_single_sign_on"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AlertRule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True)),
                (
                    "condition",
                    models.CharField(
                        choices=[
                            ("run_failed", "Run failed"),
                            ("run_stuck", "Run stuck (no progress while running)"),
                            ("run_slow", "Run slower than"),
                            ("approval_waiting", "Approval waiting longer than"),
                            ("retention_failing", "Retention failing"),
                        ],
                        max_length=20,
                    ),
                ),
                ("workflow_name", models.CharField(blank=True, default="", max_length=200)),
                ("threshold_minutes", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "emails",
                    models.TextField(blank=True, default="", help_text="One address per line"),
                ),
                ("slack_webhook_url", models.URLField(blank=True, default="", max_length=500)),
                ("webhook_url", models.URLField(blank=True, default="", max_length=500)),
                ("webhook_secret", models.CharField(blank=True, default="", max_length=200)),
                ("notify_resolved", models.BooleanField(default=True)),
                ("enabled", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ("name",),
            },
        ),
        migrations.AlterField(
            model_name="notification",
            name="kind",
            field=models.CharField(
                choices=[("email", "Email"), ("webhook", "Webhook"), ("slack", "Slack")],
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="notification",
            name="request",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="notifications",
                to="dashboard.approvalrequest",
            ),
        ),
        migrations.CreateModel(
            name="AlertIncident",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("subject", models.CharField(max_length=300)),
                ("workflow_name", models.CharField(blank=True, default="", max_length=200)),
                ("summary", models.CharField(max_length=500)),
                ("details", models.JSONField(blank=True, default=dict)),
                ("opened_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("delivered_at", models.DateTimeField(blank=True, null=True)),
                ("resolved_at", models.DateTimeField(blank=True, null=True)),
                ("resolution", models.CharField(blank=True, default="", max_length=300)),
                ("checked_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "run",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="alert_incidents",
                        to="dashboard.workflowrun",
                    ),
                ),
            ],
            options={
                "ordering": ("-opened_at", "-pk"),
            },
        ),
        migrations.AddField(
            model_name="notification",
            name="incident",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="notifications",
                to="dashboard.alertincident",
            ),
        ),
        migrations.AddConstraint(
            model_name="notification",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("incident__isnull", True), ("request__isnull", False)),
                    models.Q(("incident__isnull", False), ("request__isnull", True)),
                    _connector="OR",
                ),
                name="notification_about_one_thing",
            ),
        ),
        migrations.AddField(
            model_name="alertrule",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="alertincident",
            name="rule",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="incidents",
                to="dashboard.alertrule",
            ),
        ),
        migrations.AddConstraint(
            model_name="alertrule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "condition__in",
                        [
                            "run_failed",
                            "run_stuck",
                            "run_slow",
                            "approval_waiting",
                            "retention_failing",
                        ],
                    )
                ),
                name="alert_condition_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="alertrule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("condition__in", ("run_stuck", "run_slow", "approval_waiting")),
                        ("threshold_minutes__gte", 1),
                    ),
                    models.Q(
                        models.Q(
                            ("condition__in", ("run_stuck", "run_slow", "approval_waiting")),
                            _negated=True,
                        ),
                        ("threshold_minutes__isnull", True),
                    ),
                    _connector="OR",
                ),
                name="alert_threshold_iff_timed",
            ),
        ),
        migrations.AddIndex(
            model_name="alertincident",
            index=models.Index(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=["checked_at"],
                name="alert_open_checked",
            ),
        ),
        migrations.AddIndex(
            model_name="alertincident",
            index=models.Index(fields=["run", "-opened_at"], name="alert_run_opened"),
        ),
        migrations.AddIndex(
            model_name="alertincident",
            index=models.Index(fields=["-opened_at"], name="alert_opened"),
        ),
        migrations.AddConstraint(
            model_name="alertincident",
            constraint=models.UniqueConstraint(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=("rule", "subject"),
                name="alert_incident_open_once",
            ),
        ),
    ]
