"""The "run cost above X" alert condition: its threshold, a cost, set exactly for it."""
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0021_run_cost_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='alertrule',
            name='alert_condition_valid',
        ),
        migrations.AddField(
            model_name='alertrule',
            name='threshold_cost',
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=18, null=True),
        ),
        migrations.AlterField(
            model_name='alertrule',
            name='condition',
            field=models.CharField(choices=[('run_failed', 'Run failed'), ('run_stuck', 'Run stuck (no progress while running)'), ('run_slow', 'Run slower than'), ('approval_waiting', 'Approval waiting longer than'), ('retention_failing', 'Retention failing'), ('run_cost', 'Run cost above')], max_length=20),
        ),
        migrations.AddConstraint(
            model_name='alertrule',
            constraint=models.CheckConstraint(condition=models.Q(('condition__in', ['run_failed', 'run_stuck', 'run_slow', 'approval_waiting', 'retention_failing', 'run_cost'])), name='alert_condition_valid'),
        ),
        migrations.AddConstraint(
            model_name='alertrule',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('condition', 'run_cost'), ('threshold_cost__gt', 0)), models.Q(models.Q(('condition', 'run_cost'), _negated=True), ('threshold_cost__isnull', True)), _connector='OR'), name='alert_cost_iff_run_cost'),
        ),
    ]
