"""Questions as agents ask them: in the user's own words ("where do I live?") about memories written
in the third person ("Sam lives in Lisbon.", "The user lives in Lisbon."), and naming a user every one
of their memories names.

- Memories are searched by their texts addressed to the user, after the name of the slot they fill
  (`search_text`; the vector kept in Memory.search_embedding): "city: You lives in Lisbon.". The slot says
  what the memory answers in the words questions use ("devices: You does all your bookkeeping on an old
  Dell laptop" for "What computer do I use?"): on the dev question set, nearest memory alone, recall@1
  0.873 -> 0.900, and at 5% wrong abstention correct abstention 0.635 -> 0.767. A question is put the same
  way as the text: its first person
  becomes the user's name (`third_person`), then every name of the user becomes "you"
  (grammar.addressed). "where do I live?", "Where does Sam live?" and "Where does the user live?" are
  then one question, and the name carries no relevance: "When is Sam's dentist appointment?" is as
  unrelated to "Sam lives in Lisbon." as "When is the dentist appointment?" is. (On the dev question set,
  against vectors of the texts as written with the names' directions taken out: recall@1 of the nearest
  memory 0.821 -> 0.863, and at 5% wrong abstention, correct abstention 0.44 -> 0.62.)
- Episodes are the user's own words, searched as written; a question naming the user has the names'
  directions taken out of its vector and the episodes' (`NameNeutral`), and the names are no search word.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memoryapp import embeddings
from memoryapp.models import User
from memoryapp.selectors.names import user_display_name
from memoryapp.services.extract.grammar import THE_USER, addressed, readable_name, stem
from memoryapp.services.extract.lexicon import FAMILY_MEMBERS, PETS, RELATIVES, alternatives, relative_key

# Most specific first: "am I" before "I", "I'm" before "I". `N` is the user's name, `N's` its possessive.
_FIRST_PERSON = [
    (r"\bam I\b", "is N"),
    (r"\bI am\b|\bI'm\b", "N is"),
    (r"\bdo I\b", "does N"),
    (r"\bdon't I\b", "doesn't N"),
    (r"\bhave I\b", "has N"),
    (r"\bI have\b|\bI've\b", "N has"),
    (r"\bI'd\b", "N would"),
    (r"\bI'll\b", "N will"),
    (r"\bmy\b|\bmine\b", "N's"),
    (r"\bme\b|\bmyself\b|\bI\b", "N"),
]
_FIRST_PERSON_RE = [(re.compile(pattern, re.IGNORECASE), replacement) for pattern, replacement in _FIRST_PERSON]


def third_person(query: str, name: str) -> str:
    """The query with the user's first person replaced by `name`: "am I allergic to anything?" ->
    "is Sam allergic to anything?". Other words stay as they are (the embedding model does not
    need "live" to become "lives")."""
    possessive = f"{name}'" if name.endswith("s") else f"{name}'s"
    for pattern, replacement in _FIRST_PERSON_RE:
        # one pass over the placeholder: replacing "N's" then "N" would rewrite the N of "Noor's" too
        replacement = re.sub(r"\bN(?:'s)?\b", lambda m: possessive if m.group() == "N's" else name, replacement)
        query = pattern.sub(lambda _m, r=replacement: r, query)
    return query


def subject_names(user: User | None) -> tuple[str, ...]:
    """Every way memory texts may call the user, the current one first: the write path's name now,
    then the ones older texts may use (an admin's display name, the external id read as a name,
    "the user"). No user: "the user" alone."""
    if user is None:
        return (THE_USER,)
    names = [user_display_name(user), user.first_name.strip(), readable_name(user.external_id), THE_USER]
    return tuple(dict.fromkeys(name for name in names if name))


def search_text(text: str, attribute: str, names: tuple[str, ...], subject: str) -> str:
    """What a memory is searched by: the name of its slot, if it fills one, then its text addressed to its user
    (grammar.addressed), as questions are. "The user lives in Leith." in the slot city: "city: You lives in
    Leith."; a fact about one of the user's people says whose slot it fills ("sister's city: Your sister lives in
    Oslo."), so that "where do I live?" is not as near to it as to the user's own city."""
    label = attribute.replace("_", " ").strip()
    whose = subject.partition("'s ")[2]  # "sam's sister" -> "sister"; "sam" (the user) -> ""
    if label and whose:
        label = f"{whose}'s {label}"
    return f"{label}: {addressed(text, names)}" if label else addressed(text, names)


