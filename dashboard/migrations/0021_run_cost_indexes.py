"""Indexes for the runs list's cost and token filters and its sort by cost.

``run_cost`` on (cost, id) serves "cost at least / at most" and the keyset pages sorted by
cost, both ways; ``run_tokens`` is on the very expression the "tokens at least" filter
compares (``input_tokens + output_tokens``, ``selectors.runs.filtered_runs``).
"""
import django.db.models.expressions
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0020_agent_usage'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='workflowrun',
            index=models.Index(fields=['cost', 'id'], name='run_cost'),
        ),
        migrations.AddIndex(
            model_name='workflowrun',
            index=models.Index(django.db.models.expressions.CombinedExpression(models.F('input_tokens'), '+', models.F('output_tokens')), name='run_tokens'),
        ),
    ]
