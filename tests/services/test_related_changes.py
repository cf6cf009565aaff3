"""A change said in words no slot shares ends the old value all the same (services.apply.related_close):
the closest current memory of the same fact family, of the same subject or of the person the change
names; a statement that there is none of a kind ends when the kind appears; and nothing unrelated
ends. Sentences written for these tests, not taken from the evaluation corpus. Real model, real
database."""

import re

import pytest

from memoryapp.evaluation.write_corpus import mentions
from memoryapp.models import Memory
from memoryapp.services.apply import _kind_of_none
from tests.factories import current_texts, holds, make_user, tell, told_in_turn

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    # none of a kind, then one: no change word needed
    ("I've never owned a bike.", "Bought a bike last weekend, a red Trek.", ("never", "bike"), ("Trek",)),
    ("We've never had a garden.", "Our new place has a small garden with two apple trees.", ("never", "garden"),
     ("apple",)),
    # the kind is said where the "no" is, whatever the sentence goes on with
    # the kind named by the slot the new memory fills, not by its words
    ("We don't have any pets, the landlord won't allow it.", "we adopted a rabbit called Biscotti last week",
     ("pets",), ("Biscotti",)),
    # a change of one of the user's people, who is named by the change alone
    ("My cousin Lars lives in Oslo.", "Lars just moved to Bergen for a teaching job.", ("Oslo",), ("Bergen",)),
    # a death ends what the person had or did
    ("My grandmother lives with us.", "We buried my grandmother on Friday.", ("lives",), ("buried",)),
])
def test_a_change_ends_the_old_value_kept_in_another_slot(acme, before, after, old, new):
    user = make_user(acme, "oona")
    tell(user, before, "2025-02-01", "first")
    assert holds(current_texts(user), *old)

    tell(user, after, "2025-03-15", "later")

    now = current_texts(user)
    assert holds(now, *new) and not holds(now, *old), now
    closed = Memory.objects.filter(user=user, status=Memory.Status.SUPERSEDED, text__icontains=old[-1])
    assert closed and {m.valid_to.date().isoformat() for m in closed} == {"2025-03-15"}, "held until the change"


# No word of these says a change ("got the transplant"): the classifier hears it in the message.
HEARD_CHANGES = [
    ("I'm on a waiting list for a kidney.", "Got the transplant in June and the new kidney is working.",
     ("waiting",), ("transplant",)),
]


@pytest.mark.parametrize(("before", "after", "old", "new"), HEARD_CHANGES)
def test_a_change_said_without_a_change_word_ends_the_old_value(acme, before, after, old, new):
    now = told_in_turn(make_user(acme, "rhea"), before, after)
    assert holds(now, *new) and not holds(now, *old), now


# The two memories share no word and little meaning for the model ("Vespa" and "e-bike"); the old one is the
# memory the change and its message are clearly nearest to among what the user holds (services.replacement).
OTHER_WORDS = [
    ("I ride a Vespa to work.", "Sold the scooter and got an e-bike, I cycle to the office now.", ("Vespa",),
     ("e-bike",)),
    ("I bank with HSBC.", "Moved all my money over to Monzo last month.", ("HSBC",), ("Monzo",)),
    ("I use a Fitbit to track my runs.", "Got an Apple Watch for my birthday, it tracks everything now.",
     ("Fitbit",), ("Apple", "Watch")),
]


@pytest.mark.parametrize(("before", "after", "old", "new"), OTHER_WORDS)
def test_a_change_in_other_words_ends_the_memory_it_is_clearly_nearest(acme, before, after, old, new):
    user = make_user(acme, "yara")
    held = ["I have a cat named Miso.", "I'm allergic to penicillin.", "My sister lives in Leeds.",
            "I play chess on Sundays."]
    for number, text in enumerate([*held, before]):
        tell(user, text, "2025-02-01", f"first{number}")
    tell(user, after, "2025-03-15", "later")

    now = current_texts(user)
    assert holds(now, *new) and not holds(now, *old), now
    for words in (("Miso",), ("penicillin",), ("Leeds",), ("chess",)):
        assert holds(now, *words), (words, now)


