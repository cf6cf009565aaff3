"""News in everyday words (issue 17): an ending said as "no more ..." or "... didn't last" beside what holds now,
the death of someone named, a job lost, a birthday said by its number, and news of one of the user's people by a
name, whether or not a memory gave them one. Sentences written for these tests, not taken from the evaluation
corpus. Real model, real database."""

import pytest

from memoryapp.models import Memory
from tests.factories import current_texts, holds, make_user, tell, told_in_turn

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    # the ending said first, what holds now after it
    ("I'm pescatarian.", "No more fish for me, I'm fully vegetarian now.", ("pescatarian",), ("vegetarian",)),
    ("I'm doing intermittent fasting.", "The fasting didn't last, I'm back on three meals a day.",
     ("doing intermittent",), ("three meals",)),
    # a job lost ends where the user worked as well as what they did
    ("I work for the county library as an archivist.", "I was laid off in the budget cuts.", ("library",),
     ("laid off",)),
])
def test_an_ending_beside_the_news_ends_the_old_value_and_keeps_the_new(acme, before, after, old, new):
    texts = told_in_turn(make_user(acme, "ines"), before, after)
    assert not holds(texts, *old), texts
    assert holds(texts, *new), texts


@pytest.mark.parametrize("death", [
    "Pretzel passed away peacefully this morning.",
    "Pretzel died over the weekend, the kids are heartbroken.",
])
def test_the_death_of_someone_named_is_news_that_ends_what_they_had(acme, death):
    """The classifier takes such news for passing ("this morning", grief); it holds for good."""
    texts = told_in_turn(make_user(acme, "ruth"), "We have a dachshund called Pretzel.", death)
    assert not holds(texts, "have", "Pretzel"), texts
    assert holds(texts, "dachshund Pretzel"), texts  # who Pretzel was, as the ended memory said


@pytest.mark.parametrize(("before", "death", "gone", "kept"), [
    ("My dad lives with us now, he's 84 and the dementia is getting worse.", "my dad died last week, peaceful at "
     "the end", ("dementia",), ()),
    ("my nan is in hospital with pneumonia, she's 91", "we lost nan on Tuesday", ("pneumonia",), ()),
    ("We have two dogs, Rex and Luna. Rex is 12 and has arthritis. Luna is 3 and loves the beach.",
     "our dog Rex was put down yesterday, he was 12", ("arthritis",), ("Luna", "beach")),
])
def test_a_death_ends_all_that_was_current_of_the_one_who_died(acme, before, death, gone, kept):
    """Before, the death ended one memory of them at most: "The user's dad is 84 and the dementia is getting worse."
    stayed current after "my dad died", for an agent to ask after."""
    texts = told_in_turn(make_user(acme, "ruth"), before, death)
    assert not holds(texts, *gone), texts
    assert not kept or holds(texts, *kept), texts


@pytest.mark.parametrize("news", ["My dad's best friend died last week.",
                                  "My dad buried the time capsule at his old school last week.",
                                  "We lost the dog in the park for an hour yesterday, found him by the pond."])
def test_no_death_of_theirs_ends_what_holds_of_them(acme, news):
    texts = told_in_turn(make_user(acme, "ruth"), "My dad has a bad back and plays golf every Sunday. Our dog is "
                                                  "a greyhound that sleeps all day.", news)
    assert holds(texts, "golf") and holds(texts, "greyhound"), texts


def test_what_the_message_said_beside_the_replaced_value_ends_too_when_as_likely_replaced(acme):
    """ "I have hepatitis, I'm in treatment for three months" is two memories; the news ended the first and left the
    treatment current for ever."""
    texts = told_in_turn(make_user(acme, "ines"), "I have hepatitis, I'm in treatment for three months",
                         "the last liver test was clean and the doctor discharged me, I can finally drink a glass of "
                         "wine again")
    assert not holds(texts, "hepatitis") and not holds(texts, "treatment"), texts


@pytest.mark.parametrize(("before", "after", "kept"), [
    ("I'm a nurse and I live in Leeds with my two cats", "we moved to York last month, the new flat is lovely",
     ("nurse",)),
    ("I work as a chef at a hotel, and I play the guitar in a band on weekends",
     "I left the hotel and now I'm a sous chef at a small bistro", ("guitar",)),
])
def test_what_the_message_said_beside_the_replaced_value_of_another_kind_stays(acme, before, after, kept):
    texts = told_in_turn(make_user(acme, "ines"), before, after)
    assert holds(texts, *kept), texts


