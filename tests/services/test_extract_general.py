"""The general path of the offline extractor (services.extract.general): everyday facts no rule
reads become memories, small talk does not, and a change in everyday words replaces the old value.
Sentences written for these tests, not taken from the evaluation corpus. Real model, real database."""

import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memoryapp.actors import ActorRef
from memoryapp.evaluation.write_corpus import mentions
from memoryapp.models import Memory
from memoryapp.services.extract import EpisodeInput, classifier, general, train
from memoryapp.services.extract.rules import RulesExtractor
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.ingest import MessageIn, episodes_ingest

WHEN = datetime(2025, 3, 3, 9, tzinfo=UTC)

EVERYDAY_FACTS = [
    ("I drive an old Toyota Corolla.", ("Corolla",)),
    ("Could you suggest board games for a family night? My kids are 8 and 11 and love dragons.", ("dragons",)),
    ("Peanuts make my throat swell up.", ("Peanuts",)),
    ("I'm a night-shift nurse at the children's hospital.", ("nurse",)),
    ("We have two cats called Pepper and Salt.", ("Pepper",)),
    ("My husband Tariq is a firefighter.", ("Tariq",)),
    ("I speak Greek and a little Turkish.", ("Greek",)),
    ("I play the cello in a community orchestra.", ("cello",)),
    ("My daughter is starting kindergarten in September.", ("kindergarten",)),
    ("I'm training for a half marathon.", ("marathon",)),
    ("I grew up on a farm in Iowa.", ("Iowa",)),
    ("I've been vegan for six years.", ("vegan",)),
    ("Honestly, spicy food gives me heartburn.", ("heartburn",)),
    ("I have a PhD in linguistics.", ("linguistics",)),
    ("My phone is a Samsung Galaxy S21.", ("Samsung",)),
    ("I use a wheelchair, so step-free routes matter to me.", ("wheelchair",)),
    ("I'm learning to play chess online.", ("chess",)),
    ("My mom lives in Porto.", ("Porto",)),
    ("I collect vintage postcards.", ("postcards",)),
    ("I take metformin every morning.", ("metformin",)),
    ("I work remotely for a bank in Zurich.", ("Zurich",)),
]
NOTHING = [
    "Thanks, that's helpful!",
    "What's the capital of Australia?",
    "Can you write me a haiku about rain?",
    "lol ok",
    "I'm so hungry right now.",
    "If I lived in Tokyo, would I need a car?",
    "Good night!",
    "How do I convert Celsius to Fahrenheit?",
    "Hmm, let me think about it.",
    "Sounds good to me.",
    "Please summarize this article in three bullet points.",
    "It's raining again today.",
    "Could you translate 'good morning' into Spanish?",
    "Wow, that's wild.",
    "I'm a bit sleepy this afternoon.",
    # the pieces of a dream or of someone else's story read as facts alone; the whole message says what they are
    "Had such a strange dream, I was a lighthouse keeper on a tiny island and my cat could talk.",
    "A guy on the train told me he's been to 40 countries, I've never felt so untravelled.",
]


@pytest.fixture
def send(acme):
    from memoryapp.services.tenancy import user_create

    actor = ActorRef.for_job("test")
    made = []

    def send(*texts: str, user=None, at: datetime = WHEN, session: str = "s1"):
        if user is None:
            user = user_create(organization=acme, external_id=f"person-{len(made)}")
            made.append(user)
        for text in texts:
            result = episodes_ingest(organization=acme, user=user, actor=actor, session=session,
                                     messages=[MessageIn("user", text, at)])
            episodes_extract(episode_ids=[e.id for e in result.episodes], actor=actor)
        return user

    return send


def current_texts(user) -> list[str]:
    return list(Memory.objects.filter(user=user, status=Memory.Status.ACTIVE, valid_to__isnull=True)
                .values_list("text", flat=True))


@pytest.mark.django_db
def test_everyday_facts_are_written(send):
    missed = []
    for text, must in EVERYDAY_FACTS:
        texts = current_texts(send(text))
        if not any(mentions(t, must) for t in texts):
            missed.append((text, texts))
    # The classifier is statistical: most, not all, of a varied set must get through.
    assert len(missed) <= len(EVERYDAY_FACTS) // 5, missed


@pytest.mark.django_db
def test_small_talk_questions_and_requests_write_nothing(send):
    spurious = [(text, current_texts(user)) for text in NOTHING if current_texts(user := send(text))]
    assert len(spurious) <= 1, spurious


@pytest.mark.django_db
@pytest.mark.parametrize("text", [
    # a game of make-believe: what the speaker says inside it is the game's
    "Let's pretend you're my bank manager and I'm asking for a loan, I need the practice.",
    "Roleplay: you are a grumpy ferry captain and I'm a tourist who lost my ticket.",
    # a story's world told without the speaker in it
    "In the film the grandmother runs a bakery in Naples.",
    "The protagonist is a retired detective who lives on a houseboat.",
])
def test_make_believe_and_stories_write_nothing(send, text):
    assert current_texts(send(text)) == []


@pytest.mark.django_db
@pytest.mark.parametrize("text", [
    # what nearly happened did not
    "I nearly cried at the end of that film",
    "we almost missed our flight to Rome this morning",
    # a place the speaker spends much time in, said as if they lived there
    "we basically live at the soft play centre during half term",
    "I practically live in the staff room this week haha",
    # a mishap of the day
    "got drenched waiting for the bus, great start to the week",
    "We got stuck in traffic on the ring road for ages",
    # where the speaker is sat or stood this minute, and short of sleep
    "now I'm sitting in the car park waiting for the kids to come out",
    "the toddler was up at 4 so I'm running on two hours of sleep",
])
def test_what_nearly_happened_a_place_half_lived_in_and_a_mishap_write_nothing(send, text):
    assert current_texts(send(text)) == []


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "must"), [
    ("I'm almost 40 and still can't cook", ("40",)),
    ("I've nearly finished my nursing degree", ("nursing",)),
    ("I nearly fainted at the dentist, I'm terrified of needles", ("needles",)),
    ("Got caught in the rain on the way home, I walk to work every day", ("walk",)),
    ("I'm standing in for my manager while she's on maternity leave", ("manager",)),
])
def test_what_is_said_beside_a_near_miss_or_a_mishap_or_like_one_is_written(send, text, must):
    assert any(mentions(t, must) for t in current_texts(send(text))), current_texts(send(text))


@pytest.mark.django_db
@pytest.mark.parametrize("text", [
    # someone's words quoted to be worked on: never the speaker's news, although they say "I"
    "fix the spelling pls: 'Im a retired postman from Derry and I have three grandkids'",
    "rewrite this more formally: 'hi im Tomas, I'm a welder and I live in Vilnius'",
    "edit this for our newsletter: 'I've coached the under-10s for six years and I'm stepping down in June.'",
    "my mate wants this fixed: \u201cI am vegan and I live in Bristol with my girlfriend.\u201d",
])
def test_someone_elses_quoted_words_write_nothing(send, text):
    assert current_texts(send(text)) == []


@pytest.mark.parametrize(("said", "read"), [
    ("fix this: 'Hi, I'm Dave, I've been a plumber for 20 years'", "fix this: '\u2026'"),
    ("my sister wrote \u201cwe're moving to Oslo in May\u201d on the group chat",
     "my sister wrote \"\u2026\" on the group chat"),
    # apostrophes within and before words, short quotes and wording without a person in it stay
    ("'cause I'm a nurse my kids' dad does the school run", "'cause I'm a nurse my kids' dad does the school run"),
    ("my grandkids call me 'Nana Jo'", "my grandkids call me 'Nana Jo'"),
    ("stop saying 'let me know if you have any questions'", "stop saying 'let me know if you have any questions'"),
])
def test_a_quoted_clause_about_someone_is_read_as_a_bare_quotation(said, read):
    assert general.cleaned(said) == read


