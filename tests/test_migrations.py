"""Data migrations on a real database: stored rows come out as the code now writes them."""

import numpy as np
import pytest
from django.core.management import call_command

from memoryapp.models import Memory
from memoryapp.selectors.questions import search_vector
from memoryapp.services.extract.grammar import addressed
from tests.factories import make_memory, make_user


@pytest.mark.django_db(transaction=True)
def test_memories_stored_before_slot_names_are_searched_with_them_after_the_migration(acme):
    """0013: a memory that fills a slot gets the vector of its slot's name and addressed text, as new ones do;
    one that fills none keeps its vector."""
    from memoryapp import embeddings

    call_command("migrate", "memoryapp", "0012", verbosity=0)
    try:
        riley = make_user(acme, "riley")
        plain = {"text": "Riley writes everything on a battered ThinkPad.", "attribute": "devices"}
        slotted = make_memory(riley, plain["text"], attribute=plain["attribute"],
                              search_embedding=embeddings.encode_one(addressed(plain["text"], ("Riley", "the user"))))
        loose = make_memory(riley, "Riley's gran sends a card every week.")
        before = np.asarray(loose.search_embedding, dtype=np.float32)
    finally:
        call_command("migrate", "memoryapp", verbosity=0)
    slotted, loose = Memory.objects.get(pk=slotted.pk), Memory.objects.get(pk=loose.pk)
    expected = search_vector(plain["text"], plain["attribute"], riley, subject="")
    assert float(np.asarray(slotted.search_embedding, dtype=np.float32) @ expected) > 0.999
    assert np.allclose(np.asarray(loose.search_embedding, dtype=np.float32), before, atol=1e-3)


@pytest.mark.django_db(transaction=True)
def test_facts_about_the_users_people_are_searched_as_theirs_after_the_migration(acme):
    """0015: a memory filling a slot of one of the user's people gets the vector of "sister's city: ...", as new
    ones do; the user's own keep theirs."""
    call_command("migrate", "memoryapp", "0014", verbosity=0)
    try:
        riley = make_user(acme, "riley")
        sisters = {"text": "Riley's sister lives in Oslo.", "attribute": "city", "subject": "riley's sister"}
        theirs = make_memory(riley, sisters["text"], attribute="city", subject="riley's sister",
                             search_embedding=search_vector(sisters["text"], "city", riley, subject=""))
        own = make_memory(riley, "Riley lives in Leeds.", attribute="city", subject="riley")
        before = np.asarray(own.search_embedding, dtype=np.float32)
    finally:
        call_command("migrate", "memoryapp", verbosity=0)
    theirs, own = Memory.objects.get(pk=theirs.pk), Memory.objects.get(pk=own.pk)
    expected = search_vector(**sisters, user=riley)
    assert float(np.asarray(theirs.search_embedding, dtype=np.float32) @ expected) > 0.999
    assert float(np.asarray(theirs.search_embedding, dtype=np.float32) @ search_vector(
        sisters["text"], "city", riley, subject="")) < 0.99
    assert np.allclose(np.asarray(own.search_embedding, dtype=np.float32), before, atol=1e-3)
