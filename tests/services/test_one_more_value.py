"""A value said to join the others replaces none (issue 17): "We've also got a campervan now" after "I have a
Toyota Yaris." superseded the Yaris (the car is one value at a time), "I've also started ..." the user's religion,
"... too" their books. Found with continuation pairs (news on a fact's topic that changes nothing: the corpus'
`continues-*` files); the sentences here are written for these tests. Real model, real database."""

import pytest

from tests.factories import holds, make_user, told_in_turn

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("before", "after", "kept", "added"), [
    ("I have a Toyota Yaris.", "We've also got a campervan now for weekends away.", "Yaris", "campervan"),
    ("I'm a Buddhist.", "I've also started going on a meditation retreat every spring.", "Buddhist", "retreat"),
    ("I love thrillers.", "I'm reading a lot of poetry as well.", "thrillers", "poetry"),
    ("I speak Polish.", "I've started learning some Italian too.", "Polish", "Italian"),
])
def test_a_value_said_with_also_or_too_joins_the_old_one(acme, before, after, kept, added):
    texts = told_in_turn(make_user(acme, "ivo"), before, after)
    assert holds(texts, kept), texts
    assert holds(texts, added), texts


@pytest.mark.parametrize(("before", "after", "was", "now"), [
    # "Also," opening the news is one more piece of news, which still replaces what it replaces
    ("I live in Leeds.", "Also, we moved to York last week!", "Leeds", "York"),
    ("I drive a Golf.", "Also I sold the Golf and got a Tesla.", "drives a Golf", "Tesla"),
])
def test_news_opened_by_also_still_replaces(acme, before, after, was, now):
    texts = told_in_turn(make_user(acme, "ivo"), before, after)
    assert not holds(texts, was), texts
    assert holds(texts, now), texts
