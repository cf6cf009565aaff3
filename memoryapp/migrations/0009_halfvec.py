import pgvector.django.halfvec
import pgvector.django.indexes
from django.db import migrations


class Migration(migrations.Migration):
    """Embeddings stored as halfvec (2 bytes a dimension): selectors.search reads them exactly within a
    scope and through HNSW above SEARCH_EXACT_MAX_ROWS, and both read half the bytes. Stored, not an
    expression index on embedding::halfvec: an index-only scan of memory_owner_search cannot return
    an expression, and casting each row in the exact scan was slower than reading the float4 vector
    (10k rows: vector 3.3 ms, vector cast to halfvec 5.9 ms, stored halfvec 1.9 ms). A second, halfvec
    column beside the vector would push most rows over PostgreSQL's 2 kB TOAST threshold.

    The HNSW indexes need the halfvec operator class, so they are dropped before the type changes and
    built again after it (the rows are rewritten once; memory_owner_search is rebuilt with them)."""

    dependencies = [
        ("memoryapp", "0008_user_controls"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw"),
        migrations.RemoveIndex(model_name="episode", name="episode_embedding_hnsw"),
        migrations.AlterField(
            model_name="memory",
            name="embedding",
            field=pgvector.django.halfvec.HalfVectorField(dimensions=384),
        ),
        migrations.AlterField(
            model_name="episode",
            name="embedding",
            field=pgvector.django.halfvec.HalfVectorField(dimensions=384, null=True),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=pgvector.django.indexes.HnswIndex(
                fields=["embedding"], name="memory_embedding_hnsw", opclasses=["halfvec_cosine_ops"]
            ),
        ),
        migrations.AddIndex(
            model_name="episode",
            index=pgvector.django.indexes.HnswIndex(
                ef_construction=32, fields=["embedding"], m=8, name="episode_embedding_hnsw",
                opclasses=["halfvec_cosine_ops"],
            ),
        ),
    ]