def test_without_the_change_heard_those_old_values_stay(acme, monkeypatch):
    """The same messages, with the classifier's change head silenced: the write path alone keeps the old
    values, so the test above measures the head."""
    from dataclasses import replace

    from memoryapp.services import apply
    from memoryapp.services.extract import classifier

    monkeypatch.setattr(classifier, "_weights", replace(classifier.weights(), change_threshold=2.0))
    monkeypatch.setattr(apply, "FAINT_CHANGE_HEARD", 2.0)  # nor heard faintly
    for number, (before, after, old, _) in enumerate(HEARD_CHANGES):
        assert holds(told_in_turn(make_user(acme, f"sol{number}"), before, after), *old)


# Heard only faintly by the change head (likelihood 0.3-0.4, under its threshold): the old value ends because the
# replacement model is near certain of it (apply.FAINT_CHANGE_BAR).
FAINTLY_HEARD = [
    ("My brother Callum is in the navy, based in Portsmouth.",
     "Callum's out of the navy and renting a place ten minutes from us in Derby, babysitter sorted!",
     ("Portsmouth",), ("Derby",)),
    ("I do all my writing on an old Chromebook.",
     "the dog chewed through the chromebook so all my writing is on a refurbished ThinkPad from eBay",
     ("writing", "Chromebook", "does"), ("ThinkPad",)),
]


@pytest.mark.parametrize(("before", "after", "old", "new"), FAINTLY_HEARD)
def test_a_change_heard_faintly_ends_the_memory_it_surely_replaces(acme, monkeypatch, before, after, old, new):
    from memoryapp.services import apply

    now = told_in_turn(make_user(acme, "ivo"), before, after)
    assert holds(now, *new) and not holds(now, *old), now
    assert not any(re.search(r"\b(\w+) \1\b", text, re.I) for text in now), "no word said twice ('the the')"

    monkeypatch.setattr(apply, "FAINT_CHANGE_HEARD", 2.0)  # not heard at all: the old value stays
    assert holds(told_in_turn(make_user(acme, "ivo2"), before, after), *old)


@pytest.mark.parametrize(("before", "after", "kept"), [
    ("My husband Raj teaches geography.", "Raj got a commendation from the head for his field trip planning",
     ("Raj", "geography")),
    ("I play five-a-side on Tuesdays.", "we lost 9-2 on Tuesday, worst game of the season", ("five-a-side",)),
])
def test_news_heard_faintly_that_changes_nothing_ends_nothing(acme, before, after, kept):
    assert holds(told_in_turn(make_user(acme, "ines"), before, after), *kept)


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    # the value ended is named in another form of its word ("plumbing", "plumber")
    ("I work as a plumber.", "I quit plumbing, I drive a bus now.", ("plumber",), ("bus",)),
    # what the first message said twice, in two memories of two subjects or two lengths, ends whole
    ("I'm single, haven't dated in years.", "I've been seeing a lovely guy called Omar since May.", ("single",),
     ("Omar",)),
    ("We live in Galway, in a cottage by the bay.", "We moved to Cork last month for my wife's job.", ("Galway",),
     ("Cork",)),
    ("My wife Ines and I have been married since 2010.", "I'm officially divorced since the spring, it's just me now.",
     ("married",), ("divorced",)),
    ("My brother Karl is engaged to his college sweetheart.", "karl got married in Vienna on Saturday!!",
     ("engaged",), ("Vienna",)),
    # "Mum and Dad" and "my parents" are the same two people
    ("My parents live in Boston.", "Mum and Dad moved down to Florida last spring.", ("Boston",), ("Florida",)),
])
def test_a_change_ends_every_memory_that_still_says_the_old_value(acme, before, after, old, new):
    now = told_in_turn(make_user(acme, "tove"), before, after)
    assert holds(now, *new) and not holds(now, *old), now


def test_a_name_said_of_someone_else_is_not_the_users(acme):
    user = make_user(acme, "vera")
    tell(user, "Guess what, I have a boyfriend now! His name is Milo.", "2025-03-15", "later")
    texts = current_texts(user)
    # "Vera has a boyfriend; his name is Milo." tells whose name it is
    assert holds(texts, "boyfriend", "Milo"), texts
    assert not any(re.search(r"\bVera(?:'s name)? is Milo|Milo is (?:the user's|Vera's) name", t) for t in texts), texts


def test_a_value_said_beside_the_ended_one_stays(acme):
    now = told_in_turn(make_user(acme, "ugo"), "I'm allergic to peanuts. I'm also allergic to shellfish.",
                       "Good news, I'm not allergic to peanuts anymore!")
    assert holds(now, "shellfish"), now