def test_a_name_said_later_in_the_news_is_described_as_the_ended_memory_did(acme):
    """ "We gave Clementine to my cousin" names Clementine mid-sentence, beside another of the user's people."""
    ruth = make_user(acme, "ruth")
    texts = told_in_turn(ruth, "My rabbit is called Clementine.",
                         "We gave Clementine to my cousin because of the new baby.")
    assert not holds(texts, "rabbit", "called"), texts
    assert holds(texts, "rabbit Clementine", "cousin"), texts
    assert Memory.objects.get(user=ruth, status=Memory.Status.ACTIVE).attribute == "pet"


def test_news_by_a_name_no_memory_gave_is_of_the_one_whose_value_it_ends(acme):
    """ "Oscar turned 10" after "my son is 9": Oscar is the son; the news is his, in his words."""
    vera = make_user(acme, "vera")
    texts = told_in_turn(vera, "My son is 9.", "Oscar turned 10 on Sunday, we had a bowling party.")
    assert not holds(texts, "9 years"), texts
    news = Memory.objects.get(user=vera, status=Memory.Status.ACTIVE, text__contains="Oscar")
    assert news.text.startswith("Vera's son Oscar turned 10"), news.text
    assert news.subject == "vera's son"


def test_a_birthday_said_by_its_number_is_the_user_s_age(acme):
    texts = told_in_turn(make_user(acme, "abe"), "I'm 46.", "Celebrated my 47th with a long lunch.")
    assert holds(texts, "47 years old"), texts
    assert not holds(texts, "46"), texts


@pytest.mark.parametrize(("message", "words"), [
    ("I'm a Celtics fan.", ("Celtics",)),
    ("I make pasta from scratch every Sunday.", ("pasta",)),
    ("we swim at the lido twice a week", ("lido",)),
    # the time first
    ("Every morning it's a 40-minute bus ride to the depot, so I read on the way.", ("bus", "depot")),
])
def test_a_habit_or_a_team_followed_is_a_memory(acme, message, words):
    user = make_user(acme, "ted")
    tell(user, message, "2025-02-01", "s")
    assert holds(current_texts(user), *words), current_texts(user)


@pytest.mark.parametrize("message", ["I've had a migraine every day this week.", "I was up every night.",
                                     "every day this week it's been raining"])
def test_a_passing_run_of_days_is_no_habit(acme, message):
    user = make_user(acme, "ted")
    tell(user, message, "2025-02-01", "s")
    assert current_texts(user) == []


def test_working_at_weekends_is_no_employer(acme):
    user = make_user(acme, "ted")
    tell(user, "I work at weekends at a garden centre.", "2025-02-01", "s")
    assert not Memory.objects.filter(user=user, attribute="employer").exists()
    assert holds(current_texts(user), "weekends", "garden centre"), current_texts(user)


def test_news_in_a_one_value_slot_says_who_it_names_as_the_value_it_replaces_did(acme):
    """ "We gave Kiwi to a neighbour" replaces "... has a budgie named Kiwi." in the pet slot: Kiwi is the budgie."""
    user = make_user(acme, "kofi")
    texts = told_in_turn(user, "I have a budgie called Kiwi.", "We gave Kiwi to our neighbour when we moved.")
    assert texts == [next(t for t in texts if "budgie Kiwi" in t)], texts


@pytest.mark.parametrize("then", ["I've moved into a flatshare in Brixton.", "I finally got my own place!",
                                  "We bought our first house in Luton."])
def test_a_home_of_one_s_own_ends_living_with_parents(acme, then):
    texts = told_in_turn(make_user(acme, "kofi"), "I still live with my parents.", then)
    assert not holds(texts, "parents"), texts


@pytest.mark.parametrize("message", ["me and my husband moved to Croydon last year",
                                     "Me and my wife live in Croydon now."])
def test_me_and_one_of_mine_is_the_user_too(acme, message):
    """ "me and my husband moved to croydon" was read as "me" and "my husband moved to croydon": the husband's
    city alone, and "where do I live?" abstained."""
    user = make_user(acme, "ravi")
    tell(user, message, "2025-02-01", "s")
    assert Memory.objects.filter(user=user, subject="ravi", attribute="city", text__icontains="Croydon").exists()


def test_a_place_the_ended_memory_names_is_not_someone_s_name(acme):
    """ "Mom sold her Tampa condo" after "My mom lives in Tampa.": Tampa is where she lived, not who she is (it was
    written "The user's mom sold her their mother Tampa condo")."""
    texts = told_in_turn(make_user(acme, "lu"), "My mom lives in Tampa.",
                         "Mom sold her Tampa condo and moved up to Atlanta near my brother.")
    assert holds(texts, "Atlanta"), texts
    assert not any("mother Tampa" in text for text in texts), texts


