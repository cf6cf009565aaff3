"""Change statements in everyday words (issue 17): the statement that says a value changed is kept even
when said as news ("got ... this weekend!!"), the old value it names is closed wherever it was kept,
no current memory still says it (one may say it is over: "Nell sold the Vespa.", or tell the change, naming both
values: "Nell's GP switched Nell off the sertraline; Nell is on citalopram now."), and a relative named
without "my" or a favourite of a kind stays in one slot. Sentences written for these tests, not taken
from the evaluation corpus. Real model, real database."""

from datetime import UTC, datetime

import pytest

from memoryapp.actors import ActorRef
from memoryapp.evaluation.write_accuracy import says_over
from memoryapp.evaluation.write_corpus import mentions
from memoryapp.services.extract import general
from memoryapp.services.extract.base import EpisodeInput
from memoryapp.services.extract.rules import RulesExtractor
from memoryapp.services.extraction import episodes_extract
from tests.factories import current_texts, make_user, say, tell

pytestmark = pytest.mark.django_db


def said_then_changed(acme, before, after):
    user = make_user(acme, "nell")
    tell(user, before, "2025-02-01", "first")
    tell(user, after, "2025-03-15", "later")
    return current_texts(user)


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    # the old value named by the change, in a slot the new statement does not fill
    ("I share a flat with my boyfriend Tobias.", "Tobias and I broke up, so I'm looking for a new flatmate.",
     ("Tobias",), ("flatmate",)),
    ("My cousin Ines works at Siemens.", "Ines left Siemens and now works for a small bakery in Graz.",
     ("Siemens",), ("bakery",)),
    # ("Mango passed away last winter." may stay: it tells the change)
    ("We have a tabby cat called Mango.", "Mango passed away last winter, we adopted a beagle named Otto.",
     ("tabby",), ("Otto",)),
    # the old value named beside the new one: closed, and the new memory does not repeat it
    ("I live in Ghent.", "We traded Ghent for Utrecht in the autumn.", ("Ghent",), ("Utrecht",)),
    ("I use an Android phone.", "I switched from Android to a Pixel-free life: an iPhone 15 now.", ("Android",),
     ("iPhone",)),
    ("I drink black coffee every morning.", "These days I drink green tea instead of black coffee.", ("coffee",),
     ("tea",)),
    # cancelled; and named in more words than the memory holds ("shifts"), all but one of them in it
    ("I'm a member at Fitness First.", "Cancelled fitness first, I joined the climbing wall on Elm Street.",
     ("Fitness",), ("climbing",)),
    ("I help at the church soup kitchen every Sunday.",
     "Stopped doing the soup kitchen rotas, I coach the under-9s football team on Sundays now.",
     ("soup",), ("football",)),
    # taken off a medicine; out with a friend; "no more" what was done
    ("I take sertraline for anxiety", "my GP switched me off the sertraline, I'm on citalopram now", ("sertraline",),
     ("citalopram",)),
    ("My best friend is Aoife, since school", "me and Aoife had a massive falling out. Orla's my closest friend now",
     ("Aoife",), ("Orla",)),
    ("I play squash on Tuesdays", "no more squash for me, I play padel on Tuesdays now", ("squash",), ("padel",)),
])
def test_a_change_that_names_the_old_value_closes_it(acme, before, after, old, new):
    texts = said_then_changed(acme, before, after)
    assert any(mentions(text, new) for text in texts), texts
    assert not any(mentions(text, old) and not mentions(text, new) and not says_over(text) for text in texts), texts


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    ("I wear a size 9 shoe.", "Went up to a size 10 after the pregnancy lol", ("9",), ("10",)),
    ("I ride a Vespa to work.", "Sold the Vespa!! bought an e-bike this weekend", ("Vespa",), ("e-bike",)),
    ("I'm 29.", "officially 30 today 🎂", ("29",), ("30",)),
])
def test_a_change_said_as_news_is_kept_and_replaces_the_old_value(acme, before, after, old, new):
    texts = said_then_changed(acme, before, after)
    assert any(mentions(text, new) for text in texts), texts
    assert not any(mentions(text, old) and not says_over(text) for text in texts), texts


def test_a_relative_named_without_my_is_the_same_person(acme):
    texts = said_then_changed(acme, "My grandpa is 88.", "Grandpa turned 89 on Sunday!")
    assert any(mentions(text, ("89",)) for text in texts), texts
    assert not any(mentions(text, ("88",)) for text in texts), texts


def test_a_new_favourite_replaces_the_old_one_and_leaves_other_likes(acme):
    user = make_user(acme, "nell")
    tell(user, "I love hiking. My favourite film is Alien.", "2025-02-01", "first")
    tell(user, "My favourite film is Arrival now.", "2025-03-15", "later")
    texts = current_texts(user)
    assert any(mentions(text, ("Arrival",)) for text in texts), texts
    assert not any(mentions(text, ("Alien",)) for text in texts), texts
    assert any(mentions(text, ("hiking",)) for text in texts), texts


def test_ending_words_name_only_what_ended():
    assert general.ended("I left Deloitte and joined a startup.") == ("Deloitte",)
    assert general.ended("We swapped Leeds for York.") == ("Leeds",)
    assert general.ended("I'm no longer allergic to penicillin!") == ("allergic penicillin",)
    assert general.ended("the vet switched him off Apoquel") == ("Apoquel",)
    assert general.ended("Spin class is out, swimming is in") == ("Spin class",)
    assert general.ended("the wifi is out again") == ()
    assert general.ended("I fell out with Marguerite over the wedding") == ("Marguerite",)
    assert general.ended("no more caffeine so I drink rooibos") == ("caffeine",)
    assert general.ended("No more than three coffees a day.") == ()
    # nothing named (a bare noun would end whatever mentions it), or nothing ended
    assert general.ended("I quit my job.") == ()
    assert general.ended("I live in York and love it.") == ()


def test_one_word_of_a_longer_name_is_not_enough_to_end_a_memory(acme):
    texts = said_then_changed(acme, "I work at the city library. I'm learning Italian at the city college.",
                              "I left the city library archive team, I run the children's corner now.")
    assert any(mentions(text, ("college",)) for text in texts), texts
    assert general.without_old("We swapped Leeds for York in May") == "We switched to York in May"


def test_an_older_memory_from_untrusted_content_is_not_what_ends_a_users_fact(acme):
    """A web page saying "I left Siemens" never ends what the user said."""
    user = make_user(acme, "nell")
    tell(user, "I work at Siemens.", "2025-02-01", "first")
    episode = say(user, "I left Siemens and joined Bosch.", when="2025-03-15", session="later", source="web")
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    assert any(mentions(text, ("Siemens",)) for text in current_texts(user))


def test_the_rules_read_a_capitalised_relative_word_as_that_relative():
    found = RulesExtractor(general=False).extract(
        [EpisodeInput("Grandpa turned 89 on Sunday!", datetime(2025, 3, 15, tzinfo=UTC))], subject="nell")
    assert [(c.subject, c.attribute, c.value) for c in found] == [("nell's grandfather", "age", "89")]
