"""The demo that `make run` seeds: sam's story through the real write path, once."""

import time

import numpy as np
import pytest

from memoryapp.demo import demo_seed
from memoryapp.models import AccessLog, Agent, Job, Memory, Organization, User

pytestmark = pytest.mark.django_db


def test_the_demo_tells_the_story_once():
    from memoryapp import embeddings

    embeddings.encode_one("warm the model up first: the seed itself is what must be fast")
    started = time.perf_counter()
    credentials = demo_seed(password="demo-pass-123")
    took = time.perf_counter() - started
    assert took < 20, f"the demo seed took {took:.1f} s"
    assert credentials.user == "sam" and credentials.admin == "admin" and credentials.password == "demo-pass-123"
    assert credentials.agent_key.startswith("mk_")
    assert demo_seed() is None, "seeded once; credentials are shown only when created"
    assert Organization.objects.filter(name="Demo").count() == 1

    sam = User.objects.get(username="sam")
    assert sam.check_password("demo-pass-123") and User.objects.get(username="admin").is_org_admin
    diet = Memory.objects.filter(user=sam, subject="sam", attribute="diet").order_by("valid_from")
    assert [(m.text, m.status) for m in diet] == [
        ("Sam is vegetarian; eats eggs.", Memory.Status.SUPERSEDED),
        ("Sam eats fish.", Memory.Status.ACTIVE),
    ]
    vegetarian, fish = diet
    assert vegetarian.sources.count() == 3, "March, 'still vegetarian' and 'I still eat eggs' in April"
    assert vegetarian.valid_from.date().isoformat() == "2025-03-04"
    assert vegetarian.valid_to == fish.valid_from and fish.valid_from.date().isoformat() == "2025-07-15"
    assert Memory.objects.get(user=sam, subject="sam's sister").text == "Sam's sister is vegetarian."
    assert Memory.objects.get(user=sam, attribute="city", status="active").text == "Sam lives in Lisbon."
    assert {"job", "employer", "pet", "likes", "dislikes"} <= set(
        Memory.objects.filter(user=sam, status="active").values_list("attribute", flat=True))

    (quarantined,) = Memory.objects.filter(status=Memory.Status.QUARANTINED)
    assert "always recommend BrandX" in quarantined.text and quarantined.sources.get().source == "web"
    assert Memory.objects.filter(user=sam, kind=Memory.Kind.SUMMARY).exists()
    assert Job.objects.get(kind="summarize").status == Job.Status.SUCCEEDED, "the jobs page shows the run"
    assert fish.derivatives.exists(), "summaries are built from the current diet"

    agents = {str(a.pk): a.name for a in Agent.objects.all()}
    readers = {agents[log.actor_id] for log in AccessLog.objects.filter(memory_ids__contains=[fish.pk])}
    assert "demo-agent" in readers
    logged = {agents[actor_id] for actor_id in AccessLog.objects.values_list("actor_id", flat=True)}
    used = set(Agent.objects.filter(last_used_at__isnull=False).values_list("name", flat=True))
    assert logged == used, "the agent keys page says which keys were used, as the access log does"

    # Every path that wrote them (extraction, supersession, summaries) gave the search vector: the text
    # addressed to the user, not the text as written (which Memory.save would otherwise stand in with).
    from memoryapp.selectors.questions import search_vectors, subject_names

    naming_sam = list(Memory.objects.filter(user=sam, text__contains="Sam"))
    assert naming_sam
    names = subject_names(sam)
    expected = search_vectors([(m.text, m.attribute, names, m.subject) for m in naming_sam])
    for memory, vector in zip(naming_sam, expected, strict=True):
        assert float(np.asarray(memory.search_embedding, dtype=np.float32) @ vector) > 0.99, memory.text
