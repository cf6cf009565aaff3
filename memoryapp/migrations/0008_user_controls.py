import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("memoryapp", "0007_trust_boundaries"),
    ]

    operations = [
        migrations.AddField(
            model_name="user",
            name="agents_reading_paused",
            field=models.BooleanField(default=False, help_text="When on, no agent reads their memories."),
        ),
        migrations.CreateModel(
            name="AgentBlock",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("agent", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="blocks",
                                            to="memoryapp.agent")),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="agent_blocks",
                                           to="memoryapp.user")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("user", "agent"), name="memoryapp_agentblock_once")],
            },
        ),
    ]