@pytest.mark.parametrize(("earlier", "changes", "kept"), [
    (["We have a beagle named Pip.", "I play the cello in an amateur orchestra.", "I'm allergic to penicillin.",
      "My sister Jo is a dentist in Cork.", "I work as a welder."],
     ["These days I teach welding at the technical college instead.", "Started learning the piano too."],
     [("Pip",), ("cello",), ("penicillin",), ("Jo", "dentist")]),
    # the user's own name is not a person the change names, a friend's fact is not the user's
    (["I'm Marit.", "My friend Joost and I brew beer together on Saturdays.",
      "Deep water scares me, I never learned to swim.", "I'm dyslexic, so short answers help."],
     ["My partner works nights now.", "Just started at a bakery as an apprentice!",
      "Marit doesn't drink coffee anymore."],
     [("Joost",), ("deep", "water"), ("dyslexic",)]),
])
def test_a_change_ends_nothing_but_the_value_it_replaces(acme, earlier, changes, kept):
    user = make_user(acme, "piet")
    for number, text in enumerate(earlier):
        tell(user, text, "2025-01-10", f"s{number}")
    for number, text in enumerate(changes):
        tell(user, text, f"2025-03-{15 + number}", f"later{number}")

    now = current_texts(user)
    for words in kept:
        assert holds(now, *words), (words, now)


def test_a_positive_statement_does_not_end_a_plain_negative_of_another_value(acme):
    user = make_user(acme, "quill")
    tell(user, "I don't watch football.", "2025-02-01", "first")
    tell(user, "I watch a lot of tennis.", "2025-03-15", "later")
    assert holds(current_texts(user), "football"), "not watching football says nothing against tennis"


@pytest.mark.parametrize(("first", "then", "kept"), [
    ("I work for the NHS in a GP surgery.", "I deliver for Deliveroo on weekends for extra cash.", ("NHS",)),
    ("I live in Leeds.", "I've moved like 9 times in 10 years, army family.", ("Leeds",)),
    ("I'm a nurse at St Luke's.", "I'm a sucker for old Bollywood songs.", ("nurse",)),
])
def test_a_side_job_a_story_of_moves_or_a_liking_leaves_the_job_and_home(acme, first, then, kept):
    now = told_in_turn(make_user(acme, "wim"), first, then)
    assert holds(now, *kept) and not holds(now, "works", "Bollywood"), now


@pytest.mark.parametrize("then", [
    "I'm in Berlin right now for a conference.",
    "We're in Rome on holiday this week, loving it.",
    "I'm in Glasgow today, back on Thursday.",
])
def test_a_stay_somewhere_else_leaves_the_home(acme, then):
    now = told_in_turn(make_user(acme, "yan"), "I live in Paris.", then)
    assert holds(now, "Paris"), now


@pytest.mark.parametrize(("first", "then", "kept", "past"), [
    ("I live in Leeds.", "I used to live in Dubai.", ("Leeds",), ("used to", "Dubai")),
    ("I'm a nurse.", "I used to be a chef before retraining.", ("nurse",), ("used to", "chef")),
    ("I work at Google.", "I used to work at Meta.", ("Google",), ("used to", "Meta")),
])
def test_what_used_to_be_leaves_what_is(acme, first, then, kept, past):
    now = told_in_turn(make_user(acme, "zed"), first, then)
    assert holds(now, *kept) and holds(now, *past), now


@pytest.mark.parametrize(("first", "then", "ended"), [
    ("I'm vegetarian.", "I used to be vegetarian.", "is vegetarian"),
    ("We have a dog called Max.", "We used to have a dog called Max, he died in May.", "has a dog"),
])
def test_what_used_to_be_ends_by_its_name(acme, first, then, ended):
    now = told_in_turn(make_user(acme, "usr_5e0b"), first, then)
    assert not any(ended in text for text in now), now


def test_getting_used_to_the_new_value_is_no_past(acme):
    now = told_in_turn(make_user(acme, "usr_9a2f"), "I use a Windows laptop.",
                       "Switched to a MacBook, still getting used to macOS.")
    assert holds(now, "MacBook") and not holds(now, "Windows"), now


