# The call log moved to `toolsets` (see toolsets 0002): drop it from this app's state only.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('gateway', '0001_initial'),
        ('toolsets', '0002_toolcall_moved_from_gateway'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name='ToolCall')], database_operations=[]),
    ]
