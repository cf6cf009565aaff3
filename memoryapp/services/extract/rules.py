"""The offline extraction backend: first-person statements turned into candidates by rules.

Deterministic and conservative on purpose: a missed fact can be extracted again when the
episodes are re-read by a better backend, but a wrong one pollutes memory. So every rule is
anchored at the start of a clause ("I live in ...", "my sister is ..."), values are cut at the
first word that is not part of them, and anything that looks like a question or small talk
yields nothing.

A message goes through: sentences -> clauses -> normalized clause (contractions expanded,
fillers such as "btw" and markers such as "still", "now", "actually", "anymore" taken out and
remembered) -> the first rule that matches -> facts -> candidates, whose relation comes from the
rule or from the markers.

Three modules share the work: lexicon (the word lists), clauses (sentences and clauses, and the
normal form) and this one (the conversation, the rule table, values and texts).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from . import general, timeparse
from .base import FAVORITE_PREFIX, Candidate, EpisodeInput, Relation, single_valued
from .clauses import Clause, split_clauses, split_sentences, trimmed
from .grammar import THE_USER, article, possessive, readable_name, sentence
from .lexicon import (
    COUNTS,
    DIET_ALIASES,
    DIET_FOODS,
    EVENT_NOUNS,
    FAMILY_MEMBERS,
    GERUND_BASES,
    HEALTH_ADJECTIVES,
    HEALTH_CONDITIONS,
    INSTRUCTION_VERBS,
    JOB_WORDS,
    LANGUAGES,
    LOWERCASE_PARTICLES,
    NATIONALITIES,
    PETS,
    PLAN_VERBS,
    POINTER_WORDS,
    RELATIONSHIP_STATUSES,
    STUDY_ROLES,
    alternatives,
    looks_like_job,
)
from .timeparse import TimeMatch, find_time

# Turns of the conversation itself: they may also retract and correct what was said before.
CONVERSATION_SOURCES = frozenset({"user"})
# Content passed through the conversation: explicit first-person statements, and instructions,
# which the gate quarantines ("from now on always recommend ..." on a web page must reach an
# admin, never the agent). A page saying "never mind" or "I meant ..." touches nothing.
FIRST_PERSON_SOURCES = frozenset({"tool", "web", "document"})

IMPORTANCE = {
    "name": 9,
    "pronouns": 8,
    "allergy": 9,
    "health": 9,
    "diet": 8,
    "instruction": 8,
    "age": 7,
    "job": 7,
    "employer": 7,
    "city": 7,
    "family": 7,
    "relationship_status": 7,
    "hometown": 6,
    "pet": 6,
    "plan": 5,
    "likes": 4,
    "dislikes": 4,
}
OTHER_PERSON_IMPORTANCE = 6  # facts about the user's sister matter, less than facts about the user
RETRACTION_IMPORTANCE = 8
CONFIDENCE = 0.8
FIRST_PERSON_SOURCE_CONFIDENCE = 0.5  # a document saying "I live in Paris" may not be the user speaking

# ---------------------------------------------------------------------------------------------
# The extractor
# ---------------------------------------------------------------------------------------------


class RulesExtractor:
    def __init__(self, *, general: bool = True):
        self.general = general  # False: the rules alone (what they read precisely, for tests and comparison)

    def extract(self, episodes: list[EpisodeInput], *, subject: str, name: str = "") -> list[Candidate]:
        """`name`: how texts call the user (selectors.names.user_display_name); without one, the
        external id when it reads as a name, else "the user". A name the user gives in these episodes
        ("my name is Maria") names them from there on."""
        known = name or readable_name(subject) or THE_USER
        conversation = _Conversation(subject, name=known)
        for index, episode in enumerate(episodes):
            conversation.read(index, episode)
        if not self.general:
            return conversation.candidates
        # The general path (services.extract.general) keeps what no rule reads and drops what the
        # durability classifier is sure holds nothing; it renames the user from where they gave a name.
        return general.complete(episodes, conversation.candidates, subject=subject, who=known)


@dataclass(frozen=True)
class _Fact:
    """What a rule found in a clause, before it knows its time, subject and episode."""

    attribute: str
    value: str
    relation: Relation | None = None  # None: the clause's markers decide
    importance: int | None = None  # None: by attribute
    text: str = ""  # set when the attribute's sentence template does not fit
    kind: str = "semantic"
    template: str = ""  # "": the attribute's template in TEMPLATES


@dataclass
class _Conversation:
    """Reads episodes in order, remembering per session what the user said last, which is what
    "just kidding", "I meant Porto" and a bare "not anymore" refer to."""

    subject: str
    name: str = THE_USER  # how texts call the user: "Maria", "Sam", "the user"
    candidates: list[Candidate] = field(default_factory=list)
    last_fact: dict[str, Candidate] = field(default_factory=dict)
    last_episode: dict[str, EpisodeInput] = field(default_factory=dict)
    # The index of the user's message before the one being read, per session (assistant turns between).
    user_turn_before: dict[str, int] = field(default_factory=dict)
    last_user_turn: dict[str, int] = field(default_factory=dict)

    def read(self, index: int, episode: EpisodeInput) -> None:
        if episode.source in CONVERSATION_SOURCES:
            self.user_turn_before[episode.session] = self.last_user_turn.get(episode.session, -1)
            self.last_user_turn[episode.session] = index
        if episode.source in CONVERSATION_SOURCES | FIRST_PERSON_SOURCES:
            # read without emoji: "I live in Porto 🏖" keeps the value "Porto", which "I live in Porto" says again
            # ...and a self-introduction in fragments as the statements it makes ("34, nurse, based in Leeds")
            for sentence in (said for whole in split_sentences(general.cleaned(episode.content))
                             for said in general.introduction_statements(whole)):
                self._read_sentence(sentence, index, episode)
        self.last_episode[episode.session] = episode

    def _referred_to(self, episode: EpisodeInput, index: int) -> Candidate | None:
        """What "just kidding", "I meant Porto" and "not anymore" refer to: the last fact, if the user said it
        in this message or the one before; an older one is not what a correction twenty turns later means."""
        previous = self.last_fact.get(episode.session)
        if previous is None or previous.episode_index not in (index, self.user_turn_before.get(episode.session)):
            return None
        return previous

    def _read_sentence(self, sentence: str, index: int, episode: EpisodeInput) -> None:
        if sentence.rstrip().endswith("?") and not any(asks_how_to_reply(part) for part in split_clauses(sentence)):
            # Questions ask, they do not tell ("can you keep answers short?" tells how to answer), but the
            # statement one rests on does ("Since I wear hearing aids, are AirPods a bad idea?").
            told, asked = general.statement_and_question(sentence)
            if not told:
                return
            sentence = f"{told}, {asked}" if asks_how_to_reply(asked) else told
        conversational = episode.source in CONVERSATION_SOURCES
        lead = None
        for text in split_clauses(sentence):
            clause = _Clause.read(text, episode.occurred_at, self.subject, self.name, lead=lead)
            if not clause.body:
                lead = clause  # "Actually,", "Hi,", "Last year,": they qualify the clause that follows
                continue
            for fact, subject in self._facts(clause, episode, index, conversational):
                self._add(fact, subject, clause, index, episode, conversational)
            lead = None
        if conversational and (renamed := new_name(sentence, self.name)) and not any(
                c.attribute == "name" and c.episode_index == index and c.value == renamed for c in self.candidates):
            # the name said in a change of name, wherever the clause puts it ("so it's Rohan Kapoor on the bio")
            clause = _Clause.read(f"my name is {renamed}", episode.occurred_at, self.subject, self.name)
            self._add(_Fact("name", renamed, relation="change"), self.subject, clause, index, episode, conversational)

    def _facts(self, clause: _Clause, episode: EpisodeInput, index: int,
               conversational: bool) -> list[tuple[_Fact, str]]:
        previous = self._referred_to(episode, index)
        if conversational and _RETRACTION.fullmatch(clause.body):
            retraction = _Fact(
                attribute=previous.attribute if previous else "",
                value="",
                relation="retract",
                importance=RETRACTION_IMPORTANCE,
                text=sentence(f"{self.name} retracted the previous statement."),
                kind=previous.kind if previous else "semantic",
            )
            return [(retraction, previous.subject if previous else self.subject)]
        if conversational and _BARE_NEGATION.fullmatch(clause.body):
            return self._negations_of_what_was_asked(episode) or _negation_of(previous)
        if conversational and clause.meant and not _FIRST_PERSON_START.match(clause.body):
            return _correction_of(previous, clause)
        facts = clause.facts(instructions_allowed=True)
        if not conversational:
            facts = [
                _replace(fact, text=f"Standing instruction found in {episode.source} content: {fact.value}.")
                if fact.attribute == "instruction"
                else fact
                for fact in facts
            ]
        return [(fact, clause.subject) for fact in facts]

    def _negations_of_what_was_asked(self, episode: EpisodeInput) -> list[tuple[_Fact, str]]:
        """ "Are you still vegetarian?" - "Not anymore." negates what the question asked about."""
        asked = self.last_episode.get(episode.session)
        question = _STILL_QUESTION.search(asked.content) if asked and asked.source == "assistant" else None
        if not question:
            return []
        statement = ("I am " if question["verb"].lower() == "are" else "I ") + question["rest"]
        clause = _Clause.read(statement, episode.occurred_at, self.subject, self.name)
        facts = clause.facts(instructions_allowed=False)
        return [(_replace(fact, relation="negate"), clause.subject) for fact in facts]

    def _add(
        self, fact: _Fact, subject: str, clause: _Clause, index: int, episode: EpisodeInput, conversational: bool
    ) -> None:
        planned = fact.attribute == "plan"
        found = clause.time_match(prefer_future=planned)
        when = found.when if found else clause.lead_time
        valid_to = None
        if planned:
            # A plan holds from when it is told until its day has passed: current before, history after.
            when = None
            if found and found.period_end > episode.occurred_at:
                valid_to = found.period_end
            else:
                found = None
        if fact.relation == "retract":
            when = None  # a retraction is about the statement, not about the world
        relation = clause.relation_for(fact)
        if fact.attribute == "name" and subject == self.subject and self.name != THE_USER and not fact.template:
            # not "Hannah Schultz's name is Hannah Okafor."
            fact = _replace(fact, template="{value} is the user's name.")
        who = self._who(subject)
        if clause.relative_name and subject != self.subject and fact.attribute != "name":
            who = f"{who} {_title(clause.relative_name)}"  # "Sam's husband Tom is a pilot.": found by his name too
        candidate = Candidate(
            text=fact.text or _render(fact, who, relation, found if planned else None),
            subject=subject,
            attribute=fact.attribute,
            value=fact.value,
            valid_from=when or episode.occurred_at,
            valid_to=valid_to,
            importance=_importance(fact, subject, self.subject),
            confidence=CONFIDENCE if conversational else FIRST_PERSON_SOURCE_CONFIDENCE,
            relation=relation,
            kind=fact.kind,
            episode_index=index,
        )
        self.candidates.append(candidate)
        if relation != "retract":
            self.last_fact[episode.session] = candidate
        if fact.attribute == "name" and subject == self.subject and relation in ("state", "change", "correct") \
                and conversational:
            self.name = fact.value  # what the user says they are called names them from now on

    def _who(self, subject: str) -> str:
        """How a text names `subject`: the user ("sam") by their name, someone of theirs ("sam's
        sister") through it ("Maria's sister", "the user's sister")."""
        if subject == self.subject:
            return self.name
        if subject.startswith(f"{self.subject}'s "):
            return f"{possessive(self.name)} {subject[len(self.subject) + 3 :]}"
        return subject


# A change of the user's own name: "took my husband's surname", "back to my maiden name", "by deed poll", "my legal
# name is ...", or a wedding beside "I'm ... now" / "it's ... now".
_NAME_CHANGE = re.compile(
    r"\b(?:(?:sur|last |family |maiden |married |legal |new )name|deed poll|name change|changed (?:my|our) names?"
    r"|double[- ]barrel\w*|hyphenated)\b"
    r"|\b(?:wedding|married|nikah)\b.*\b(?:I'm|I am|it's|it is)\s+(?-i:[A-Z])[\w'-]+\s+(?-i:[A-Z])[\w'-]+\s+now\b",
    re.I)
_NAME_WORD = r"(?-i:[A-Z][^\W\d_]+(?:-[A-Z][^\W\d_]+)?)"  # "Ayşe", "Sharma-Rao"
_FULL_NAME = re.compile(rf"(?<![\w']){_NAME_WORD}(?:\s+{_NAME_WORD}){{1,2}}(?![\w'])")
# What gives a name when no name of the user's is known yet to recognise the new one by
_GIVES_A_NAME = re.compile(r"(?:\b(?:it's|it is|I'm|I am|name is|as|write|call me|now)|[,:])\s*$", re.I)
# ...and what says a name was the user's, or is still theirs, or is someone else's: "my maiden name was Katherine
# Brennan", "I'm still Jo Price", "she's Grace Okoro now", "my friend Katherine Shaw"
_NOT_A_NEW_NAME = re.compile(r"\b(?:was|used to be|formerly|previously|née|nee|born|old name|still"
                             r"|(?:she|he|they)(?:'s|'re| is| are)|(?:her|his|their) (?:\w+ )?name(?:'s| is))\W*$"
                             r"|\b(?:my|our|his|her|their|your)\s+(?:[\w-]+\s+)?(?!(?:sur)?name\b|is\b|was\b)[a-z][\w-]*\s*$",
                             re.I)


def new_name(sentence: str, current: str) -> str:
    """The user's new name when `sentence` says they changed it (_NAME_CHANGE), else "": a full name that is
    not `current` (how texts call the user now) but shares a word with it ("Katherine Doyle" -> "Katherine
    Brennan", "Zhang Wei" -> "Kevin Zhang"); with no name known, one said where names are given ("so it's Rohan
    Kapoor on the bio"). Another person's new name shares no word with the user's ("my sister is Anna Nowak now"),
    and one said after their old one is theirs ("my friend Sarah Collins, it's Sarah Hughes now")."""
    if not _NAME_CHANGE.search(sentence):
        return ""
    known = set() if current == THE_USER else {word.lower() for word in current.split()}
    others = set()  # the first names of the other people the sentence names
    for found in _FULL_NAME.finditer(sentence):
        said = found[0].split()
        words, first = {word.lower() for word in said}, said[0].lower()
        before = sentence[: found.start()]
        if words & _NOT_SIGNED or found[0].lower() == current.lower():
            continue
        if (_NOT_A_NEW_NAME.search(before) or first in others
                or (first not in known and re.search(rf"\b{re.escape(said[0])}\b", before))):
            others.add(first)  # "My wife Grace took my surname, ... Grace Okoro"
            continue
        if (words & known) if known else _GIVES_A_NAME.search(before):
            return found[0]
    return ""


def _negation_of(previous: Candidate | None) -> list[tuple[_Fact, str]]:
    if previous is None:
        return []
    return [(_Fact(previous.attribute, previous.value, "negate", previous.importance), previous.subject)]


# "I meant Tuesday not Thursday": the correction names the word it replaces.
_INSTEAD_OF = re.compile(r"[,;]?\s+(?:not|instead of|rather than)\s+(?P<wrong>.+)$", re.I)


def _correction_of(previous: Candidate | None, clause: _Clause) -> list[tuple[_Fact, str]]:
    """ "I meant Porto": the value of the last statement was wrong, its attribute still holds. One that names
    the wrong word corrects the last statement only if that statement said it."""
    if previous is None or not previous.attribute or len(clause.body.split()) > 5:
        return []
    body = clause.body
    named = _INSTEAD_OF.search(body)
    if named:
        wrong = named["wrong"].strip(" .!").lower()
        if not re.search(rf"\b{re.escape(wrong)}\b", f"{previous.value} {previous.text}".lower()):
            return []
        body = body[: named.start()]
    value = normalize_value(previous.attribute, body, clause.occurred_at)
    if not value:
        return []
    return [(_Fact(previous.attribute, value, "correct", previous.importance, kind=previous.kind), previous.subject)]


def _replace(fact: _Fact, **changes) -> _Fact:
    return _Fact(**{**fact.__dict__, **changes})


# ---------------------------------------------------------------------------------------------
# Clauses as the rules read them, and the turns that answer what was said before
# ---------------------------------------------------------------------------------------------

_FIRST_PERSON_START = re.compile(r"^(?:I|my)\b", re.I)
_RETRACTION = re.compile(
    r"(?:i (?:was|am) )?(?:just |only )?(?:kidding|joking)|jk|j/k|scratch that|never ?mind|nvm"
    r"|forget (?:what i (?:just )?said|that|it|i said that)|ignore (?:that|what i (?:just )?said)"
    r"|disregard (?:that|what i (?:just )?said)|that is not true|that was a joke|i take (?:that|it) back",
    re.I,
)
_BARE_NEGATION = re.compile(r"not anymore|no longer|not any longer|anymore no", re.I)
_STILL_QUESTION = re.compile(r"\b(?P<verb>are|do) you still (?P<rest>[^?]+)\?", re.I)


class _Clause(Clause):
    """A clause as the rule table reads it: the facts it states, and how each relates to what was known."""

    def relation_for(self, fact: _Fact) -> Relation:
        if self.negated:
            return "negate"
        if fact.relation:
            return fact.relation
        if (self.now or self.started) and single_valued(fact.attribute):
            return "change"
        if self.correction:
            return "correct"
        return "state"

    def facts(self, *, instructions_allowed: bool) -> list[_Fact]:
        if instructions_allowed and (instruction := _instruction(self.body)):
            return [instruction]
        self._take_markers()
        self._rewrite_relative()
        self._rewrite_negation()
        self._rewrite_aspect()
        found = next(
            (facts for pattern, rule in _RULES if (match := pattern.match(self.body)) and (facts := rule(match, self))),
            [],
        )
        if found and self.relative_name:
            found.append(_Fact("name", _title(self.relative_name)))
        # (not in a negated clause, whose "not" would be read as the age's: "still not married at 40", nor in one
        # about someone no word names as the user's: "she's still teaching at 64")
        if (not self.negated and not any(fact.attribute == "age" for fact in found)
                and not _SOMEONE_UNNAMED.match(self.body) and (age := _AGE_IN_PASSING.search(self.original))):
            found.append(_Fact("age", age["value"] or age["fronted"]))
        return found


# An age said in passing, as it is now: "still renting at 38", "the baby of the family even at 58", "being a single
# dad at 22", "At 62 I'm finally learning to swim". Not an age something was done at ("got my GED at 25", "At 18 I
# moved to London"), nor an hour ("tomorrow at 10", "still up at 11").
_AGE_IN_PASSING = re.compile(
    r"(?:\b(?:still|even|now|being)\b.*?\bat (?P<value>1[3-9]|[2-9]\d|10\d)"
    # ...said last or before a word that goes on about it ("at 22 is hard"), not a weight or a count ("at 85 kilos")
    r"(?=\s*(?:$|[,.;:!?)](?!\d)|(?:and|but|so|lol|haha|ngl|tbh|is|was|feels|now|years? old)\b))"
    r"|^at (?P<fronted>1[3-9]|[2-9]\d|10\d),? (?=(?:I am|I have|it is|I still|I feel|I can|I do)\b))", re.I)


_SOMEONE_UNNAMED = re.compile(r"\W*(?:he|she|they|it|we|you|u|this|that|there|here)\b"
                              r"|\W*(?!I\b)(?-i:[A-Z])[\w'-]+\s+(?:is|was|has|had|does|did|and)\b", re.I)


# ---------------------------------------------------------------------------------------------
# Standing instructions
# ---------------------------------------------------------------------------------------------

# Words that make a request last: "from now on", "going forward".
_FROM_NOW_ON = r"(?:from now on|going forward|in (?:the )?future|from here on(?: out)?)"
_INSTRUCTION = re.compile(
    rf"(?:please )?(?:{_FROM_NOW_ON}[, ]+(?P<later>.+)"
    r"|(?P<always>(?:always|never|do not ever|do not|stop) .+))"
    r"|please (?:just |only )?(?P<call>call me .+)"
    r"|please (?:just |only )?(?P<language>(?:answer|reply|respond|write|speak|talk)(?: to me)? (?:in|using|with) .+)",
    re.I,
)


# How the user wants to be answered, asked as a request ("pls keep answers short", "can u reply in spanish?",
# "use simple words please", "Speak to me formally please"): a standing preference about replies in general.
# A one-off task is no such preference: it names what to work on ("can you make this shorter?", "write my
# cover letter in French") or asks for no form of reply at all ("can you explain how loans work?").
_REQUEST = (r"(?:(?:please|pls|plz|kindly)\s+|(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+)?"
            r"|(?:you|u)\s+(?:can|could)\s+(?:just\s+)?|i(?:'?d| would) (?:like|prefer|rather) (?:you|u)\s+(?:to\s+)?"
            r"|i (?:want|need) (?:you|u) to\s+)")
_REPLY_FORM = (r"(?:answers|replies|responses|messages|explanations|sentences|words|language|emojis?|bullet points?"
               r"|bullets|units|jargon|terms|tone|detail|formal(?:ly)?|casual(?:ly)?"
               rf"|in (?:{alternatives(LANGUAGES)}))")
# What may open a request without being part of it: "ok so", "btw", "from now on".
_OPENERS = r"actually|also|ok|okay|oh|so|and|hey|btw"
_REPLY_PREFERENCE = re.compile(
    rf"(?:(?:{_OPENERS})[, ]+)*(?:{_FROM_NOW_ON}[, ]+)?"
    # "I'd prefer replies in German from now on": the replies wished for
    rf"(?:i(?:'d| would) (?:prefer|like|rather have) (?P<wished>(?:your |the )?(?:replies|answers|responses|messages)"
    rf"\s+(?:in|to be|with|that)\b[^?]*?)"
    rf"|(?:{_REQUEST})?(?P<value>(?:(?:always|just)\s+)?(?:keep|make|write|answer|reply|respond|speak|talk|use|give"
    r"|explain|put|avoid|skip|drop|stop|don'?t|do not|no)\b"
    # nothing to work on before the form: no "this", "my essay", "a poem" ("a casual tone" is a form)
    r"(?:(?!\b(?:this|that|these|those|it|my|below|above)\b|\b(?:a|an)\s+(?!(?:\w+\s+){0,2}(?:tone|way|style)\b)).)*"
    rf"\b{_REPLY_FORM}\b"
    r"(?:(?!\b(?:this|that|these|those|it|below|above)\b)[^?])*?))(?:,?\s*(?:please|pls|plz|thanks|ty))?\s*[.!?]*",
    re.I,
)


_LEAD = rf"(?:(?:{_OPENERS}|honestly|generally|in general)[, ]+)*(?:{_FROM_NOW_ON}[, ]+)?"
# How the user wants to be spoken to, without a word for replies: "talk to me like a friend", "be blunt with
# me", "skip the small talk", "no need for pleasantries with me", "explain things like I'm five". Said of
# things in general ("things", "everything") or of the way of talking itself, never of a task ("explain
# quantum physics to me like I'm five" asks for one explanation).
_MANNER_NOUNS = (r"(?:the\s+)?(?:fluff|small talk|pleasantries|long intros|intros?|introductions?|preambles?|waffle"
                 r"|chit-?chat|disclaimers|caveats|formalities|apologies|greetings|sign-offs|lectures?|sugar-?coating)")
# What may follow a short request about manner: whom it is for, a reason after a comma, a "please".
_MANNER_END = (r"(?:\s+(?:with|for|to)\s+(?:me|us))?(?:\s+(?:please|pls|plz|thanks|ty|from now on|going forward))?"
               r"(?:\s*,[^?]*)?")
_MANNER = re.compile(
    rf"{_LEAD}(?:{_REQUEST})?(?P<value>(?:(?:always|just|please)\s+)*(?:"
    r"(?:talk|speak|write|reply|respond)\s+to\s+(?:me|us)\s+(?:like|as if|as though|as)\b[^?]*"
    r"|(?:explain|describe|break down|spell out)\s+(?:things|everything|stuff|it all)\b[^?]*"
    r"|be\s+(?:more\s+|really\s+|very\s+|totally\s+|brutally\s+)?(?:direct|blunt|frank|straight|straightforward"
    r"|honest|gentle|patient|brief|concise|casual|informal|formal)\s+with\s+(?:me|us)\b[^?]*"
    r"|keep\s+(?:it|things)\s+(?:short|brief|simple|casual|informal|formal|light|professional|real|to the point)"
    rf"{_MANNER_END}"
    rf"|(?:get|go|cut)\s+(?:straight\s+)?to\s+the\s+(?:point|chase){_MANNER_END}"
    rf"|(?:cut(?:\s+out)?|skip|drop|spare me|leave out|ditch)\s+{_MANNER_NOUNS}{_MANNER_END}"
    rf"|(?:don'?t|do not|no need to)\s+(?:bother\s+with|waste\s+time\s+(?:on|with))\s+(?:(?:long|all)\s+)?"
    rf"{_MANNER_NOUNS}{_MANNER_END}"
    rf"|no\s+need\s+for\s+(?:(?:long|all)\s+)?{_MANNER_NOUNS}{_MANNER_END}"
    # how to reach the user: "text me rather than calling", "email me instead of ringing"
    r"|(?:text|email|e-mail|message|dm|whatsapp|call|ring|phone)\s+(?:me|us)\s+(?:rather than|instead of|over|not)\s+"
    r"(?:calling|texting|emailing|messaging|ringing|phoning|(?:a\s+)?calls?|texts?|emails?|voice notes?)\b[^?]*"
    r"|treat\s+(?:me|us)\s+like\s+(?:an?\s+)?(?:adult|expert|beginner|grown-?up|professional|equal|friend|peer)s?\b[^?]*"
    r"))[.!]*",
    re.I,
)


_BECAUSE = re.compile(r"\s+(?:or|because|since|as|so|cause|cuz|bc|otherwise)\s+", re.I)


def asks_how_to_reply(text: str) -> bool:
    """Whether a request is a standing preference about replies (_REPLY_PREFERENCE), question mark or not."""
    return bool(_REPLY_PREFERENCE.fullmatch(text.strip()) or _MANNER.fullmatch(text.strip())
                or _PRONOUNS_ASKED.search(text))


def _instruction(body: str) -> _Fact | None:
    match = _INSTRUCTION.fullmatch(body)
    value = match and (match["later"] or match["always"] or match["call"] or match["language"])
    if value:
        verb = re.sub(r"^(?:always|never|do not ever|do not|stop)\s+", "", value, flags=re.I).split(" ", 1)[0].lower()
        if not (match["call"] or match["language"]) and _base_form(verb) not in INSTRUCTION_VERBS:
            value = None  # "always a pleasure", "never been better", "from now on I'm vegan" are no instructions
    if not value and (preference := _REPLY_PREFERENCE.fullmatch(body.strip())):
        value = preference["value"] or f"give {preference['wished']}"
        value = _BECAUSE.split(value, maxsplit=1)[0]  # "keep ur answers short or i won't read them": the request
    if not value and (manner := _MANNER.fullmatch(body.strip())):
        value = re.sub(r"^(?:please\s+)+|\s+(?:please|pls|plz|thanks|ty)\b", "", manner["value"], flags=re.I)
    if not value:
        return None
    value = _third_person(value.rstrip(" .!?,"))
    return _Fact("instruction", value[:1].lower() + value[1:], kind="procedural")  # "Never use ..." mid-sentence


def _base_form(verb: str) -> str:
    # "stop mentioning" names the verb "mention"
    if verb.endswith("ing"):
        return next((base for base in INSTRUCTION_VERBS if verb in {base + "ing", base[:-1] + "ing"}), verb)
    return verb


# ---------------------------------------------------------------------------------------------
# Fact rules: (pattern anchored at the start of the normalized clause, what it means)
# ---------------------------------------------------------------------------------------------

_COUNT = rf"(?P<count>\d+|{alternatives(COUNTS)})"

Rule = Callable[[re.Match, _Clause], list[_Fact]]


# "call me crazy, but...", "call me back later", "call me whatever you like": what "call me" says of no name.
_CALLED_NOT_A_NAME = re.compile(
    r"(?:a|an|the|back|later|anytime|any time|whenever|whatever|anything|when|if|after|before|tomorrow|tonight"
    r"|crazy|mad|nuts|old[- ]fashioned|weird|strange|paranoid|picky|fussy|lazy|silly|stupid|biased|naive|cynical"
    r"|sentimental|romantic|nosy|nosey|cheesy|sappy|superstitious|nostalgic|traditional|skeptical|sceptical|petty"
    r"|selfish|boring|basic|lucky|impatient|stubborn|dramatic|spoiled|spoilt|obsessed|a bit|kind of|sort of)\b",
    re.I)


def _name(match: re.Match, clause: _Clause) -> list[_Fact]:
    if _CALLED_NOT_A_NAME.match(match["value"]):
        return []
    value = normalize_value("name", match["value"], clause.occurred_at)
    if value and (there := _CALLED_THERE.match(match[0])):
        # "I go by Sam at work", "people call me Bea online": what they are called there, beside their name
        return [_Fact("nickname", value, template=f"{{who}} goes by {{value}} {there['where'].strip()}.")]
    return [_Fact("name", value)] if value else []


_CALLED_THERE = re.compile(r"(?:I go by|people call me)\s+\S+(?:\s+(?-i:[A-Z])\S*)?"
                           r"\s+(?P<where>(?:at|with|to|among|online|on|in|around)\b[^,.;!?]*)", re.I)


def _greeting_name(match: re.Match, clause: _Clause) -> list[_Fact]:
    return _name(match, clause) if clause.greeting else []


# "Lena here", "It's Dominic, by the way", "this is Marcus again": a chat signed with a name. What else is
# "here" or "it is" said of is a time, a weather or a word of chat, never a name.
_SIGNED = r"(?P<value>(?-i:[A-Z][^\W\d_]+(?:-[^\W\d_]+)?)(?: (?-i:[A-Z][^\W\d_]+(?:-[^\W\d_]+)?))?)"
_NOT_SIGNED = frozenset({
    *timeparse.WEEKDAYS, *timeparse.MONTHS, "christmas", "easter", "halloween", "thanksgiving", "summer", "winter",
    "spring", "autumn", "fall", "morning", "evening", "night", "midnight", "noon", "lunchtime", "today", "tonight",
    "rain", "snow", "sun", "sunny", "rainy", "cloudy", "hot", "cold", "freezing", "raining", "snowing", "late",
    "early", "quiet", "busy", "dark", "chaos", "madness", "nothing", "everything", "all", "same", "ditto", "me",
    "us", "you", "him", "her", "them", "newbie", "noob", "guest", "admin", "user", "home", "work", "school", "fine",
    "ok", "okay", "great", "good", "bad", "awful", "weird", "amazing", "true", "done", "over", "time", "here",
    *LANGUAGES, *NATIONALITIES,  # "My name's Bronagh, it's Irish": where the name is from
})


def _signed_name(match: re.Match, clause: _Clause) -> list[_Fact]:
    if set(match["value"].lower().split()) & _NOT_SIGNED or _ALL_THERE_IS.search(clause.original):
        return []
    if (_WHAT_IT_IS.match(match[0]) and clause.now and " " not in match["value"]
            and not _AFTER_A_WEDDING.search(clause.original)):
        return []  # "it's Three now, way cheaper": a new name is said in full ("it's Hannah Okafor now") or so
    return _name(match, clause)


_WHAT_IT_IS = re.compile(r"(?:it is|it's|its)\b", re.I)
_AFTER_A_WEDDING = re.compile(r"\b(?:wedding|married)\b", re.I)


# "it's just Mango now" (one cat left), "it's only Sam and me": what is left, not a name (the rules read the
# clause with "just" taken out)
_ALL_THERE_IS = re.compile(r"\b(?:it is|it's|its|this is)\s+(?:just|only|all|mostly)\b", re.I)


def _has(match: re.Match, group: str) -> bool:
    return bool(match.groupdict().get(group))


def _changed(match: re.Match) -> Relation | None:
    """Rules name the words that say the world changed ("moved", "became") in a `changed` group."""
    return "change" if _has(match, "changed") else None


def _unwell(match: re.Match, clause: _Clause) -> list[_Fact]:
    text = sentence(f"{match['value']} {match['verb']} {clause.who} {match['effect']}.")
    return [_Fact("intolerance", match["value"].lower(), text=text)]


def _seeing(match: re.Match, clause: _Clause) -> list[_Fact]:
    return [_Fact("relationship_status", match["value"].split(" ")[0] + " someone", _changed(match))]


def _age(match: re.Match, clause: _Clause) -> list[_Fact]:
    age = _age_number(match["value"])
    return [_Fact("age", str(age), _changed(match))] if age is not None and 0 < age < 125 else []


_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
# An age as people say a milestone: "30", "thirty", "thirty-five", "the big 4-0", "the big three oh".
_AGE_SAID = (rf"[1-9]-0|\d{{1,3}}|(?:{'|'.join(_UNITS[1:])})[- ]oh|(?:{'|'.join(_TENS)})(?:[- ](?:{'|'.join(_UNITS)}))?"
             rf"|{'|'.join(_TEENS)}")


def _age_number(said: str) -> int | None:
    """ "35", "thirty-five", "4-0", "three oh" -> the number."""
    said = said.lower().replace("-", " ")
    if said.replace(" ", "").isdigit():
        return int(said.replace(" ", ""))
    first, _, rest = said.partition(" ")
    if first in _TEENS:
        return 13 + _TEENS.index(first)
    if first in _TENS:
        return 20 + 10 * _TENS.index(first) + (1 + _UNITS.index(rest) if rest in _UNITS else 0)
    if first in _UNITS and rest == "oh":
        return 10 * (1 + _UNITS.index(first))
    return None


def _birth_year(match: re.Match, clause: _Clause) -> list[_Fact]:
    """ "I was born in 1991": the user's age as it never goes stale, in the age slot ("how old am I?")."""
    return [_Fact("age", f"born in {match['value']}", text=sentence(f"{clause.who} was born in {match['value']}."))]


def _relationship(match: re.Match, clause: _Clause) -> list[_Fact]:
    partner = re.match(r"\s+to\s+(.+)", match.string[match.end():])
    if partner and not _names_a_person(partner[1]):
        return []  # "I'm married to my job", "engaged to this crossword app": a figure of speech
    return [_Fact("relationship_status", match["value"].lower(), _changed(match))]


# Whom one is married or engaged to, when not by name, one's family (FAMILY_MEMBERS) or their work ("a nurse").
_PERSON_WORDS = frozenset({"man", "woman", "guy", "girl", "lady", "bloke", "fella", "person", "someone", "sweetheart",
                           "love", "friend", "fiance", "fiancé", "fiancee"})


def _names_a_person(phrase: str) -> bool:
    words = re.findall(r"[\w'-]+", phrase)[:5]
    return any(word[:1].isupper() or word.lower() in _PERSON_WORDS or word.lower() in JOB_WORDS
               or word.lower() in FAMILY_MEMBERS for word in words)


def _expecting(match: re.Match, clause: _Clause) -> list[_Fact]:
    """ "We're expecting our first in May", "my wife is expecting": a pregnancy said without the word."""
    said = re.sub(r"\bour\b", "their", _third_person(" ".join(f"{match['value']}{match['when']}".split())), flags=re.I)
    text = sentence(f"{clause.who} is expecting{' ' + said if said else ''}.")
    return [_Fact("", said or "a baby", importance=8, text=text)]


def _allergy(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = normalize_value("allergy", match["value"], clause.occurred_at)
    return [_Fact("allergy", value)] if value else []


def _health(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = match["value"].lower()
    return [_Fact("health", HEALTH_ADJECTIVES.get(value, value))]


def _diet(match: re.Match, clause: _Clause) -> list[_Fact]:
    return [_Fact("diet", DIET_ALIASES[match["value"].lower()], _changed(match))]


def _diet_food(match: re.Match, clause: _Clause) -> list[_Fact]:
    qualifier = f"{match['qualifier'].lower()} " if match["qualifier"] else ""
    value = f"eats {qualifier}{match['food'].lower()}"
    # "I still eat eggs" adds detail to the diet already known instead of replacing it.
    return [_Fact("diet", value, "refine" if clause.still or clause.adds_detail else None)]


def _family(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = _counted(match["count"], match["member"].lower(), match["name"])
    return [_Fact("family", value)]


def _pet(match: re.Match, clause: _Clause) -> list[_Fact]:
    return [_Fact("pet", _counted(match["count"], PETS[match["species"].lower()], match["name"], plural=True))]


def _pet_name(match: re.Match, clause: _Clause) -> list[_Fact]:
    return [_Fact("pet", _counted("a", PETS[match["species"].lower()], match["name"]))]


def _counted(count: str, noun: str, name: str | None, *, plural: bool = False) -> str:
    number = count if count.isdigit() else COUNTS[" ".join(count.lower().split())]
    if plural and number and not noun.endswith("s") and noun != "goldfish":
        noun += "s"
    named = f" named {_title(name)}" if name else ""
    return f"{number} {noun}{named}".strip()


def _work(*, job_checked: bool = False) -> Rule:
    """Job and employer from one clause ("I work as a nurse at St. Mary's"). `job_checked`: the
    words only look like a job ("I'm a nurse" but "I'm a big eater"), so check them."""

    def rule(match: re.Match, clause: _Clause) -> list[_Fact]:
        job = normalize_value("job", match["job"], clause.occurred_at) if _has(match, "job") else ""
        if job_checked and not (job and looks_like_job(job)):
            return []  # no job, and so no employer either
        employer = normalize_value("employer", match["employer"], clause.occurred_at) if _has(match, "employer") else ""
        if employer.isdigit():
            employer = ""  # an age or an hour, not a workplace: "still working at 70", "I start work at 9"
        # A student's "at" names where they study, not an employer: "a student at UCL" does not work there; nor
        # does "I started at the community college" (no job said).
        studies = _studies(job) or (not job and "job_said" in match.groupdict() and not _has(match, "job_said")
                                    and _SCHOOL.search(employer))
        place, template = ("school", "{who} studies at {value}.") if studies else ("employer", "")
        return [
            _Fact(attribute, value, _changed(match), template=shape)
            for attribute, value, shape in (("job", job, ""), (place, employer, template))
            if value
        ]

    return rule


_SCHOOL = re.compile(r"\b(?:college|university|uni|school|academy|polytechnic|sixth form)\b", re.I)


def _studies(job: str) -> bool:
    return bool(job) and job.split()[-1] in STUDY_ROLES


def _left_job(match: re.Match, clause: _Clause) -> list[_Fact]:
    employer = normalize_value("employer", match["employer"], clause.occurred_at) if _has(match, "employer") else ""
    text = "" if employer else sentence(f"{clause.who} left their job.")
    return [_Fact("employer", employer, "negate", text=text)]


def _city(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = normalize_value("city", match["value"], clause.occurred_at)
    return [_Fact("city", value, _changed(match))] if value else []


def _hometown(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = normalize_value("hometown", match["value"], clause.occurred_at)
    return [_Fact("hometown", value)] if value else []


def _plan(*, needs_plan_verb: bool = False, needs_future_time: bool = False) -> Rule:
    """ "planning to" always announces a plan; "going to" only with a verb of plans ("I'm going to
    bed" is none), and "will" only with a future time too ("I'll start with the soup" is a choice,
    "I'll start at Globex next month" a plan)."""

    def rule(match: re.Match, clause: _Clause) -> list[_Fact]:
        value = normalize_value("plan", match["value"], clause.occurred_at)
        when = clause.time(prefer_future=True)
        if not value:
            return []
        if needs_plan_verb and not _is_plan_verb(value):
            return []
        if needs_future_time and not (when and when > clause.occurred_at):
            return []
        return [_Fact("plan", value, importance=6 if when else 5)]

    return rule


def _event(match: re.Match, clause: _Clause) -> list[_Fact]:
    """ "I have a dentist appointment next Friday": an event on a day still to come."""
    found = clause.time_match(prefer_future=True)
    value = _lower(_cut(match["value"], clause.occurred_at))
    if not (value and found and found.period_end > clause.occurred_at) or _is_pointer(value):
        return []
    return [_Fact("plan", value, importance=6, template="{who} has {a}{value}.")]


def _is_plan_verb(value: str) -> bool:
    return value.split(" ", 1)[0].lower() in PLAN_VERBS or value.lower().startswith(("get married", "get engaged"))


def _plan_going_to_place(match: re.Match, clause: _Clause) -> list[_Fact]:
    when = clause.time(prefer_future=True)
    value = normalize_value("city", match["value"], clause.occurred_at)
    if not (value and when and when > clause.occurred_at):
        return []
    return [_Fact("plan", f"go to {value}", importance=6)]


def _plan_progressive(match: re.Match, clause: _Clause) -> list[_Fact]:
    """ "I'm visiting Japan next month": a present tense that speaks of the future."""
    when = clause.time(prefer_future=True)
    base = GERUND_BASES.get(match["gerund"].lower())
    value = normalize_value("plan", match["value"], clause.occurred_at)
    if not (base and value and when and when > clause.occurred_at):
        return []
    return [_Fact("plan", f"{base} {value}", importance=6)]


# A strong feeling keeps its word in the memory ("I hate olives." -> "The user hates olives."): "dislikes"
# would tell the agent less than the user did.
_STRONG_VERBS = {"hate": "hates", "detest": "detests", "loathe": "loathes", "cannot stand": "can't stand",
                 "can not stand": "can't stand", "love": "loves", "adore": "adores"}


def _preference(attribute: str, *, strong: set[str]) -> Rule:
    def rule(match: re.Match, clause: _Clause) -> list[_Fact]:
        value = normalize_value(attribute, match["value"], clause.occurred_at, opens_clause=match.start("value") == 0)
        if not value or _is_pointer(value):
            return []
        verb = " ".join(match["verb"].lower().split())
        said = _STRONG_VERBS.get(verb) if verb in strong else None
        return [_Fact(attribute, value, importance=5 if verb in strong else 4,
                      template=f"{{who}} {said} {{value}}." if said else "")]

    return rule


# Pronouns said as a pair or a triple ("she/her", "they/them/theirs"); asked for ("can you use they/them for me?"),
# they are a standing preference all the same (asks_how_to_reply).
_PRONOUN_SET = (r"(?:she|he|they|xe|ze|ey|fae|it)/(?:her|him|them|hers|his|theirs|xem|xir|zir|hir|em|faer|its)"
                r"(?:/(?:hers|his|theirs|xyrs|zirs|eirs|faers|its))?")
_PRONOUNS_ASKED = re.compile(rf"\b(?:use|call me|refer to me as|address me as|go by|my pronouns are) {_PRONOUN_SET}\b",
                             re.I)


def _pronouns(match: re.Match, clause: _Clause) -> list[_Fact]:
    return [_Fact("pronouns", match["value"].lower())]


def _fear(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = normalize_value("fears", match["value"], clause.occurred_at, opens_clause=match.start("value") == 0)
    if not value or _is_pointer(value):
        return []
    return [_Fact("fears", value, importance=5, text=sentence(f"{clause.who} is afraid of {value}."))]


def _favorite(match: re.Match, clause: _Clause) -> list[_Fact]:
    value = normalize_value("likes", match["value"], clause.occurred_at, opens_clause=match.start("value") == 0)
    if not value or _is_pointer(value):
        return []
    what = match["what"].lower()
    # One favourite of a kind at a time: a new favourite band replaces the old one, beside other likes (a film
    # is a movie, a colour a color: one slot whichever word says it).
    slot = FAVORITE_PREFIX + "_".join(_FAVORITE_KINDS.get(what, what).split())
    return [_Fact(slot, value, importance=5, text=sentence(f"{possessive(clause.who)} favorite {what} is {value}."))]


def _is_pointer(value: str) -> bool:
    words = value.lower().split()
    return words[0] in POINTER_WORDS or words[-1] in POINTER_WORDS


_VALUE = r"(?P<value>.+)"
_FAVORITE = r"(?:(?:new|absolute|all-time|all time|current) )*(?:favou?rite|fave)"
_FAVORITE_KINDS = {"film": "movie", "colour": "color", "tv show": "show", "tv series": "show", "series": "show"}
_SPECIES = alternatives(PETS)
_DIETS = alternatives(DIET_ALIASES)
_EVENT = f"(?:{alternatives(EVENT_NOUNS)})"
_PROPER = r"(?-i:[A-Z])[\w&'.-]*(?: (?-i:[A-Z&])[\w&'.-]*)*"  # as typed: "Costco", "Jersey City", "Hollis & Greer"
_RULE_TABLE: list[tuple[str, Rule]] = [
    (rf"(?:(?:my )?name is|name's|(?:you can )?call me|I am called|I go by|people call me) {_VALUE}", _name),
    # Only a baby, or nothing named, is expected in a pregnancy ("expecting a package" is none).
    (r"(?:I am|we are|we're) (?:(?:finally|officially|now|so happy to be) )?expecting"
     r"(?P<value>(?: (?:a baby|a little one"
     r"|a boy|a girl|twins|triplets|(?:our|my|a) (?:first|second|third|fourth|fifth)(?: (?:baby|child|kid|one))?"
     r"|baby (?:number|no\.?) \w+|number (?:two|three|four|2|3|4)|again))?)"
     r"(?P<when>(?: (?:in|on|at|around|this|next|any|due)\b[^!?.]*)?)\W*$", _expecting),
    # ...or the name to sign with: "sign things as Katie Alvarez from now on"
    (rf"(?:please |pls |can you |could you )?sign (?:[\w']+ ){{0,2}}(?:as|with) {_SIGNED}", _signed_name),
    # ...and a new name after a wedding: "it's Laura Bennett now since the wedding"
    (rf"(?:it is|it's|its|this is) {_SIGNED}(?:,? (?:again|here|by the way|btw|now))*"
     r"(?:\s*,?\s+(?:since|after) (?:the wedding|(?:i|we) got married|(?:my|our) wedding)\b[^,.!?]*)?(?:\W*$|\s*,)",
     _signed_name),
    (rf"{_SIGNED} here\b(?:\W*$|,)", _signed_name),
    (r"I am (?P<value>\d{1,3})(?: years old| years| yo| y/o)?$", _age),
    # "turned thirty-five", "just hit the big three oh": an age, not a count ("hit 100 followers")
    (rf"(?:I )?(?:just |finally |officially )?(?P<changed>turned|hit|reached) (?:the )?(?:big )?(?P<value>{_AGE_SAID})"
     r"(?=\s*(?:$|[,.;:!?)]|(?:years? old|yrs|today|yesterday|this|last|on|in|and|but|so|lol|haha|omg)\b))", _age),
    # "the big 4-0 is done": a milestone of the speaker's, passed (one to come, "next month", is no age yet)
    (rf"(?:(?:it was|it is|today is|today was|yesterday was) )?(?:my |the )?big (?P<value>{_AGE_SAID})\b"
     r"(?!.*\b(?:next|coming|soon|will|plans?|planning|tomorrow|in \d+)\b)", _age),
    # "it was my 30th birthday yesterday": an age said by its birthday, not one still to come
    (r"(?:(?:it|today|yesterday|sunday|saturday)? ?(?:was|is) |(?:I )?(?:just )?had )?my (?P<value>\d{1,3})"
     r"(?:st|nd|rd|th) (?:birthday|bday)\b(?!.*\b(?:next|coming|soon|will|plans?|planning|tomorrow|in \d+)\b)",
     _age),
    # "it's my 30th today!": the birthday is today (not "it's my 3rd time here", "my 30th is next week")
    (r"(?:it is|it's|its|today is|today's) my (?P<value>\d{1,3})(?:st|nd|rd|th)(?: (?:birthday|bday))?(?: today)?"
     r"(?=\s*(?:$|[,.;:!?]|(?:lol|haha|omg|and|so|woo+|yay)\b))", _age),
    # "celebrated my 53rd with a curry": a birthday kept, said by its number alone
    (r"(?:I |we )?(?:celebrated|celebrating|survived|enjoyed|spent) my (?P<value>\d{1,3})(?:st|nd|rd|th)"
     r"(?: (?:birthday|bday))?(?=\s*(?:$|[,.;:!?]|(?:with|at|in|on|yesterday|today|last|this|by|and|but|lol)\b))",
     _age),
    # "30th birthday yesterday and the kids made me breakfast": the speaker's, said by its number and a day gone by
    # (an adult's: a "1st birthday" opening a message is as often the baby's; not "30th birthday party tonight")
    (r"(?:(?:had|celebrated) (?:a |my )?)?(?P<value>1[3-9]|[2-9]\d|1[01]\d)(?:st|nd|rd|th) (?:birthday|bday)"
     r"(?: (?:was|is))? (?:yesterday|today|last night|over the weekend)\b", _age),  # not "on saturday": to come?
    # "42 today, feeling old": a birthday said by the age alone (an age: not "2 today")
    (r"(?:I am )?(?P<value>1[3-9]|[2-9]\d|1[01]\d)(?: years old)? (?P<changed>today)"
     r"(?=\s*(?:$|[,.;:!?]|(?:and|so|lol|haha|omg|woo+|yay|feeling)\b))", _age),
    # "finally 18!!", "officially 30 today": an age said as news
    (r"(?:I am )?(?P<changed>finally|officially) (?P<value>\d{1,3})(?: years old)?(?: today| this week)?\W*$", _age),
    (rf"I am (?P<value>{alternatives(RELATIONSHIP_STATUSES)})\b", _relationship),
    (r"I (?P<changed>got) (?P<value>married|engaged|divorced)\b", _relationship),
    # "I've been seeing someone": not whom the user is seeing tomorrow, nor a therapist
    (r"I (?:am|have been) (?:(?:also|kind of|kinda|sort of) )?(?P<value>(?:seeing|dating) (?:someone|somebody))"
     r"(?: new)?(?:,? (?:now|lately|recently|at the moment|atm"
     r"|for (?:a |about |almost |over )?(?:few |couple of |\w+ )?(?:weeks?|months?|years?)|since \w+))?"
     r"(?=\s*(?:[,;.!\u2013\u2014]|lol\b|haha|$))", _seeing),
    (rf"I am (?:very |severely |deathly )?allergic to {_VALUE}", _allergy),
    (r"I have an? (?P<value>[\w ]+?) allergy\b", _allergy),
    (rf"I (?:have|was diagnosed with|suffer from) (?P<value>{alternatives(HEALTH_CONDITIONS)})\b", _health),
    (rf"I am (?P<value>{alternatives(HEALTH_ADJECTIVES)})\b", _health),
    (rf"I am (?:a |an )?(?:strict |strictly |fully |mostly |full )?(?P<value>{_DIETS})\b", _diet),
    (rf"I (?P<changed>became|went|turned|have become|have gone) (?:a |an )?(?P<value>{_DIETS})\b", _diet),
    (rf"I (?:follow|am on|eat|have|keep) an? (?P<value>{_DIETS}) diet\b", _diet),
    (rf"I eat (?P<qualifier>only |mostly )?(?P<food>{alternatives(DIET_FOODS)})\b", _diet_food),
    (rf"I have {_COUNT} (?P<member>{alternatives(FAMILY_MEMBERS)})\b(?: (?:named|called) (?P<name>\w+))?", _family),
    (
        rf"I (?:have|got|adopted|have adopted) {_COUNT} (?P<species>{_SPECIES})\b(?: (?:named|called) (?P<name>\w+))?",
        _pet,
    ),
    (rf"my (?P<species>{_SPECIES})(?:'s name is| is called| is named) (?P<name>\w+)", _pet_name),
    (r"I (?:quit|left|lost) my job(?: at (?P<employer>.+))?", _left_job),
    (r"I (?:got|was) (?:fired|laid off)(?: from (?P<employer>.+))?", _left_job),
    (r"I (?:work|am working|am employed) as (?:a |an )?(?P<job>.+?)(?: (?:at|for|with) (?P<employer>.+))?$", _work()),
    # a job after "as" within the clause: not "I work at Deloitte, its exactly as fun as it sounds"
    # ...not when: "I work at weekends", "at night", "for myself"
    (r"I (?:work|am working) (?:at|for) (?!(?:weekends?|the weekends?|nights?|night time|home|myself|free)\b)"
     r"(?P<employer>[^,;]+?)(?: as (?:a |an )?(?P<job>[^,;]+))?(?=[,;]|$)", _work()),
    (r"(?:I am employed (?:at|by)|my employer is) (?P<employer>.+)", _work()),
    (r"I (?P<changed>started|began)(?P<job_said> a new job| my new job| a job| work)? (?:at|with) (?P<employer>.+)",
     _work()),
    (r"I (?P<changed>got) an? (?:new )?job (?:at|with) (?P<employer>.+)", _work()),
    # "I start at Costco on Monday" (a named employer: not "I start at 8", "at the bottom")
    (r"I (?:am |will )?(?P<changed>start|starting) (?:a new job |my new job |work |working )?(?:at|with) "
     rf"(?P<employer>{_PROPER})", _work()),
    (r"I (?P<changed>became|have become) (?:a|an) (?P<job>.+)", _work(job_checked=True)),
    # a job said by its first days ("first week as a teacher went ok") or by a promotion ("they made me sous chef")
    (r"(?:my |the )?(?P<changed>first) (?:days?|weeks?|months?|shifts?|year) (?:as|being) (?:a |an )?(?P<job>.+?)"
     r"(?: (?:at|for) (?P<employer>.+?))?(?: (?:went|was|is|has|have|had|tomorrow|today|done|starts|over|and)\b.*)?$",
     _work(job_checked=True)),
    (r"(?:they|work|my (?:boss|manager)|management|the (?:boss|company|board)) (?:just |finally |officially )?"
     r"(?P<changed>made|promoted) me (?:to )?(?:a |an |the )?(?P<job>.+)", _work(job_checked=True)),
    # ...and a job ended by its last day: "last day at Target was Friday"
    (rf"(?:my |the )?last (?:day|shift|week) (?:at|with) (?P<employer>{_PROPER})"
     r" (?:was|is today|today|yesterday)\b", _left_job),
    # ...or the day first: "today was my last day at Amazon" (not "Friday is my last day": still there)
    (r"(?:(?:today|yesterday|friday|this week|last week) )?(?:was|today is) my last (?:day|shift|week) (?:at|with) "
     rf"(?P<employer>{_PROPER})", _left_job),
    (
        rf"(?:I|we) (?:live|am living|are living|have lived|have been living|reside|am based|are based) in {_VALUE}",
        _city,
    ),
    (rf"(?:I|we)(?: have|'ve)? (?P<changed>moved|relocated) (?:back )?to {_VALUE}", _city),
    # a new home is a move: "we bought a house in Walthamstow" (not "a holiday home in Spain")
    (r"(?:I|we)(?: have|'ve)?(?: finally| just| recently| officially)? (?P<changed>bought|got|closed on|moved into"
     r"|are renting|am renting|rented)"
     r" (?:a|an|our|my)(?: (?!holiday|summer|second|vacation|beach|investment|rental)\w+)?"
     r" (?:house|home|flat|apartment|place|condo"
     rf"|bungalow|cottage|townhouse|terrace) in {_VALUE}", _city),
    # a move the employer makes: "Deloitte's relocating me to Madrid", "work transferred us to Perth"
    (r"(?:[\w&'.-]+ ){0,4}?(?P<changed>relocating|relocated|transferring|transferred|posting|posted) (?:me|us) to "
     rf"(?P<value>{_PROPER})", _city),
    # a new home named by where it is: "the new place in Jersey City has a balcony"
    (r"(?:the|our|my) (?P<changed>new) (?:place|house|home|flat|apartment|condo|townhouse|bungalow|cottage)"
     rf" (?:in|over in|out in) (?P<value>{_PROPER})", _city),
    (rf"I am (?:originally )?from {_VALUE}", _hometown),
    # a year alone, said as all there is: "I was born in Lagos in 1985" is a hometown
    (r"I was born (?:back )?in (?P<value>(?:19|20)\d\d|'\d\d)(?=\W*$|,|\s+(?:so|and|but)\b)", _birth_year),
    (rf"I (?:grew up|was born|was born and raised|was raised) in {_VALUE}", _hometown),
    (rf"(?:I (?:am )?(?:planning|plan|intend|intending|hoping|hope) (?:to|on)|my plan is to) {_VALUE}", _plan()),
    (rf"I am going to {_VALUE}", _plan(needs_plan_verb=True)),
    (rf"I will {_VALUE}", _plan(needs_plan_verb=True, needs_future_time=True)),
    (r"I am going to (?P<value>(?-i:[A-Z]).+)", _plan_going_to_place),
    (rf"(?:I|we) (?:have|have got|got) (?:a|an|my|the|our|another) (?P<value>(?:[\w'-]+ ){{0,3}}?{_EVENT})\b", _event),
    (rf"(?:my|our) (?P<value>(?:[\w'-]+ ){{0,3}}?{_EVENT}) is\b", _event),
    (r"I am (?P<gerund>\w+ing) (?P<value>.+)", _plan_progressive),
    (
        rf"I (?P<verb>hate|dislike|detest|loathe|cannot stand|do not like|do not enjoy|do not care for"
        rf"|am not a (?:big |huge )?fan of|am not into)(?: (?:hate|loathe|detest)\b)* {_VALUE}",
        _preference("dislikes", strong={"hate", "detest", "loathe", "cannot stand"}),
    ),
    (
        rf"I (?P<verb>love|adore|like|enjoy|prefer|am into|am a (?:big |huge )?fan of) {_VALUE}",
        _preference("likes", strong={"love", "adore", "am a big fan of", "am a huge fan of"}),
    ),
    (rf"my {_FAVORITE} (?P<what>[\w ]+?) (?:is|are) {_VALUE}", _favorite),
    # ...the thing first: "Severance is my new favourite show", "Heat is my all-time fave film"
    (rf"(?P<value>(?!I\b)[\w' .&-]+?) (?:is|are|has become|have become|became|has taken over as) (?:now )?my "
     rf"{_FAVORITE} (?P<what>(?:tv |board |video |card )?\w+)\b", _favorite),
    # Likes and dislikes said in idioms, the thing first or no "I": "crosswords are my thing", "big fan of
    # matcha", "K-pop fan here", "can't stand reality TV", "mayo is a hard no for me", "spiders freak me out".
    (r"(?P<value>(?!I\b)[\w' -]+?) (?:is|are) (?:my|the) (?P<verb>thing|jam|weakness|guilty pleasure|happy place"
     r"|favou?rite(?: \w+)?)\b", _preference("likes", strong={"favourite", "favorite"})),
    (rf"(?:I am )?(?:a )?(?P<verb>big|huge|massive|total) fan of {_VALUE}", _preference("likes", strong={"huge"})),
    (r"(?:(?:big|huge|massive|total|die-?hard|lifelong|proud|serious) )?(?P<value>(?!I\b)[\w' -]+?) "
     r"(?P<verb>fan|lover|addict|nerd|geek) here\b", _preference("likes", strong=set())),
    (rf"(?:I am )?(?P<verb>obsessed with|addicted to|really into|crazy about|mad about) {_VALUE}",
     _preference("likes", strong={"obsessed with", "crazy about", "mad about"})),
    (rf"(?:I )?(?P<verb>love a good|cannot get enough of|live for) {_VALUE}", _preference("likes", strong=set())),
    (rf"(?P<verb>cannot stand|can not stand|not a (?:big |huge )?fan of) {_VALUE}",
     _preference("dislikes", strong={"cannot stand", "can not stand"})),
    (r"(?P<value>(?!I\b)[\w' -]+?) (?:is|are) (?:a )?(?P<verb>hard no|no-go|not my thing|not for me|my nemesis)\b",
     _preference("dislikes", strong={"hard no"})),
    (r"(?P<value>(?!I\b)[\w' -]+?) (?P<verb>freaks?|creeps?|grosses?|weirds?) (?:me|I) out\b",
     _preference("dislikes", strong=set())),
    (rf"(?:I am )?(?:absolutely |genuinely )?(?P<verb>terrified|scared|afraid|frightened) of {_VALUE}", _fear),
    (r"(?P<value>(?!I\b)[\w' -]+?) (?P<verb>terrify|terrifies|scare|scares|frighten|frightens) (?:me|I)\b", _fear),
    # "cilantro tastes like soap to me": a taste likened to what nobody eats
    (r"(?P<value>(?!I\b)[\w' -]+?) (?P<verb>tastes?|smells?) like (?:soap|feet|dirt|cardboard|washing[- ]up liquid"
     r"|chemicals|metal|medicine|perfume|garbage|trash|socks|sweat|plastic|rubber)\b",
     _preference("dislikes", strong=set())),
    # what the body does not take: "gluten makes me sick", "dairy gives me a stomach ache" ("traffic makes me
    # sick" is neither that nor surely a dislike: the general path keeps its words or nothing)
    (rf"(?P<value>{alternatives(DIET_FOODS)}|lactose|wheat|caffeine|alcohol|red wine|spicy food|garlic|onions?"
     r"|nuts|peanuts|soy|beans) (?P<verb>makes?|gives?) (?:me|I) (?P<effect>(?:feel )?(?:sick|ill|bloated|queasy)"
     r"|(?:a |an )?(?:stomach ?ache|headache|migraine|rash|hives|heartburn|cramps)s?)\b", _unwell),
    (r"(?P<value>(?!I\b)[\w' -]+?) (?P<verb>drives?|makes?) (?:me|I) (?:nuts|crazy|mad|insane|want to scream"
     r"|gag)\b", _preference("dislikes", strong=set())),
    (r"(?:I )?(?:really |absolutely )?(?P<verb>hate|loathe|detest)(?: (?:hate|loathe|detest))* (?P<value>.+)",
     _preference("dislikes", strong={"hate", "loathe", "detest"})),
    (r"I could (?P<verb>eat|drink|watch|listen to|play) (?P<value>.+?) every (?:single )?(?:day|night|meal)\b",
     _preference("likes", strong=set())),
    (r"I am (?:a|an) (?P<job>.+?)(?: (?:at|for) (?P<employer>.+))?$", _work(job_checked=True)),
    (rf"(?:.*\b)?(?:my pronouns are|use|I use|I go by|I am|call me|refer to me as|address me as) "
     rf"(?P<value>{_PRONOUN_SET})\b", _pronouns),
    (r"I am (?P<value>(?-i:[A-Z])\w+(?: (?-i:[A-Z])\w+)?)$", _greeting_name),
]
_RULES: list[tuple[re.Pattern, Rule]] = [(re.compile(pattern, re.I), rule) for pattern, rule in _RULE_TABLE]

# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

_STOPS = re.compile(
    r"\s+(?:because|since|but|so|which|who|when|though|although|anyway|lol|haha|too|also|as well|a lot"
    r"|very much|so much|these days|nowadays|now|anymore|again|either|right now|at the moment|for now|btw"
    r"|over|rather than|instead of|at all|lately|recently|originally"
    # a period said after the value ("started at Lidl this week"), which find_time does not date
    r"|(?:this|next|last|that) (?:week|weekend|month|year|semester|term|quarter|season|spring|summer|fall|autumn"
    r"|winter))\b.*",
    re.I,
)
# ...and at whose a life or a time is ("lived in Norwich my whole life", "in Leeds all my life", "Hull ever since"): no
# place's name holds "my"
_PLACE_STOPS = re.compile(r"\s+(?:with|near|for|and|to|where|as|in|on|at|by|from|of course|my|our|his|her|their"
                          r"|all (?:my|our|his|her|their)|ever|forever)\b.*", re.I)
# ...and at how often ("a greeter at Walmart three days a week", "at the bakery every Saturday"), and where
# ("Argos at their distribution centre", "Accenture from home", "Nando's near the station")
_EMPLOYER_STOPS = re.compile(r"\s+(?:as|in|with|and|but|since|on|where|to|here|there|every|each|once|twice|full[- ]time"
                             r"|at (?:the|their|its|our|his|her|my|a|an|one|this|that)|from (?:home|the)|near|next to"
                             r"|close to|opposite|outside"
                             r"|part[- ]time|now|currently|rn|atm|right now|for now"
                             r"|(?:\d+|one|two|three|four|five|six|seven)\s+(?:days?|nights?|shifts?|times?|mornings?"
                             r"|evenings?|afternoons?|hours?)\b)\b.*", re.I)
_JOB_STOPS = re.compile(r"\s+(?:at|for|in|with|and|since|who|that)\b.*", re.I)
# ...nor does a kind of place said alone ("a first aider at work", "a nurse at the hospital"): the employer is unnamed
_NOT_A_PLACE = re.compile(r"^(?:a|an|my|our|their|his|her|this|that|it|here|there|home|myself|the moment|some"
                          r"|(?:work|office|school|uni|college|university|hospital|church)$)\b", re.I)
# "I've been a paramedic for twelve years": how long, not whom for.
_DURATION = re.compile(r"(?:(?:about|almost|nearly|over|around|like|the (?:last|past))\s+)?"
                       r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty"
                       r"|a few|a couple(?: of)?|several|many|some|a)\s+(?:years?|yrs|months?|weeks?|days?|decades?)"
                       r"|ages|a while|a long time|years|decades|life|good|now", re.I)


# Places whose name takes "the": "lives in the US", "the Netherlands", "the Bay Area", "the Lake District"
_NAMED_WITH_THE = re.compile(r"the\s+(?:(?-i:[A-Z]{2,3})$|[\w ]*\b(?:Netherlands|Philippines|Bahamas|Maldives|Gambia"
                             r"|Republic|States|Kingdom|Emirates|Islands|Isles|Area|District|Coast|Midlands|Highlands"
                             r"|Cotswolds|Alps|Valley)$)", re.I)


def _a_time(value: str, reference: datetime) -> bool:
    """ "1988", "May 1988": "I was born in ..." a time, no place."""
    found = find_time(f"in {value}", reference)
    return found is not None and found.start == 0 and found.end == len(value) + 3


def normalize_value(attribute: str, raw: str, reference: datetime, *, opens_clause: bool = True) -> str:
    """The value as memory stores it: cut at the first word that is not part of it, then in the
    attribute's form (lowercase diets and likes, Title Case places and employers). Names keep their
    capitals ("likes Taylor Swift", "Mexican food"); a value that `opens_clause` ("Crosswords are my
    thing") has a capital first word only because the sentence starts with it."""
    value = _cut(raw, reference)
    if attribute in {"city", "hometown", "employer"}:
        value = (_EMPLOYER_STOPS if attribute == "employer" else _PLACE_STOPS).sub("", value)
        article = "the " if attribute != "employer" and _NAMED_WITH_THE.match(value) else ""
        value = re.sub(r"^the\s+", "", value, flags=re.I)
        # "a small town", "home", "myself" describe, they do not name: no value beats a vague one
        if not value or _NOT_A_PLACE.match(value) or _DURATION.fullmatch(value) or _a_time(value, reference):
            return ""
        return article + _title(value)
    if attribute == "name":
        return _title(" ".join(_name_words(value.split()[:4])))
    if attribute == "job":
        return _lower(re.sub(r"^(?:a|an)\s+", "", _JOB_STOPS.sub("", value), flags=re.I))
    if attribute == "diet":
        return DIET_ALIASES.get(value.lower(), value.lower())
    if attribute == "plan":
        return _third_person(value)
    return _names_kept(_third_person(value), opens_clause)


def _cut(raw: str, reference: datetime) -> str:
    value = re.split(r"[,;:!?()\"]| - ", raw, maxsplit=1)[0]
    found = find_time(value, reference)
    if found:
        value = value[: found.start]
    value = _STOPS.sub("", value)
    return trimmed(value.lstrip(" .'"), " .'")


def _name_words(words: list[str]) -> list[str]:
    """The words of a name said first: "Siobhán by the way" is Siobhán (a capitalised name ends at the first
    word in lower case that no name holds), "sam smith" is all name, "sam btw" is Sam."""
    for index, word in enumerate(words[1:], start=1):
        lowered = word.lower()
        if (words[0][:1].isupper() and word == lowered and lowered not in LOWERCASE_PARTICLES) or lowered in _NOT_NAMES:
            return words[:index]
    return words


_NOT_NAMES = frozenset({"by", "and", "but", "btw", "lol", "haha", "here", "though", "too", "again", "now", "from",
                        "the", "i", "i'm", "im", "just", "so", "thanks", "please", "pls"})


def _title(value: str) -> str:
    words = value.split()
    return " ".join(
        word
        if word != word.lower()
        else word.lower()
        if index and word.lower() in LOWERCASE_PARTICLES
        else word[:1].upper() + word[1:]
        for index, word in enumerate(words)
    )


def _lower(value: str) -> str:
    # keeps acronyms ("NYC", "ADHD") readable
    return " ".join(word if len(word) > 1 and word.isupper() else word.lower() for word in value.split())


def _names_kept(value: str, opens_clause: bool) -> str:
    """Lowercase but for names: capitalised words other than a first word the sentence's capital explains
    (kept when a name goes on: "Taylor Swift is my favourite")."""
    words = value.split()
    capitalised = [word[:1].isupper() for word in words]
    if capitalised and opens_clause and not (len(words) > 1 and capitalised[1]):
        capitalised[0] = False
    return " ".join(word if keep or (len(word) > 1 and word.isupper()) else word.lower()
                    for word, keep in zip(words, capitalised, strict=True))


def _third_person(value: str) -> str:
    """ "visit my mom" -> "visit their mom": a memory text is about the user, not said by them."""
    swaps = {"my": "their", "me": "them", "i": "they", "mine": "theirs", "myself": "themselves", "i am": "they are",
             "i'm": "they're", "i was": "they were"}
    return re.sub(r"\b(?:i am|i'm|i was|my|me|i|mine|myself)\b",
                  lambda word: swaps[" ".join(word.group().lower().split())], value, flags=re.I)


# ---------------------------------------------------------------------------------------------
# Texts
# ---------------------------------------------------------------------------------------------

TEMPLATES = {
    "pronouns": "{who}'s pronouns are {value}.",
    "name": "{who}'s name is {value}.",
    "age": "{who} is {value} years old.",
    "job": "{who} is {a}{value}.",
    "employer": "{who} works at {value}.",
    "city": "{who} lives in {value}.",
    "hometown": "{who} is from {value}.",
    "diet": "{who} is {value}.",
    "relationship_status": "{who} is {value}.",
    "family": "{who} has {a}{value}.",
    "pet": "{who} has {a}{value}.",
    "allergy": "{who} is allergic to {value}.",
    "health": "{who} has {value}.",
    "likes": "{who} likes {value}.",
    "dislikes": "{who} dislikes {value}.",
    "plan": "{who} plans to {value}.",
    "instruction": "Standing instruction from {who}: {value}.",
}


def _render(fact: _Fact, who: str, relation: Relation, planned: TimeMatch | None) -> str:
    """The memory text: `who` names the subject ("Maria", "the user", "the user's sister"); a plan says
    when it happens."""
    template = fact.template or TEMPLATES.get(fact.attribute, "{who}'s {attribute} is {value}.")
    if fact.attribute == "diet" and fact.value.startswith("eats "):
        template = "{who} {value}."
    if fact.attribute == "name" and who.lower() in fact.value.lower().split():  # not "Olga's name is Olga Petrova."
        template = "{value} is the user's name."
    template = template.replace("{who}'s", "{whose}")
    text = template.format(who=who, whose=possessive(who), value=fact.value, a=_article(fact.value),
                           attribute=fact.attribute)
    if text.endswith("..") and fact.value.endswith("."):  # "Sam lives in Washington D.C."
        text = text[:-1]
    if planned:
        said = text if fact.value.endswith(".") and text.endswith(fact.value) else text[:-1]
        text = f"{said} {timeparse.calendar_words(planned)}."
    return sentence(_negated(text, who) if relation == "negate" else text)


def _negated(text: str, who: str) -> str:
    for verb in ("is", "has"):
        if text.startswith(f"{who} {verb} "):
            rest = text[len(who) + len(verb) + 2 :]
            return f"{who} is no longer {rest}" if verb == "is" else f"{who} no longer has {rest}"
    if text.startswith(f"{who} "):
        return f"{who} no longer {text[len(who) + 1 :]}"
    return f"No longer true: {text}"


def _article(value: str) -> str:
    first = value.split(" ", 1)[0].lower() if value else ""
    if not first or first.isdigit() or first in COUNTS.values():
        return ""
    return article(value)


def _importance(fact: _Fact, subject: str, user: str) -> int:
    importance = fact.importance or IMPORTANCE.get(fact.attribute, 5)
    return importance if subject == user else min(importance, OTHER_PERSON_IMPORTANCE)