@pytest.mark.django_db
def test_the_speakers_own_words_beside_a_quote_and_a_short_quoted_name_are_kept(send):
    texts = current_texts(send("I'm a nurse and my boss keeps saying 'we're all a family here', I live in Leeds btw"))
    assert any("nurse" in text for text in texts) and any("Leeds" in text for text in texts), texts
    assert not any("family" in text for text in texts), texts
    texts = current_texts(send("At work everyone calls me 'Doc'."))
    assert any("Doc" in text for text in texts), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "name"), [("the kids in my class call me 'Miss Honey'", "Miss Honey"),
                                            ("Everyone on the ward knows me as \u201cBig Al\u201d.", "Big Al")])
def test_a_name_given_in_quotes_is_written(send, said, name):
    texts = current_texts(send(said))
    assert any(name in text for text in texts), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "written"), [
    # the period of an initialism ends no sentence when the next word goes on
    ("Honestly I'm more into Fontaines D.C. than Radiohead these days.", "is more into Fontaines D.C. than Radiohead"),
    ("I get up at 6 a.m. every day.", "gets up at 6 a.m. every day."),
    ("I live in Washington D.C. and I love it.", "lives in Washington D.C."),
    # a middle initial keeps the name whole
    ("My grandpa is John F. Kennedy.", "grandpa is John F. Kennedy."),
])
def test_a_sentence_goes_on_past_an_abbreviations_period(send, text, written):
    texts = current_texts(send(text))
    assert any(written in memory for memory in texts), texts
    assert not any(".." in memory or memory.startswith(("The user said:", "Than ", "Every ", "Kennedy"))
                   for memory in texts), texts


@pytest.mark.django_db
def test_a_sentence_still_ends_on_an_initialism_before_a_capital(send):
    texts = current_texts(send("I start work at 9 a.m. My boss is Tom."))
    assert any("9 a.m." in memory for memory in texts), texts
    assert any("boss is Tom" in memory for memory in texts), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "written"), [
    # said on Monday 3 March 2025: read months later, "yesterday" would be wrong
    ("I broke my wrist yesterday so typing is slow.", "broke their wrist on Sunday 2 March 2025"),
    ("My dad retired last year.", "dad retired in 2024."),
    ("Sadly our old dog Rufus died last week.", "died in the week of 24 February 2025."),
])
def test_a_past_event_told_against_the_day_it_was_said_keeps_its_date(send, text, written):
    texts = current_texts(send(text))
    assert any(written in memory for memory in texts), texts


@pytest.mark.django_db
def test_a_relative_said_as_a_name_is_the_users(send):
    texts = current_texts(send("Grandad moved into a care home near Leeds."))
    assert any(memory.startswith("The user's grandad moved into a care home") for memory in texts), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "name", "also"), [
    ("Hey! I'm Mia, I'm a pharmacist in Leeds.", "Mia", "pharmacist"),
    ("Hey, I'm Tom. I'm 40 and I live in Leeds.", "Tom", "Leeds"),
    ("My name is Ana Lima. I teach yoga on weekends.", "Ana Lima", "yoga"),
])
def test_the_speakers_name_opening_a_longer_message_is_written(send, text, name, also):
    """ "I'm Mia" alone was written; opening a message that goes on, the classifier put it just under the bar
    (margin -0.06) and the name was lost."""
    user = send(text)
    names = list(Memory.objects.filter(user=user, attribute="name").values_list("value", flat=True))
    assert names == [name]
    assert any(also in memory for memory in current_texts(user))


@pytest.mark.parametrize(("piece", "introduces"), [
    ("I'm Mia", True), ("my name is Ana Lima", True), ("I'm British", False), ("I'm Catholic", False),
    ("I'm Mia and I'm a nurse", False), ("I'm Back", False), ("I'm a Pisces", False),
])
def test_an_introduction_is_the_speakers_name_and_nothing_else(piece, introduces):
    assert general.introduces_the_speaker(piece) is introduces


@pytest.mark.django_db
def test_a_statement_without_a_word_of_a_partner_fills_no_partner_slot(send):
    """ "I'm a pharmacist in Leeds" was written in the partner slot (family partner at 0.2)."""
    user = send("Hey! I'm Mia, I'm a pharmacist in Leeds.")
    assert not Memory.objects.filter(user=user, attribute__in=["partner", "relationship_status"]).exists()
    user = send("My girlfriend Hana and I have been together six years.")
    assert Memory.objects.filter(user=user, attribute="partner").exists()


def test_general_memory_is_third_person_and_keeps_the_words():
    assert general.third_person("I drive a 2015 Subaru Outback", "Maria") == "Maria drives a 2015 Subaru Outback."
    assert general.third_person("gluten makes me sick", "Maria") == "Gluten makes Maria sick."
    assert general.third_person("We have a dog named Biscuit", "Maria") == "Maria's household has a dog named Biscuit."
    assert general.third_person("Fun fact: I'm colorblind", "the user") == "The user is colorblind."
    assert general.third_person("ugh my knee is acting up again", "Sam") == "Sam's knee is acting up again."
    assert general.third_person("Sigh, I work weekends again", "Sam") == "Sam works weekends again."
    assert general.third_person("btw I've got two sisters lol", "Sam") == "Sam has got two sisters."
    # the US and ME (the illness) are no "us" or "me"
    assert general.third_person("I've never been to the US", "Sam") == "Sam has never been to the US."
    assert general.third_person("I have ME, so short walks only", "Sam") == "Sam has ME, so short walks only."
    assert general.third_person("my mother-in-law lives with us", "Sam") == "Sam's mother-in-law lives with Sam."
    # a noun and its verb, not a verb with the speaker understood ("Work gave" is no "Sam works gave")
    assert general.third_person("Work gave me a MacBook Pro so I use that now", "Sam") == (
        "Work gave Sam a MacBook Pro so Sam uses that now.")
    assert general.third_person("love used bookshops", "Sam") == "Sam loves used bookshops."
    assert (general.third_person("the kids and I are moving to Perth in January", "Sam")
            == "Sam and their kids are moving to Perth in January.")
    # a gerund after an adverb is no verb to inflect ("still drivings")
    assert (general.third_person("Still driving my dad's old Volvo", "Sam")
            == "Sam is still driving their dad's old Volvo.")
    assert general.third_person("still bring lunch from home", "Sam") == "Sam still brings lunch from home."
    # a time the fact holds from stays; a reason before it goes ("since I'm diabetic" is the fact itself)
    assert (general.third_person("Since the fall I need a rollator", "Sam")
            == "Since the fall Sam needs a rollator.")
    assert general.third_person("Since March I work nights", "Sam") == "Since March Sam works nights."
    assert general.third_person("since I'm diabetic", "Sam") == "Sam is diabetic."


def test_a_word_and_its_other_forms_share_a_stem():
    from memoryapp.services.extract.grammar import stem

    assert stem("running") == stem("runs") == stem("run") and stem("swimmer") == stem("swims") == "swim"
    assert stem("cats") == stem("cat") and stem("bartending") == stem("bartender")
    assert stem("calling") == "call" and stem("this") == "this" and stem("bus") == "bus"


def test_a_verb_whose_object_is_the_speaker_stays_with_its_subject():
    # "moved me" is someone else's doing: no "The user moved the user to Thursday."
    assert general.pieces("dentist rang and moved me to thursday morning") == [
        "dentist rang and moved me to thursday morning"]
    assert general.pieces("sold the flat and moved to Leeds") == ["sold the flat", "moved to Leeds"]