def test_a_move_said_with_today_still_replaces_the_home(acme):
    now = told_in_turn(make_user(acme, "yen"), "I live in Paris.", "I moved to Lyon today!")
    assert holds(now, "Lyon") and not holds(now, "Paris"), now


@pytest.mark.parametrize(("statement", "kind"), [
    ("The user has no pets, the condo board doesn't allow them.", "pets"),
    ("The user doesn't drink alcohol at all.", "alcohol"),
    ("The user has never owned a bike, the hills here are too steep.", "bike"),
    ("The user doesn't really exercise.", "exercise"),
])
def test_the_kind_a_statement_of_none_is_about_is_said_beside_its_no(statement, kind):
    assert _kind_of_none(statement) == kind


def test_a_word_after_the_kind_in_a_statement_of_none_is_not_its_kind(acme):
    # "at all" names no kind: news that says "all" is still no news of drinking
    now = told_in_turn(make_user(acme, "xan"), "I don't drink alcohol at all.",
                       "Switched all my savings over to a new bank, the app is better.")
    assert holds(now, "alcohol"), now


def test_a_person_named_in_one_memory_and_described_in_another_leaves_neither_behind(acme):
    # The rules keep the name apart ("The user's boyfriend's name is Nils."), the general path the whole
    # sentence: both are the old value.
    texts = told_in_turn(make_user(acme, "ines"), "my boyfriend Nils teaches maths at a secondary school",
                         "nils is my husband now!! 💍 small wedding, just family")
    assert not any(mentions(text, ("boyfriend", "Nils")) for text in texts), texts
    assert any(mentions(text, ("husband",)) for text in texts), texts


def test_the_value_a_memory_names_is_read_without_the_full_stop_after_it():
    # "The user's grandson Minjun is 19." names 19, which "The user's grandson is 19 years old." beside it
    # also says: both end when "Minjun turned 20" (the stop once kept the second current).
    from memoryapp.services import apply

    assert apply._NAMING_WORD.findall("The user's grandson Minjun is 19.") == ["The", "Minjun", "19"]
    assert apply._NAMING_WORD.findall("Her dog weighs 4.5 kg, born on the 3rd.") == ["Her", "4.5", "3rd"]


@pytest.mark.parametrize(("before", "after", "old", "new"), [
    # no change word, and the two memories share little: the later state ends the earlier one
    ("I'm 28 weeks pregnant with our second.", "Little Tomasz was born on Sunday, 3.4 kg!", ("pregnant",), ("Tomasz",)),
    ("My partner and I are trying to conceive.", "Two pink lines this morning, I'm pregnant!", ("trying",),
     ("pregnant",)),
    ("Dad has pneumonia and is on antibiotics.", "Dad is fully recovered and out gardening again.", ("pneumonia",),
     ("gardening",)),
    # (working from home ends; where the desk is may be kept as a fact of its own, still true)
    ("I work from home, my desk is in the attic.", "The company wants us in the office four days a week now.",
     ("home",), ("office",)),
    ("I live on my own in a studio flat.", "My brother Kai is living with me until he finds a job.", ("studio",),
     ("Kai",)),
    # the birth of the user's own child ends their pregnancy, and their partner's
    ("We're expecting our first in the autumn.", "Our daughter Noa was born at 3am, tiny and perfect.",
     ("expecting",), ("Noa",)),
    ("My wife Elin is pregnant with twins.", "Our twins arrived early on Monday!", ("pregnant",), ("twins",)),
    # a birth announced by the baby alone: "baby boy", a birth weight
    ("I'm 36 weeks pregnant, so ready.", "He's finally here!! Baby boy, Arlo, 8 lbs 1 oz", ("pregnant",), ("Arlo",)),
    # studies end in a graduation
    ("I'm a second-year student at Leeds Beckett.", "I graduated last week, first class honours!", ("student",),
     ("graduated",)),
    # ...also where the news takes the place of another value ("a student" was the job)
    ("I'm a student at King's College.", "Graduated in July and now I'm working as a paralegal", ("King's",),
     ("paralegal",)),
])
def test_a_later_life_state_ends_the_earlier_one(acme, before, after, old, new):
    now = told_in_turn(make_user(acme, "ilse"), before, after)
    assert holds(now, *new) and not holds(now, *old), now