def test_back_at_work_ends_a_leave_and_says_who_is_back(acme):
    """ "Back at work since Monday" wrote nothing (0.02 under the bar) and, once written, had no subject."""
    texts = told_in_turn(make_user(acme, "mae"), "I'm on maternity leave.",
                         "Back at work since Monday, it's been a shock to the system.")
    assert not holds(texts, "maternity leave"), texts
    assert holds(texts, "Mae is back at work"), texts


@pytest.mark.parametrize(("first", "then", "gone"), [
    ("I live alone.", "My boyfriend moved in with me last weekend.", "alone"),
    ("My mum lives with us.", "Mum moved out to a flat near my aunt.", "lives with"),
])
def test_someone_moving_in_or_out_is_news_of_the_user_s_home(acme, first, then, gone):
    """ "My boyfriend moved in with me" was filed under the boyfriend: "who do I live with?" found nothing of the
    user's."""
    user = make_user(acme, "ines")
    texts = told_in_turn(user, first, then)
    assert not holds(texts, gone), texts
    news = Memory.objects.get(user=user, status=Memory.Status.ACTIVE)
    assert (news.subject, news.attribute) == ("ines", "home_life"), news


def test_a_relative_moving_out_of_their_own_place_is_still_their_news(acme):
    user = make_user(acme, "ines")
    tell(user, "My sister moved out of her flat in Leeds and into a house in York.", "2025-02-01", "s")
    assert not Memory.objects.filter(user=user, subject="ines", attribute="home_life").exists()


@pytest.mark.parametrize(("first_days", "employer"), [
    ("Survived my first day at KPMG!", "KPMG"),
    ("first week at KPMG done, the canteen is so much better", "KPMG"),
    # just under the durable bar alone (the sore feet of a day): news of a start all the same
    ("first shift at Boots done, my feet are killing me", "Boots"),
])
def test_the_first_days_at_a_new_employer_end_the_old_one(acme, first_days, employer):
    """The family model hears a job in "my first day at KPMG"; it is where the user works now."""
    texts = told_in_turn(make_user(acme, "dana"), "I work at Deloitte as an auditor.", first_days)
    assert not holds(texts, "Deloitte"), texts
    assert holds(texts, employer), texts


def test_a_first_day_still_to_come_ends_no_employer_yet(acme):
    texts = told_in_turn(make_user(acme, "dana"), "I work at Deloitte as an auditor.",
                         "first day at KPMG tomorrow, so nervous")
    assert holds(texts, "Deloitte"), texts


@pytest.mark.parametrize(("before", "after", "gone"), [
    ("I work as an accountant at a small firm in Leeds.", "handed in my notice today, going to travel for a year",
     ("accountant",)),
    ("I'm a receptionist at a dental practice.", "I've put in my notice at the practice, last day is the 30th",
     ("receptionist",)),
    ("I'm a chef at a hotel restaurant.", "resigned yesterday!! starting my own food truck next month", ("chef",)),
    ("I'm a cashier at Tesco.", "gave my two weeks notice at Tesco this morning", ("cashier",)),
])
def test_leaving_a_job_by_ones_own_word_ends_it(acme, before, after, gone):
    """The classifier heard the day in "handed in my notice today" and wrote nothing, or an appointment in "last day
    is the 30th"; the job stayed current."""
    texts = told_in_turn(make_user(acme, "omar"), before, after)
    assert not holds(texts, *gone), texts
    assert holds(texts, "notice") or holds(texts, "resigned"), texts


@pytest.mark.parametrize("after", ["I've resigned myself to another year of this job",
                                   "I resigned from the allotment committee, too much drama",
                                   # someone else's notice
                                   "Chloe handed in her notice and my new shift partner is a bloke called Brendan",
                                   "Chloe resigned, so it's just me and Brendan on nights now"])
def test_resigning_oneself_or_a_seat_on_a_committee_leaves_the_job(acme, after):
    texts = told_in_turn(make_user(acme, "omar"), "I work for the council as a planning officer.", after)
    assert holds(texts, "planning officer") or holds(texts, "council"), texts


