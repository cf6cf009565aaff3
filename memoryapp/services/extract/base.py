"""The candidate type every extraction backend produces (rules and LLM alike)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

# How a statement relates to what was said before; the judge turns this into an operation.
#   state    a plain assertion ("I'm vegetarian")
#   refine   adds detail to a known fact without replacing it ("I still eat eggs")
#   change   the world changed ("I eat fish now", "I moved to Lisbon")
#   negate   a fact stopped being true, without a new value ("I'm not vegetarian anymore")
#   correct  an earlier statement was wrong ("actually, I work at Globex, not Initech")
#   retract  the user takes back what they just said in this session ("I was kidding")
Relation = Literal["state", "refine", "change", "negate", "correct", "retract"]

SINGLE_VALUED_ATTRIBUTES = frozenset(
    {"name", "pronouns", "age", "job", "employer", "city", "diet", "birthday", "relationship_status",
     # slots the general path fills (services.extract.lexicon.SLOTS): one value at a time
     "nickname", "home_type", "hometown", "workplace", "education", "school", "degree", "partner", "boss",
     "religion", "phone", "car", "commute", "clothing_size", "home_life", "politics"}
)


FAVORITE_PREFIX = "favorite_"


@dataclass(frozen=True)
class EpisodeInput:
    """What an extractor sees of one episode: never a model instance, so backends stay pure."""

    content: str
    occurred_at: datetime
    source: str = "user"  # user, assistant, tool, web, document, system
    session: str = ""
    # The episode's stored sentence vector, when it has one: the general path reuses it for a message
    # that is one piece instead of encoding it again (services.extract.general).
    vector: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Candidate:
    text: str  # a short self-contained statement in the third person: "Sam is vegetarian."
    subject: str  # "sam", or e.g. "sam's sister" for facts about someone else
    attribute: str  # diet, city, employer, job, name, pet, family, likes, dislikes, plan, instruction, ...
    value: str  # normalized value: "vegetarian", "eats fish", "Lisbon"
    valid_from: datetime  # absolute, resolved from the episode's occurred_at
    importance: int = 5  # 1-10
    confidence: float = 0.8  # 0-1
    relation: Relation = "state"
    kind: Literal["semantic", "procedural"] = "semantic"  # standing instructions are procedural
    episode_index: int = 0  # which of the extracted episodes it came from
    # A plan or event stops holding when its day has passed ("next Friday": the end of that Friday).
    valid_to: datetime | None = None

    def __post_init__(self):
        if not 1 <= self.importance <= 10:
            raise ValueError("importance must be within 1-10")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError("confidence must be within 0-1")

    # Ends the value of `ends` names, wherever it is kept: the words of an old value the statement says
    # is over ("I left Google", "Sophie and I split up", "swapped Lyon for Marseille").
    ends: tuple[str, ...] = ()
    # The message it came from says that something in the speaker's life changed (the classifier's change
    # head, which hears it said in words no rule lists: "Aer Lingus now", "Baby Aiko arrived on Tuesday").
    says_change: bool = False
    # How likely the change head finds that the message says a change (says_change: at or above its threshold).
    change_heard: float = 0.0

    @property
    def cardinality(self) -> Literal["single", "multi"]:
        # "We've also got an old Micra now" is a second car beside the first, not in its place
        return "single" if single_valued(self.attribute) and not says_one_more(self.text) else "multi"


def single_valued(attribute: str) -> bool:
    """One value at a time: the listed slots, and a favourite of a kind ("favorite_band")."""
    return attribute in SINGLE_VALUED_ATTRIBUTES or attribute.startswith(FAVORITE_PREFIX)


# "also" inside a statement, not fronted ("Also, I moved to Leeds" is more news, said in place of the old value);
# "too" or "as well" closing it, or before a word of time ("getting into sci-fi too lately").
_ONE_MORE = re.compile(r"(?<!^)(?<![.!?;:] )\b(?:also|as well as|in addition to)\b(?!,)"
                       r"|\b(?:too|as well)\b(?=\s*(?:[.,!;)]|$|now\b|lately\b|these days\b|recently\b))", re.I)


def says_one_more(text: str) -> bool:
    """Whether a statement gives a value that joins the others ("The user has also cut out dairy.", "...speaks
    some Welsh too."): it replaces none, even in a slot of one value at a time."""
    return bool(_ONE_MORE.search(text.strip()))


class Extractor(Protocol):
    def extract(self, episodes: list[EpisodeInput], *, subject: str, name: str = "") -> list[Candidate]:
        """Candidates from these episodes of one conversation, in the order they were said.

        `subject` is the user's key in candidates' `subject` (their external id, e.g. "sam");
        `name` is how memory texts call them ("Maria", "the user"; services.extraction chooses it).
        """
        ...
