from django.db import migrations


class Migration(migrations.Migration):
    """Room on each episode page for its rows' next versions. Extraction marks every episode done once;
    an update that fits on its page and changes no indexed column (a HOT update) writes no index entry,
    where on a full page it was an insertion into all five indexes, the HNSW graph's included. An
    episode row is ~1.7 kB (its vector is 1.5 kB): at 85% one update in three fitted, at 50% all do
    (1000 messages: extraction 0.27 -> 0.23 s per 50). It costs episodes about twice the pages."""

    dependencies = [
        ("memoryapp", "0004_memory_owner_search_index"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memoryapp_episode SET (fillfactor = 50)",
            reverse_sql="ALTER TABLE memoryapp_episode RESET (fillfactor)",
        ),
    ]
