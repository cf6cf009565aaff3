from importlib import import_module

from django.db import migrations


def whose_slot_vectors(apps, schema_editor):
    """The search vector of every memory that fills a slot of one of the user's people (subject "sam's sister"),
    from the slot's name said as theirs and the text addressed to the user (selectors.questions.search_text:
    "sister's city: Your sister lives in Oslo."). Other memories keep theirs."""
    from memoryapp import embeddings
    from memoryapp.services.extract.grammar import addressed

    earlier = import_module("memoryapp.migrations.0012_memory_search_embedding")
    memory_model = apps.get_model("memoryapp", "Memory")
    names = earlier.user_names(apps)

    def store(rows):
        texts = []
        for _, user_id, subject, attribute, text in rows:
            whose, label = subject.partition("'s ")[2], attribute.replace("_", " ").strip()
            texts.append(f"{whose}'s {label}: {addressed(text, names[user_id])}")
        for (pk, *_), vector in zip(rows, embeddings.encode(texts), strict=True):
            memory_model.objects.filter(pk=pk).update(search_embedding=vector)

    rows = (memory_model.objects.exclude(attribute="").filter(subject__contains="'s ").order_by("id")
            .values_list("id", "user_id", "subject", "attribute", "text"))
    earlier.in_batches(rows, store)


class Migration(migrations.Migration):
    """A fact about one of the user's people is searched after whose slot it fills (selectors.questions)."""

    dependencies = [
        ("memoryapp", "0014_halfvec_sent_short"),
    ]

    operations = [
        migrations.RunPython(whose_slot_vectors, migrations.RunPython.noop),
    ]