def search_vectors(memories: Sequence[tuple[str, str, tuple[str, ...], str]]) -> np.ndarray:
    """The vectors memories are searched by (Memory.search_embedding), in one batch. `memories`: (text,
    attribute, subject_names of its user, subject) tuples."""
    return embeddings.encode([search_text(*memory) for memory in memories])


def search_vector(text: str, attribute: str, user: User | None, *, subject: str) -> np.ndarray:
    """The search vector of one memory of `user`'s (search_vectors)."""
    return search_vectors([(text, attribute, subject_names(user), subject)])[0]


def name_words(names: tuple[str, ...]) -> set[str]:
    """The search words of the names ("Mary-Jane" -> mary, jane; "the user" -> user)."""
    return {word for name in names for word in re.findall(r"[a-z0-9]+", name.lower()) if word != "the"}


# What a question asking for everything known about the user is made of ("What do you know about me?",
# "Tell me about Sam", "Summarise the user's profile"), besides the user's names.
_ABOUT_THEM_ALL = frozenset(
    "tell me you know knows about what who am is are was were been do does did have has can could would please so"
    " far all everything stored saved memory memories fact facts"
    " anything remember remembered summarize summarise summary profile describe details detail info information"
    " give show a an the of on i i'm my myself your yourself their them they s".split()
)


def about_them_all(query: str, names: tuple[str, ...]) -> bool:
    """Whether the question asks for everything known about the user and names nothing in particular:
    nothing is more relevant to it than anything else, so it is never abstained from."""
    words, theirs = re.findall(r"[a-z]+", query.lower()), name_words(names)
    return bool(words) and all(word in _ABOUT_THEM_ALL or word in theirs for word in words)


# Words that bring someone besides the user into a question: their people, the user's people as a group or
# with the user ("we", "our"), and a person asked for ("who do I report to?").
_OTHERS = frozenset(word for relative in RELATIVES for word in relative.split()) | frozenset(
    "kid kids child children baby babies family siblings sibling twins grandkids grandchild grandchildren household"
    " people someone anyone everyone we us our ours who whom whose".split())


def about_the_user_alone(query: str, names: tuple[str, ...]) -> bool:
    """Whether the question asks about the user and no one else: it names none of their people ("my sister",
    "the kids") and no one by a capitalised name besides the user ("What does Tom do?" may be about anyone)."""
    words = set(re.findall(r"[a-z]+(?:-[a-z]+)*", query.lower()))
    words |= {part for word in words for part in word.split("-")}  # "great-grandchild"
    if (words | {word.removesuffix("s") for word in words}) & _OTHERS:  # "granddaughters"
        return False
    theirs = name_words(names) | {"i", "s", "m", "ve", "d", "ll"}  # "I'm", "Sam's"
    _first, *rest = re.findall(r"[A-Za-z][\w'-]*", query) or [""]
    return not any(word[0].isupper() and not set(re.findall(r"[a-z0-9]+", word.lower())) <= theirs for word in rest)


# Words of a question that say nothing of what it asks about: how it asks, who it names ("my" and "I" became the
# user's name, taken out as such), and the words of asking for a name or a kind.
_ASKING_WORDS = frozenset(
    "a an the of in on at to for and or with is are am was were be been being do does did have has had what which"
    " who whom whose where when why how any anything some something there their they them this that these those"
    " it its you your can could would should will about from by as into up out much many kind sort type name"
    " called call like usually often get got go going"
    # when, not what: "where does the user work now?" asks nothing of "The user is watching Severance now."
    " now currently nowadays still anymore today".split())


_PLURAL = re.compile(r"(?:(?<=[^aeiou])ies|(?:(?<=ss)|(?<=sh)|(?<=ch)|(?<=x))es|(?<!s)s)$")


@functools.lru_cache(maxsize=16384)  # a search reads every word of its ~60 candidates; most words recur
def _word_key(word: str) -> str:
    """A word in any number and form: the stem of its singular ("Tuesdays" and "Tuesday", "classes" and
    "class", "babies" and "baby"; grammar.stem alone gives "tuesday" and "tuesda"), less a last "e" or "y" that
    the stem keeps in one form and not another ("smoke" and "smoking", "study" and "studying")."""
    key = stem(_PLURAL.sub(lambda found: "y" if found[0] == "ies" else "", word) if len(word) > 3 else word)
    return key[:-1] if len(key) > 4 and key[-1] in "ey" else key