def test_a_fronted_reason_without_a_comma_is_a_piece_of_its_own():
    # "Since I got divorced I'm doing..." once read "Sam got divorced Sam is doing..."
    assert general.pieces("Since I retired I'm at the allotment every day") == ["I retired",
                                                                             "I'm at the allotment every day"]
    assert general.pieces("Because we moved I need a new GP") == ["we moved", "I need a new GP"]


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "text"), [
    ("I'm engaged to Priyanka.", "is engaged to Priyanka."),
    ("I have a sister called Maeve.", "has a sister named Maeve."),
])
def test_one_statement_is_one_memory_in_its_fullest_words(send, said, text):
    """The rules fill the slot and the general path keeps the rest of the sentence: where the rest adds only
    words, or says it in other words ("called" for "named"), the user sees one memory, not two."""
    texts = current_texts(send(said))
    assert len(texts) == 1 and texts[0].endswith(text), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "after", "old", "new"), [
    ("I drive a Mini Cooper.", "Sold the Mini last week, I'm driving a Kia Niro now.", "Mini", "Niro"),
    ("My girlfriend is called Bea.", "Bea and I broke up in the summer, I live on my own now.", "Bea", "own"),
])
def test_a_change_said_in_two_pieces_is_one_memory_that_tells_it(send, before, after, old, new):
    """The piece that ends the old value and the piece that says what holds now are one change: one memory
    tells both, so a question about what holds now finds the news, not a bare "The user sold the Mini."."""
    user = send(before)
    send(after, user=user, at=WHEN + timedelta(days=30), session="s2")
    written = list(Memory.objects.filter(user=user, sources__content=after).values_list("text", flat=True))
    assert len(written) == 1 and mentions(written[0], (new,)) and mentions(written[0], (old,)), written
    assert not any(mentions(t, (old,)) and not mentions(t, (new,)) for t in current_texts(user)), current_texts(user)


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "words"), [
    ("I got a new laptop for work, it's a ThinkPad X1", ("laptop", "ThinkPad")),
    ("We adopted a greyhound last month, she's called Pepper", ("greyhound", "Pepper")),
    ("my two girls started swimming lessons, they're 6 and 9", ("swimming", "9")),
    # with the fullest memory of the piece before, not the name read from its words
    ("My wife Carmen adores sunflowers, they're her favourite flower", ("sunflowers", "favourite")),
    ("we adopted a staffie from the Dogs Trust!! his name's Tyson", ("staffie", "Tyson")),
])
def test_a_piece_that_goes_on_with_it_or_they_is_told_with_what_it_goes_on_with(send, said, words):
    """ "it's a ThinkPad X1" alone says nothing of what it is about: it is kept, in the memory of the piece before."""
    texts = current_texts(send(said))
    assert any(mentions(text, words[:1]) and mentions(text, words[1:]) for text in texts), texts
    assert len([text for text in texts if mentions(text, words[:1]) or mentions(text, words[1:])]) == 1, texts


@pytest.mark.parametrize(("said", "text"), [
    ("I no longer need anything for sleeping", "Maria no longer needs anything for sleeping."),
    ("I feed the stray cats in my street", "Maria feeds the stray cats in their street."),
    ("best decision I ever made", "Best decision Maria ever made."),
    ("I kind of hate cilantro", "Maria kind of hates cilantro."),
    ("I finally passed my driving test", "Maria finally passed their driving test."),
    # a verb that already agrees stays as said
    ("now works nights at the depot", "Maria now works nights at the depot."),
    ("still studies law part-time", "Maria still studies law part-time."),
])
def test_the_verb_after_an_adverb_agrees_and_a_present_verb_in_ed_is_no_past(said, text):
    assert general.third_person(said, "Maria") == text


@pytest.mark.parametrize(("said", "text"), [
    # an irregular past or a change verb first is what the speaker did, whatever its object ends in
    ("Switched careers", "Maria switched careers."),
    ("sold gran's piano last spring", "Maria sold gran's piano last spring."),
    ("joined Samaritans as a listening volunteer", "Maria joined Samaritans as a listening volunteer."),
    # ...and so is "got" before a participle, and an "-ed" word typed in lower case
    ("Got made redundant in the spring", "Maria got made redundant in the spring."),
    ("got engaged on the beach!!", "Maria got engaged on the beach."),
    ("booked flights to Accra for August", "Maria booked flights to Accra for August."),
    # another "-ed" word first may be a name, with its own verb
    ("Jared works nights", "Jared works nights."),
    ("Ted left Siemens", "Ted left Siemens."),
    # a present verb first, the "I" left out: it agrees with the name, after any adverbs
    ("love hiking on weekends", "Maria loves hiking on weekends."),
    ("don't eat pork", "Maria doesn't eat pork."),
    ("never drink coffee after lunch", "Maria never drinks coffee after lunch."),
    ("still live with my parents", "Maria still lives with their parents."),
    ("no pets, sadly", "Maria has no pets."),
    # a gerund first, with a verb only in a later clause
    ("staying with my aunt near the station, the rent is cheap",
     "Maria is staying with their aunt near the station, the rent is cheap."),
    # a state without its "I am" / "I was"; the same word with an object is news
    ("allergic to penicillin", "Maria is allergic to penicillin."),
    ("married to Tom for ten years", "Maria is married to Tom for ten years."),
    ("married Tom in June", "Maria married Tom in June."),
    ("born and raised in Lagos", "Maria was born and raised in Lagos."),
    ("raised three kids on my own", "Maria raised three kids on their own."),
    # a noun first with its own verb is no statement of the speaker's
    ("work is crazy this month", "Maria said: work is crazy this month."),
    # what has held for a while, its "I have" left out
    ("Been a nurse for twelve years, mostly nights.", "Maria has been a nurse for twelve years, mostly nights."),
    ("always been a bit of a night owl", "Maria has always been a bit of a night owl."),
    # how the speaker says it, at the end, is no part of the fact
    ("I'm 41 btw", "Maria is 41."),
    ("vegetarian these days tbh", "Maria is vegetarian these days."),
    # a second verb of the same subject agrees too, an infinitive's does not
    ("I'm Jewish and keep kosher", "Maria is Jewish and keeps kosher."),
    ("I'm learning to cook and bake", "Maria is learning to cook and bake."),
    ("started eating fish again, so pescatarian now I guess", "Maria started eating fish again, so pescatarian now."),
])
def test_the_speaker_is_the_subject_of_a_sentence_opening_with_their_verb(said, text):
    assert general.third_person(said, "Maria") == text


def test_a_request_after_a_fact_is_cut_off():
    assert general.pieces("Big news: I'm diabetic, so can you suggest a dessert? 🍰") == [
        "I'm diabetic", "can you suggest a dessert?"]


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "must"), [
    ("I'm allergic to shellfish, can you suggest a dinner recipe?", ("shellfish",)),
    ("i'm deaf in one ear so can u keep the voice notes short?", ("deaf",)),
    # a contraction typed without its apostrophe reads like the usual one
    ("im colorblind so could u describe the charts in words", ("colorblind",)),
])
def test_a_fact_before_a_request_is_kept(send, said, must):
    user = send(said)
    assert any(mentions(t, must) for t in current_texts(user)), current_texts(user)


@pytest.mark.django_db
def test_a_change_in_everyday_words_replaces_the_old_value(send):
    user = send("I'm learning Japanese on an app.")
    assert any(mentions(t, ("Japanese",)) for t in current_texts(user))
    send("I switched to Korean, Japanese was too hard.", user=user, at=WHEN + timedelta(days=30), session="s2")
    texts = current_texts(user)
    assert any(mentions(t, ("Korean",)) for t in texts), texts
    assert not any(mentions(t, ("learning", "Japanese")) for t in texts), texts


