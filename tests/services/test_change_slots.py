"""Changes recognised as changes (issue 17, item 2): when a value is replaced, nothing written from the
old statement keeps saying it, and a person named with another word ("mum", later "Mom") is the same
person's slot. Sentences written for these tests, not taken from the corpus."""

import pytest

from memoryapp.models import Memory
from tests.factories import current_texts, make_user, tell

pytestmark = pytest.mark.django_db


def test_a_replaced_employer_leaves_no_current_sentence_naming_it(acme):
    kim = make_user(acme, "kim")
    tell(kim, "I work at Siemens in the logistics department.", "2025-03-01", "march")
    assert any("Siemens" in text for text in current_texts(kim))
    tell(kim, "I work at Bosch now.", "2025-04-10", "april")

    texts = current_texts(kim)
    assert any("Bosch" in text for text in texts), texts
    assert not any("Siemens" in text for text in texts), texts
    # The old sentence is history, not deleted: what held in March is still known.
    assert Memory.objects.filter(user=kim, text__contains="Siemens", status="superseded").exists()


def test_an_older_statement_never_ends_a_newer_sentence_beside_the_value(acme):
    kim = make_user(acme, "kim")
    tell(kim, "I work at Siemens in the logistics department.", "2025-05-01", "may")
    tell(kim, "I work at Bosch.", "2025-01-10", "january")  # imported late: it goes into the history

    assert any("Siemens" in text for text in current_texts(kim))


def test_mum_and_mom_are_one_person_whose_city_changes(acme):
    kim = make_user(acme, "kim")
    tell(kim, "My mum lives in Leeds.", "2025-03-01", "march")
    tell(kim, "My mom lives in York now.", "2025-04-10", "april")

    texts = current_texts(kim)
    assert any("York" in text for text in texts), texts
    assert not any("Leeds" in text for text in texts), texts