def asked_words(terms: list[str]) -> frozenset[str]:
    """What a question asks about (its search `terms`, the user's names already out), by _word_key: "what do I do
    on Thursdays?" -> {thursda}."""
    return frozenset(_word_key(term) for term in terms if len(term) > 2 and term not in _ASKING_WORDS)


# The days a word of the calendar covers: "what do I do at weekends?" is answered by "... every Saturday morning".
_DAYS_OF = {_word_key(day): _word_key(days) for days, named in (("weekend", "saturday sunday"),
                                                                ("weekday", "monday tuesday wednesday thursday friday"))
            for day in named.split()}


def words_shared(asked: frozenset[str], text: str) -> float:
    """The share of the question's asked_words that the text has, in any form ("Saturdays" has "weekend" too)."""
    if not asked:
        return 0.0
    said = {_word_key(word) for word in re.findall(r"[a-z0-9]+", text.lower())}
    return len(asked & (said | {_DAYS_OF[word] for word in said if word in _DAYS_OF})) / len(asked)


# The user's people as questions and messages call them, keyed as memory subjects are (lexicon.relative_key), with
# the words for several of them ("my kids", "my partner") standing for any one of them.
# ...and their animals: "what's my dog's name?" asks nothing about "Dmitri is the user's name.".
_PEOPLE = re.compile(rf"\b(?:{alternatives({*RELATIVES, *FAMILY_MEMBERS, *PETS, 'pet', 'pets', 'spouse', 'family'})})"
                     r"\b", re.IGNORECASE)
_SAID_OF_PEOPLE = {"bf": "boyfriend", "gf": "girlfriend", "bro": "brother", "bestie": "best friend", "mate": "friend",
                   "buddy": "friend", "missus": "wife", "bff": "best friend"}
_SLANG = re.compile(rf"\b(?:{alternatives(_SAID_OF_PEOPLE)})\b", re.IGNORECASE)
_ANY_OF = {
    "partner": {"husband", "wife", "partner", "spouse", "boyfriend", "girlfriend", "fiance"},
    "children": {"son", "daughter", "stepson", "stepdaughter", "twin", "baby"},
    "parents": {"mother", "father", "stepmother", "stepfather"},
    "siblings": {"sister", "brother", "twin"},
    "grandparents": {"grandmother", "grandfather"},
    "grandchildren": {"granddaughter", "grandson"},
    "in-laws": {"mother-in-law", "father-in-law", "sister-in-law", "brother-in-law", "son-in-law", "daughter-in-law"},
    "friend": {"best friend"},
    "pet": set(PETS.values()),
}
_GROUP_WORDS = {"spouse": "partner", "kids": "children", "kid": "children", "child": "children", "babies": "children",
                "twins": "children", "sons": "children", "daughters": "children", "grandkids": "grandchildren",
                "grandkid": "grandchildren", "grandchild": "grandchildren", "sibling": "siblings",
                "sisters": "siblings", "brothers": "siblings", "pets": "pet"}


def _person_key(word: str) -> str:
    word = word.lower()
    return _GROUP_WORDS.get(word) or PETS.get(word) or relative_key(_SAID_OF_PEOPLE.get(word, word))


@functools.lru_cache(maxsize=4096)  # a user's memory texts, read again by each search that names their people
def people_named(text: str) -> frozenset[str]:
    """The user's people a text names, keyed: "what's my mum's name?" -> {mother}; "my kids" -> {children}."""
    return frozenset(_person_key(word) for pattern in (_PEOPLE, _SLANG) for word in pattern.findall(text))


_THE_SPEAKER = re.compile(r"\b(?:i|me|myself)\b(?!'s\b)", re.I)


def people_asked_about(query: str, names: tuple[str, ...]) -> frozenset[str]:
    """The user's people a question asks about alone (people_named), or none when it asks about the user too:
    "Where does Alice live, and her pets?" and "do I have a sister?" may be answered by the user's own facts
    ("Alice lives in Porto."), "where does my sister live?" and "What is Alice's mother called?" not."""
    if _THE_SPEAKER.search(query) or any(re.search(rf"\b{re.escape(name)}\b(?!')", query, re.I) for name in names):
        return frozenset()
    return people_named(query)


