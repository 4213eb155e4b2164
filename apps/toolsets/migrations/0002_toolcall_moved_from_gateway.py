# The call log moved from `gateway` to `toolsets` (the chat records tool calls too and must not
# import the gateway). State only: the table keeps its name, `gateway_toolcall`, and its rows.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0001_initial'),
        ('gateway', '0001_initial'),
        ('toolsets', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ToolCall',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('server_name', models.CharField(max_length=40)),
                        ('tool_name', models.CharField(max_length=255)),
                        ('exposed_name', models.CharField(max_length=64)),
                        ('started_at', models.DateTimeField(db_index=True)),
                        ('duration_ms', models.FloatField()),
                        ('ok', models.BooleanField()),
                        ('error', models.TextField(blank=True)),
                        ('arguments', models.JSONField(blank=True, null=True)),
                        ('endpoint', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='toolsets.endpoint')),
                        ('tool', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='catalog.tool')),
                        ('user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'gateway_toolcall',
                        'ordering': ['-started_at'],
                        'indexes': [models.Index(fields=['server_name', 'tool_name', 'started_at'], name='gateway_too_server__336e58_idx')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
