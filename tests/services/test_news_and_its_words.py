"""Everyday news of the thirtieth session (issue 17): finishing university ends being a student, a child's birth is
news of the user's children, and the words of a memory say what was said ("Work changed my hours", "I actually quite
like them now", "I left my job and I work for myself now"). Sentences written for these tests, not taken from the
evaluation corpus. Real model, real database. (A change said later with an earlier date, and a state told as over:
tests/services/test_time_order.py.)"""

import pytest

from memoryapp.models import Memory
from tests.factories import holds, make_user, tell, told_in_turn

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("before", "after"), [
    ("I'm a student at Manchester uni.", "Finished uni in the summer and started a grad scheme at Unilever."),
    ("I'm a student at Exeter.", "Done with uni at last, I start at a law firm in September."),
])
def test_finishing_university_ends_being_a_student(acme, before, after):
    texts = told_in_turn(make_user(acme, "ed"), before, after)
    assert not holds(texts, "student"), texts
    assert texts, "the news is kept"


def test_leaving_the_university_for_the_day_is_no_end_of_studying(acme):
    texts = told_in_turn(make_user(acme, "ed"), "I'm a second year law student.",
                         "Left uni early today to beat the traffic.")
    assert holds(texts, "law student"), texts


@pytest.mark.parametrize("birth", ["Our son Arlo was born on the 3rd!", "My baby girl Rosie was born yesterday!"])
def test_a_childs_birth_is_news_of_the_users_children(acme, birth):
    """ "Our son Arlo was born" was filed as a pregnancy of the son's ("son's pregnancy"), which "do I have kids?" did
    not find."""
    user = make_user(acme, "fi")
    texts = told_in_turn(user, "I'm 30 weeks pregnant.", birth)
    assert not holds(texts, "pregnant"), texts
    born = Memory.objects.get(user=user, status="active", text__contains="born")
    assert born.attribute == "children", born.attribute


def test_a_sisters_baby_is_still_the_sisters_news(acme):
    user = make_user(acme, "fi")
    texts = told_in_turn(user, "My sister is pregnant.", "My sister's baby was born last night, a little boy!")
    assert not holds(texts, "pregnant"), texts
    assert Memory.objects.get(user=user, status="active", text__contains="born").attribute != "children"


@pytest.mark.parametrize(("said", "written", "not_written"), [
    ("Work changed my hours so now I get the 8:40 train.", "Work changed", "works changed"),
    ("Weirdly I've come round to olives, I actually quite like them now.", "quite likes", "quites"),
    ("Down to 78kg after the diet!", "Gus is down to 78kg", "Down to"),
    ("Driving lessons every Tuesday after work.", "Gus has driving lessons", "is driving lessons"),
    ("Driving test got pushed back to the 28th.", "Gus's driving test got pushed back", "is driving test"),
])
def test_the_memory_says_what_was_said(acme, said, written, not_written):
    user = make_user(acme, "gus")
    tell(user, said, "2025-03-01", "s")
    texts = list(Memory.objects.filter(user=user).values_list("text", flat=True))
    assert any(written in text for text in texts), texts
    assert not any(not_written in text for text in texts), texts


def test_a_job_left_for_another_clause_is_no_swap(acme):
    """ "left my job ... for myself" was read as a swap of the job "for" the rest: "The user switched to themselves
    now."."""
    texts = told_in_turn(make_user(acme, "gus"), "I work at Tesco.", "I left my job and I work for myself now.")
    assert holds(texts, "works for themselves"), texts
    assert not holds(texts, "switched"), texts
    assert not holds(texts, "works at Tesco"), texts


@pytest.mark.parametrize(("before", "after", "was"), [
    ("I have a Fitbit.", "Got an Apple Watch for Christmas, the Fitbit's in a drawer.", "Hal has a Fitbit"),
    ("I play on my Xbox most evenings.", "Bought a PS5 and the Xbox is gathering dust now.", "Hal plays on"),
])
def test_something_put_away_is_over(acme, before, after, was):
    texts = told_in_turn(make_user(acme, "hal"), before, after)
    assert not any(text.startswith(was) for text in texts), texts
    assert texts, "the news is kept"


@pytest.mark.parametrize("after", ["I've had my licence since October!", "Passed my driving test this morning!!"])
def test_a_licence_ends_not_driving(acme, after):
    texts = told_in_turn(make_user(acme, "ivy"), "I can't drive.", after)
    assert not holds(texts, "can't drive"), texts


def test_a_sisters_licence_leaves_the_speaker_not_driving(acme):
    texts = told_in_turn(make_user(acme, "ivy"), "I can't drive.", "My sister got her licence last week.")
    assert holds(texts, "can't drive"), texts


def test_what_something_is_now_is_no_name(acme):
    """ "it's Three now, way cheaper" (the phone network) was written "The user's name is Three."."""
    user = make_user(acme, "jo")
    tell(user, "I'm with Vodafone for my phone.", "2025-03-01", "a")
    tell(user, "it's Three now, way cheaper.", "2025-04-01", "b")
    assert not Memory.objects.filter(user=user, attribute="name").exists()


