from django.db import migrations, models


class Migration(migrations.Migration):
    """Episodes' owner-time index becomes covering (models/episodes.py says why), in place of
    episode_owner_time: the same key, so _with_neighbours' probes read it as before."""

    dependencies = [
        ("memoryapp", "0010_fulltext_scope_lexemes"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="episode", name="episode_owner_time"),
        migrations.AddIndex(
            model_name="episode",
            index=models.Index(
                fields=["organization", "user", "occurred_at"],
                include=("id", "project", "session", "received_at", "embedding"),
                name="episode_owner_search",
            ),
        ),
    ]
