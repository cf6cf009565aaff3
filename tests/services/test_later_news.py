"""More news in everyday words (issue 17): a bereavement as the bereaved say it; endings said as letting something
go, not renewing, pulling out or packing in, a last day at work; life states that end in later ones (a new home, a
finished doctorate, the next school, one more child, an employer after freelancing, time off a habit, an all-clear,
days after nights, part time after full time, dating after single); who the speaker is, said alone. Sentences
written for these tests, not taken from the evaluation corpus. Real model, real database."""

import pytest

from tests.factories import current_texts, holds, make_user, tell, told_in_turn

pytestmark = pytest.mark.django_db


def test_a_bereavement_said_as_lost_ends_what_the_one_lost_had(acme):
    """ "Sadly we lost Salt" wrote nothing at all: the classifier hears grief as a passing mood."""
    texts = told_in_turn(make_user(acme, "ruth"), "Our tortoise is called Sheldon.",
                         "Sadly we lost Sheldon over the winter.")
    assert not holds(texts, "called Sheldon"), texts
    assert holds(texts, "lost", "Sheldon"), texts


def test_someone_lost_for_a_while_is_no_bereavement(acme):
    ruth = make_user(acme, "ruth")
    tell(ruth, "Our spaniel is called Bramble.", "2025-02-01", "first")
    tell(ruth, "We lost Bramble on the beach for ten minutes, I was frantic.", "2025-03-15", "later")
    assert holds(current_texts(ruth), "spaniel", "Bramble"), current_texts(ruth)


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    ("I have a Chelsea season ticket.", "I let my season ticket lapse, couldn't justify it.", ("Chelsea",),
     ("lapse",)),
    ("I'm an English Heritage member.", "Didn't renew English Heritage this year.", ("member",), ("renew",)),
    ("I'm training for the Great North Run.", "I've had to pull out of the Great North Run, dodgy knee.",
     ("training",), ("pull out",)),
    ("I'm doing Whole30.", "I've packed in Whole30, too strict.", ("doing",), ("packed in",)),
    ("My girlfriend is called Tasha.", "Tasha and I are done.", ("girlfriend's name",), ("done",)),
    ("I work for Argos.", "Yesterday was my last day at Argos.", ("Ines works",), ("no longer", "Argos")),
])
def test_letting_go_not_renewing_and_pulling_out_end_the_old_value(acme, before, after, old, new):
    texts = told_in_turn(make_user(acme, "ines"), before, after)
    assert not holds(texts, *old), texts
    assert holds(texts, *new), texts


@pytest.mark.parametrize(("before", "after", "old"), [
    ("We rent a little terraced house in Salford.", "We picked up the keys to our new flat in Didsbury!",
     ("terraced",)),
    ("I'm doing a PhD in linguistics.", "Passed my viva this afternoon!", ("PhD",)),
    ("My niece is at primary school.", "My niece has started secondary this term.", ("primary",)),
    ("I have two daughters.", "We welcomed our third on Monday, a little boy.", ("two daughters",)),
    ("I'm a freelance copywriter.", "I've taken an in-house role at a bank.", ("freelance",)),
    ("I smoke about ten a day.", "Two months smoke-free today!", ("ten a day",)),
    ("My mum has breast cancer.", "Mum got the all clear this morning!", ("cancer",)),
    ("I work nights at the sorting office.", "I've switched to days, finally sleeping normally.", ("nights",)),
    ("I work full time at the library.", "I've dropped to part-time at the library.", ("full time",)),
    ("I'm single.", "I've started dating a guy from my climbing gym.", ("single",)),
    ("I still live with my mum and dad.", "I'm renting a room in a house share now.", ("mum and dad",)),
])
def test_a_later_state_ends_the_earlier_one(acme, before, after, old):
    texts = told_in_turn(make_user(acme, "kofi"), before, after)
    assert not holds(texts, *old), texts
    assert texts, "the later state is kept"


@pytest.mark.parametrize(("before", "after", "kept"), [
    # "single" not as a state: "every single game", "a single bed"
    ("I go to every single home game with my brother.", "We got engaged on the beach last night!!", ("home game",)),
    ("I still sleep in a single bed at my parents' place.", "I'm seeing someone new, early days.", ("single bed",)),
])
def test_a_later_state_ends_no_memory_that_only_has_a_word_of_the_earlier_one(acme, before, after, kept):
    texts = told_in_turn(make_user(acme, "kofi"), before, after)
    assert holds(texts, *kept), texts


def test_a_month_is_no_place(acme):
    """ "We had our third in May!" was filed as the user's city."""
    texts = told_in_turn(make_user(acme, "lu"), "I live in Norwich.", "We had our second in June!")
    assert holds(texts, "Norwich"), texts


def test_a_birthday_said_as_today_is_the_user_s_age(acme):
    texts = told_in_turn(make_user(acme, "abe"), "I'm 39.", "It's my 40th today!")
    assert holds(texts, "40 years old"), texts
    assert not holds(texts, "39"), texts


def test_what_it_goes_on_about_is_kept_with_it(acme):
    """ "Chopped all my hair off, | it's a pixie cut now": the second piece alone was "The user said: it's a pixie
    cut now."; the first, just under the bar, says what "it" is."""
    user = make_user(acme, "mae")
    tell(user, "Repainted the kitchen, it's dark green now.", "2025-02-01", "s")
    texts = current_texts(user)
    assert holds(texts, "kitchen", "green"), texts
    assert not any("said:" in text for text in texts), texts


def test_who_the_speaker_is_said_alone_is_a_memory(acme):
    """ "I'm a Jehovah's Witness", "I'm not a morning person" were read just under the bar."""
    user = make_user(acme, "ted")
    tell(user, "I'm not a dog person.", "2025-02-01", "s")
    assert holds(current_texts(user), "not", "dog person"), current_texts(user)


@pytest.mark.parametrize(("named", "rehomed"), [
    ("Bramble", "We had to rehome Bramble, she kept fighting with the other cat."),
    ("Nala", "Had to rehome Nala, the new flat doesn't allow dogs."),
])
def test_rehoming_an_animal_ends_having_it(acme, named, rehomed):
    """ "We had to rehome Monty" wrote nothing, or only its reason ("The user said: she kept fighting ...")."""
    texts = told_in_turn(make_user(acme, "ruth"), f"We have a rescue called {named}.", rehomed)
    assert not holds(texts, "have", named), texts
    assert holds(texts, "rehome", named), texts
