"""How memory texts name the user (issue 17, item 4): by the name they give, or the display name an
admin set, or a readable external id; never by an email address or an opaque id. Grammar right."""

import io
from datetime import UTC, datetime

import numpy as np
import pytest
from django.core.management import call_command

from memoryapp import embeddings
from memoryapp.actors import ActorRef, Principal
from memoryapp.models import Memory
from memoryapp.selectors.names import user_display_name
from memoryapp.selectors.search import SearchParams, search_memories
from memoryapp.services.extract.base import EpisodeInput
from memoryapp.services.extract.grammar import article, possessive, readable_name
from memoryapp.services.extract.rules import RulesExtractor
from memoryapp.services.extraction import episodes_extract
from memoryapp.services.tenancy import user_display_name_set
from tests.factories import current_texts, make_user, say

NOW = datetime(2025, 3, 5, 10, 0, tzinfo=UTC)


def candidates_for(subject, *turns, source="user"):
    """What the rules write for these turns."""
    return RulesExtractor().extract([EpisodeInput(t, NOW, source) for t in turns], subject=subject)


def texts(subject, *turns, source="user"):
    """The texts the rules write for these turns, by attribute (what else is written is not at issue)."""
    return {c.attribute: c.text for c in candidates_for(subject, *turns, source=source) if c.attribute}


@pytest.mark.parametrize(
    "external_id",
    ["Usr_7f3a9c21", "maria@example.com", "550e8400-e29b-41d4-a716-446655440000", "9f86d081884c7d65",
     "deadbeefcafe", "u_102938", "user", "customer-48213", "XK3J9Q2ZP"],
)
def test_an_email_or_opaque_id_is_never_used_as_a_name(external_id):
    turns = ("I live in Madrid.", "My sister is a doctor.", "I left my job.")
    said = {c.text for c in candidates_for(external_id, *turns)}
    assert {"The user lives in Madrid.", "The user's sister is a doctor.", "The user left their job."} <= said


@pytest.mark.parametrize(("external_id", "name"), [("sam", "Sam"), ("riley", "Riley"), ("mary-jane", "Mary-Jane")])
def test_a_readable_external_id_is_used_capitalised(external_id, name):
    assert readable_name(external_id) == name
    assert texts(external_id, "I live in Madrid.")["city"] == f"{name} lives in Madrid."


def test_the_name_the_user_gives_names_them_from_then_on():
    written = texts("maria@example.com", "Hi, I am Maria", "I live in Madrid.", "my brother is a nurse")
    assert (written["name"], written["city"], written["job"]) == (
        "The user's name is Maria.", "Maria lives in Madrid.", "Maria's brother is a nurse.")


def test_a_name_given_late_in_a_message_names_the_user_in_all_of_it():
    written = texts("usr_51", "We adopted a puppy last week! I'm Tom by the way.")
    assert written["pet"].startswith("Tom's household adopted a puppy")
    assert texts("usr_52", "I moved to Leeds for work, oh and my name is Priya.")["city"] == "Priya lives in Leeds."


@pytest.mark.parametrize("named", ["my car's name is Betsy", "I'm obsessed with sourdough, my starter's name is Clint",
                                   "We got a kitten, her name is Mochi", "my plant's name is Gerald and he's thriving"])
def test_the_name_of_something_of_theirs_does_not_rename_the_user(named):
    """Not "Betsy lives in Leeds." from then on."""
    written = [c for c in candidates_for("usr_53", named, "I live in Leeds.") if c.subject == "usr_53"]
    assert "name" not in [c.attribute for c in written]
    assert "The user lives in Leeds." in [c.text for c in written]


def test_a_name_on_a_web_page_does_not_rename_the_user():
    episodes = [EpisodeInput("My name is Bob.", NOW, source="web"), EpisodeInput("I live in Madrid.", NOW)]
    city = [c for c in RulesExtractor().extract(episodes, subject="usr_91") if c.attribute == "city"]
    assert [c.text for c in city] == ["The user lives in Madrid."]


def test_possessives_and_articles_read_right():
    assert texts("james", "My sister is a teacher.")["job"] == "James's sister is a teacher."
    assert texts("riley", "I'm a UX designer.")["job"] == "Riley is a UX designer."
    assert texts("riley", "I am an engineer.")["job"] == "Riley is an engineer."
    assert [article(p) + p for p in ("UX designer", "hour", "university lecturer", "MBA", "apple", "European",
                                     "HR manager", "urgent matter", "NASA engineer")] == [
        "a UX designer", "an hour", "a university lecturer", "an MBA", "an apple", "a European", "an HR manager",
        "an urgent matter", "a NASA engineer"]
    assert (possessive("James"), possessive("the user")) == ("James's", "the user's")


# ---------------------------------------------------------------------------------------------
# Through the store
# ---------------------------------------------------------------------------------------------


def tell(user, content, when, attribute, session="s"):
    """The memory written for `attribute` from this message."""
    episode = say(user, content, when=when, session=session)
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    return Memory.objects.get(user=user, attribute=attribute, sources=episode)


