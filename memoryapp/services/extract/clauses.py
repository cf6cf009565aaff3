"""The clause reader: a message cut into sentences and clauses, and each clause put into the normal form
the rules are anchored on.

Contractions are expanded; fillers ("btw", "hi,") and markers ("still", "now", "actually", "also") are
taken out and remembered; "my sister is ..." becomes her "I am ..."; "I no longer eat meat" and "I
stopped eating meat" become the statement that ended, "I started eating fish" the one that began.
A clause knows words (lexicon) and times (timeparse), not facts: the rule table (rules) reads facts
from it, and the general path (general) cuts messages with the same sentence splitter."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Self

from .grammar import possessive
from .lexicon import ABBREVIATIONS, GERUND_BASES, NAME_LETTERS, RELATIVES, alternatives, relative_key
from .timeparse import TimeMatch, find_time

# "D.C.", "U.S.", "a.m.": letters each followed by a period. A sentence seldom ends on one, and then the next
# one starts with a capital; "I'm into Fontaines D.C. these days" and "I get up at 6 a.m. every day" go on.
_INITIALISM = re.compile(r"(?:^|\s|\()(?:[a-z]\.){2,}$", re.I)
# "John F. Kennedy": a lone capital and its period, then a name.
_MIDDLE_INITIAL = re.compile(r"\s[A-Z]\.$")


def _goes_on(sentence: str, piece: str) -> bool:
    """Whether `piece` continues `sentence`, whose last period marked an abbreviation, not an end."""
    if not sentence.endswith("."):
        return False
    if sentence.rsplit(None, 1)[-1].rstrip(".").lower() in ABBREVIATIONS:
        return True
    if _INITIALISM.search(sentence):
        return piece[0].islower() or piece[0].isdigit()
    return bool(_MIDDLE_INITIAL.search(sentence)) and piece[0].isupper()


def trimmed(text: str, chars: str = " .!…") -> str:
    """`text` without the trailing `chars`, but an initialism keeps its period: "We moved to the U.S."."""
    stripped = text.rstrip(chars)
    if text[len(stripped) : len(stripped) + 1] == "." and _INITIALISM.search(f"{stripped}."):
        return f"{stripped}."
    return stripped


def split_sentences(text: str) -> list[str]:
    """Sentences, keeping "Dr. Lee", "St. Mary's", "Washington D.C. is home" and "John F. Kennedy" whole."""
    sentences: list[str] = []
    for piece in re.split(r"(?<=[.!?])\s+|\n+", text):
        piece = piece.strip()
        if not piece:
            continue
        if sentences and _goes_on(sentences[-1], piece):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


# Breaks before "and I ...", ", my sister ...", "; ...". The conjunction stays with its clause: "but I
# eat fish" qualifies a diet where "I eat fish" alone would replace it.
_CLAUSE_BREAK = re.compile(
    r"\s*;\s*"
    # ...not "me and my husband moved", whose subject is the two of them
    r"|(?<!^me)(?<!^i),?\s+(?=(?:and|but|so|because|although|though|while|plus|considering|given that|seeing as)"
    r"\s+(?:i|my|i'm|i've)\b)"
    # "i have adhd so pls keep ur answers short": a request after the fact
    r"|\s+(?=(?:so|and|but)\s+(?:(?:can|could|would|will)\s+(?:you|u)|please|pls|plz)\b)"
    r"|,\s*(?=(?:i|my|i'm|i've|and|but|so|also|btw)\b)",
    re.I,
)
# "I live in Lisbon and work at Globex": the second clause borrows the "I".
_SHARED_SUBJECT_BREAK = re.compile(r",?\s+and\s+(?=(?:work|live|love|like|enjoy|hate|have|eat|moved|started)\b)", re.I)
# ...when the first clause is the speaker's: said with "I" or "we", or with their "I" left out ("Retired last year
# and moved to Spain", "Love hiking and live near the hills"); after someone else's ("Dad retired", "Tom got a job")
# the second is theirs too.
_SAID_BY_THE_SPEAKER = re.compile(r"(?:(?:just|also|recently|finally|then|now|still)\s+)?(?:i|i'm|im|i've|we|we're"
                                  r"|we've|\w+ed|work|live|love|like|enjoy|hate|have|eat|got|quit|left|went)\b", re.I)


def split_clauses(sentence: str) -> list[str]:
    clauses = []
    for clause in _CLAUSE_BREAK.split(sentence):
        if re.search(r"\bmy\b", clause, re.I):
            clauses.append(clause)  # "my sister lives in Paris and works at ...": her "I", not the user's
            continue
        first, *rest = _SHARED_SUBJECT_BREAK.split(clause)
        if rest and not _SAID_BY_THE_SPEAKER.match(first.lstrip()):
            clauses.append(clause)  # "Dad retired and moved back to Ireland": his move, not the user's
            continue
        clauses += [first] + [f"I {part}" for part in rest]
    return [clause.strip() for clause in clauses if clause.strip()]


_CONTRACTIONS = [
    (r"\bi'm\b|\bim\b", "I am"),
    (r"\bi've\b", "I have"),
    (r"\bi'll\b", "I will"),
    (r"\bi'd\b", "I would"),
    (r"\b(do|does|did|is|are|was|were|have|has|had|would|should|could)n't\b", r"\1 not"),
    (r"\b(do|does|did)nt\b", r"\1 not"),
    (r"\bcan'?t\b", "cannot"),
    (r"\bwon'?t\b", "will not"),
    (r"\bgonna\b", "going to"),
    (r"\bwanna\b", "want to"),
    (r"\bany more\b", "anymore"),
]
_FILLER = re.compile(
    r"^(?:btw|by the way|oh|ok|okay|so|well|also|and|but|plus|hey|hi|hello|yeah|yes|yep|lol|haha|hmm|um|uh|fyi"
    r"|ugh|argh|meh|oof|phew|whew|welp|yay|sigh|ah|aw"
    r"|anyway|anyways|just so you know|for the record|remember that|note that|please note that|sorry"
    r"|to be honest|tbh|honestly|basically|oh and|good morning|good evening|i mean|remember to|because|although"
    r"|(?:work|job|money|health|food|diet|family|life)[- ]?wise"
    r"|though|while|considering|given that|seeing as)\b[,!:.]?\s*",
    re.I,
)
# ...and what a speaker adds at the end to say how they say it ("I'm 34 btw", "vegan these days tbh", "I'm 42,
# believe it or not"): an aside, not part of the fact
ASIDE_TAIL = re.compile(
    r"(?:[\s,]+(?:lol|haha+|hehe+|lmao|xd|:\)|:\(|:d|btw|by the way|fyi|tbh|ngl|imo|fwiw|tho|though"
    r"|honestly|anyways?|just so you know|for the record|i guess|i suppose|i reckon|i think"
    r"|believe it or not|if you must know|if you can believe it|would you believe(?: it)?|as it happens"
    r"|as it turns out|if that matters|if that helps|if it helps|for context|in case you were wondering"
    r"|if i am honest|if i'm honest|to be honest|to be fair|mind you|sadly|thankfully|luckily|unfortunately"
    r"|ugh+|yay|sigh|oof|phew|always (?:have|had|will|did|was|been|has been)"
    r"|(?:but )?(?:please )?(?:don'?t|do not) (?:tell anyone|judge(?: me)?|laugh)|no judg(?:e)?ment(?: please)?"
    r"|shh+))+\W*$",
    re.I,
)
_CORRECTION = re.compile(
    r"^(?:actually|no wait|no|nope|wait|oops|correction|i meant)(?!\s+(?:longer|need)\b)\b[,:!]?\s*", re.I)
_MEANT = re.compile(r"^i meant", re.I)
_GREETING = re.compile(r"^\s*(?:hi|hello|hey)\b", re.I)
_MARKERS = {
    "still": re.compile(r"\bstill\b", re.I),
    "now": re.compile(r"\b(?:from now on|now|these days|nowadays)\b", re.I),
    "adds_detail": re.compile(r"\b(?:also|too|as well)\b", re.I),
    "correction": re.compile(r"\bactually\b", re.I),
    "adverb": re.compile(r"\b(?:really|just|absolutely|definitely|totally|recently|currently|honestly)\b", re.I),
}

# "my sister is ...", "my sister Ana works ...", "my sister's dog is ..."
_RELATIVE = re.compile(
    # "Grandma turned 100", "Dad retired": a relative's word opening the clause with a capital is theirs.
    rf"(?:my |(?=(?-i:[A-Z])))(?P<relative>{alternatives(RELATIVES)})"
    rf"(?:(?P<possessive>'s)|(?: (?P<name>(?-i:[A-Z][{NAME_LETTERS}]+)))?"
    r"(?= (?:no longer |never |just |finally )?(?:is|has|does|was|\w+s|\w+ed|hit|got|went|left|quit|lost|won|sold"
    r"|bought|took|became|began|broke|split|fell|came|gave|had|made|ran|sat)\b)) (?P<rest>.+)",
    re.I,
)


@dataclass
class Clause:
    """One clause in a normal form the rules can be anchored on, with what its markers said."""

    original: str  # contractions expanded, nothing removed: where time expressions are found
    body: str  # fillers and markers taken out
    occurred_at: datetime
    subject: str
    who: str  # how texts call the clause's subject ("Maria", "the user's sister")
    greeting: bool = False
    correction: bool = False
    meant: bool = False
    still: bool = False
    now: bool = False
    adds_detail: bool = False  # "also", "too", "but": qualifies what was said instead of replacing it
    negated: bool = False
    started: bool = False
    relative_name: str = ""  # "my sister Ana is a doctor"
    lead_time: datetime | None = None  # from a clause that was only a time: "In 2019, I moved ..."

    @classmethod
    def read(cls, text: str, occurred_at: datetime, subject: str, who: str, *, lead: Clause | None = None) -> Self:
        original = _expand_contractions(text)
        clause = cls(original, ASIDE_TAIL.sub("", trimmed(original.strip(), ".!…")).strip(), occurred_at, subject, who)
        if lead:
            clause.greeting, clause.correction, clause.meant = lead.greeting, lead.correction, lead.meant
            clause.lead_time = lead.time()
        clause._strip_lead()
        return clause

    def time(self, *, prefer_future: bool = False) -> datetime | None:
        found = self.time_match(prefer_future=prefer_future)
        return found.when if found else self.lead_time

    def time_match(self, *, prefer_future: bool = False) -> TimeMatch | None:
        return find_time(self.original, self.occurred_at, prefer_future=prefer_future)

    def _strip_lead(self) -> None:
        """Drops "btw", "actually,", "Last year," and the like from the front, remembering them."""
        self.greeting = self.greeting or bool(_GREETING.match(self.body))
        self.adds_detail = self.adds_detail or bool(re.match(r"but\b", self.body, re.I))
        while True:
            before = self.body
            if correction := _CORRECTION.match(self.body):
                self.correction = True
                self.meant = self.meant or bool(_MEANT.match(correction.group()))
                self.body = self.body[correction.end() :]
            self.body = _FILLER.sub("", self.body)
            found = find_time(self.body, self.occurred_at)
            if found and found.start == 0:
                self.body = self.body[found.end :].lstrip(" ,")
            if self.body == before:
                return

    def _take_markers(self) -> None:
        for name, pattern in _MARKERS.items():
            if pattern.search(self.body):
                if name != "adverb":
                    setattr(self, name, True)
                self.body = _squeeze(pattern.sub(" ", self.body))

    def _rewrite_negation(self) -> None:
        """ "I'm not vegetarian anymore", "I no longer eat meat" -> the statement that ended."""
        if re.search(r"\bno longer\b", self.body, re.I):
            self.body = _squeeze(re.sub(r"\bno longer\b", " ", self.body, flags=re.I))
            self.negated = True
        elif re.search(r"\banymore\b", self.body, re.I):
            body = re.sub(r"\banymore\b", " ", self.body, flags=re.I)
            self.body = _squeeze(re.sub(r"\b(?:(?:do|does|did) not|not|never)\b", " ", body, count=1, flags=re.I))
            self.negated = True

    def _rewrite_relative(self) -> None:
        """ "my sister is vegetarian" -> "I am vegetarian", about sam's sister."""
        match = _RELATIVE.match(self.body)
        if match:
            self.subject = f"{self.subject}'s {relative_key(match['relative'])}"
            self.who = f"{possessive(self.who)} {match['relative'].lower()}"
            self.relative_name = match["name"] or ""
            if match["possessive"]:
                self.body = f"my {match['rest']}"
            else:
                negation, rest = re.match(r"((?:no longer |never )?)(.*)", match["rest"], re.I).groups()
                self.body = f"I {negation}{_first_person_verb(rest)}"

    def _rewrite_aspect(self) -> None:
        """ "I stopped eating meat" ends a fact, "I started eating fish" changes one, "I have been
        vegetarian since 2019" still holds."""
        self.body = re.sub(r"^I have been (?!to\b)", "I am ", self.body, flags=re.I)
        match = re.match(
            r"I (?P<verb>stopped|quit|gave up|started|began) (?P<gerund>\w+ing)\b(?P<rest>.*)", self.body, re.I
        )
        if match and match["gerund"].lower() in GERUND_BASES:
            self.body = f"I {GERUND_BASES[match['gerund'].lower()]}{match['rest']}"
            if match["verb"].lower() in {"started", "began"}:
                self.started = True
            else:
                self.negated = True


def _expand_contractions(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.I)
    return _squeeze(text)


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _first_person_verb(rest: str) -> str:
    verb, _, tail = rest.partition(" ")
    lowered = verb.lower()
    irregular = {"is": "am", "has": "have", "does": "do", "was": "was"}
    if lowered in irregular:
        verb = irregular[lowered]
    elif lowered.endswith("ies"):
        verb = lowered[:-3] + "y"
    elif lowered.endswith(("ches", "shes", "sses", "xes", "oes")):
        verb = lowered[:-2]
    elif lowered.endswith("s") and not lowered.endswith("ss"):
        verb = lowered[:-1]
    return f"{verb} {tail}".strip()