def test_a_value_with_a_hyphen_said_to_be_over_ends_among_many_memories(acme):
    user = make_user(acme, "zia")
    held = ["I have a cat named Miso.", "I'm allergic to penicillin.", "My sister lives in Leeds.",
            "I play chess on Sundays.", "I work as a pharmacist.", "I drive a Skoda.", "I'm vegetarian.",
            "My dad lives in Galway.", "I love jazz.", "I go running before work."]
    for number, text in enumerate(held):
        tell(user, text, "2025-02-01", f"first{number}")
    tell(user, "I'm really into cross-stitch at the minute, it's the only thing that calms me down after work.",
         "2025-03-01", "chat")
    # the next day, in the same conversation: "Cross-stitch" is named whole, not "cross" and "stitch" apart
    tell(user, "Cross-stitch is out, crochet is in lol — what's an easy first blanket pattern?", "2025-03-02", "chat")
    now = current_texts(user)
    assert holds(now, "crochet") and not any(mentions(t, ("cross-stitch",)) and not mentions(t, ("crochet",))
                                             for t in now), now


def test_a_relatives_later_state_leaves_the_users_own_state(acme):
    """A cousin's baby ends no pregnancy of the user's; a state already said as the later one stays."""
    now = told_in_turn(make_user(acme, "wren"),
                       "I'm 20 weeks pregnant.", "My cousin's baby was born yesterday, a girl!")
    assert holds(now, "pregnant"), now
    now = told_in_turn(make_user(acme, "yuki"),
                       "My knee has healed after the surgery.", "My wrist has healed too, finally.")
    assert holds(now, "knee"), now


def test_a_new_instruction_replaces_the_old_one_about_the_same_thing_only(acme):
    now = told_in_turn(make_user(acme, "odile"),
                       "Always answer me in Dutch please.", "pls reply in italian from now on")
    assert holds(now, "italian") and not holds(now, "Dutch"), now
    now = told_in_turn(make_user(acme, "piet"),
                       "Never use emojis with me.", "Could you keep your answers brief? Thanks")
    assert holds(now, "emojis") and holds(now, "brief"), now


@pytest.mark.parametrize(("before", "after", "old", "kept"), [
    # the value said again in other words beside the slot's: it ends with it
    ("I eat everything, I'm a total omnivore.", "I've gone vegetarian this year, no meat at all.", ("omnivore",), ()),
    # a value of another kind said beside it stays
    ("I eat everything and I work as a plumber.", "I've gone vegetarian this year, no meat at all.", ("eats",),
     ("plumber",)),
])
def test_a_value_replaced_in_its_slot_ends_what_said_it_again_beside_it(acme, before, after, old, kept):
    now = told_in_turn(make_user(acme, "oona"), before, after)
    assert holds(now, "vegetarian") and not holds(now, *old), now
    assert not kept or holds(now, *kept), now


@pytest.mark.parametrize(("before", "after", "who", "new"), [
    # one of the user's people, the news telling their name alone
    ("My brother Kofi lives in Accra.", "Kofi moved to Kumasi last month for work.", "brother", "Kumasi"),
    ("my stepdad Gareth drives a bus", "Gareth retired on Friday, big party at the depot", "stepdad", "retired"),
    # a pet, its end said as owners say it
    ("We have a rabbit named Clover.", "We had to put Clover down on Monday, she was nine.", "rabbit", "down"),
    ("Our cat is called Mango.", "Mango crossed the rainbow bridge on Sunday, she was 17.", "cat", "rainbow"),
])
def test_news_of_someone_told_by_name_says_who_they_are_and_ends_the_old_value(acme, before, after, who, new):
    now = told_in_turn(make_user(acme, "maren"), before, after)
    news = [text for text in now if new in text]
    assert len(news) == 1 and who in news[0].lower(), now
    assert not any(before.split()[-1].rstrip(".") in text and new not in text for text in now), now


def test_news_of_a_relative_is_theirs_and_leaves_their_name(acme):
    user = make_user(acme, "perrin")
    tell(user, "My sister Ines is a nurse in Faro.", "2025-02-01", "first")
    tell(user, "Ines is a midwife now, she requalified over the winter.", "2025-03-15", "later")
    news = Memory.objects.get(user=user, text__contains="midwife", status=Memory.Status.ACTIVE)
    assert news.subject == "perrin's sister" and "sister Ines" in news.text
    assert holds(current_texts(user), "name", "Ines"), "her name did not change"
    assert not holds(current_texts(user), "nurse")