@pytest.mark.django_db
def test_a_name_said_in_one_conversation_names_the_user_in_later_ones(acme):
    maria = make_user(acme, "maria@example.com")
    named = tell(maria, "Hi, I am Maria", "2025-03-01", "name", session="first")
    assert named.text == "The user's name is Maria."
    city = tell(maria, "I live in Madrid.", "2025-03-02", "city", session="second")
    assert city.text == "Maria lives in Madrid."


@pytest.mark.django_db
def test_an_opaque_id_user_is_the_user_until_they_say_their_name(acme):
    user = make_user(acme, "Usr_7f3a9c21")
    city = tell(user, "I live in Madrid.", "2025-03-01", "city")
    assert city.text == "The user lives in Madrid."
    tell(user, "My name is Ana.", "2025-03-02", "name")
    job = tell(user, "I work as a nurse.", "2025-03-03", "job")
    assert job.text == "Ana is a nurse."
    city.refresh_from_db()
    assert city.text == "The user lives in Madrid.", "memories already written keep their text"


@pytest.mark.django_db
def test_an_admin_display_name_names_the_user_unless_they_said_their_own(acme):
    user = make_user(acme, "c-7f3a9c21")
    out = io.StringIO()
    call_command("set_display_name", org=acme.name, user="c-7f3a9c21", name="Maria", stdout=out)
    assert "Maria" in out.getvalue()
    city = tell(user, "I live in Madrid.", "2025-03-01", "city")
    assert city.text == "Maria lives in Madrid."

    tell(user, "My name is Mia.", "2025-03-02", "name")
    user.refresh_from_db()
    assert user_display_name(user) == "Mia", "what the user says about themselves wins"
    job = tell(user, "I'm a teacher.", "2025-03-03", "job")
    assert job.text == "Mia is a teacher."


@pytest.mark.django_db
def test_clearing_the_display_name_falls_back_to_a_readable_id_or_the_user(acme):
    riley, opaque = make_user(acme, "riley"), make_user(acme, "a81f09d2c4")
    for user in (riley, opaque):
        user_display_name_set(user=user, display_name="  Someone   Else ")
        assert user_display_name(user) == "Someone Else"
        user_display_name_set(user=user, display_name="")
    assert (user_display_name(riley), user_display_name(opaque)) == ("Riley", "the user")


@pytest.mark.django_db
@pytest.mark.parametrize("command, option", [("set_display_name", {"name": "Maria"}),
                                             ("invite_user", {"username": "maria"})])
def test_a_command_naming_an_unknown_user_or_organization_says_which(acme, command, option):
    from django.core.management.base import CommandError

    make_user(acme, "maria")
    for org, user in (("Acme", "nobody"), ("Nowhere", "maria")):
        with pytest.raises(CommandError, match=f"no user '{user}' in organization '{org}'"):
            call_command(command, org=org, user=user, **option)


@pytest.mark.django_db
def test_a_new_name_leaves_the_old_one_current_in_no_memory(acme):
    """"... took my wife's last name, so it's Hannah Okafor now": the message's other memories call her by it,
    where they said "Hannah Schultz is married." beside the new name."""
    from memoryapp.selectors.scoping import valid_at

    user = make_user(acme, "usr_7f3a9c21")
    tell(user, "My name is Hannah Schultz.", "2025-03-01", "name", session="first")
    tell(user, "I got married in June and took my wife's last name, so it's Hannah Okafor now.", "2025-07-01",
         "name", session="second")
    current = list(valid_at(Memory.objects.filter(user=user)).values_list("text", flat=True))
    assert [text for text in current if text.startswith("Hannah Okafor") and "married" in text], current
    assert not [text for text in current if "Schultz" in text]
    assert user_display_name(user) == "Hannah Okafor"


@pytest.mark.django_db
def test_memories_are_searched_addressed_to_the_user_whichever_name_they_were_written_with(acme):
    user = make_user(acme, "Usr_7f3a9c21")
    city = tell(user, "I live in Madrid.", "2025-03-01", "city")
    tell(user, "My name is Ana.", "2025-03-02", "name")
    job = tell(user, "I work as a nurse.", "2025-03-03", "job")
    for memory, searched_as in ((city, "city: You lives in Madrid."), (job, "job: You is a nurse.")):
        stored = np.asarray(memory.search_embedding, dtype=np.float32)
        assert float(stored @ embeddings.encode_one(searched_as)) > 0.99, memory.text
    principal = Principal.for_user(user)
    for query, memory in (("where do I live?", city), ("What does Ana do for work?", job)):
        hits = search_memories(principal, user=user, params=SearchParams(query=query, k=1)).hits
        assert [hit.item.pk for hit in hits] == [memory.pk], query