@pytest.mark.django_db
def test_every_part_of_the_news_is_kept_and_what_the_old_value_was_like_is_not(send):
    user = send("I work at a garage in Hull.")
    send("Accepted the offer from Siemens, I'm their new safety inspector now.", user=user,
         at=WHEN + timedelta(days=30), session="s2")
    texts = current_texts(user)
    assert any(mentions(t, ("Siemens",)) for t in texts) and any(mentions(t, ("inspector",)) for t in texts), texts
    other = send("I'm vegetarian again, being vegan was too hard.")
    assert not any(mentions(t, ("vegan",)) for t in current_texts(other)), current_texts(other)


@pytest.mark.parametrize("said, new", [
    ("I sold my guitar and took up the drums.", "drums"),  # the new pastime after "and" was lost (0.04 under the bar)
    ("I took up the cello last winter.", "cello"),
])
@pytest.mark.django_db
def test_a_pastime_taken_up_is_kept(send, said, new):
    user = send(said)
    assert any(mentions(t, (new,)) for t in current_texts(user)), current_texts(user)


@pytest.mark.django_db
def test_a_value_added_to_a_many_valued_slot_keeps_the_old_one(send):
    user = send("I play the violin.")
    send("I play the piano too.", user=user, at=WHEN + timedelta(days=30), session="s2")
    texts = current_texts(user)
    assert any(mentions(t, ("violin",)) for t in texts) and any(mentions(t, ("piano",)) for t in texts), texts


@pytest.mark.django_db
def test_a_relative_s_news_never_replaces_the_user_s_own_value(send):
    user = send("I'm 41.")
    send("My dad turned 70 last week, we threw him a huge party.", user=user, at=WHEN + timedelta(days=30),
         session="s2")
    assert any(mentions(t, ("41",)) for t in current_texts(user)), current_texts(user)


@pytest.mark.django_db
@pytest.mark.parametrize(("own", "news", "kept"), [
    ("I work at the Tesco on Mill Road.", "Marco got a job at Google last week, so proud of him", ("Tesco",)),
    ("I'm a primary school teacher.", "Dana took a job as a paramedic in Leeds", ("teacher",)),
    ("I work at Deloitte, in audit.", "Tom left Deloitte, he's at KPMG now", ("user", "Deloitte")),
    # a many-valued kind: the user's own value of it is no value the news replaces either
    ("I go to a spin class every Monday.", "Ollie quit his spin class and now does yoga", ("Monday",)),
])
def test_news_of_someone_named_never_replaces_the_user_s_own_value(send, own, news, kept):
    user = send(own)
    send(news, user=user, at=WHEN + timedelta(days=30), session="s2")
    assert any(mentions(t, kept) for t in current_texts(user)), current_texts(user)


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "news", "name"), [
    ("My brother Tom works at Deloitte.", "Tom left Deloitte, he's at KPMG now", "Tom"),
    ("My sister is called Priya and she teaches maths.", "Priya quit teaching, she's a pilot now", "Priya"),
    # a partner too: their news is no break-up
    ("My boyfriend Dev is a student.", "Dev got his first proper job, he's an accountant now", "Dev"),
])
def test_news_of_a_relative_keeps_their_name(send, before, news, name):
    user = send(before)
    send(news, user=user, at=WHEN + timedelta(days=30), session="s2")
    assert name in _current_names(user), current_texts(user)


@pytest.mark.django_db
def test_a_partner_s_name_ends_with_the_relationship(send):
    user = send("My girlfriend Zoe is a nurse.")
    send("Zoe and I broke up in March, I'm single again", user=user, at=WHEN + timedelta(days=30), session="s2")
    assert "Zoe" not in _current_names(user), current_texts(user)


def _current_names(user) -> str:
    return " ".join(Memory.objects.filter(user=user, attribute="name", status=Memory.Status.ACTIVE)
                    .values_list("text", flat=True))


@pytest.mark.django_db
def test_a_later_single_value_supersedes_one_the_rules_read(send):
    user = send("I live in Lisbon.")
    send("So yeah, we finally moved to Hamburg.", user=user, at=WHEN + timedelta(days=30), session="s2")
    texts = current_texts(user)
    assert any(mentions(t, ("Hamburg",)) for t in texts) and not any(mentions(t, ("Lisbon",)) for t in texts), texts


@pytest.mark.django_db
def test_news_of_one_of_the_user_s_people_never_ends_another_s(send):
    """Ava's news ends Ava's old school, never what the user said of Sol since, though both are school news."""
    user = send("my niece Ava is in her last year of primary school")
    send("my nephew Sol is doing his GCSEs this year", user=user, at=WHEN + timedelta(days=30), session="s2")
    send("Sol just started at sixth form college, time flies", user=user, at=WHEN + timedelta(days=60), session="s3")
    send("Ava finished primary school!! she's off to Ridgeway Academy after the summer", user=user,
         at=WHEN + timedelta(days=90), session="s4")
    texts = current_texts(user)
    assert any(mentions(t, ("Sol", "sixth")) for t in texts), texts
    assert any(mentions(t, ("Ava", "Ridgeway")) for t in texts), texts
    assert not any(mentions(t, ("last", "year", "primary")) for t in texts), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "news", "kept"), [
    ("My sister Priya lives in Durban.", "We just had a baby girl, her name is Zara!", ("Priya", "Durban")),
    ("My brother is called Tariq.", "my best friend just had twins, their names are Ada and Omar", ("Tariq",)),
])
def test_a_new_name_leaves_the_names_of_others(send, before, news, kept):
    """News that names someone new arrives when the user holds little else, and is nearest to the names held:
    it still ends none of them, nor what is said of their bearers."""
    user = send(before)
    send(news, user=user, at=WHEN + timedelta(days=30), session="s2")
    assert any(mentions(t, kept) for t in current_texts(user)), current_texts(user)


def test_shipped_weights_were_trained_on_the_current_dev_split():
    shipped = classifier.load()
    assert shipped.dev_hash == train.dev_hash(), (
        "the dev corpus or the training items changed since the weights were trained: run "
        "`.venv/bin/python -m memoryapp.services.extract.train` and commit weights.npz")


def test_training_reproduces_the_shipped_weights(tmp_path):
    shipped = classifier.load()
    np.savez_compressed(tmp_path / "retrained.npz", **train.train())
    retrained = classifier.load(tmp_path / "retrained.npz")
    assert retrained.durable_threshold == pytest.approx(shipped.durable_threshold, abs=0.02)
    assert retrained.families == shipped.families
    assert list(retrained.word_index) == list(shipped.word_index), "the word leg's vocabulary is the dev split's"
    pieces = ["I'm allergic to peanuts", "my sister Ana is a vet", "what's the weather like?", "I'm so tired today",
              "we moved to Leeds last year", "can you write me a poem"]
    from memoryapp import embeddings

    x = classifier.features(pieces, embeddings.encode(pieces))
    # The same decisions, up to the float noise of the encoder (each piece a message of its own).
    assert np.allclose(classifier.durable_probability(x, vectors_of(x), pieces, retrained),
                       classifier.durable_probability(x, vectors_of(x), pieces, shipped), atol=0.02)
    assert np.allclose(classifier.family_probabilities(pieces, vectors_of(x), retrained),
                       classifier.family_probabilities(pieces, vectors_of(x), shipped), atol=0.02)
    assert retrained.change_threshold == pytest.approx(shipped.change_threshold, abs=0.02)
    assert np.allclose(classifier.change_probability(vectors_of(x), pieces, retrained),
                       classifier.change_probability(vectors_of(x), pieces, shipped), atol=0.02)
    questions = embeddings.encode(["where does you live?", "what's your dog called?", "who is your boss?"])
    assert np.allclose(classifier.question_family_probabilities(questions, retrained),
                       classifier.question_family_probabilities(questions, shipped), atol=0.02)


