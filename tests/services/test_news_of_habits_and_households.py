"""Everyday news of the twenty-ninth session (issue 17): someone else's news in two verbs stays theirs, putting
something on hold ends it, time without a habit ends the habit, one more animal ends the count, a child starting
school ends nursery. Sentences written for these tests, not taken from the evaluation corpus. Real model, real
database."""

import pytest

from tests.factories import current_texts, holds, make_user, tell, told_in_turn

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("news", [
    "Dad retired and moved back to Cork.",
    "Mum sold up and moved to the coast, she's in Whitby now.",
    "Tariq got a job at Google and moved to London.",
])
def test_someone_elses_second_verb_is_theirs(acme, news):
    """ "Dad retired and moved back to Ireland." was written "The user lives in Ireland.": the clause after "and" was
    given the speaker's "I"."""
    texts = told_in_turn(make_user(acme, "ana"), "I live in Leeds.", news)
    assert holds(texts, "lives in Leeds"), texts
    assert not any(text.startswith("The user lives in") and "Leeds" not in text for text in texts), texts


def test_the_speakers_own_second_verb_is_still_theirs(acme):
    texts = told_in_turn(make_user(acme, "ana"), "I live in Leeds.", "Retired last year and moved to Valencia.")
    assert holds(texts, "lives in Valencia"), texts
    assert not holds(texts, "Leeds"), texts


@pytest.mark.parametrize(("before", "after", "old"), [
    ("I'm learning Portuguese.", "I've put Portuguese on hold to focus on my exams.", ("learning",)),
    ("I'm doing a pottery course.", "Paused the pottery course until the baby's older.", ("doing",)),
])
def test_putting_something_on_hold_ends_it(acme, before, after, old):
    texts = told_in_turn(make_user(acme, "bo"), before, after)
    assert not holds(texts, *old), texts
    assert texts, "the pause is kept"


@pytest.mark.parametrize(("before", "after", "old"), [
    ("I smoke a pack a day.", "Day twelve without a cigarette!", "pack"),
    ("I drink a bottle of wine most nights.", "Three weeks without a drink now.", "wine"),
])
def test_time_without_a_habit_ends_it(acme, before, after, old):
    """ "Day ten without a cigarette." wrote nothing (0.43 under the bar)."""
    texts = told_in_turn(make_user(acme, "cy"), before, after)
    assert not holds(texts, old), texts
    assert holds(texts, "without"), texts


def test_a_few_days_without_a_drink_once_is_no_end_of_drinking(acme):
    texts = told_in_turn(make_user(acme, "cy"), "I drink a bottle of wine most nights.",
                         "I went two days without a drink at the festival lol")
    assert holds(texts, "wine"), texts


def test_one_more_animal_ends_the_count(acme):
    texts = told_in_turn(make_user(acme, "di"), "We have two rabbits.", "We rescued a third rabbit on Saturday.")
    assert not holds(texts, "two rabbits"), texts
    assert holds(texts, "third rabbit"), texts


def test_one_more_animal_leaves_the_ones_named(acme):
    texts = told_in_turn(make_user(acme, "di"), "We have two cats called Pip and Squeak.", "We adopted another cat.")
    assert holds(texts, "Pip", "Squeak"), texts


def test_starting_school_ends_nursery(acme):
    user = make_user(acme, "ed")
    tell(user, "My son is at nursery.", "2025-02-01", "first")
    tell(user, "My son started school this September.", "2025-09-05", "later")
    texts = current_texts(user)
    assert not holds(texts, "nursery"), texts
    assert holds(texts, "started school"), texts


def test_a_new_thing_told_by_its_arrival_replaces_the_old_one(acme):
    """ "My new Pixel arrived today." wrote nothing (0.28 under the bar): the classifier hears the day's event."""
    texts = told_in_turn(make_user(acme, "fi"), "I have a Samsung Galaxy S21.", "My new Pixel 8 arrived this morning.")
    assert holds(texts, "Pixel"), texts
    assert not holds(texts, "Galaxy"), texts


@pytest.mark.parametrize("said", ["My new book arrived today, can't wait to start it.",
                                  "My new neighbours came round to say hi.",
                                  "Our old landlord stopped by to drop off some post."])
def test_a_new_arrival_or_a_visit_is_no_memory(acme, said):
    user = make_user(acme, "fi")
    tell(user, said, "2025-02-01", "s")
    assert current_texts(user) == []


def test_a_visit_that_names_the_visitor_keeps_the_name(acme):
    user = make_user(acme, "fi")
    tell(user, "My cousin Priya popped round with her new baby.", "2025-02-01", "s")
    assert holds(current_texts(user), "Priya"), current_texts(user)