def _may_be(asked: str, person: str) -> bool:
    """Whether the person asked about ("partner") may be the memory's ("husband"), either way round."""
    return (asked == person or "family" in (asked, person) or person in _ANY_OF.get(asked, ())
            or asked in _ANY_OF.get(person, ()))


# The slots of what the user is themselves: "what's my husband's name?" asks nothing about "Mia is the user's name.".
_USERS_OWN_SLOTS = frozenset({"name", "nickname", "pronouns", "age", "birthday", "job", "employer", "workplace", "city",
                              "hometown", "nationality", "education", "school", "degree", "religion"})


def about_someone_else(asked: frozenset[str], *, subject: str, attribute: str, text: str) -> bool:
    """Whether a memory is about someone other than the user's people a question asks about (`asked`:
    people_named): one of their other people ("what's my mum's name?" and "Sam's sister's name is Leah."), or the
    user themselves in a slot of their own ("Mia is the user's name."). A memory whose words name one of those asked
    about is about them whatever its subject says ("Sam's twin sister Ines" for "who's my twin?", "Sam works at
    their dad's shop" for "where does my dad work?")."""
    if not asked or "family" in asked:
        return False
    person = subject.partition("'s ")[2].rpartition("'s ")[2]
    if not person and attribute not in _USERS_OWN_SLOTS:
        return False
    people = people_named(text) | ({_person_key(person)} if person else set())
    return not any(_may_be(one, other) for one in asked for other in people)


# A question asking who someone is, what they are called, or whether the user has them ("do I have a sister?").
_ASKS_WHO = re.compile(r"\b(?:names?|named|called|call|nicknames?|who|whom|whose|have|has|got)\b", re.I)
NAME_SLOTS = frozenset({"name", "nickname"})


def asks_who(query: str) -> bool:
    """Whether the question may be answered by a name alone: "what's my sister's name?", "who is Ana?", "do I
    have a sister?"; not "where does my sister Ana live?", whose answer the name memory of Ana only repeats."""
    return bool(_ASKS_WHO.search(query))


_ASKS_A_NAME = re.compile(r"\b(?:names?|named|called|nicknames?)\b", re.I)


def asks_their_names(query: str, people: frozenset[str]) -> bool:
    """Whether a question asks what one of the user's `people` (people_asked_about) is called: "what's my mum's
    name?", "what are my kids called?"."""
    return bool(people) and bool(_ASKS_A_NAME.search(query))


_NOT_A_NAME = frozenset("january february march april may june july august september october november december monday"
                        " tuesday wednesday thursday friday saturday sunday".split())


def names_someone(text: str, names: tuple[str, ...]) -> bool:
    """Whether a memory's text gives someone other than the user (`names`: subject_names) a name: a capitalised word
    after its first that is no part of the user's names, month or day ("The user's sister Ana is a vet.", not "Sam's
    mother is turning 90 in May.")."""
    users = {word.lower() for name in names for word in re.findall(r"[^\W_]+", name)}
    return any(not ({part.lower() for part in re.findall(r"[^\W_]+", word)} & users) and word.lower() not in _NOT_A_NAME
               for word in re.findall(r"(?<=\s)(?-i:[A-Z])[^\W_]*(?:-[^\W_]+)*", text))


def mentions(query: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"\b{re.escape(name)}\b", query, re.IGNORECASE) for name in names)


@functools.lru_cache(maxsize=1024)
def _name_vector(name: str) -> np.ndarray:
    return embeddings.encode_one(name)


@dataclass(frozen=True)
class NameNeutral:
    """Vectors with the names' directions removed (an orthonormal basis of the names' embeddings),
    renormalised: their cosine is what two texts share beyond naming the same person."""

    basis: np.ndarray  # (n, dim), orthonormal rows; empty: vectors pass unchanged

    @classmethod
    def of(cls, names: tuple[str, ...]) -> NameNeutral:
        if not names:
            return cls(basis=np.zeros((0, 0), dtype=np.float32))
        q, _ = np.linalg.qr(np.stack([_name_vector(name) for name in names]).T)
        return cls(basis=q.T.astype(np.float32))

    def __call__(self, vector: np.ndarray) -> np.ndarray:
        if not len(self.basis):
            return vector
        rest = vector - self.basis.T @ (self.basis @ vector)
        return rest / (np.linalg.norm(rest) or 1.0)