@pytest.mark.django_db
def test_a_change_of_name_ends_the_old_name_and_not_a_name_beside_it(acme):
    """"... gone back to my maiden name": the memory of the user's name, whose value is the name texts call them
    by, is the one the change replaces; a friend's name, the next name of a kind, stays."""
    user = make_user(acme, "usr_5d0c7e11")
    old_name = tell(user, "I'm Marta Silva.", "2025-03-01", "name", session="first")
    friend = tell(user, "My best friend's name is Inês, we met at school.", "2025-03-02", "name", session="first")
    episode = say(user, "The divorce is final and I've gone back to my maiden name, Marta Costa.", when="2025-07-01",
                  session="second")
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))

    current = current_texts(user)
    assert friend.text in current and old_name.text not in current, current


@pytest.mark.django_db
@pytest.mark.parametrize("old, change, new", [
    ("My full name is Ayşe Demir.", "After the wedding I took my husband surname, so in the letters please write Ayşe "
     "Kaya, the bank already changed it.", "Ayşe Kaya"),
    ("I'm Rohan Mehta.", "I took Vikram's surname when we married, so it's Rohan Kapoor on the bio and on everything "
     "official.", "Rohan Kapoor"),
    ("my name is Zhang Wei", "Since the citizenship ceremony my legal name is Kevin Zhang, it is on the passport.",
     "Kevin Zhang"),
    ("Hi, I'm Laura Smith.", "I got married last month and I'm Laura Jones now.", "Laura Jones"),
    # a name slot's memory is never worded by a piece that only says "name" ("... took my wife's last name")
    ("My name is Hannah Kowal.", "I got married in May and took my wife's last name, so it's Hannah Reyes now.",
     "Hannah Reyes"),
])
def test_a_name_said_in_a_change_of_name_is_the_users_name_from_then_on(acme, old, change, new):
    """Before, the old name ended and no memory held the new one: texts went on calling the user by the old."""
    user = make_user(acme, "usr_2b9e4f10")
    tell(user, old, "2025-03-01", "name", session="first")
    episode = say(user, change, when="2025-07-01", session="second")
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    assert [text for text in current_texts(user) if text.startswith(f"{new} is the user's name")]
    assert user_display_name(user) == new
    assert tell(user, "I live in Leeds.", "2025-07-02", "city", session="third").text == f"{new} lives in Leeds."


@pytest.mark.django_db
@pytest.mark.parametrize("said", ["My sister took her husband's surname, she's Anna Kowalski now.",
                                  "My maiden name was Katherine Brennan, before I married.",
                                  "My husband's surname is Kowalski, we live in New York.",
                                  "My husband Alan took my surname, he's Alan Doyle now.",
                                  "Back from the wedding of my friend Katherine Shaw, it's Katherine Hughes now!",
                                  "I got married in May but kept my own surname, I'm still Katherine Doyle."])
def test_a_former_name_or_someone_elses_new_name_leaves_the_users_name(acme, said):
    user = make_user(acme, "usr_4c1d8a22")
    tell(user, "I'm Katherine Doyle.", "2025-03-01", "name", session="first")
    episode = say(user, said, when="2025-07-01", session="second")
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    assert "Katherine Doyle is the user's name." in current_texts(user)
    assert user_display_name(user) == "Katherine Doyle"


@pytest.mark.django_db
@pytest.mark.parametrize("called, text", [("I go by Sam at work.", "Samantha Reid goes by Sam at work."),
                                          ("people call me Sammy online", "Samantha Reid goes by Sammy online.")])
def test_a_name_used_in_one_place_is_a_nickname_beside_the_name(acme, called, text):
    user = make_user(acme, "usr_6e2a1b33")
    tell(user, "My name is Samantha Reid.", "2025-03-01", "name", session="first")
    assert tell(user, called, "2025-03-02", "nickname", session="first").text == text
    assert "The user's name is Samantha Reid." in current_texts(user)
    assert tell(user, "I live in Leeds.", "2025-03-03", "city").text == "Samantha Reid lives in Leeds."


@pytest.mark.django_db
@pytest.mark.parametrize(("relative", "name"), [("daughter", "Chloé"), ("son", "José"), ("sister", "Zoë"),
                                                 ("wife", "Ayşe")])
def test_a_name_with_accents_names_the_person_and_their_news(acme, relative, name):
    """Names were read as a capital and plain small letters: "my daughter Chloé" wrote no name of her, and news
    of Chloé by her name alone was no one's, so what it changed stayed current."""
    user = make_user(acme, "usr_7a3c5e44")
    allergy = tell(user, f"my {relative} {name} is allergic to peanuts", "2025-03-01", "allergy", session="first")
    assert f"The user's {relative}'s name is {name}." in current_texts(user)
    episode = say(user, f"{name} passed the oral challenge at the hospital!! ate a whole peanut butter sandwich and "
                        "nothing happened", when="2025-07-01", session="second")
    episodes_extract(episode_ids=[episode.id], actor=ActorRef.for_job("test"))
    current = current_texts(user)
    assert allergy.text not in current
    assert f"The user's {relative} {name} passed the oral challenge at the hospital." in current, current
