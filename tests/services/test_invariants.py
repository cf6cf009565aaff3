"""Property tests: whatever sequence of statements arrives, the store's invariants hold."""

from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memoryapp.actors import ActorRef
from memoryapp.models import Episode, Memory
from memoryapp.services.apply import candidate_apply, draft_from_candidate
from memoryapp.services.extract.base import Candidate
from tests.factories import at

VECTOR = np.ones(384, dtype=np.float32) / np.sqrt(384)
statement = st.tuples(
    st.sampled_from(["city", "diet", "employer", "likes"]),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["state", "change", "refine", "negate", "correct", "retract"]),
    st.integers(min_value=0, max_value=400),  # day offset
)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statements=st.lists(statement, min_size=1, max_size=12))
# found by hypothesis: liking, not liking, liking and not liking again left "not a" active twice
@example(statements=[("likes", "a", "state", 0), ("likes", "a", "negate", 0)] * 2)
def test_one_active_value_per_slot_and_well_formed_intervals(alice, statements):
    Memory.objects.filter(user=alice).delete()
    Episode.objects.filter(user=alice).delete()
    for attribute, value, relation, day in statements:
        episode = Episode.objects.create(
            organization=alice.organization,
            user=alice,
            source="user",
            trust="trusted",
            content=f"{attribute} {value}",
            session="s",
        )
        candidate = Candidate(
            text=f"Alice {attribute} {value}.",
            subject="alice",
            attribute=attribute,
            value=value,
            valid_from=at("2024-01-01") + timedelta(days=day),
            relation=relation,
        )
        draft = draft_from_candidate(
            candidate, embedding=VECTOR, organization=alice.organization, user=alice, sources=[episode], session="s"
        )
        candidate_apply(candidate=candidate, draft=draft, actor=ActorRef("agent", "prop"))

    memories = list(Memory.objects.filter(user=alice))
    for attribute in ("city", "diet", "employer"):
        assert sum(m.status == "active" and m.attribute == attribute for m in memories) <= 1
    for memory in memories:
        assert memory.valid_to is None or memory.valid_from < memory.valid_to
        assert memory.expired_at is None or memory.recorded_at < memory.expired_at
        assert memory.sources.exists()
    likes = [m.value for m in memories if m.attribute == "likes" and m.status == "active"]
    assert len(likes) == len(set(likes)), "no duplicate active values in a multi-valued slot"