def test_an_accepted_proposal_ends_dating(acme):
    texts = told_in_turn(make_user(acme, "gil"), "I'm seeing a guy called Marek.", "Marek proposed and I said yes!!")
    assert not holds(texts, "seeing"), texts
    assert holds(texts, "proposed"), texts


def test_a_proposal_of_plans_is_no_engagement(acme):
    user = make_user(acme, "gil")
    tell(user, "He proposed we go to Wagamama and I said yes.", "2025-02-01", "s")
    assert current_texts(user) == []


def test_braces_off_end_having_them(acme):
    texts = told_in_turn(make_user(acme, "hal"), "I've got braces on my top teeth.", "My braces came off today!")
    assert not holds(texts, "got braces"), texts


@pytest.mark.parametrize(("before", "after", "old"), [
    ("I've got an Xbox Series X.", "flogged the xbox on facebook marketplace, never played it", "got an Xbox"),
    ("I'm on Instagram way too much.", "Deleted my Instagram account, best decision ever.", "too much"),
])
def test_selling_as_people_say_it_and_deleting_an_app_end_having_it(acme, before, after, old):
    """ "flogged the ps5 on ebay" ended nothing: "flogged" was no word for selling."""
    texts = told_in_turn(make_user(acme, "ida"), before, after)
    assert not holds(texts, old), texts


def test_deleting_photos_is_no_news(acme):
    user = make_user(acme, "ida")
    tell(user, "I deleted the photos from my phone.", "2025-02-01", "s")
    assert current_texts(user) == []


def test_an_instruction_ends_the_preference_of_answers_it_overrides(acme):
    """ "Give me more detail from now on" left "The user prefers short answers." current beside it."""
    texts = told_in_turn(make_user(acme, "jo"), "I prefer short answers.",
                         "From now on give me detailed explanations please.")
    assert not holds(texts, "short answers"), texts
    assert holds(texts, "detailed"), texts


def test_an_instruction_leaves_what_is_not_about_answers(acme):
    texts = told_in_turn(make_user(acme, "jo"), "I like long walks on the beach.",
                         "Please give me more detailed answers from now on.")
    assert holds(texts, "long walks"), texts


def test_two_things_done_without_an_i_are_the_speakers(acme):
    """ "Caved and bought an iPhone." was kept as said, in no slot: "Caved" was read as someone's name."""
    texts = told_in_turn(make_user(acme, "kit"), "I have an Android phone.", "Caved and bought an iPhone.")
    assert holds(texts, "Kit caved", "iPhone"), texts


def test_a_farewell_by_name_ends_what_the_one_lost_had(acme):
    texts = told_in_turn(make_user(acme, "lev"), "Our rabbit is called Clover.", "RIP Clover 2016-2025 💔")
    assert not holds(texts, "called Clover"), texts
    assert holds(texts, "RIP", "Clover"), texts


def test_an_age_said_with_today_is_the_users_age(acme):
    texts = told_in_turn(make_user(acme, "lev"), "I'm 29.", "30 today, send cake")
    assert holds(texts, "30 years old"), texts
    assert not holds(texts, "29"), texts


def test_a_count_said_with_today_is_no_age(acme):
    user = make_user(acme, "lev")
    tell(user, "Had 2 today, trying to cut down", "2025-02-01", "s")
    assert not holds(current_texts(user), "years old"), current_texts(user)


def test_a_day_named_before_news_is_no_one_doing_it(acme):
    """ "Results day!! Got into Durham for law." was written "Results Got into Durham for law.": "Results" was read
    as someone's name, the news as theirs."""
    user = make_user(acme, "max")
    tell(user, "Results day!! Got into Durham for law.", "2025-08-14", "s")
    assert holds(current_texts(user), "Max got into Durham"), current_texts(user)


def test_a_last_shift_said_with_its_day_ends_the_job(acme):
    texts = told_in_turn(make_user(acme, "ned"), "I work at Homebase.",
                         "Last shift at Homebase today, onwards and upwards.")
    assert "Ned works at Homebase." not in texts, texts
    assert holds(texts, "no longer works at Homebase"), texts


def test_me_and_someone_named_own_what_is_ours(acme):
    """ "Me and Jake got our own flat" was written "The user and Jake got the user's own flat"."""
    user = make_user(acme, "oli")
    tell(user, "Me and Jake got our own flat together in Headingley!", "2025-02-01", "s")
    assert holds(current_texts(user), "Oli and Jake got their own flat"), current_texts(user)


def test_how_the_speaker_is_said_alone_is_no_memory(acme):
    """ "deleted all the dating apps, I'm done" wrote "The user is done." beside the news."""
    user = make_user(acme, "pat")
    tell(user, "deleted all the dating apps, I'm done", "2025-02-01", "s")
    texts = current_texts(user)
    assert holds(texts, "deleted", "dating apps"), texts
    assert not any(text.rstrip(".").endswith("is done") for text in texts), texts