def vectors_of(x: np.ndarray) -> np.ndarray:
    return x[:, : -len(classifier.cue_features([""])[0])]


@pytest.mark.parametrize("leg", ["durable", "family"])
def test_the_word_legs_read_a_text_as_the_trained_vectorizer_does(leg):
    from sklearn.feature_extraction.text import TfidfVectorizer

    shipped = classifier.load()
    index, idf = ((shipped.word_index, shipped.word_idf) if leg == "durable"
                  else (shipped.family_word_index, shipped.family_word_idf))
    texts = ["I'm allergic to peanuts", "my sister Ana is a vet", "The user lives in Hamburg.", "Zyx qwv"]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, vocabulary=list(index))
    vectorizer.fit(texts)
    vectorizer.idf_ = idf  # the trained weights, not these four texts'
    assert np.allclose(classifier.word_features(texts, index, idf), vectorizer.transform(texts).toarray(), atol=1e-5)
    assert not classifier.word_features(["Zyx qwv"], index, idf).any(), "words never seen in training count for nothing"


def test_the_family_model_reads_a_memory_as_it_reads_what_the_user_said():
    from memoryapp import embeddings

    said = ["I live in Hamburg with my daughter", "my sister is a nurse at St Mary's", "I'm allergic to cats"]
    written = [general.third_person(text, "the user") for text in said]
    texts = said + written
    probabilities = classifier.family_probabilities(texts, embeddings.encode(texts))
    families = [classifier.weights().families[i] for i in probabilities.argmax(axis=1)]
    assert families[:3] == families[3:], list(zip(texts, families, strict=True))


@pytest.mark.parametrize(("said", "name", "text"), [
    ("I'm Olga Petrova.", "Olga Petrova", "Olga Petrova is the user's name."),
    ("I'm Daniel.", "Daniel", "Daniel is the user's name."),
    ("everyone calls me Dani these days", "Dani", "Olga goes by Dani."),  # what people call them: a nickname
])
def test_a_name_said_in_passing_fills_the_name_slot_with_the_name_alone(said, name, text):
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    found = get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="olga")
    names = [c for c in found if c.attribute in ("name", "nickname")]
    assert [c.value for c in names] == [name]
    assert names[0].text == text


@pytest.mark.parametrize(("said", "kept"), [
    # this very moment is no fact...
    ("Just got back from the gym, feeling great.", False),
    ("I'm about to head out for a walk.", False),
    ("I'm at the airport, flight's delayed.", False),
    ("Yesterday I bumped into an old teacher of mine.", False),
    # ...but news said of a moment is
    ("We just had our second, a little boy!", True),
    ("Just adopted a kitten from the shelter!", True),
    ("Yesterday I handed in my notice.", True),
])
def test_a_passing_moment_is_no_memory_but_news_said_of_a_moment_is(said, kept):
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    found = get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="olga")
    assert bool(found) == kept, found


@pytest.mark.parametrize("said", [
    "Ported my number to Lebara, half the price.",
    # a word that gives a name ("I'm") with a capitalised word that is not after it
    "I'm done with Facebook, deleted my account.",
])
def test_a_name_in_a_sentence_that_gives_no_name_is_not_the_users(said):
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    found = get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="olga")
    assert found and not [c for c in found if c.attribute in ("name", "nickname")], found


@pytest.mark.parametrize(("said", "texts"), [
    # what follows a self-introduction after commas is the speaker's, said without a subject
    ("Hey, I'm Joaquín, 41, a paramedic in Valparaíso.",
     {"Joaquín is 41 years old.", "Joaquín is a paramedic in Valparaíso."}),
    ("Name's Freya, originally from Bergen, been in Aberdeen for ten years.",
     {"Freya is from Bergen.", "Freya has been in Aberdeen for ten years."}),
    ("Name is Tomasz, from Gdansk.", {"Tomasz is from Gdansk."}),
    # ...or a profile in fragments, an age among them, and no name
    ("Quick intro: 34, software tester, based in Manchester.",
     {"The user is 34 years old.", "The user is a software tester.", "The user lives in Manchester."}),
    ("29, nurse, living in London.", {"The user is 29 years old.", "The user is a nurse."}),
    ("I'm 41, a paramedic in Valparaíso.", {"The user is 41 years old.", "The user is a paramedic in Valparaíso."}),
    ("I'm Mia, 30, from Leeds.", {"Mia is the user's name.", "Mia is 30 years old.", "Mia is from Leeds."}),
    # ...and what a speaker adds to say how they say it, before or after
    ("I support Celtic, always have.", {"The user supports Celtic."}),
    ("Work-wise I'm a product manager at Monzo.", {"The user is a product manager."}),
    # what others call the speaker, after their name and "but"
    ("my name is Theodora but my friends call me Teddy", {"Theodora goes by Teddy."}),
    # ... or after a comma: the name is the name, the nickname what they call her
    ("My name is Siobhán by the way, most people call me Shiv",
     {"The user's name is Siobhán.", "Siobhán goes by Shiv."}),
])
def test_what_a_self_introduction_says_after_the_name_is_kept(said, texts):
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    written = {c.text for c in get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="usr_9")}
    assert texts <= written, written


@pytest.mark.parametrize(("said", "texts"), [
    # a name that ends like a past tense still names someone
    ("Ted left Siemens and now works for a bakery", {"Ted left Siemens.", "Ted now works for a bakery."}),
    # a past tense that opens the message is what the speaker did, and what follows "and" is theirs too
    ("Swapped Italian for Greek and joined a class on Tuesdays", {"Greta joined a class on Tuesdays."}),
    ("finally sold the boat, now it's just kayaks for us", {"Greta finally sold the boat."}),
])
def test_who_did_it_when_the_message_starts_with_a_name_or_a_verb(said, texts):
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    written = {c.text for c in get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="greta")}
    # one memory may tell a change in two clauses ("Greta finally sold the boat; now it's just kayaks...")
    clauses = {clause.strip(" .").lower() for text in written for clause in text.split(";")}
    assert {text.strip(" .").lower() for text in texts} <= clauses, written
    assert not [text for text in written if re.search(r"(?:Greta|The user) (?:ted|now|swapped)\b", text, re.I)], written


def test_a_day_is_no_introduction():
    assert general.pieces("It's Monday, ugh, so tired.") == ["It's Monday, ugh, so tired"]


def test_the_speakers_own_things_after_their_name_are_theirs():
    assert general.third_person("I quit my job", "Olga") == "Olga quit their job."
    assert general.third_person("My dog is called Rex", "Olga") == "Olga's dog is called Rex."


@pytest.mark.parametrize(("said", "whose", "text"), [
    ("My parents live in Nagpur.", "olga's parents", "Olga's parents live in Nagpur."),
    ("My mother-in-law lives with us.", "olga's mother-in-law", "Olga's mother-in-law lives with Olga."),
    ("My mum lives in Cardiff.", "olga's mother", "Olga's mother lives in Cardiff."),
])
def test_a_relatives_fact_is_theirs_not_the_users(said, whose, text):
    found = olga_says(said)
    assert [(c.subject, c.text) for c in found] == [(whose, text)]


