import django.contrib.postgres.indexes
from django.db import migrations

import memoryapp.models.fulltext


class Migration(migrations.Migration):
    """The full-text GIN indexes hold each row's scope lexeme beside its words (models.fulltext), so a
    search's common word no longer fetches every user's rows that have it. In the index expression, not
    in the search_vector column: no table rewrite (the HNSW indexes stay as they are), and the lexemes
    never reach the ranking or any output. Only the two GIN indexes are built again (300k rows: ~1 s)."""

    dependencies = [
        ("memoryapp", "0009_halfvec"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="episode", name="episode_fulltext"),
        migrations.RemoveIndex(model_name="memory", name="memory_fulltext"),
        migrations.AddIndex(
            model_name="episode",
            index=django.contrib.postgres.indexes.GinIndex(
                memoryapp.models.fulltext.ScopedSearchVector("episode"), name="episode_fulltext_scoped"
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                memoryapp.models.fulltext.ScopedSearchVector("memory"), name="memory_fulltext_scoped"
            ),
        ),
    ]
