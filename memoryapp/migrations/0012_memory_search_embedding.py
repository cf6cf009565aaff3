import pgvector.django.halfvec
import pgvector.django.indexes
from django.db import migrations, models

BATCH = 256


def addressed_vectors(apps, schema_editor):
    """Every memory's search vector, from its text addressed to its user (selectors.questions.search_vectors;
    the names as selectors.names finds them, every name the user stated included). ~400 memories a second."""
    from memoryapp import embeddings
    from memoryapp.services.extract.grammar import addressed

    memory_model = apps.get_model("memoryapp", "Memory")
    names = user_names(apps)
    rows = memory_model.objects.order_by("id").values_list("id", "user_id", "text")
    in_batches(rows, lambda batch: _store(memory_model, batch, names, embeddings.encode, addressed))


def in_batches(rows, store) -> None:
    """store(batch) for each BATCH rows of the query, read as a stream."""
    pending = []
    for row in rows.iterator(chunk_size=BATCH):
        pending.append(row)
        if len(pending) == BATCH:
            store(pending)
            pending = []
    if pending:
        store(pending)


def user_names(apps) -> dict:
    """Each user's names as selectors.questions.subject_names finds them (None: no user, "the user")."""
    from memoryapp.services.extract.grammar import THE_USER, readable_name

    memory_model, user_model = apps.get_model("memoryapp", "Memory"), apps.get_model("memoryapp", "User")
    names = {None: (THE_USER,)}
    for user in user_model.objects.only("id", "first_name", "external_id").iterator():
        stated = memory_model.objects.filter(
            user=user, attribute="name", subject__iexact=user.external_id, provenance__in=["user_stated", "user_corrected"]
        ).values_list("value", flat=True)
        found = [*stated, user.first_name.strip(), readable_name(user.external_id), THE_USER]
        names[user.id] = tuple(dict.fromkeys(name for name in found if name))
    return names


def _store(memory_model, rows, names, encode, addressed):
    vectors = encode([addressed(text, names[user_id]) for _, user_id, text in rows])
    for (pk, _, _), vector in zip(rows, vectors, strict=True):
        memory_model.objects.filter(pk=pk).update(search_embedding=vector)


class Migration(migrations.Migration):
    """Memory.search_embedding: what searches compare questions with (models/memories.py says why), filled
    for the memories already stored; the covering owner index and the HNSW index move to it."""

    dependencies = [
        ("memoryapp", "0011_episode_owner_search"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="memory", name="memory_owner_search"),
        migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw"),
        migrations.AddField(
            model_name="memory",
            name="search_embedding",
            field=pgvector.django.halfvec.HalfVectorField(dimensions=384, null=True),
        ),
        migrations.RunPython(addressed_vectors, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="memory",
            name="search_embedding",
            field=pgvector.django.halfvec.HalfVectorField(dimensions=384),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                fields=["organization", "user", "status"],
                include=("id", "scope", "valid_from", "valid_to", "valid_to_recorded_at", "recorded_at", "expired_at",
                         "search_embedding"),
                name="memory_owner_search",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=pgvector.django.indexes.HnswIndex(
                fields=["search_embedding"], name="memory_search_embedding_hnsw", opclasses=["halfvec_cosine_ops"]
            ),
        ),
    ]