@pytest.mark.parametrize(("said", "whose", "word"), [
    ("hubby's a sergeant in the police", "olga's husband", "sergeant"),
    ("mum retired last month, she loves it", "olga's mother", "retired"),
    ("sis started uni in Cardiff", "olga's sister", "Cardiff"),
])
def test_a_relative_named_bare_and_in_lower_case_is_still_the_users(said, whose, word):
    found = olga_says(said)
    assert any(c.subject == whose and mentions(c.text, (word,)) for c in found), [(c.subject, c.text) for c in found]


def test_a_word_that_only_sometimes_names_a_relative_does_not_start_a_fact_about_them():
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    found = get_extractor("rules").extract([EpisodeInput("boy, was I wrong about that film", WHEN)], subject="olga")
    assert not any(c.subject.startswith("olga's") for c in found), [(c.subject, c.text) for c in found]


@pytest.mark.parametrize(("said", "whose", "word"), [
    ("My son quit the swim team and joined the chess club.", "olga's son", "chess"),
    ("Priya left Unilever and now works at a tea startup in Pune.", None, "startup"),
    # "he" or "she" after a piece about one person only is that person
    ("Marek sold the bakery, he's driving a taxi in Krakow now", None, "taxi"),
    ("my brother moved to Leeds, he's a dentist at a practice in Headingley", "olga's brother", "dentist"),
    # the person's own name is no one else; what they were is said of them, not of an old value of Olga's
    ("My mum's name is Teresa, she's turning 80 in May", "olga's mother", "80"),
    ("my dad passed away in 2001, he was a carpenter all his life", "olga's father", "carpenter"),
    ("my parents are retired, they've moved to Malaga", "olga's parents", "Malaga"),
])
def test_what_follows_and_goes_on_with_the_person_the_sentence_began_with(said, whose, word):
    found = olga_says(said)
    told = [c for c in found if mentions(c.text, (word,))]
    assert told and not any(c.text.startswith(("Olga ", "Olga said")) for c in told), [(c.subject, c.text)
                                                                                        for c in found]
    if whose:
        assert {c.subject for c in told} == {whose}
    else:
        assert said.split()[0] in told[0].text


@pytest.mark.parametrize(("said", "name", "word"), [
    ("tariq graduated and now works for the NHS", "Tariq", "NHS"),
    ("jake relocated to Austin and now lives near the lake", "Jake", "lake"),
])
def test_a_verb_that_agrees_with_a_name_typed_in_lower_case_goes_on_with_that_person(said, name, word):
    told = [c for c in olga_says(said) if mentions(c.text, (word,))]
    assert told and all(c.text.startswith(f"{name} ") for c in told), [c.text for c in told]


def test_he_or_she_after_someone_no_word_names_as_a_relative_keeps_the_pronoun_said():
    texts = [c.text for c in olga_says("My godfather lives with us, he's 94.")]
    assert any(mentions(text, ("94",)) for text in texts) and not any("'s is" in text for text in texts), texts


@pytest.mark.parametrize("after", ["really", "🎉", "still"])
def test_a_piece_of_no_word_after_a_lower_case_name_goes_on_with_no_one(after):
    assert general._continued(["tariq graduated", after]) == {}


@pytest.mark.parametrize("said", ["my brother married Ines, she's a vet", "my dad retired, she says it's dull",
                                  "my sister's name is Ana, he's a pilot"])
def test_he_or_she_after_someone_else_is_named_or_of_the_other_sex_is_not_that_person(said):
    texts = [c.text for c in olga_says(said)]
    assert not any(text.startswith(("Olga's brother is", "Olga's dad is", "Olga's brother's", "Olga's dad's"))
                   for text in texts), texts


@pytest.mark.parametrize(("said", "last_piece"), [
    ("Can you give me tips for Stardew Valley? It's my comfort game.", "Stardew Valley is my comfort game"),
    ("Could you make me a playlist like Arctic Monkeys? They're my favourite band.",
     "Arctic Monkeys are my favourite band"),
    # two names: "it" could be either; a statement that is not the speaker's says nothing of them
    ("Is Paris nice in May? It's my first trip abroad", "It's my first trip abroad"),
    ("Have you heard of Arctic Monkeys? They're touring again", "They're touring again"),
])
def test_it_or_that_after_a_question_is_the_one_thing_it_names_when_the_speaker_speaks_of_it(said, last_piece):
    assert general.resolved_pieces(general.pieces(said))[-1] == last_piece


@pytest.mark.parametrize("said", ["My goodness, what a week!", "my god, the queue at the post office"])
def test_an_exclamation_that_starts_with_my_is_no_possession(said):
    # (the classifier would most often doubt "The user's goodness." too, but not on sentences it never saw)
    assert not any(piece.lower().startswith("my") for piece in general.pieces(said)), general.pieces(said)


def olga_says(said: str) -> list:
    """The rules extractor's candidates for one message of Olga's."""
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    return get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="olga", name="Olga")


@pytest.mark.parametrize(("said", "text"), [
    # no subject: the speaker is understood, and their own things are "their"
    ("Bought my first house last spring", "Maria bought their first house last spring."),
    ("Taught myself to knit over lockdown", "Maria taught themselves to knit over lockdown."),
    ("Studying my second degree part-time", "Maria is studying their second degree part-time."),
    ("cooking for a crowd is in my blood", "Cooking for a crowd is in Maria's blood."),
    # the speaker is one of "us"; "we all" keeps its plural verb
    ("No cars for us, we cycle everywhere", "No cars for Maria, Maria's household cycles everywhere."),
    ("we all call my grandmother Nana", "Maria's household all call their grandmother Nana."),
    # an adverb before the speaker's own thing opens the sentence; it is no verb without a subject
    ("Now my goal is a sub-two-hour half", "Now Maria's goal is a sub-two-hour half."),
    # who is in a clause beside it is not the subject the statement lacks
    ("Started running again when I was pregnant", "Maria started running again when Maria was pregnant."),
    ("Took up the drums and I love it", "Maria took up the drums and Maria loves it."),
    # a couple's wedding is the speaker's, not their household's
    ("We finally got married in Rome", "Maria finally got married in Rome."),
])
def test_a_statement_without_its_subject_or_about_us_reads_as_the_speakers(said, text):
    assert general.third_person(said, "Maria") == text


@pytest.mark.parametrize(("said", "text"), [
    # any word in -ly before the verb is an adverb, kept as said; the verb after it agrees
    ("I practically sleep at the office", "Maria practically sleeps at the office."),
    ("we genuinely love the quiet", "Maria's household genuinely loves the quiet."),
    # ...but a verb in -ly is the verb
    ("I fly to Oslo every month", "Maria flies to Oslo every month."),
    ("I rely on my hearing aids", "Maria relies on their hearing aids."),
])
def test_a_verb_agrees_after_any_adverb_in_ly(said, text):
    assert general.third_person(said, "Maria") == text


@pytest.mark.parametrize(("said", "text"), [
    # shouted news reads as said, not as a name's first letter taken down ("Maria pASSED their DRIVING TEST")
    ("PASSED MY DRIVING TEST this morning!!!", "Maria passed their driving test this morning."),
    ("I'M A NURSE", "Maria is a nurse."),
    # acronyms are no shouting
    ("I work for the NHS in the ICU", "Maria works for the NHS in the ICU."),
])
def test_shouted_words_read_in_lower_case(said, text):
    assert general.third_person(said, "Maria") == text


