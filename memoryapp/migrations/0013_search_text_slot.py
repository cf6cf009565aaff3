from importlib import import_module

from django.db import migrations


def labelled_vectors(apps, schema_editor):
    """The search vector of every memory that fills a slot, from the slot's name and its text addressed to its
    user (selectors.questions.search_text: "city: You lives in Leith."). Memories without one keep theirs."""
    from memoryapp import embeddings
    from memoryapp.services.extract.grammar import addressed

    earlier = import_module("memoryapp.migrations.0012_memory_search_embedding")
    memory_model = apps.get_model("memoryapp", "Memory")
    names = earlier.user_names(apps)

    def store(rows):
        texts = [f"{attribute.replace('_', ' ').strip()}: {addressed(text, names[user_id])}"
                 for _, user_id, attribute, text in rows]
        for (pk, *_), vector in zip(rows, embeddings.encode(texts), strict=True):
            memory_model.objects.filter(pk=pk).update(search_embedding=vector)

    rows = memory_model.objects.exclude(attribute="").order_by("id").values_list("id", "user_id", "attribute", "text")
    earlier.in_batches(rows, store)


class Migration(migrations.Migration):
    """Memories are searched with the name of the slot they fill before their text (selectors.questions)."""

    dependencies = [
        ("memoryapp", "0012_memory_search_embedding"),
    ]

    operations = [
        migrations.RunPython(labelled_vectors, migrations.RunPython.noop),
    ]