def test_a_new_name_after_a_wedding_is_still_a_name(acme):
    user = make_user(acme, "jo")
    tell(user, "I took my wife's last name, so it's Hannah Okafor now.", "2025-03-01", "a")
    assert Memory.objects.get(user=user, attribute="name", status="active").value == "Hannah Okafor"


def test_a_habit_of_reading_is_told_in_the_present(acme):
    user = make_user(acme, "kim")
    tell(user, "I read on my Kindle every night.", "2025-03-01", "a")
    assert Memory.objects.filter(user=user, text__contains="reads on their Kindle").exists()


@pytest.mark.parametrize(("before", "after", "was"), [
    ("My sister is studying nursing.", "My sister qualified as a nurse last month.", "studying nursing"),
    ("My brother works at Amazon.", "My brother's just started at Microsoft.", "works at Amazon"),
])
def test_news_of_one_of_theirs_ends_what_it_replaces(acme, before, after, was):
    """ "My brother's just started at Microsoft" was filed under siblings (0.35 against employer 0.26): who he is,
    not what the message tells of him, so his employer stayed Amazon."""
    texts = told_in_turn(make_user(acme, "lou"), before, after)
    assert not holds(texts, was), texts
    assert texts, "the news is kept"


@pytest.mark.parametrize(("before", "after", "was"), [
    ("i smoke weed sometimes", "been clean 3 months now", "smokes weed"),
    ("i have braces", "braces off!!! 😁", "has braces"),
])
def test_time_clean_and_braces_off_end_what_was(acme, before, after, was):
    texts = told_in_turn(make_user(acme, "mo"), before, after)
    assert not holds(texts, was), texts
    assert texts, "the news is kept"


@pytest.mark.parametrize(("before", "after", "was"), [
    ("I'm a nurse on the cardiac floor at St James's.", "Transferred to the children's ward last week, loving it.",
     "cardiac floor"),
    ("I walk with a stick.", "I'm in a wheelchair full time now after the op.", "walks with a stick"),
    ("I'm single.", "Big news, I have a boyfriend! His name's Omar.", "is single"),
    ("My girlfriend Zoe and I have been together 4 years.", "We got married in May, I have a wife!!", "girlfriend"),
    ("I'm a stay-at-home dad.", "Started a new job at the garden centre, three days a week.", "stay-at-home"),
    ("I drive to work every day.", "I take the train to the office now, parking's a nightmare.", "drives to work"),
    ("I broke my leg and I'm in plaster.", "The plaster is off at last!", "in plaster"),
])
def test_a_later_state_in_everyday_words_ends_the_earlier(acme, before, after, was):
    """Out-of-fold failures of the dev split (bench/write_out_of_fold.py), in sentences written for this test: a
    transfer to another ward, a wheelchair after a stick, a partner after being single, a wedding after a girlfriend,
    a job after none, another way to work, the plaster off."""
    texts = told_in_turn(make_user(acme, "nat"), before, after)
    assert not holds(texts, was), texts
    assert texts, "the news is kept"


@pytest.mark.parametrize(("before", "after", "kept"), [
    ("I drive to work.", "My brother takes the bus to work.", "drives to work"),
    ("I'm single.", "My sister has a boyfriend now, his name is Ben.", "is single"),
    ("I work on the maternity ward.", "My friend got transferred to Leeds.", "maternity ward"),
])
def test_someone_elses_later_state_leaves_the_users(acme, before, after, kept):
    texts = told_in_turn(make_user(acme, "nat"), before, after)
    assert holds(texts, kept), texts


@pytest.mark.parametrize(("before", "after", "was"), [
    ("I can't stand mushrooms, the texture is just wrong.", "Weirdly I like mushrooms now?? My flatmate's risotto "
     "converted me.", "can't stand mushrooms"),
    ("I hate running.", "Honestly I love running now, did my first 10k!", "hates running"),
    ("I don't like jazz.", "I've really got into jazz this year, I love it.", "dislikes jazz"),
])
def test_a_taste_turned_ends_the_other(acme, before, after, was):
    """ "Weirdly I like mushrooms now" was filed under dislikes_food, "can't stand mushrooms" under dislikes: two
    slots, both current."""
    texts = told_in_turn(make_user(acme, "ola"), before, after)
    assert not holds(texts, was), texts
    assert texts, "the new taste is kept"


@pytest.mark.parametrize(("before", "after", "kept"), [
    ("I love my job.", "I hate the commute though.", "job"),
    ("I hate coffee.", "My sister loves coffee now.", "hates coffee"),
])
def test_another_taste_leaves_the_first(acme, before, after, kept):
    texts = told_in_turn(make_user(acme, "ola"), before, after)
    assert holds(texts, kept), texts


def test_what_was_never_so_is_over(acme):
    texts = told_in_turn(make_user(acme, "pat"), "I'm lactose intolerant so I have oat milk.",
                         "Turns out it was never lactose, I'm actually fructose intolerant.")
    assert not holds(texts, "lactose"), texts
    assert holds(texts, "fructose"), texts