@pytest.mark.parametrize(("said", "expected"), [
    # an emoji between words ends a clause, unless it stands for the verb
    ("just turned 50 🎉 what should I plan for the party?", ["just turned 50", "what should I plan for the party?"]),
    ("I ❤️ Copenhagen", ["I love Copenhagen"]),
    ("I'm seeing someone 🥰 her name is Noor", ["I'm seeing someone", "her name is Noor"]),
    ("my aunt Rosa teaches salsa 💃 help me pick her a gift",
     ["my aunt Rosa teaches salsa", "help me pick her a gift"]),
    ("turned 60 in June and my back knows it 😩 gentlest yoga class for beginners?",
     ["turned 60 in June and my back knows it", "gentlest yoga class for beginners?"]),
    # the fact before a question that ends the sentence after a comma
    ("my dad is diabetic and loves baking, recipe ideas?", ["my dad is diabetic and loves baking", "recipe ideas?"]),
    # without a comma a question starts as one ("can you", "what"), never at the statement's own verb
    ("my son is allergic to sesame so can you check this menu?", ["my son is allergic to sesame",
                                                                  "can you check this menu?"]),
    ("Since my wife is diabetic what desserts are safe?", ["my wife is diabetic", "what desserts are safe?"]),
    # a supposition goes on after "and"
    ("what if I sold the flat and moved to the coast", ["what if I sold the flat and moved to the coast"]),
    # a headline before the news is no part of it
    ("weekend update: we adopted a kitten", ["we adopted a kitten"]),
    ("plot twist, I'm allergic to my own cat", ["I'm allergic to my own cat"]),
    ("one more thing: I moved to Leeds", ["I moved to Leeds"]),
    # a statement after a request and a colon, or wrapped in one ("note that..."), is the speaker's
    ("For the team offsite next month, please avoid anything with stairs: I use a walking frame",
     ["For the team offsite next month", "please avoid anything with stairs", "I use a walking frame"]),
    ("Please remember that I don't drink alcohol when you plan the dinner",
     ["I don't drink alcohol when you plan the dinner"]),
    ("could you note on the booking that I use a hearing aid?", ["I use a hearing aid"]),
    # what the fact means for the assistant is no part of it
    ("I've run marathons for a decade, so you can skip the warm-up basics",
     ["I've run marathons for a decade", "you can skip the warm-up basics"]),
    ("I work nights, so for the rota could you swap me off Mondays?",
     ["I work nights", "for the rota could you swap me off Mondays?"]),
    ("I'm a nurse, so shifts are long", ["I'm a nurse, so shifts are long"]),
    # a name, an aside, then the speaker's fragments
    ("I'm Priya btw, 29, nurse in Leicester", ["I'm Priya", "I'm 29", "I'm a nurse in Leicester"]),
])
def test_pieces_end_where_the_statement_ends(said, expected):
    assert general.pieces(said) == expected


@pytest.mark.parametrize(("said", "theirs", "own"), [
    ("My husband Tomas is a firefighter and I teach third grade.", "The user's husband Tomas is a firefighter.",
     "The user teaches third grade."),
    ("my son is 7 and I'm a single dad", "The user's son is 7 years old.", "The user is a single dad."),
    ("My wife is a nurse and I'm a stay-at-home dad.", "The user's wife is a nurse.",
     "The user is a stay-at-home dad."),
])
def test_the_users_own_clause_beside_someone_elses_fact_is_a_memory_of_its_own(said, theirs, own):
    """Before, "and I teach third grade" was lost (the rule's memory of the husband counted as saying the whole
    sentence) or kept inside the other person's memory, in their slot."""
    found = {c.text: c for c in RulesExtractor().extract([EpisodeInput(said, WHEN, "user")], subject="u_1")}
    assert theirs in found and own in found, list(found)
    assert found[own].subject == "u_1"


@pytest.mark.parametrize(("said", "seeing"), [
    ("I'm seeing someone.", True),
    ("I've been seeing someone for a few months", True),
    ("I have been seeing someone since March, it's going well", True),
    ("if I was seeing someone I'd tell you", False),
    ("are you seeing someone?", False),
    ("I'm seeing someone for coffee", False),
])
def test_seeing_someone_is_a_relationship_however_little_the_classifier_hears_in_it(said, seeing):
    """ "I'm seeing someone." was vetoed as a passing moment (durable 0.14), and a time after it read no rule."""
    found = [c.text for c in RulesExtractor().extract([EpisodeInput(said, WHEN, "user")], subject="u_1")
             if c.attribute == "relationship_status"]
    assert (found == ["The user is seeing someone."]) is seeing, found


def test_a_clause_that_says_little_without_the_rest_is_no_memory_of_its_own():
    found = [c.text for c in RulesExtractor().extract([EpisodeInput("I live in Leeds and I love it here", WHEN,
                                                                    "user")], subject="u_1")]
    assert found == ["The user lives in Leeds."]


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "words"), [
    ("When you draft the conference schedule, please leave gaps between sessions: I have chronic fatigue.",
     "chronic fatigue"),
    ("Could you note on the booking that I use a hearing aid, so the induction loop matters?", "hearing aid"),
    ("I've managed a warehouse for twelve years, so you don't need to explain forklift rules, just the new form.",
     "warehouse"),
])
def test_a_fact_said_inside_a_request_is_written(send, said, words):
    texts = current_texts(send(said))
    assert any(words in text for text in texts), texts


@pytest.mark.parametrize(("said", "statement"), [
    ("my dentist says I should floss more", False),
    ("my brother keeps telling me I should get a dog", False),
    ("dad wants me to take over the shop", False),
    ("my neighbour reckons the house prices will crash", False),
    ("my grandad always said never lend money to family", False),
    ("stuck in the queue at the bank for 25 minutes now", False),
    ("I swim for 45 minutes before work", True),
    ("is it bad that I still sleep with a teddy??", False),
    ("my daughter started walking this week??", True),
    ("I got the job!?", True),
])
def test_others_views_of_what_the_user_should_do_are_no_statements_and_surprise_is_no_question(said, statement):
    assert bool(classifier.not_a_statement([said])[0]) is not statement


@pytest.mark.parametrize("said", [
    "After ten years I left the bank and opened a bakery.",
    "Grandad finally retired, now he spends his days fishing.",
])
def test_what_follows_and_goes_on_with_no_word_that_only_opens_the_sentence(said):
    texts = [c.text for c in olga_says(said)]
    assert not any(text.startswith(("After opened", "Grandad now he")) for text in texts), texts


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "after", "old"), [
    ("I've had shingles for a month, it's miserable.", "I've finally recovered from the shingles!",
     ("had", "shingles")),
    ("Our parrot Kiki is 30 years old.", "Kiki passed in the night 💔 we're heartbroken", ("30", "years")),
    # a name typed in lower case with its 's still names the person
    ("My cousin Aoife works at a bank in Cork.", "aoife's left the bank, she's teaching in Galway now", ("Cork",)),
    # the old value fronted by "instead of" is dropped, not the news after it
    ("I go running every morning.", "Instead of running I took up rowing at the canal club, it's easier on me",
     ("running",)),
    # moves within an employer or a school, and a parent's new marriage, are news without "now" or "new"
    ("I study history at Exeter.", "I transferred to Bristol after first year, much better department", ("Exeter",)),
    # a job ended by its last day, the next one begun in the same sentence; a new home named by its place
    ("I work at Waitrose.", "Well that's that: last day at Waitrose was Thursday and I start at Lidl next week",
     ("Waitrose",)),
    ("We rent a flat in Hackney.", "Finally got the wifi sorted, the new house in Walthamstow is so quiet",
     ("Hackney",)),
    # a job told by its first days, or by a promotion
    ("I'm a receptionist at the clinic.", "First week as a dental nurse done, my feet hurt", ("receptionist",)),
    ("I work as a junior designer.", "They made me art director!! Still pinching myself", ("junior",)),
    # a move the employer makes
    ("We live in Calgary.", "My company is relocating us to Denver in the spring, big change", ("Calgary",)),
    ("My dad has been single since the divorce.", "my dad remarried in June, his wife Carol is lovely", ("single",)),
    # what the speaker had to stop, named in another form of its word ("swims" after "swimming")
    ("I swim laps at the leisure centre.", "I've had to stop swimming because of my ear, doctor's orders", ("laps",)),
])
def test_news_in_everyday_words_ends_the_value_it_replaces(send, before, after, old):
    user = send(before)
    assert any(mentions(t, old) for t in current_texts(user)), current_texts(user)
    send(after, user=user, at=WHEN + timedelta(days=30), session="s2")
    assert not any(mentions(t, old) for t in current_texts(user)), current_texts(user)


