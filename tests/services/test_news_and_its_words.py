"""Everyday news of the thirtieth session (issue 17): news that ends what it replaces (finishing university, a
transfer, a wheelchair after a stick, a taste turned, one of the user's people's new job...), a child's birth as
news of the user's children, and memory texts that say what was said ("Work changed my hours", "quite likes",
"reads ... every night"). Sentences written for these tests, not taken from the evaluation corpus; several classes
were found among the dev split's out-of-fold failures (bench/write_out_of_fold.py). Real model, real database. (A
change said later with an earlier date, and a state told as over: tests/services/test_time_order.py.)"""

import pytest

from memoryapp.models import Memory
from tests.factories import holds, make_user, tell, told_in_turn

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("before", "after", "was"), [
    # finishing or leaving university ends being a student
    ("I'm a student at Manchester uni.", "Finished uni in the summer and started a grad scheme at Unilever.",
     "student"),
    ("I'm a student at Exeter.", "Done with uni at last, I start at a law firm in September.", "student"),
    ("My sister is studying nursing.", "My sister qualified as a nurse last month.", "studying nursing"),
    # one of the user's people, filed by what the news tells of them: "My brother's just started at Microsoft" was
    # filed under siblings (0.35 against employer 0.26), so his employer stayed Amazon
    ("My brother works at Amazon.", "My brother's just started at Microsoft.", "works at Amazon"),
    # something put away
    ("I have a Fitbit.", "Got an Apple Watch for Christmas, the Fitbit's in a drawer.", "Pam has a Fitbit"),
    ("I play on my Xbox most evenings.", "Bought a PS5 and the Xbox is gathering dust now.", "Pam plays on"),
    # later states in everyday words
    ("I can't drive.", "I've had my licence since October!", "can't drive"),
    ("I can't drive.", "Passed my driving test this morning!!", "can't drive"),
    ("i smoke weed sometimes", "been clean 3 months now", "smokes weed"),
    ("i have braces", "braces off!!! 😁", "has braces"),
    ("I broke my leg and I'm in plaster.", "The plaster is off at last!", "in plaster"),
    ("I'm a nurse on the cardiac floor at St James's.", "Transferred to the children's ward last week, loving it.",
     "cardiac floor"),
    ("I walk with a stick.", "I'm in a wheelchair full time now after the op.", "walks with a stick"),
    ("I'm single.", "Big news, I have a boyfriend! His name's Omar.", "is single"),
    ("My girlfriend Zoe and I have been together 4 years.", "We got married in May, I have a wife!!", "girlfriend"),
    ("I'm a stay-at-home dad.", "Started a new job at the garden centre, three days a week.", "stay-at-home"),
    ("I drive to work every day.", "I take the train to the office now, parking's a nightmare.", "drives to work"),
    # a taste turned ("weirdly I like mushrooms now" was filed under dislikes_food, "can't stand mushrooms" under
    # dislikes, both current, in the dev split's out-of-fold failures)
    ("I can't stand beetroot.", "Funny thing, I actually like beetroot now, roasted with feta.",
     "can't stand beetroot"),
    ("I hate running.", "Honestly I love running now, did my first 10k!", "hates running"),
    ("I don't like jazz.", "I've really got into jazz this year, I love it.", "dislikes jazz"),
    # what was never so
    ("I'm gluten intolerant, so no bread for me.", "The tests say it was never gluten, I'm actually sensitive to "
     "wheat starch.", "gluten"),
])
def test_news_ends_what_it_replaces(acme, before, after, was):
    texts = told_in_turn(make_user(acme, "pam"), before, after)
    assert not holds(texts, was), texts
    assert texts, "the news is kept"


@pytest.mark.parametrize(("before", "after", "kept"), [
    ("I'm a second year law student.", "Left uni early today to beat the traffic.", "law student"),
    ("I can't drive.", "My sister got her licence last week.", "can't drive"),
    ("I drive to work.", "My brother takes the bus to work.", "drives to work"),
    ("I'm single.", "My sister has a boyfriend now, his name is Ben.", "is single"),
    ("I work on the maternity ward.", "My friend got transferred to Leeds.", "maternity ward"),
    ("I love my job.", "I hate the commute though.", "job"),
    ("I hate coffee.", "My sister loves coffee now.", "hates coffee"),
    ("My boyfriend is called Jake.", "My boyfriend's brother got married on Saturday.", "Jake"),
    ("I live in a ground floor flat.", "Transferred to the Leeds office last month.", "ground floor flat"),
    ("I work in the IT department.", "Transferred my savings to Monzo.", "IT department"),
    ("I'm unemployed at the moment.", "Joined a gym to keep myself busy.", "unemployed"),
    ("I drive to work every day.", "I got the train to Manchester for the gig on Saturday.", "drives to work"),
])
def test_news_of_something_else_leaves_the_old_value(acme, before, after, kept):
    texts = told_in_turn(make_user(acme, "pam"), before, after)
    assert holds(texts, kept), texts


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
    ("I read on my Kindle every night.", "reads on their Kindle", "read on their Kindle"),
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