def test_the_users_own_news_ends_none_of_their_peoples_values(acme):
    """"crochet is my new thing" was heard as a job and ended "my roommate Dev is a chef" (p 0.88): news that speaks
    of no one but the user leaves their people's memories, and still ends the user's own."""
    user = make_user(acme, "noor")
    tell(user, "btw we have a hot tub in the backyard lol best decision ever", "2025-01-20", "first")
    tell(user, "my roommate Dev is a chef so i eat really well ngl", "2025-01-21", "first")
    texts = told_in_turn(user, "I'm obsessed with baking sourdough, my starter's name is Clint Yeastwood",
                         "gave up on sourdough, too much babysitting. crochet is my new thing")
    assert holds(texts, "Dev", "chef"), texts
    assert holds(texts, "crochet"), texts
    assert not holds(texts, "obsessed", "sourdough"), texts


@pytest.mark.parametrize(("none", "then"), [
    # the news is kept in another slot than the "none" (education, not degree)
    ("I don't have a degree.", "I'm in my first year of a part-time history degree with the OU"),
    # "no health problems": a kind named by the word before "problems"
    ("I have no health problems.", "I was diagnosed with asthma last week."),
    ("I'm generally healthy, no chronic conditions.", "I was diagnosed with type 2 diabetes last week."),
])
def test_a_statement_of_none_ends_when_one_of_its_kind_is_said(acme, none, then):
    texts = told_in_turn(make_user(acme, "lena"), none, then)
    none_said = ("no health", "no chronic", "doesn't have a degree")
    assert not any(said in text for text in texts for said in none_said), texts


def test_none_of_another_kind_stays(acme):
    texts = told_in_turn(make_user(acme, "lena"), "I have no money problems at all.",
                         "I have a problem with my knee, it clicks when I run.")
    assert holds(texts, "no money problems"), texts


@pytest.mark.parametrize(("before", "after", "gone"), [
    ("I'm a PhD student in chemistry at Bristol.", "passed my viva today, minor corrections!!",
     [("PhD student",), ("studies", "Bristol")]),
    ("I'm a third-year doctoral candidate in sociology.", "I defended my dissertation today!",
     [("doctoral candidate",)]),
])
def test_a_doctorate_finished_ends_the_studies(acme, before, after, gone):
    """The classifier heard the day in "I defended my dissertation today!" and wrote nothing; "passed my viva" was an
    appointment, and ended no PhD student."""
    texts = told_in_turn(make_user(acme, "wen"), before, after)
    assert not any(holds(texts, *words) for words in gone), texts
    assert holds(texts, "viva") or holds(texts, "defended"), texts


def test_a_partnership_ended_is_no_value_of_another_slot(acme):
    """"ended things" beside "long distance" ended "The user's girlfriend Sam lives in Bristol." and took its slot,
    under the user: it answered "where do I live?"."""
    user = make_user(acme, "kit")
    texts = told_in_turn(user, "My girlfriend Sam lives in Bristol.",
                         "Sam and I ended things in the summer, long distance was too much")
    assert not holds(texts, "Sam", "Bristol"), texts
    assert holds(texts, "ended things"), texts
    assert not Memory.objects.filter(user=user, subject="kit", attribute="city").exists()


@pytest.mark.parametrize("first", ["I live in Leeds and my girlfriend Sam lives in Bristol.",
                                   "My girlfriend Sam lives in Bristol and I live in Leeds."])
def test_the_users_own_clause_beside_their_partners_outlives_the_partnership(acme, first):
    """The user's home was worded with the whole sentence ("The user lives in Leeds and their girlfriend Sam lives in
    Bristol."), so the break-up that ended the girlfriend's home ended the user's."""
    texts = told_in_turn(make_user(acme, "kit"), first, "Sam and I ended things in the summer, long distance was too "
                                                        "much")
    assert holds(texts, "Leeds"), texts
    assert not holds(texts, "Bristol"), texts


@pytest.mark.parametrize(("before", "given", "gone", "slot"), [
    ("My phone is an old iPhone 8.", "my son gave me his old Pixel 7 when he upgraded, so that's my phone now",
     "iPhone", "phone"),
    ("I drive a Ford Focus.", "my dad gave me his Volvo when he stopped driving", "Focus", "car"),
])
def test_a_thing_someone_gave_the_user_is_the_users(acme, before, given, gone, slot):
    """Filed as the son's phone, the Pixel left the user's iPhone current: "what phone do I have?" said the iPhone."""
    user = make_user(acme, "ada")
    texts = told_in_turn(user, before, given)
    assert not holds(texts, gone), texts
    assert Memory.objects.filter(user=user, subject="ada", attribute=slot, valid_to__isnull=True,
                                 text__icontains="gave").exists(), texts