@pytest.mark.django_db
def test_what_holds_now_takes_the_slot_from_what_no_longer_holds(send):
    # "was" in the news is no description of the old value; "not ... anymore" is told with it, not lost
    user = send("I don't drive anymore. The insurance was costing a fortune so I cycle to work now")
    now = Memory.objects.filter(user=user, valid_to__isnull=True, status=Memory.Status.ACTIVE)
    assert [m.attribute for m in now if mentions(m.text, ("cycles",))] == ["commute"], [(m.attribute, m.text)
                                                                                      for m in now]
    assert any(mentions(m.text, ("drive",)) for m in now), [m.text for m in now]


def test_a_pronoun_after_a_question_about_one_person_is_that_person():
    assert general._continued(["What's a good gift for my mum?", "She loves gardening and crime novels"]) == {
        "She loves gardening and crime novels": "my mum loves gardening and crime novels"}
    assert general._continued(["any ideas for my son's party?", "he's turning 7"]) == {"he's turning 7":
                                                                                     "my son is turning 7"}
    # two people asked about, or one the pronoun does not fit: nobody is guessed
    assert general._continued(["Should I call my sister or my brother?", "She is a nurse"]) == {}
    assert general._continued(["What should I get my dad?", "She is 60"]) == {}


def test_it_after_what_is_over_is_not_what_is_over():
    # "FIFA is all Mario Kart in the user's house now" was once written
    assert general._continued(["We've moved on from Minecraft", "it's all Zelda in our house now"]) == {}
    assert general._continued(["Any tips for Stardew Valley", "It's my comfort game"]) == {
        "It's my comfort game": "Stardew Valley is my comfort game"}


def test_thresholds_are_chosen_on_writers_the_model_never_read():
    # a writer's pieces share one out-of-fold fold, and the writers are dealt evenly over the folds
    writers = [part for part in "abcdefghij" for _ in range(3)]
    folds = train._writer_folds(writers)
    assert all(len(set(folds[[i for i, w in enumerate(writers) if w == part]])) == 1 for part in "abcdefghij")
    assert sorted(np.bincount(folds, minlength=train.FOLDS)) == [6] * train.FOLDS
    assert train.writer_of("v-m017") == "v" and train.writer_of("tr3-c001") == "tr3"


def test_a_plan_is_one_memory_with_its_day_and_ends_with_it():
    extractor = RulesExtractor()
    when = datetime(2025, 6, 2, 10, tzinfo=UTC)  # a Monday

    def extract(text):
        return extractor.extract([EpisodeInput(text, when)], subject="maria")

    # the dated plan says all the piece says: one memory, with its day resolved
    [plan] = extract("I've got a vet appointment for the dog on Thursday at 3")
    assert plan.text == "Maria has a vet appointment on Thursday 5 June 2025."
    assert plan.valid_to == datetime(2025, 6, 5, 23, 59, 59, 999999, tzinfo=UTC)
    # a piece that says more than the plan's words is kept beside it, and stops being current with it
    found = extract("I've got a job interview at Amazon tomorrow")
    assert {c.valid_to for c in found} == {datetime(2025, 6, 3, 23, 59, 59, 999999, tzinfo=UTC)}, found
    assert any("Amazon" in c.text for c in found)


@pytest.mark.parametrize("said", ["I'm a Pisces, if that matters.", "I'm Back, finally home.", "I'm Sorry, I'm late."])
def test_a_capitalised_word_after_i_am_that_is_no_name_names_no_one(said):
    from memoryapp.services.extract import get_extractor
    from memoryapp.services.extract.base import EpisodeInput

    found = get_extractor("rules").extract([EpisodeInput(said, WHEN)], subject="usr_9")
    assert not [c for c in found if c.attribute in ("name", "nickname")], found


@pytest.mark.parametrize(("said", "written"), [
    ("Officially in my forties now", "Maria is officially in their forties now."),
    ("finally back at work after the surgery", "Maria is finally back at work after the surgery."),
    ("still at the same bakery, six years now", "Maria is still at the same bakery, six years now."),
])
def test_an_adverb_then_where_the_speaker_is_reads_as_a_state_not_a_verb(said, written):
    """ "Officially in my thirties now lol" was written "The user officially ins their thirties now." """
    assert general.third_person(said, "Maria") == written


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "must", "aside"), [
    ("My wife talked me into it, I'm a Leeds fan now, don't tell anyone.", ("Leeds",), "tell anyone"),
    ("Gave up on the gym and took up bouldering, no judgement please", ("bouldering",), "judgement"),
])
def test_a_closing_aside_leaves_the_fact_before_it(send, text, must, aside):
    texts = current_texts(send(text))
    assert any(mentions(t, must) for t in texts) and not any(aside in t for t in texts), texts


@pytest.mark.django_db
def test_cutting_down_is_news_said_without_its_i(send):
    user = send("I drink about five cans of Coke a day.")
    send("Cut down to two cans of Coke a day.", user=user, at=WHEN + timedelta(days=30), session="s2")
    texts = current_texts(user)
    assert any(mentions(t, ("two", "cans")) for t in texts) and not any(mentions(t, ("five",)) for t in texts), texts


@pytest.mark.parametrize(("said", "last_piece"), [
    # "The user is a carer; she has Parkinson's." left "she" to no one
    ("I'm a carer for my mum, she has Parkinson's", "my mum has Parkinson's"),
    ("I've just visited my grandad, he's doing much better", "my grandad is doing much better"),
    # someone else named, or of the other sex: the pronoun stays as said
    ("I had lunch with Priya and my brother, she is a nurse", "she is a nurse"),
    ("I phoned my dad, she was out", "she was out"),
])
def test_he_or_she_after_the_one_relative_the_speaker_named_is_that_relative(said, last_piece):
    assert general.resolved_pieces(general.pieces(said))[-1] == last_piece


@pytest.mark.django_db
@pytest.mark.parametrize(("said", "nothing"), [
    ("Honestly, my mum, she drives me mad", "The user's mum."),
    ("the test was positive!!! 8 weeks, we're telling the parents this weekend", "8 weeks."),
])
def test_a_piece_that_only_names_someone_or_a_stretch_of_time_is_no_memory(said, nothing):
    found = [c.text for c in RulesExtractor().extract([EpisodeInput(said, WHEN, "user")], subject="u_1")]
    assert nothing not in found, found


@pytest.mark.django_db
def test_a_fragment_without_a_verb_is_told_with_the_piece_before_it():
    """"officially our son" was kept alone ("Officially the user's son.") and the news it completes was dropped as a
    passing moment ("this morning!!!")."""
    said = "the adoption order for Kai came through this morning!!! officially our son"
    found = [c.text for c in RulesExtractor().extract([EpisodeInput(said, WHEN, "user")], subject="u_1")]
    assert len(found) == 1 and "adoption order for Kai" in found[0] and "son" in found[0], found
