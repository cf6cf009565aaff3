"""The general path of the offline extractor: whatever durable thing a user says about themselves or
their people becomes a memory, even when no rule knows its family.

A message is cut into pieces (sentences, then clauses where a new subject, a question or a request
starts). Each piece is classified (services.extract.classifier: durable self-disclosure or not, and
which fact family). A durable piece that no rule candidate covers becomes a self-contained
third-person memory in its own words ("gluten makes me sick" -> "Gluten makes Maria sick."), in the
slot of its family, so that a later statement in the same slot replaces it. A rule candidate from a
piece the classifier is confident holds nothing durable (a question, a request, a hypothetical, a
passing state) is dropped, except retractions, corrections and standing instructions.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from datetime import datetime
from difflib import SequenceMatcher
from itertools import groupby

import numpy as np

from . import classifier
from .base import Candidate, EpisodeInput, single_valued
from .clauses import ASIDE_TAIL, split_clauses, split_sentences
from .grammar import article, possessive, sentence, stem
from .lexicon import (
    DIET_ALIASES,
    HEALTH_ADJECTIVES,
    JOB_WORDS,
    LANGUAGES,
    NAME_LETTERS,
    NATIONALITIES,
    PETS,
    RELATIONSHIP_STATUSES,
    RELATIVES,
    SLOTS,
    alternatives,
    looks_like_job,
    relative_key,
)
from .timeparse import MONTHS, WEEKDAYS, calendar_words, find_time, with_dates_named

GENERAL_CONFIDENCE = 0.6  # below the rules' 0.8: the general path knows the words, not their structure
GENERAL_IMPORTANCE = 5
SOURCES = frozenset({"user"})  # the general path reads only what the user says in the conversation

# Slots whose value is a name: a statement without one ("I've moved 9 times") is kept outside them.
_NAMED_SLOTS = frozenset({"city", "hometown", "employer", "workplace", "school"})
_CAPITALISED = re.compile(r"(?<=\w)\W+(?P<word>(?-i:[A-Z])[\w'-]*)")  # after the first word
# capitalised words that name no place nor organisation ("had our third in May!", "so I moved on")
_NO_NAME = frozenset({*MONTHS, *WEEKDAYS, "i", "i'm", "i've", "i'd", "i'll", "im", "ive", "ok", "okay", "omg", "lol"})
_LOWERCASE_PLACE = re.compile(r"\b(?:to|in|at|for|from)\s+(?!(?:the|a|an|my|our|his|her|their|this|that)\b)[a-z]{3,}")


def _capitalised_word_other_than(piece: str, ordinary: frozenset[str]) -> bool:
    """A capitalised word after the first that is none of the `ordinary` ones."""
    return any(found["word"].lower() not in ordinary for found in _CAPITALISED.finditer(piece))


def _visit_of_no_one_named(piece: str) -> bool:
    return bool(_VISIT.search(piece)) and not _capitalised_word_other_than(piece, _NO_VISITOR_NAME)


def _names_something(piece: str) -> bool:
    """A capitalised word after the first; in a message typed all in lower case, a word after "to", "in"..."""
    return (_capitalised_word_other_than(piece, _NO_NAME)
            or (piece == piece.lower() and bool(_LOWERCASE_PLACE.search(piece))))


# ...and slots of a partner: a message without a word of one says nothing of theirs.
_PARTNER_SLOTS = frozenset({"partner", "relationship_status"})
_PARTNER_WORDS = re.compile(r"\b(?:partner|wife|husband|hubby|wifey|spouse|boyfriend|girlfriend|bf|gf|fianc[eé]e?"
                            r"|other half|missus|married|marry|marrying|wedding|engaged|dating|date|dated|seeing"
                            r"|together|relationship|single|divorced?|separated|widow(?:ed|er)?|ex|couple|love|split|splitting"
                            r"|broke up|break up|breaking up|breakup|been with|moved in)\b", re.I)
# ...and a partnership ended, whatever else the message names ("Sam and I ended things, long distance was too
# much" is no home): news of the partner, never a value of another of the user's slots.
_PARTED = re.compile(r"\b(?:broke up|split up|separated|divorced|called it quits|called it a day|ended things"
                     r"|(?:went|gone|going|go) (?:our|their) separate ways|parted ways)\b", re.I)
_WORK_SLOTS = frozenset({"job", "employer", "workplace"})
_FIRST_DAYS_AT = re.compile(r"\bfirst (?:day|week|month|shift|fortnight)s?\b[^.,;!?]*?\b(?:at|with|for)\s+(?-i:[A-Z])",
                            re.I)
# Leaving one's job by one's own word ("handed in my notice today", "resigned yesterday!!"): life news, however
# much the classifier hears the day in it; not "resigned myself to it", nor a seat on a board or a committee, nor
# someone else's ("Chloe handed in her notice").
_LEFT_WORK = re.compile(r"\b(?:handed|put|gave|turned) in (?:my|our) notice|\bgave (?:my|our) (?:two weeks'? )?notice"
                        r"|(?:^\W*|\bi\s+|\bi've\s+|\bi have\s+)(?:(?:just|finally|officially|already)\s+)?"
                        r"resigned\b(?! (?:myself|ourselves|themselves)\b| to\b"
                        r"| (?:from|as) (?:the |my |our |a )?(?:[\w'-]+ )?(?:board|committee|council|club|team|pta"
                        r"|trustees?|governors?|chair|treasurer|secretary|captain)\b)", re.I)
# ...and a doctorate or a master's finished ("passed my viva today!!", "defended my thesis yesterday"), which the
# family model hears as anything from an appointment to music.
_DEGREE_DONE = re.compile(r"\b(?:passed (?:my|our|his|her|their|the) (?:phd |final )?viva"
                          r"|defended (?:my|his|her|their) (?:phd |doctoral |masters? )?(?:thesis|dissertation)"
                          r"|(?:got|earned|was awarded|been awarded) (?:my|his|her|their) (?:phd|doctorate|dphil))\b",
                          re.I)
# Accepting what holds ("I've resigned myself to another year of this job", "made peace with my bad knee"): it goes
# on, so the words are kept beside it, never in its place.
_ACCEPTED = re.compile(r"\b(?:resigned (?:myself|ourselves) to|made (?:my |our )?peace with"
                       r"|(?:come|came|coming) to terms with|learn(?:ed|t|ing) to live with)\b", re.I)
_ON_THE_SIDE = re.compile(r"\b(?:on (?:the )?weekends?|part[- ]time|on the side|side (?:job|gig|hustle)"
                          r"|extra (?:cash|money)|volunteer\w*)\b", re.I)
SINGLE_VALUED_GENERAL = frozenset(attribute for attribute, single in SLOTS.values() if single)
# A stay, not a home: "on holiday in Rome", "in Berlin for a conference", "visiting my sister in Madrid". Said
# without a word of living or moving (_RESIDES), it neither fills the city slot nor replaces a fact (a_stay).
_STAY = re.compile(r"\b(?:on (?:holiday|vacation|a trip|business|a work trip|tour)|visiting|for (?:a|an|the|my|our)"
                   r" (?:conference|trip|holiday|vacation|wedding|funeral|visit|meeting|festival|gig|match)"
                   r"|(?:for|over) the weekend)\b", re.I)
# ...and in the city slot, where one is for a day or a week: "I'm in Berlin today" (not "moved to Berlin today").
_AWAY = re.compile(r"\b(?:this week(?:end)?|today|tonight|right now)\b", re.I)
_RESIDES = re.compile(r"\b(?:live|lives|living|lived|moved|moving|relocat\w*|based|settled|resid\w*|home)\b", re.I)


def a_stay(text: str, *, for_a_day: bool = False) -> bool:
    """Whether the text tells where someone is for a while, not where they live; `for_a_day`: also "today",
    "this week", "right now" (a city said so is no home, though such a statement may still replace a value)."""
    stay = _STAY.search(text) or (for_a_day and _AWAY.search(text))
    return bool(stay) and not _RESIDES.search(text)


# Letting a value go without a word for ending it: "let my season ticket lapse", "pulled out of the marathon", "didn't
# renew", "packed in the 5:2".
# (_GIVEN_UP: those said with what they end after them, as _ENDED reads them)
_GIVEN_UP = r"pulled out of|dropped out of|did(?:n't| not) renew|packed in|jacked in|binned off|paused(?! to\b)"
_LET_GO = (rf"let (?:my|our|the) [^,.;!?]+? (?:go|lapse|expire)|pull out of|{_GIVEN_UP}"
           r"|put [^,.;!?]+? on (?:hold|pause|ice|the back burner)")
# Words that say the world changed. Replacement cues also end a value in a many-valued slot ("I
# switched to Italian" ends "learning French"); the others only say a single value changed.
_REPLACEMENT = (r"switched|swapped|replaced|instead|quit|gave up|given up|dropped|no longer|not anymore|anymore"
                r"|no more(?! than)|did(?:n't| not) (?:last|work out)"
                # "I'm back on normal food", "back on days" (not "my back on the left")
                r"|back to|(?<!my )(?<!the )back on(?! track)|went back|upgraded|downgraded|sold|broke up|split up"
                r"|divorced|left|stopped|moved|relocated|emigrated"
                r"|retired|traded|ditched|said goodbye|recovered|got over|stepped away|renamed|remarried"
                r"|rehomed|rehome|rehoming|gave away|given away|flogged"
                rf"|changed (?:my|our) minds?|cut (?:down|back)|{_LET_GO}"
                r"|(?:are|were) (?:done|over)(?= *(?:[,.;!?]|$))")
# What the person who died had or did ends with them ("Mochi passed in the spring", not "passed my test").
# ...and a pet's end as owners say it ("we had to put Rufus down", "crossed the rainbow bridge").
DEATH = (r"died|passed away|passed(?=\s+(?:in|on|last|this|yesterday|away)\b|\s*[,.;!]|\s*$)|buried|funeral"
         r"|put (?:\w+ ){1,2}down(?=\s+(?:in|on|last|this|yesterday|today|and|after|because)\b|\s*[,.;!]|\s*$)"
         r"|put (?:\w+ ){1,2}to sleep(?=.*\b(?:vet|had to|old|sick|ill)\b)|rainbow bridge")
_CHANGE = re.compile(rf"\b(?:{_REPLACEMENT}|now|these days|nowadays|turned|new|started|joined|became|got|finally"
                     rf"|just|as of|anymore|hit|promoted|graduated|transferred|outgr[eo]wn?|handed in"
                     rf"|since|{DEATH})\b", re.I)
_REPLACES = re.compile(rf"\b(?:{_REPLACEMENT}|now|these days|nowadays|{DEATH})\b", re.I)
_STRONG_CHANGE = re.compile(rf"\b(?:{_REPLACEMENT}|turned|became|joined|graduated|promoted|transferred|upgraded"
                            rf"|{DEATH})\b",
                            re.I)
# Something other than the speaker, as it was: "being vegan was too hard", "Lisbon was too expensive" (not "Ada
# was born", "he was promoted": news).
_WHAT_IT_WAS_LIKE = re.compile(r"(?!(?:i|i'm|we|we're|my|our)\b)(?:[\w'-]+\s+){1,4}(?:was|were)\b"
                               r"(?!\s+(?:born|diagnosed|hired|fired|made|accepted|elected|named|promoted)\b)", re.I)
_WAS = re.compile(r"\b(?:was|were|used to)\b", re.I)
# "I used to live in Dubai", "we used to have a dog": a habit or state of the past, said with a verb (not "used to
# the cold", "used to Android", "used to living alone")...
_USED_TO = re.compile(r"\bused to\s+(?!(?:it|this|that|them|the|a|an|my|our|his|her|their)\b|\w+ing\b)(?-i:[a-z])",
                      re.I)
# ...by someone not accustomed to it ("still getting used to", "I'm used to").
_ACCUSTOMED = re.compile(r"(?:\b(?:get|gets|getting|got|gotten|am|is|are|was|were|be|been|being|become|becoming)"
                         r"|'m|'re|'s)\s+(?:\w+\s+)?used to\b", re.I)


def used_to(text: str) -> bool:
    """Whether the text tells a habit or state of the past: "I used to be a chef", "In 2019 I lived in Lisbon", "I
    worked at Google until 2020" (_OVER_THEN)."""
    return (bool(_USED_TO.search(text)) and not _ACCUSTOMED.search(text)) or bool(_OVER_THEN.search(text))


# A state of the speaker's in the past tense, bounded in the past: over by its words. "lived", "worked", "was vegan"
# (not "was born", "was diagnosed": news that still holds; nor "had", whose "had a baby in March" is news; nor "have
# lived"; nor "moved back in March, the rent was insane"), with a time that closes it ("in 2019", "back in", "until
# 2020", "for five years", "years ago", "when I was 20", "as a kid"), and nothing said of now ("I worked at the bank
# for 20 years and now I run a bakery" is news).
_STATE_IN_THE_PAST = (r"(?:^\W*|\b(?:i|we)\s+(?:\w+ly\s+|also\s+|both\s+|all\s+)?)(?:lived|worked|studied|stayed|played"
                      r"|drove|owned|taught|dated|was|were)\b(?!\s+(?:\w+ed|born|\w+en|made|told|going|about|just|still"
                      r"|so)\b)")
_A_CLOSED_TIME = (r"\b(?:in (?:the )?(?:19|20)\d\d|back (?:in|then|when)|(?:until|till) (?:(?:19|20)\d\d|last year"
                  r"|recently|(?:i|we) \w+ed\b)|for (?:about |nearly |almost |over )?(?:a|an|one|two|three|four|five"
                  r"|six|seven|eight|nine|ten|a few|a couple of|\d+) (?:years?|months?|decades?)"
                  r"|(?:years|months|decades|ages) ago|when (?:i|we) (?:was|were) (?:a |an |\d+|little|young|small"
                  r"|growing|at (?:uni|school|college)|in (?:school|college|uni|my))"
                  r"|as (?:a|an) (?:kid|child|teenager|teen|student)|growing up|before (?:i|we) (?:moved|left|met|had)"
                  r"|before moving)\b")
_OVER_THEN = re.compile(rf"^(?!.*\b(?:now|these days|nowadays)\b)(?:.*{_STATE_IN_THE_PAST}(?:(?![.;!?]).)*"
                        rf"{_A_CLOSED_TIME}|.*{_A_CLOSED_TIME}(?:(?![.;!?]).)*{_STATE_IN_THE_PAST})", re.I | re.S)


# "started eating chicken again when I was pregnant": a past said beside the news is no old value
_SUBORDINATE = re.compile(r"\b(?:when|while|because|since|after|before|until|as soon as)\b[^,.;!?]*", re.I)
_NOW = re.compile(r"\b(?:now|these days|nowadays|anymore|as of)\b", re.I)
_NOW_PIECE = re.compile(r"^\W*now\b|\bnow\W*$|\b(?:these days|nowadays)\b", re.I)
# ...unless the words say the new value joins the old ones ("we have a second cat now").
_ADDS = re.compile(r"\b(?:also|another|second|third|one more|in addition)\b|\b(?:too|as well)\s*(?:[.,!;]|$)", re.I)
# A journey told as done on one day ("got the train to Manchester on Saturday", "drove in yesterday")
_ONE_TRIP = re.compile(r"\b(?:got|took|caught|drove|rode|cycled|biked|walked|flew)\b.*\b(?:yesterday|today|tonight"
                       r"|last (?:night|week|weekend)|this (?:morning|afternoon|evening)"
                       r"|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the \d+\w*))\b", re.I)
# "every day this week", "every night for the past few days": a run of days that ends, not a habit
_PASSING_RUN = re.compile(r"\bevery (?:single )?(?:day|night|morning|evening)\b.*\b(?:this|last) (?:week|weekend)\b"
                          r"|\bevery (?:single )?(?:day|night)\b.*\b(?:for )?the (?:past|last) (?:few|couple of)"
                          r" days\b", re.I)
# A visit, over once told: "my new neighbours came round to say hi", "Mum and Dad dropped in on Sunday" (not a
# habit, "my sister comes over every Sunday"; one that names the visitor, "my twin brother Josh popped round", is
# kept for the name: _visit_of_no_one_named).
_VISIT = re.compile(r"\b(?:came (?:round|over|by)|(?:popped|dropped|stopped|swung) (?:round|over|by|in))\b"
                    r"(?!.*\b(?:every|always|usually|often|each|most)\b)", re.I)
_NO_VISITOR_NAME = _NO_NAME | frozenset({"mum", "mom", "mam", "dad", "mummy", "daddy", "nan", "nana", "gran", "granny",
                                          "grandma", "grandpa", "grandad", "papa", "mama"})
CHANGE_MARGIN = 0.15  # how far below the durable bar a message's other statements may be when it says a change
# A piece that itself says the speaker's life changed ("Upgraded to a large", "got a cat this weekend!!",
# "finally 18", "back to the office as of this week"): such news is rarely said without exclamation or a
# "today", which the classifier reads as passing; what changed stays changed. Tuned on the dev split.
CHANGE_PIECE_MARGIN = 0.35
# How far below the bar the speaker's name said by its form may be ("I'm Mia" opening "I'm Mia, 30, from Leeds."
# -0.17, "Hey, I'm Tom. I'm 40" -0.02, alone +0.11); capitalised words that are no name: "I'm Back" -0.32, "I'm
# Sorry" -0.57 (a handful of my own sentences, not the corpus).
INTRODUCTION_MARGIN = 0.25
_CHANGE_PIECE = re.compile(
    r"^(?:(?:i|we|i've|we've|ive|i have|we have|i'm|we're)\s+)?"
    r"(?:(?:just|finally|officially|recently|actually|now)\s+)*"
    r"(?:moved|relocated|emigrated|upgraded|downgraded|downsized|switched|swapped|traded|sold|flogged|bought|got"
    r"|adopted|quit|left|(?:deleted|uninstalled) (?:[\w'-]+ ){0,3}(?:apps?|accounts?|profiles?)"
    r"|joined|started|retired|graduated|turned|transferred|passed|became|married|divorced|broke up|split up|gave up"
    r"|changed|replaced|went back|back to|done with|no longer|not \w+ anymore|took up"
    r"|back (?:at|in|on) (?:work|school|uni|university|college|the office|the gym|days|nights))\b"
    r"|^\W*(?:finally|officially)\b"
    # a proposal told by its answer ("Chris proposed and I said yes!"; not "he proposed we go for a curry")
    r"|\b(?:proposed|popped the question)(?:\s+to\s+me)?\s*(?:[,;.!]|and\b).*\bi\s+said yes\b"
    # "now", "these days" say a change only of the speaker's own life ("people say Berlin is expensive now")
    r"|^(?=.*\b(?:i|i'm|im|i've|we|we're|we've|my|our|me|us)\b)"
    r".*(?:\b(?:as of|no longer|anymore|these days|nowadays)\b|(?<!right )\bnow\W*$)",
    re.I,
)
# How the speaker is, said alone ("deleted all the dating apps, | I'm done"): "The user is done." tells nothing.
# ...and a piece that only names someone ("Honestly, my mum, | she drives me mad") or only a stretch of time ("the test
# was positive!!! | 8 weeks"): "The user's mum." and "8 weeks." tell nothing either.
_SAYS_NOTHING = re.compile(r"\W*(?:(?:i'm|i am|im|we're|we are)\s+(?:(?:so|just|totally|officially|finally)\s+)?"
                           r"(?:done|over it|finished|good|fine|ok|okay|sorted|ready|back|here)"
                           rf"|(?:my|our)\s+(?:[\w'-]+\s+)?(?:{alternatives({*RELATIVES, *PETS})})"
                           r"|(?:about\s+)?\d+\s*(?:days?|weeks?|months?|years?))\W*", re.I)
# A new thing the user keeps, told by its arrival ("My new iPhone 15 arrived this morning"; not a new book, a family of
# its own): news of what they have now, which the classifier hears as the day's event.
_ARRIVED = re.compile(r"^\W*(?:my|our)\s+new\s+(?:[\w'-]+\s+){1,3}(?:has\s+)?(?:arrived|turned up|got delivered"
                      r"|was delivered|is here)\b", re.I)
_THINGS_KEPT = frozenset({"phone", "car", "devices", "possessions"})
# ...or by who gave it ("my dad gave me his Volvo", "work got me a MacBook"), an animal too ("mum bought me a puppy")
_GIVEN_ME = re.compile(r"\b(?:gave|given|got|bought|handed|passed|left|gifted|lent) me\b", re.I)
_THINGS_GIVEN = _THINGS_KEPT | {"pets"}
# One of the user's people or animals by who they are ("my nan", "our old cat")...
_ONE_OF_THEIRS = rf"(?:my|our)\s+(?:[\w'-]+\s+){{0,2}}?(?:{alternatives({*RELATIVES, *PETS})})"
# ...and, lost, by who they were or by a name alone.
_SOMEONE_LOST = rf"(?:{_ONE_OF_THEIRS}(?![\w'-])|(?-i:[A-Z])[\w'-]+(?![\w'-])(?<!'s))"
# ...lost for good, not for a while ("lost Bella in the shop for five minutes", "lost Max at the park, found him")
NOT_FOR_A_WHILE = (r"(?![^.;!?]*\b(?:for (?:a |an |\d+ |a few |five |ten |twenty )?(?:minutes?|mins?|seconds?"
                   r"|hours?|bit|while|moment)|found (?:him|her|them|it)|turned up|came back|showed up)\b)")
# The death of one of the user's people or animals, told by name or by who they were ("Biscuit passed away
# peacefully this morning", "Grandad died in his sleep", "our old cat Tiger died"): news that holds for good, which
# the classifier, hearing "this morning" and grief, takes for passing (margins -0.65 to -0.01), is durable whatever
# it says, as a statement (not a question, "Biscuit died?", nor a game of make-believe). Not a thing's end ("my
# phone died").
_SOMEONES_DEATH = re.compile(
    r"^(?![^?]*\?)"
    rf"(?:{_ONE_OF_THEIRS}\b(?:\s+(?-i:[A-Z])[\w'-]+)?"
    r"|(?!(?:i|it|this|that|he|she|they|we)\b)(?-i:[A-Z])[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+)?)"
    rf"\s+(?:(?:has|had|just|sadly|finally|recently|peacefully)\s+)*(?:{DEATH})"
    # ...or as the bereaved say it: "sadly we lost Salt last week", "I lost my nan in March" (not "lost my nan's
    # ring", "we lost to Arsenal", "lost my keys")
    r"|^(?![^?]*\?)(?:\W*(?:sadly|so|well|unfortunately|tragically|and|but)\b)*\W*(?:i|we)(?:'ve|\s+have|\s+had)?\s+"
    rf"(?:(?:just|sadly|finally|recently|tragically)\s+)*lost\s+{_SOMEONE_LOST}{NOT_FOR_A_WHILE}"
    # ...or as a farewell: "RIP Mochi, 2009-2025", "rest in peace my lovely nan"
    rf"|^\W*(?:rip|r\.i\.p\.?|rest in peace)\s+{_SOMEONE_LOST}", re.I)
# The end of an illness or a treatment, told as its news ("Dad got the all clear today!", "Got the all clear from the
# consultant", "My braces came off today!"): it holds for good and ends the illness (services.apply.LATER_STATES),
# however much "today!" sounds like a mood.
_ALL_CLEAR = re.compile(
    rf"^(?![^?]*\?)(?:(?:i|we|{_ONE_OF_THEIRS}|(?-i:[A-Z])[\w'-]+)(?:'ve|'s|\s+has|\s+have)?\s+)?"
    r"(?:(?:just|finally|officially)\s+)*(?:got|been given|was given|had)\s+the all[- ]clear\b"
    rf"|^\W*(?:(?:my|our|the|{_ONE_OF_THEIRS}'s)\s+)?(?:cast|plaster|braces|stitches)\s+(?:(?:just|finally)\s+)?"
    r"(?:(?:came|come|are|is|were|was)\s+)?off\b", re.I)  # "braces off!!!"
# "I'm a Lakers fan", "we're massive Swifties": who the speaker follows, which the classifier reads near its bar
# when it does not know the name.
_FAN = re.compile(r"^(?:i'm|im|i am|we're|we are)\s+(?:a|an|such a|such an)?\s*(?:[\w'&.-]+\s+){0,4}?"
                  r"(?:fan|supporter|fanatic|swiftie|belieber|stan)s?\b(?!\s+(?:of|club)\b)", re.I)
# Who the speaker is, as a whole statement: a group they belong to by its name ("I'm a Jehovah's Witness", "I'm a
# Capricorn") or the kind of person they are ("I'm not a morning person", "I'm a night owl"), which the classifier
# reads near its bar.
_IDENTITY = re.compile(r"^(?:i'm|im|i am)\s+(?:(?:not|definitely|totally|such|very much|really)\s+)*(?:a|an)\s+"
                       r"(?:(?-i:[A-Z])[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+){0,2}"
                       r"|(?:[\w'-]+\s+){0,2}(?:person|owl|lark|early bird|homebody|introvert|extrovert))"
                       r"(?:\s+(?:at all|really|honestly|tbh|lol))?\W*$", re.I)
# A habit said in the present with how often ("I bake sourdough every weekend", "we swim twice a week", "I visit my
# nan on Sundays"): a routine, however little its words say to the classifier (not "I've been ill every day this
# week", nor "I was up every night").
_HABIT = re.compile(
    r"^(?:i|we)\s+(?:(?:usually|always|often|normally|generally|still|also)\s+)?"
    r"(?!(?:am|was|were|had|did|will|would|could|should|might|may|can|must|have|'m|'ve|'d|'ll)\b)[a-z]+\b"
    r"(?!.*\b(?:this|last|next)\s+(?:week|month|year|weekend)\b)"
    r".*\b(?:(?:every|each)\s+(?:other\s+)?(?:day|morning|afternoon|evening|night|week|weekend|month|year|summer|winter"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:on|at)\s+(?:weekends|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)"
    r"|(?:once|twice|three times|four times|\d+ times)\s+a\s+(?:day|week|month|year))\b"
    # ...or the time first: "Every morning it's a 40-minute bus ride to the depot", "every sunday we ring my mum"
    r"|^(?:every|each)\s+(?:single\s+)?(?:day|morning|afternoon|evening|night|weekday|weekend|week|monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday)\s*,?\s+(?:it's|it is|its|i|we)\b"
    r"(?!.*\b(?:this|last|next)\s+(?:week|month|year|weekend)\b)", re.I)
# Time kept off a habit ("three months smoke free today!", "a year sober", "100 days alcohol-free"): what holds now,
# however much its "today" sounds like a mood to the classifier.
_ABSTINENCE = re.compile(r"\b(?:days?|weeks?|months?|years?)\s+(?:(?:smoke|alcohol|booze|drink|nicotine|vape|sugar"
                         r"|caffeine|drug|gambling)[- ]free|sober|clean|dry"
                         r"|off (?:the )?(?:booze|drink|cigarettes|fags))\b"
                         r"|\b(?:sober|smoke[- ]free|alcohol[- ]free) (?:for|since)\b"
                         # "Day ten without a cigarette", "two weeks without a drink" (not "went two days without")
                         r"|^(?!.*\b(?:went|go|going)\b).*?\b(?:days?|weeks?|months?|years?)(?: \w+)? without"
                         r" (?:a |any )?(?:cigarettes?|fags?|smoking|vap\w*|drinks?|drinking|alcohol|booze)\b", re.I)
# One of the user's people coming to live with them or leaving their home: news of the user's household (what they
# said before of the one who lives with them stays theirs: "My grandmother lives with us.").
_IN_OR_OUT_OF_THE_HOME = re.compile(r"\b(?:moved|moving|moves|has moved|is moving) (?:in with (?:me|us)|out(?! of))\b",
                                    re.I)
# A child of the user's born: news of the user's children.
_CHILDREN = frozenset({"son", "daughter", "baby", "twins", "child", "children", "kids", "stepson", "stepdaughter"})
_BORN = re.compile(r"\b(?:born|arrived)\b", re.I)
# How far below the durable bar statements of such forms may be.
FORM_MARGIN = 0.15
# Off a medicine, a diet, a drug ("the doctor switched me off metformin", "came off the pill"); out with a friend.
_TAKEN_OFF = r"(?:switched|took|taken|came|come|weaned)\s+(?:(?:me|him|her|us|them)\s+)?off(?:\s+of)?"
_FELL_OUT = r"(?:fell out|had (?:a |an )?(?:\w+ )?falling[- ]out)"
# A piece that only ends the old value ("I quit German", "Marco and I broke up", "I'm not vegan anymore"):
# with a new value in the same message it is kept outside the slot, which the new value takes.
_ENDS_ONLY = re.compile(r"\b(?:quit|left|gave up|given up|dropped|sold|flogged|broke up|split up|said goodbye"
                        r"|ditched|deleted|uninstalled"
                        r"|stopped|moved out|no longer|no more(?! than)|recovered from|got over|stepped away from"
                        r"|did(?:n't| not) (?:last|work out)|outgr[eo]wn"
                        r"|(?:gone|went) (?:right |completely |totally |a bit )?off(?! (?:to|on|with|at|for)\b)"
                        rf"|{_LET_GO}|{_TAKEN_OFF}|{_FELL_OUT})\b"
                        r"|(?:\bnot\b|n't\b)[^,.;!?]*\bany ?more\b", re.I)

# What a change statement says is over: the old value it names. "swapped Lyon for Marseille", "switched from
# Y to X", "replaced Y with X", "X instead of Y", "left/quit/sold/gave up Y", "no longer Y", "Y and I broke up",
# "Y moved out / passed away / is gone". The old value is closed wherever it is kept (services.apply), and
# the memory of the new value is written without it.
_OLD_END = r"(?=\s+(?:for|to|with|and|because|after|when|since|in|at|last|this|so|but|over|as)\b|[,.;:!?]|$)"
# ...its old value said before another clause begins: not "left my job and I work for myself now"
_SWAP = re.compile(r"\b(?:swapped|swapping|traded|trading|exchanged|left|ditched|dropped)\s+"
                   r"(?P<old>(?:(?!\b(?:and|but|so|because) (?:i|we|i'm|we're|now)\b)[^,.;!?])+?)\s+for\s+", re.I)
_FROM_TO = re.compile(r"\b(?P<verb>switched|moved|changed|went|upgraded|downgraded|transferred|converted|graduated"
                      r"|relocated|gone)\s+from\s+(?P<old>[^,.;!?]+?)\s+(?=to\b|into\b)", re.I)
_REPLACED = re.compile(r"\breplaced\s+(?P<old>[^,.;!?]+?)\s+with\s+", re.I)
_INSTEAD = re.compile(r"\s*,?\s*\b(?:instead of|rather than)\s+(?P<old>[^,.;!?]+)", re.I)
# Fronted, the old value ends where the speaker's own clause begins, comma or not ("Instead of the walks I
# started aqua aerobics"), not at the end of that clause.
_INSTEAD_FRONTED = re.compile(r"^\W*(?:instead of|rather than)\s+(?P<old>[^,.;!?]+?)(?:\s*,\s*|\s+)"
                              r"(?=(?:i|i'm|im|i've|ive|we|we're|we've|my|our)\b)", re.I)
_ENDED = (
    re.compile(r"\b(?:left|quit|sold|flogged|ditched|dropped|gave up|given up|got rid of|rehomed|rehome"
               r"|stopped|divorced|deleted|uninstalled"
               r"|knocked on the head"
               r"|cancell?ed|unsubscribed from|moved on from|stepped down from|resigned from|stepped away from"
               r"|walked away from|recovered from|got over|outgr[eo]wn|changed (?:my|our) minds? (?:about|on)"
               r"|broke up with|split up with|split from|separated from|moved out of|moved away from|retired from"
               r"|(?:had|have|decided|needed) to (?:stop|give up|quit|sell|pull out of|drop out of|withdraw from)"
               rf"|{_GIVEN_UP}|withdrew from"
               r"|(?:decided )?not (?:to )?renew(?:ing)?"
               rf"|done with|finished with|off of|{_TAKEN_OFF}|{_FELL_OUT} with)\s+(?P<old>[^,.;!?]+?){_OLD_END}",
               re.I),
    re.compile(r"\b(?:no longer|no more(?! than))\s+(?:an?\s+)?(?P<old>[^,.;!?]+?)"
               r"(?=\s+(?:since|because|after|now|so|but|and)\b|[,.;:!?]|$)", re.I),
    re.compile(r"(?:^|\b(?:and|but|so)\s+)(?P<old>(?:the\s+)?[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+)?)\s+and\s+(?:i|me)\s+"
               rf"(?:have\s+)?(?:broke up|split up|split|separated|divorced|called it quits|called it a day"
               rf"|are (?:done|over|finished|through)|{_FELL_OUT})\b", re.I),
    re.compile(r"\b(?:i|me)\s+and\s+(?P<old>(?-i:[A-Z])[\w'-]+)\s+"
               rf"(?:broke up|split up|split|separated|divorced|{_FELL_OUT})\b", re.I),
    re.compile(r"(?:^|[,;]\s*|\b(?:and|but|so)\s+)(?P<old>(?-i:[A-Z])[\w'-]+|the\s+[\w'-]+)\s+(?:has\s+|had\s+|just\s+)?"
               rf"(?:moved out|{DEATH}|passed on|is gone|was gone|has gone|left us|retired)\b", re.I),
    # "I haven't baked in ages", "haven't been to church in months": a habit over, by what it was
    re.compile(r"\bha(?:ve|s)(?:n't| not) (?:been (?:to |on |in )?)?(?P<old>[^,.;!?]+?) in (?:ages|months|years"
               r"|a (?:long )?while|forever)\b", re.I),
    # "I've put Spanish on hold to focus on Japanese", "paused my Netflix": over for now, by its name
    re.compile(r"\bput\s+(?P<old>[^,.;!?]+?)\s+on\s+(?:hold|pause|ice|the back burner)\b", re.I),
    re.compile(r"\bpaus(?:ed|ing)\s+(?!to\b)(?P<old>[^,.;!?]+?)" + _OLD_END, re.I),
    # "turns out it was never lactose, it's fructose": what was thought is over, by its name (not "it was never about
    # the money")
    re.compile(r"\b(?:it|that)(?:'s| was| has)? never (?:actually |really |been )?(?:the )?(?P<old>[\w-]+)"
               r"(?=\s*(?:[,.;:!?\u2014\u2013]|\s-\s|$))", re.I),
    # "the Fitbit's in a drawer", "my old Kindle is gathering dust": put away, by its name
    re.compile(r"(?:^|[,;]\s*|\b(?:and|but|so)\s+)(?:(?:the|my|our)\s+(?:old\s+)?)?(?P<old>(?-i:[A-Z])[\w'+-]+"
               r"(?:\s+(?-i:[A-Z0-9])[\w'+-]*)?)(?:'s|\s+is|\s+are|'re)\s+(?:now\s+|just\s+)?(?:in (?:a|the) (?:drawer"
               r"|bin|loft|attic|cupboard)|gathering dust|collecting dust|on (?:ebay|vinted|facebook marketplace))\b",
               re.I),
    # "I let my season ticket go", "let our gym membership lapse"
    re.compile(r"\blet\s+(?P<old>(?:my|our|the)\s+[^,.;!?]+?)\s+(?:go|lapse|expire|run out)\b", re.I),
    # "we lost our dog Rex", "sadly we lost Salt": over, by their name
    re.compile(r"\b(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:(?:just|sadly|finally|recently|tragically)\s+)*lost\s+"
               rf"(?:{_ONE_OF_THEIRS}\s+)?(?P<old>(?-i:[A-Z])[\w'-]+)(?![\w'-])(?<!'s){NOT_FOR_A_WHILE}", re.I),
    # "RIP Mochi": over, by their name
    re.compile(rf"^\W*(?:rip|r\.i\.p\.?|rest in peace)\s+(?:{_ONE_OF_THEIRS}\s+)?(?P<old>(?-i:[A-Z])[\w'-]+)", re.I),
    # "I used to live in Leeds", "used to be vegetarian", "we used to have a dog called Max": over, by its name
    re.compile(r"\bused to\s+(?:be|live in|live|work (?:at|for|in|as)|work|have|own|drive|go to|attend|study at"
               r"|play)\s+(?P<old>[^,.;!?]+?)" + _OLD_END, re.I),
    # "cross-stitch is out, crochet is in"
    re.compile(r"(?:^|[,;]\s*|\b(?:and|but|so)\s+)(?P<old>[\w-]+(?:\s+[\w-]+)?)(?:\s+(?:is|are)|'s)\s+(?:so\s+)?out"
               r"\s*[,;]?\s+(?:and\s+|now\s+)?[\w' -]+?(?:\s+(?:is|are)|'s)\s+(?:so\s+)?in\b", re.I),
)
_OLD_FILLER = frozenset({"the", "a", "an", "my", "our", "his", "her", "their", "whole", "old", "entire", "it", "that",
                         "this", "them", "idea", "all", "of", "up", "me", "him", "us", "from", "with", "into", "now",
                         "anymore", "anyway", "then", "just", "really", "some", "time", "doing", "going", "being",
                         "having", "membership", "subscription"})


def ended(text: str) -> tuple[str, ...]:
    """The old values a message says are over, each as the words that name it ("Lyon", "allergic cats")."""
    text = cleaned(text)
    found = []
    for pattern in (_SWAP, _FROM_TO, _REPLACED, _INSTEAD_FRONTED, _INSTEAD, *_ENDED):
        for match in pattern.finditer(text):
            words = [w for w in re.findall(r"[\w'-]+", match["old"])
                     if w.lower() not in _OLD_FILLER and (_names(w) or len(w) >= 4)]
            # One word at least must name something: a name, a number or a longer word ("job", "car" alone
            # would end whatever mentions them).
            if words and len(words) <= 5 and any(_names(w) for w in words):
                found.append(" ".join(words))
    return tuple(dict.fromkeys(found))


def _names(word: str) -> bool:
    return word[:1].isupper() or any(c.isdigit() for c in word) or len(word) >= 5


def without_old(piece: str) -> str:
    """The piece saying only the new value: "We swapped Lyon for Marseille" -> "We switched to Marseille"."""
    piece = _SWAP.sub("switched to ", piece)
    piece = _FROM_TO.sub(lambda m: f"{m['verb']} ", piece)
    piece = _REPLACED.sub("switched to ", piece)
    return _INSTEAD.sub("", _INSTEAD_FRONTED.sub("", piece))


_CLAUSE_START = (
    r"\s*;\s*|\s+[-\u2013\u2014]+\s+|\s*\u2014\s*"
    r"|,\s+(?=(?:and |but |so |plus )?(?:now |then |since )?(?:i|i'm|im|i've|ive|i'd|i'll|my|we|we're|our|he|she"
    r"|they|it's|it|can you|could you|would you|please|what|which|how|where|when|any|should i|is there|do you|\w+ing"
    r"|the \w+ (?:is|are|was|were)"  # "Nibbles died over the weekend, the kids are gutted"
    r"|(?:is|are|should|does|do|can|could|would|will) (?:there|it|i|she|he|they|we|you|that|this))\b)"
    # "i'm dyslexic so can u keep it short": a request after the fact, with no comma between
    r"|\s+(?:so|and|but)\s+(?=(?:can|could|would|will)\s+(?:you|u)\b|please\b|pls\b)"
    # "I have a stammer, so for the panel could I get...", "eight years of Haskell, so you don't need to explain
    # monads": what the fact means for the assistant is no part of it
    r"|,\s+so\s+(?=(?:you|u|if)\b|[^,.;!?]*\?)"
    # "which is funny considering I live in Winnipeg": the reason given is a statement of its own
    r"|\s+(?=(?:considering|given that|seeing as|because)\s+(?:i|i'm|im|i've|my|we|we're|our)\b)"
    # "my name's Rajesh but everyone at work calls me Raj", "I'm Shauna by the way, most people call me Shay":
    # what others call the speaker is a fact of its own
    r"|(?:,\s+(?:(?:and|but)\s+)?|\s+(?:and|but)\s+)(?=(?:everyone|everybody|people|friends|folks|most people"
    r"|(?:all )?my friends|they)\b[^,.]*\bcall)"
)
# "I left Google and joined Stripe": the second verb's clause is news of its own, except in a supposition;
# so is "...was Friday and I start at Costco on Monday".
# ...and before a verb whose subject was left out, the speaker's ("sold the flat and moved to Leeds"), unless the
# speaker is its object: "dentist rang and moved me to Thursday" is the dentist's doing.
_PIECE_BREAK = re.compile(_CLAUSE_START + r"|\s+(?:and|but)\s+(?=(?:joined|went|moved|took|started|switched|got"
                          r"|became|now)\b(?!\s+(?:me|us)\b)|i (?:start|am starting|will start)\b)", re.I)
_SUPPOSED_PIECE_BREAK = re.compile(_CLAUSE_START, re.I)
# A message that opens a game of make-believe: what follows is the game's, not the speaker's life ("Pretend you're
# a car dealer and I'm haggling, I want to practise").
_MAKE_BELIEVE = re.compile(r"\W*(?:(?:ok(?:ay)?|so|hey|now)[, ]+)?(?:let'?s\s+)?(?:pretend|role-?play|act (?:as|like)"
                           r"|play (?:the role of|a game)|imagine (?:you|we)(?:'re| are))\b", re.I)
_SUPPOSED = re.compile(r"\W*(?:what if|if|suppose|imagine|what would|would|should i|could i)\b", re.I)
_FIRST_PERSON = r"(?:i|i'm|im|i've|ive|my|we|we're|we've|our)\b"  # the words a statement of the speaker's opens with
_FIRST_PERSON_START = re.compile(rf"\W*{_FIRST_PERSON}", re.I)


# "I'm Ahmed Khalil, second-year med student in Cairo", "Name's Tomasz, Polish originally, been in Dundee since
# 2008": after the speaker gives their name, each comma fragment that has no subject of its own is theirs.
_INTRODUCED = re.compile(r"(?P<intro>(?:.{0,25}?\b)?(?:i'm|im|i am|my name's|my name is|name's|name is|this is|it's)\s+"
                         r"(?!(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|christmas|easter)\b)"
                         r"(?-i:[A-Z])[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+){0,3})"
                         r"(?:\s+(?:by the way|btw|here|fyi))?\s*,\s+(?P<rest>.+)", re.I)  # "I'm Ola btw, mum of three"
_HAS_ITS_OWN_SUBJECT = re.compile(r"(?:i|i'm|im|i've|my|we|our|he|she|they|it|you|u|and|but|so|can|could|would"
                                  r"|will|please|pls|what|how|where|when|why|is|are|do|does|any)\b", re.I)
_BEEN = re.compile(r"(?:been|lived|worked|studied)\b", re.I)
_STATE_OF = re.compile(r"(?:from|originally|born|raised|based|living|working|studying|\d+)\b", re.I)


def introduction_statements(part: str) -> list[str]:
    """A self-introduction with fragments after it, as the introduction and one statement per fragment; or a
    profile in fragments alone, an age among them ("34, software tester, based in Manchester")."""
    found = _INTRODUCED.fullmatch(part)
    if found:
        parts = [found["intro"]] + [_fragment_said(fragment) for fragment in re.split(r"[,;]", found["rest"])]
        return [part for part in parts if part]
    fragments = [_without_fillers(fragment.strip()).strip() for fragment in _without_fillers(part).split(",")]
    fragments[0] = _SPEAKER_IS.sub("", fragments[0], count=1)  # "I'm 41, a paramedic in Valparaíso"
    if (len(fragments) >= 2 and any(_AN_AGE.fullmatch(fragment) for fragment in fragments)
            and all(fragment and len(fragment.split()) <= 6 and not _HAS_ITS_OWN_SUBJECT.match(fragment)
                    for fragment in fragments)):
        return [_fragment_said(fragment) for fragment in fragments]
    return [part]


_SPEAKER_IS = re.compile(r"^(?:i'm|im|i am)\s+(?=[1-9]\d\b)", re.I)
_AN_AGE = re.compile(r"[1-9]\d(?:\s*(?:years old|yrs old|y/?o))?")


def _fragment_said(fragment: str) -> str:
    """A fragment of a self-introduction as the speaker's statement: "34" -> "I'm 34", "from Porto" -> "I'm from
    Porto", "second-year med student in Cairo" -> "I'm a second-year med student in Cairo"."""
    fragment = _without_fillers(fragment.strip()).strip()
    if not re.search(r"\w", fragment) or _HAS_ITS_OWN_SUBJECT.match(fragment):
        return fragment
    if _BEEN.match(fragment):
        return f"I've {fragment}"  # "been in Dundee since 2008"
    if (_STATE_OF.match(fragment) or _DETERMINER.match(fragment)
            or not (set(_VALUE_WORDS.findall(fragment.lower())) & JOB_WORDS or looks_like_job(fragment.lower()))):
        return f"I'm {fragment}"  # "from Porto", "34", "Polish originally"
    return f"I'm {article(fragment)}{fragment}"  # "second-year med student in Cairo"


_VALUE_WORDS = re.compile(r"[\w'-]+")
_DETERMINER = re.compile(r"(?:a|an|the|one)\b", re.I)


def _statement_then_question(part: str) -> list[str]:
    """A first-person sentence that ends in a question after its last comma, as the statement and the question."""
    head, comma, question = part.rpartition(", ")
    if comma and part.rstrip().endswith("?") and _FIRST_PERSON_START.match(head) and len(head.split()) >= 3:
        return [head, question]
    told, asked = statement_and_question(part)
    return [told, asked] if told else [part]


# "Since I wear hearing aids, are AirPods a bad idea?", "since i'm lactose intolerant can u suggest a sauce?",
# "i'm muslim so i'll be fasting, any suhoor ideas?": the statement a question rests on, said before it.
# Without a comma the question must start as one ("can u", "is there", "what"): "my daughter is allergic to
# nuts - can you check this?" is no statement "my daughter" before a question "is allergic...?".
_AUXILIARY = r"can|could|would|will|should|do|does|is|are"
_WH = r"what|which|how|where|when"
_QUESTION_AFTER_STATEMENT = re.compile(
    r"(?:(?:since|as|because|given that|seeing as|now that)\s+)?"
    r"(?P<statement>(?:i|i'm|im|i've|ive|my|we|we're|our)\b.{4,}?)"
    rf"(?:\s*,\s*(?:so\s+|and\s+|but\s+)?(?=(?:{_AUXILIARY}|{_WH}|any|anything)\s+\S.*\?\W*$)"
    rf"|\s+(?:so\s+|and\s+|but\s+)?"
    rf"(?=(?:(?:{_AUXILIARY})\s+(?:you|u|i|we|there|they|anyone|someone)|{_WH})\s+\S.*\?\W*$))",
    re.I,
)


# ...and any statement before a comma and a request ("It's Maya Okafor now since the wedding, can you fix my footer?")
_REQUEST_AFTER_STATEMENT = re.compile(
    rf"(?P<statement>(?!(?:{_AUXILIARY}|{_WH}|did|was|were|have|has|any)\b)\w.{{4,}}?)\s*,\s*(?:so\s+|and\s+|but\s+)?"
    r"(?=(?:can|could|would|will)\s+(?:you|u)\s+\S.*\?\W*$)",
    re.I,
)


def statement_and_question(sentence: str) -> tuple[str, str]:
    """The statement a question rests on (first-person, or any before a request), without its "since", and the
    question; ("", sentence) when there is none."""
    found = _QUESTION_AFTER_STATEMENT.match(sentence.strip()) or _REQUEST_AFTER_STATEMENT.match(sentence.strip())
    return (found["statement"], sentence.strip()[found.end():]) if found else ("", sentence)


_FILLER = re.compile(
    r"^(?:big news|good news|fun fact|quick intro|heads up|side note|random|so yeah|yeah so"
    r"|btw|by the way|fyi|honestly|to be honest|tbh|for the record|just so you know|ok so|okay so|well|so|ok"
    r"|okay|oh|also|and|but|plus|yeah|yes|anyway|anyways|actually|lol|haha|hey|hi|hello"
    # interjections: "ugh my knee is acting up again" is about the knee
    r"|ugh+|argh+|meh|oof|phew|whew|welp|yay|sigh|hmm+|umm*|uh+|ah+|aw+"
    # a reason said as the speaker's statement ("since I'm diabetic, ...", "since animal welfare matters to me"),
    # not a time the speaker's statement after it holds from ("since the fall I need a rollator")
    r"|(?:since|because|as|although|though|while|now that|considering|given that|seeing as)"
    r"(?=\s+(?:i|i'm|im|i've|ive|we|we're|we've|my|our)\b|(?![^.!?]*\b(?:i|i'm|im|i've|ive|we|we're|we've)\b))"
    r"|fwiw|imo|ngl|turns out|it turns out|(?:work|job|money|health|food|diet|family|life)[- ]?wise"
    r"|plot twist|guess what|guess who|confession"
    r"|(?:i think )?i can (?:finally |now |honestly )?say|quick thing|small (?:admin )?thing"
    # "morning routine update:", "new job alert!": a headline before the news
    r"|(?:[\w']+\s+){0,3}(?:update|news|alert)(?=\s*[:!,\-])"
    # exclamations, not possessives: "My goodness, what a day!" says nothing of the user's goodness
    r"|oh my (?:god|gosh|goodness)|my (?:god|gosh|goodness|word|bad)|oh my|omg|good grief|gosh|wow)\b\s*[:,!.\-]*\s*",
    re.I,
)
_MODALS = frozenset({"can", "could", "will", "would", "should", "must", "may", "might", "shall", "cannot"})
_ADVERBS = ("just", "really", "also", "still", "always", "never", "usually", "often", "sometimes", "mostly",
            "only", "finally", "actually", "recently", "basically", "totally", "absolutely", "kinda", "officially",
            "literally", "even", "already", "definitely", "rarely", "hardly", "barely", "mainly", "generally",
            "no longer", "ever", "now", "currently", "probably", "honestly", "genuinely", "normally", "regularly",
            "occasionally", "almost", "kind of", "sort of", "quite", "pretty much")
_PAST = frozenset({"went", "got", "had", "was", "were", "made", "took", "left", "met", "became", "began", "bought",
                   "cut", "threw", "knew", "grew", "drew", "flew", "blew", "withdrew",
                   "sold", "drove", "ran", "came", "saw", "found", "felt", "kept", "lost", "did", "quit",
                   "gave", "broke", "split", "thought", "told", "said", "wrote", "won", "hit", "put", "let", "read",
                   "spent", "taught", "caught", "brought", "fought", "swam", "sang", "rode", "chose", "fell",
                   "forgot", "heard", "held", "paid", "sent", "set", "sat", "stood", "understood", "wore",
                   "used", "born", "raised"})
_PRESENT_IN_ED = frozenset({"need", "feed", "bleed", "breed", "speed", "succeed", "proceed", "exceed", "heed", "seed",
                            "shed", "embed", "wed", "shred"})  # "I need", "I feed the cats": no past tense
_IRREGULAR_THIRD = {"have": "has", "do": "does", "go": "goes", "am": "is", "are": "is", "'m": "is", "'ve": "has",
                    "be": "is", "don't": "doesn't", "dont": "doesn't", "haven't": "hasn't", "havent": "hasn't",
                    "aren't": "isn't", "weren't": "wasn't"}
_CONTRACTED = [
    (r"\b(?:i'm|im)\b", "I am"), (r"\bi've\b", "I have"), (r"\bi'll\b", "I will"), (r"\bi'd\b", "I would"),
    (r"\bwe're\b", "we are"), (r"\bwe've\b", "we have"), (r"\bwe'll\b", "we will"), (r"\bive\b", "I have"),
]


# "Since I got divorced I'm doing the finances myself": a fronted reason with no comma after it ends where the
# speaker is named again
_FRONTED_REASON = re.compile(r"^\W*(?:since|ever since|because|now that)\s+(?:i|we)\b[^,;:]*?\s+"
                             r"(?=(?:i|i'm|im|i've|ive|we|we're|we've)\s)", re.I)


# A request wrapped around a statement: "Please note on the form that I take metformin", "keep in mind that we
# don't eat pork": the statement is the speaker's.
_NOTE_THAT = re.compile(r"^\W*(?:(?:please|pls|just|also|can you|could you|would you|will you)\s+)?(?:please\s+)?"
                        r"(?:note|remember|keep in mind|bear in mind|be aware|make a note|don't forget|do not forget)"
                        rf"\b[^.!?;:]{{0,80}}?\bthat\s+(?={_FIRST_PERSON})", re.I)


def _noted(part: str) -> str:
    """The statement a request to note it wraps, without the request's question mark."""
    wrapper = _NOTE_THAT.match(part)
    return part if wrapper is None else part[wrapper.end():].rstrip(" ?")


# A statement after a colon: "When you plan the schedule, please build in rest days: I have rheumatoid arthritis".
_COLON_THEN_STATEMENT = re.compile(rf"\s*:\s+(?={_FIRST_PERSON})", re.I)


def _colon_apart(part: str) -> list[str]:
    """The part before such a colon and the statement after it, as two pieces; a headline of up to three words
    ("one more thing: I moved to Leeds") is no piece."""
    found = _COLON_THEN_STATEMENT.search(part)
    if found is None:
        return [part]
    head = part[: found.start()]
    return [head, part[found.end():]] if len(head.split()) > 3 else [part[found.end():]]


def pieces(text: str) -> list[str]:
    """The message cut where a new statement, question or request starts, each cleaned of emoji."""
    found = []
    for part in (_noted(piece) for said in split_sentences(cleaned(text))
                 for introduced in introduction_statements(said) for reason in _reason_apart(introduced)
                 for piece in _colon_apart(reason)):
        # "what would happen if I just quit and became a dog walker": the supposition goes on after "and"
        breaks = _SUPPOSED_PIECE_BREAK if _SUPPOSED.match(part) else _PIECE_BREAK
        # "my wife's birthday is Friday and she loves Thai food, gift ideas?": the fact before the question
        for piece in (piece for clause in _statement_then_question(part) for piece in breaks.split(clause)):
            piece = _without_fillers(piece).strip(" ,.")
            if re.search(r"\w", piece):
                found.append(piece)
    return found


def _reason_apart(part: str) -> list[str]:
    reason = _FRONTED_REASON.match(part)
    return [reason[0].rstrip(), part[reason.end():]] if reason else [part]


def cleaned(text: str) -> str:
    """The text as the extractors read it: plain quotes, apostrophes restored, emoji out (one between two
    clauses ends the first)."""
    text = _QUOTED.sub(_someone_elses_words_out, _plain_quotes(text))
    # An emoji between two words ends a clause as a full stop would ("turned 40 on saturday 🎂 does my plan
    # need changes?"), unless it stands for the verb after a subject ("I ❤️ Lisbon").
    text = _EMOJI_BETWEEN.sub(_between_words, text)
    kept = "".join(c for c in text if not _is_emoji(c))
    return _UNCONTRACTED.sub(lambda m: _APOSTROPHE[m[0].lower()], " ".join(kept.split()))


# A quoted passage: opened after a space, colon or bracket, closed before a space or punctuation, so that the
# apostrophes of "I'm" and "could've" inside it neither open nor close one (nor those of "'cause" and "'til").
_QUOTED = re.compile(r"""(?:^|(?<=[\s:(]))(?P<mark>["'])(?!(?:cause|cos|coz|til|till|em|bout|round|n)\b)"""
                     r"""(?P<words>[^\W\d_].*?(?<=\S))(?P=mark)(?=[\s.,!?;:)]|$)""", re.I)
_A_PERSON_IN_IT = re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|my|we|we're|we've|our|he|he's|his|she|she's|her|they"
                             r"|they're|their)\b", re.I)


def _someone_elses_words_out(quote: re.Match) -> str:
    """A quoted clause about a person is someone's words, not the speaker's news, even when it says "I": text
    to proofread or translate ("fix the grammar: 'Hi, I'm Dave, I'm 45...'"), what a colleague said. It is read
    as a bare quotation. Short quotes ("my grandkids call me 'Nana Jo'") and wording the assistant is asked to
    drop ("stop ending with 'let me know if you have any other questions'") stay."""
    words = quote["words"]
    if len(words.split()) < 4 or not _A_PERSON_IN_IT.search(words):
        return quote[0]
    return f"{quote['mark']}\u2026{quote['mark']}"


def as_read(content: str) -> str:
    """A message as the classifiers read it whole: without someone else's quoted words. Unchanged (curly
    quotes and all, as its stored vector was computed) when it quotes none."""
    plain = _plain_quotes(content)
    without = _QUOTED.sub(_someone_elses_words_out, plain)
    return content if without == plain else without


def _plain_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def _between_words(emoji: re.Match) -> str:
    if not _SUBJECT_BEFORE.search(emoji.string, 0, emoji.start()):
        return ";"
    return " love " if any(c in _HEARTS for c in emoji[0]) else emoji[0]


_HEARTS = frozenset("\u2764\u2665\U0001f495\U0001f496\U0001f497\U0001f493\U0001f49e\U0001f498\U0001f60d\U0001f970")


def _is_emoji(c: str) -> bool:
    return unicodedata.category(c) in ("So", "Sk", "Cs", "Co") or c in "\u200d\ufe0f"


_EMOJI_RUN = r"[^\w\s.,;:!?()'\"-]+"
# ...before what starts a clause: a subject, a question, a capital ("upgraded 🙌 pixel 8 gang" goes on)
_EMOJI_BETWEEN = re.compile(
    rf"(?<=\w)\s+(?:{_EMOJI_RUN}\s*)+(?=(?-i:[A-Z])|(?:(?:and|but|so)\s+)?(?:i|i'm|im|i've|we|we're|my|our|he|she"
    r"|his|her|their|they|it|it's|what|how|why|where|when|who|any|anyone|is|are|do|does|did|can|could|should|would"
    r"|will|pls"
    r"|please|thanks|thank|the|this|that|there|now|also|still|finally"
    # ...or a request ("...never around for our birthday 🙄 help me plan something")
    r"|help|tell|give|write|make|suggest|find|recommend|show|send|remind|check|plan)\b"
    # ...or a question, however it opens ("turned 31 and the railcard's gone 😭 cheapest way to Glasgow now?")
    r"|[^.!?]*\?)", re.I)
_SUBJECT_BEFORE = re.compile(r"\b(?:i|we|you|they)$", re.I)


# Contractions typed without their apostrophe ("im colorblind", "dont eat pork"), written as usual so that
# they read like the rest ("ill", "id", "were", "wont", "its" are words of their own and stay).
_APOSTROPHE = {word.replace("'", ""): word for word in (
    "i'm", "i've", "don't", "doesn't", "didn't", "can't", "isn't", "aren't", "wasn't", "haven't", "hasn't",
    "couldn't", "shouldn't", "wouldn't", "that's", "what's", "they're", "you're")}
_UNCONTRACTED = re.compile(rf"\b(?:{'|'.join(_APOSTROPHE)})\b", re.I)


def _without_fillers(text: str) -> str:
    """ "Big news: so yeah I moved" -> "I moved": what comes before the statement says nothing durable."""
    while True:
        stripped = _FILLER.sub("", text.strip(), count=1)
        if stripped == text.strip():
            return stripped
        text = stripped


def third_person(piece: str, who: str) -> str:
    """The piece as a statement about `who` ("Maria", "the user"): fillers, a trailing "lol" and the
    final punctuation gone, the speaker's words turned to the third person, content words kept."""
    text = _unshouted(ASIDE_TAIL.sub("", _without_fillers(piece)).strip(" ,.!?:;"))
    if not text:
        return ""
    for pattern, replacement in _CONTRACTED:
        text = re.sub(pattern, replacement, text, flags=re.I)
    whose = possessive(who)
    # "My partner and I are trying", "me and my bf split": the user and theirs, the verb plural as said
    text = _WE_TWO.sub(lambda m: _the_two_of_them(m, who), text, count=1)
    starts_with_speaker = re.match(r"(?:i|we|my|our)\b", text, re.I)
    # "Got my first car", "transferred to ICU": no subject, the speaker's understood
    # ...in its first clause: "Did a Pass Plus course and I'm grand now", "Started yoga when I was pregnant"
    first_clause = _SUBORDINATE.sub("", _NEXT_CLAUSE.split(text, maxsplit=1)[0])
    unsaid = not starts_with_speaker and not re.search(rf"\b(?:i|we|{re.escape(who)})\b", first_clause, re.I)
    if unsaid and (copula := _state_first(text)):
        text = f"{who} {copula} {text[:1].lower()}{text[1:]}"  # "born in Lagos" -> "Maria was born in Lagos"
    elif unsaid and _first_word(text) == "been":
        text = f"{who} has {text[:1].lower()}{text[1:]}"  # "Been a nurse for 12 years", "always been shy"
    elif unsaid and (_a_verb_first(text) or _a_present_verb_first(text)):
        # "never drink coffee" -> "Maria never drinks coffee": the verb after any adverbs agrees with the name
        text = f"{who} {_verb_agreeing(text[:1].lower() + text[1:])}"
    elif unsaid and _NONE_FIRST.match(text) and not re.search(r"\b(?:us|me|my|our)\b", first_clause, re.I):
        text = f"{who} has {text[:1].lower()}{text[1:]}"  # "no pets, my husband's allergic" -> "Maria has no pets"
    elif unsaid and _a_thing_in_ing_first(text):
        # "Driving lessons every Tuesday", "Driving test got pushed back": the speaker's, a thing and not a doing
        lowered = f"{text[:1].lower()}{text[1:]}"
        text = f"{whose} {lowered}" if _VERB_AFTER_GERUND.search(first_clause) else f"{who} has {lowered}"
    elif unsaid and _is_gerund(_first_word(text)) and not _VERB_AFTER_GERUND.search(first_clause):
        # "Doing my masters at Wits", "still driving the Ranger" (not "cooking for a crowd is in my blood")
        text = f"{who} is {text[:1].lower()}{text[1:]}"
    # "I <adverb>* <verb>" anywhere: the verb agrees with the name.
    habit = bool(_HABITUAL.search(text))
    text = re.sub(rf"\b[Ii]{_ADVERB_RUN} (\S+)",
                  lambda m: f"{who}{m[1]} {_agreeing(m[2], habit=habit)}", text)
    # ...and so does a verb after "and" with the same subject: "I'm Jewish and keep kosher" (not "to cook and bake")
    text = re.sub(rf"^({re.escape(who)} (?:is|was|has been)\b(?:(?!\bto\b)[^,;.])*?\b(?:and|but)) {_BASE_VERB}\b",
                  lambda m: f"{m[1]} {_agreeing(m[2])}", text, count=1)
    # "we got married": the speaker did, not their household
    text = re.sub(rf"\bwe{_ADVERB_RUN} (got|are|were){_ADVERB_RUN} (married|engaged|divorced|separated)\b",
                  lambda m: f"{who}{m[1]} {_SINGULAR.get(m[2].lower(), m[2])}{m[3]} {m[4]}", text, count=1, flags=re.I)
    # "we all call him Bub": the household, whose verb stays plural after "all" or "both"
    text = re.sub(rf"\bwe{_ADVERB_RUN}( (?:all|both))? (\S+)",
                  lambda m: f"{whose} household{m[1]}{m[2] or ''} {m[3] if m[2] else _agreeing(m[3])}",
                  text, count=1, flags=re.I)
    # "My mother-in-law lives with us", "No pets for us": the speaker is one of "us"
    # in lower case or opening the text only: "the US", "I have ME" name a country and an illness
    text = re.sub(r"\b(?:us|^Us)\b(?!-)", who, text)
    text = re.sub(r"\bwe\b", "they", text, flags=re.I)
    text = re.sub(r"\bI\b", who, text)
    # "my" after the speaker is named in the same sentence is "their" ("Maria quit their job"), else
    # the speaker's possessive ("Maria's dog is called Rex").
    text = re.sub(r"\b(?:my|our)\b", lambda m: "their" if _named_before(who, text, m.start()) else whose,
                  text, flags=re.I)
    text = re.sub(r"\bmyself\b", lambda m: "themselves" if _named_before(who, text, m.start()) else who, text,
                  flags=re.I)
    text = re.sub(r"\b(?:me|^Me)\b(?!-)", who, text)
    text = re.sub(r"\bmine\b", whose.rstrip("s").rstrip("'") + "'s", text, flags=re.I)
    text = re.sub(r"\bi\b", who, text)
    if not starts_with_speaker and text[:1].islower() and not _named_before(who, text, len(text)):
        text = f"{who} said: {text}"  # "yoga every morning before work": keep the words, say whose
    return sentence(text) + "."


# Three words or more in capitals in a row: shouted ("PASSED MY DRIVING TEST", "WE GOT ENGAGED"), not acronyms.
_SHOUTED = re.compile(r"\b[A-Z][A-Z']*(?:[\s,!.]+[A-Z][A-Z']*\b){2,}(?<=[A-Z']{2})")


def _unshouted(text: str) -> str:
    """The text with its shouted words in lower case ("Sam pASSED their DRIVING TEST" read as a name's first letter
    taken down); what was shouted had no capitals to keep (a place's name in it loses its own)."""
    return _SHOUTED.sub(lambda shouted: shouted[0].lower(), text)


_SINGULAR = {"are": "is", "were": "was"}
# Verbs in -ly, which any other word in -ly before a verb is not ("I practically live", "I nearly hit").
_VERBS_IN_LY = ("apply", "reply", "rely", "supply", "comply", "imply", "multiply", "fly", "ally", "rally", "tally",
                "bully", "sully", "dally")
# A group: the adverbs after a subject or a verb, kept as said.
_ADVERB_RUN = rf"((?: (?:{'|'.join(_ADVERBS)}|(?!(?:{'|'.join(_VERBS_IN_LY)})\b)[a-z]+ly\b))*)"
_NEXT_CLAUSE = re.compile(r"\s+(?:and|but|so)\s+|\s*[,;\u2013\u2014]\s*")
# What a word in -ing names before these, when it opens a message: "driving lessons", "swimming club".
_ING_THINGS = frozenset({"lesson", "lessons", "test", "tests", "class", "classes", "club", "instructor", "group",
                         "session", "sessions", "practice", "team", "exam", "course"})
_VERB_AFTER_GERUND = re.compile(r"\b(?:is|was|are|were|makes|made|keeps|kept|gives|gave|helps|helped|has|had|got"
                                r"|gets)\b",
                                re.I)


def _named_before(who: str, text: str, at: int) -> bool:
    return bool(re.search(rf"\b{re.escape(who)}\b", text[:at], re.I))


def _a_verb_first(piece: str) -> bool:
    """ "Dropped Portuguese and | went back to Spanish": a past tense first, with no verb after it, is what the
    speaker did, not someone's name ("Ted left Siemens", "Fred retired" name someone)."""
    first, second, rest = ([*piece.lower().split(None, 2), "", ""])[:3]
    if first in _ADVERBS:
        # "finally moved to Leeds", not "now it's just swimming", "now my aim is a half marathon", "still driving"
        return second not in _SUBJECTS and second not in _POSSESSIVES and not _is_gerund(second)
    # An irregular past or a change verb is never a name: its object may end in "s" ("Switched careers", "sold
    # gran's piano") and a participle may follow it ("Got promoted to manager", "got engaged"); nor is a word
    # typed in lower case ("changed careers"). Any other "-ed" word may be one ("Jared works nights").
    verb = first in _PAST or bool(_STRONG_CHANGE.fullmatch(first))
    past = verb or (first.endswith("ed") and len(first) > 3)  # not "red wine"
    plural_or_verb = second.endswith("s") and not verb and piece.lstrip()[:1].isupper()
    # "Caved and bought an iPhone": two things done (not "Jared and Ana moved")
    two_done = second == "and" and rest.split(" ", 1)[0] in _PAST
    return past and not ((_says_what_was_done(second) and not verb) or plural_or_verb
                         or (second in _VERBS_AFTER_A_NAME and not two_done))


_ING_WORDS = frozenset({"bring", "sing", "ring", "swing", "sting", "cling", "fling", "string", "wring", "spring",
                        "thing", "nothing", "something", "everything", "anything", "morning", "evening", "king",
                        "wedding"})


def _a_thing_in_ing_first(piece: str) -> bool:
    """ "Driving lessons every Tuesday": a word in -ing naming a thing, not a doing of the speaker's."""
    words = _words_without_adverbs(piece)
    return len(words) > 1 and _is_gerund(words[0]) and words[1] in _ING_THINGS


def _is_gerund(word: str) -> bool:
    return len(word) > 4 and word.lower().endswith("ing") and word.lower() not in _ING_WORDS


def _first_word(piece: str) -> str:
    """The piece's first word once adverbs are read past ("still driving" -> "driving")."""
    words = _words_without_adverbs(piece)
    return words[0] if words else ""


def _words_without_adverbs(piece: str) -> list[str]:
    """The piece's words, lowercased, adverbs left out: what opens it once "never", "still", "really" are read past."""
    return [word for word in _VALUE_WORDS.findall(piece.lower()) if word not in _ADVERBS]


def _state_first(piece: str) -> str | None:
    """ "born in Lagos", "married to Tom for 10 years", "allergic to penicillin", "fluent in Spanish": a state
    the speaker is in, said without "I am" or "I was": the verb it needs ("was" for what happened to them once,
    "is" for the others), or None. Not a past tense with an object ("married Tom in June" is news)."""
    words = _words_without_adverbs(piece)
    if not words:
        return None
    linked = len(words) > 1 and words[1] in _STATE_LINKS
    if words[0] == "born" or (words[0] in _ONCE_PARTICIPLES and linked):
        return "was"
    if len(words) > 1 and (words[1] in _A_SUBJECTS_VERB or words[1] in _MODALS):
        return None  # "single is fine by me": the word is the subject
    if words[0] in _STATES and (words[0] not in _STATES_ALSO_PAST or linked):
        return "is"
    if words[0] in _WHERE_ONE_IS and _VALUE_WORDS.match(piece.lower().lstrip())[0] in _ADVERBS:
        return "is"  # "officially in my thirties now", "finally back at work"
    if words[0] == "back" and len(words) > 1 and words[1] in ("at", "in", "on", "to", "home"):
        return "is"  # "Back at work since Monday" (not "back up the car")
    if words[0] in ("down", "up") and len(words) > 2 and words[1] == "to":
        return "is"  # "Down to 78kg after the diet", "up to three shifts a week"
    return None


# After an adverb, a preposition opens where or how the speaker is, not a verb.
_WHERE_ONE_IS = frozenset({"in", "at", "on", "back", "into", "off", "out", "over", "with", "without", "between",
                           "under", "within", "from", "home", "away", "abroad"})


_A_SUBJECTS_VERB = frozenset({"is", "was", "are", "were", "has", "had", "makes", "made", "gets", "got"})
# Participles of what happened to someone once, before one of _STATE_LINKS: "raised in Ohio" (not "raised three
# kids"), "diagnosed with asthma in 2019"; "born" always.
_ONCE_PARTICIPLES = frozenset({"raised", "adopted", "diagnosed"})
# States said without their "I am": adjectives and participles of a lasting state ("freelance as a designer"),
# and "originally" ("originally from Cork").
_STATES = frozenset({
    "allergic", "intolerant", "fluent", "vegetarian", "vegan", "pescatarian", "pregnant", "single", "married",
    "engaged", "divorced", "separated", "widowed", "retired", "unemployed", "self-employed", "employed", "based",
    "diabetic", "deaf", "blind", "colorblind", "colourblind", "left-handed", "right-handed", "autistic", "dyslexic",
    "coeliac", "celiac", "sober", "afraid", "scared", "terrified", "obsessed", "addicted", "bilingual", "trilingual",
    "enrolled", "qualified", "certified", "registered", "settled", "epileptic", "asthmatic",
    "disabled", "vaccinated", "homeschooled", "freelance", "freelancing", "originally", "done",
})
# ...of which these are also past tenses ("retired last year" is news, "married Tom"): a state only before one of
# the words a state goes on with ("married to Tom", "retired since 2019", "based in Leeds").
_STATES_ALSO_PAST = frozenset({"married", "engaged", "divorced", "separated", "widowed", "retired", "employed",
                               "based", "enrolled", "qualified", "certified", "registered", "settled", "vaccinated",
                               "homeschooled", "scared", "terrified", "obsessed", "addicted", "disabled", "done"})
_STATE_LINKS = frozenset({"to", "in", "at", "with", "of", "by", "for", "from", "since", "as", "on", "and", "but",
                          "now", "here", "there", "again"})


def _a_present_verb_first(piece: str) -> bool:
    """ "love hiking on weekends", "work nights at the hospital", "don't eat pork", "never drink coffee": a verb
    in its base form first (after any adverbs), the speaker understood; not a noun with its own verb ("work is
    busy", "swim was great")."""
    words = _words_without_adverbs(piece)
    if len(words) < 2 or words[1] in _VERBS_AFTER_A_NAME or words[1] in _MODALS:
        return False
    if words[1] in _PAST and words[1] not in _PAST_AS_ADJECTIVE:
        return False  # "work gave me a MacBook", "mum bought me a car": a noun and its verb
    if words[0] in _NOUNS_FIRST and words[1].endswith("ed"):
        return False  # "work changed my hours" (not "love baked beans")
    return words[0] in _BASE_VERBS or words[0] in _NEGATED_AUXILIARIES


# Base verbs that open a message as nouns more often than as the speaker's verb, before a regular past tense.
_NOUNS_FIRST = frozenset({"work", "school", "uni", "training", "study", "shopping"})
# Past tenses that also describe a noun after a verb ("love used cars", "hate lost causes") or are the base
# form too ("quit", "read").
_PAST_AS_ADJECTIVE = frozenset({"used", "lost", "set", "put", "let", "read", "hit", "quit", "split", "broken"})


def _verb_agreeing(text: str) -> str:
    """The text with its first word after any adverbs agreeing with a third person ("never drink" -> "never
    drinks", "don't eat" -> "doesn't eat"); a past tense stays as it is."""
    words = text.split(" ")
    for i, word in enumerate(words):
        if word.lower() not in _ADVERBS:
            core = _VALUE_WORDS.match(word)  # "love," -> "loves,"
            words[i] = _agreeing(core[0]) + word[core.end():] if core else word
            break
    return " ".join(words)


# Verbs in their base form that a speaker opens a statement about themselves with, leaving the "I" out.
# ("like" is left out: it opens as many pieces as a filler, "like 6 times".)
_BASE_VERBS = frozenset({
    "love", "adore", "enjoy", "prefer", "hate", "dislike", "miss", "need", "want", "own", "have", "live", "work",
    "study", "teach", "speak", "drive", "ride", "play", "eat", "drink", "cook", "bake", "run", "swim", "walk",
    "cycle", "train", "read", "write", "watch", "listen", "go", "visit", "use", "wear", "take", "keep", "do",
    "volunteer", "coach", "manage", "sing", "dance", "paint", "draw", "knit", "sew", "climb", "hike", "ski", "surf",
    "skate", "lift", "practice", "practise", "collect", "follow", "support", "know", "believe", "grow", "rent",
    "share", "commute", "shop", "sleep", "wake", "avoid", "smoke", "vape", "stay", "attend", "belong",
    "babysit", "foster", "raise", "help", "host", "struggle", "suffer", "care", "meditate", "pray", "journal",
    "garden", "fish", "hunt", "camp", "travel", "fly", "tutor", "mentor", "lead", "sell", "build",
    "fix", "repair", "design", "code", "program", "edit", "film", "shoot", "record", "stream", "blog", "game",
})
_BASE_VERB = rf"({'|'.join(sorted(_BASE_VERBS))})"
_NEGATED_AUXILIARIES = frozenset({"don't", "dont", "can't", "cant", "cannot", "won't", "wont", "haven't", "havent"})
# "no pets", "no kids, just a cat": the speaker has none of them (not "no way", "no idea", "no longer")
_NONE_FIRST = re.compile(r"no\s+(?!(?:longer|way|idea|problem|worries|thanks|clue|matter|doubt|one|more|offen[cs]e"
                         r"|rush|pressure|joke|kidding|comment)\b)[a-z]", re.I)


_SUBJECTS = frozenset({"i", "i'm", "im", "we", "we're", "you", "he", "he's", "she", "she's", "it", "it's", "its",
                       "they", "they're", "there", "there's", "that", "that's", "this"})
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their", "the"})
_VERBS_AFTER_A_NAME = frozenset({"is", "was", "has", "had", "and", "just", "got", "will", "can"})


def _says_what_was_done(first_word: str) -> bool:
    """Whether a piece starting with this word leaves its doer understood ("moved back home", "now works
    at a bakery"): a past tense or an adverb."""
    return first_word in _PAST or first_word.endswith("ed") or first_word in _ADVERBS


# Past tenses that are their present too, read as the present in a habit: "I read on my Kindle every night".
_PRESENT_TOO = frozenset({"read", "cut", "put", "set", "let", "hit", "hurt", "shut", "spread"})
_HABITUAL = re.compile(r"\b(?:every|each|usually|mostly|always|often|normally|generally|a lot|most (?:days|nights"
                       r"|mornings|evenings|weekends)|before bed|these days|nowadays)\b", re.I)


def _agreeing(verb: str, *, habit: bool = False) -> str:
    lowered = verb.lower()
    if lowered in _IRREGULAR_THIRD:
        return _IRREGULAR_THIRD[lowered]
    if habit and lowered in _PRESENT_TOO:
        return lowered + "s"
    if _third_person_form(lowered):
        return verb  # already agrees: "now works for the NHS" never becomes "now workses"
    past = lowered.endswith("ed") and lowered not in _PRESENT_IN_ED
    if lowered in _MODALS or lowered in _PAST or past or lowered.endswith("n't") or not lowered.isalpha():
        return verb
    if lowered in {"was", "were"}:
        return "was"
    if re.search(r"[^aeiou]y$", lowered):
        return lowered[:-1] + "ies"
    if lowered.endswith(("s", "sh", "ch", "x", "z", "o")):
        return lowered + "es"
    return lowered + "s"


def _third_person_form(word: str) -> bool:
    """ "works", "studies", "teaches", "has": a verb that agrees with someone other than the speaker."""
    if word in _IRREGULAR_THIRD.values():
        return True
    bases = (word[:-1], word[:-2], word[:-3] + "y" if word.endswith("ies") else "")
    return word.endswith("s") and not word.endswith("ss") and any(base in _BASE_VERBS for base in bases)


def complete(
    episodes: list[EpisodeInput], candidates: list[Candidate], *, subject: str, who: str
) -> list[Candidate]:
    """The rules' `candidates` for `episodes`, without those from pieces that hold nothing durable,
    plus a general candidate for each durable piece no rule covered."""
    work: list[tuple[int, EpisodeInput, list[str]]] = []
    for index, episode in enumerate(episodes):
        if episode.source in SOURCES:
            found = pieces(episode.content)
            if found:
                work.append((index, episode, found))
    if not work:
        return candidates
    texts = [piece for _, _, found in work for piece in found]
    message_vectors = _episode_vectors([episode for _, episode, _ in work])
    vectors = _vectors(work, message_vectors)
    x = classifier.features(texts, vectors)
    messages = np.vstack([np.repeat(vector[None, :], len(found), axis=0)
                          for vector, (_, _, found) in zip(message_vectors, work, strict=True)])
    make_believe = np.array([bool(_MAKE_BELIEVE.match(episode.content)) for _, episode, found in work for _ in found],
                            dtype=bool)
    probability = np.where(classifier.not_a_statement(texts) | make_believe, 0.0,
                           classifier.durable_probability(x, messages, texts))
    margin = probability - classifier.thresholds(x)  # at least 0: durable
    family_probabilities = classifier.family_probabilities(texts, vectors)
    families = [_kind_of(piece, chances) for piece, chances in zip(texts, family_probabilities, strict=True)]
    # A message that says something changed is about one slot: its pieces that say the change ("I left
    # Accenture", "joined Loopwise") take the family of the whole message, which a short piece alone often
    # misses; the others keep their own ("we threw him a party" after "my dad turned 70" is no age).
    at = 0
    for _, episode, found in work:
        if len(found) > 1 and _CHANGE.search(episode.content):
            whole = classifier.weights().families[family_probabilities[at : at + len(found)].mean(axis=0).argmax()]
            for offset, piece in enumerate(found):
                if _CHANGE.search(piece):
                    families[at + offset] = whole
        at += len(found)
    weights = classifier.weights()
    kept = list(candidates)
    added: list[Candidate] = []
    heard = dict(zip((index for index, _, _ in work),
                     _change_heard([episode for _, episode, _ in work], message_vectors), strict=True))
    changes = {index: likelihood >= weights.change_threshold for index, likelihood in heard.items()}
    at = 0
    for index, episode, found in work:
        scores, kinds = probability[at : at + len(found)], families[at : at + len(found)]
        margins = margin[at : at + len(found)]
        at += len(found)
        own = [c for c in candidates if c.episode_index == index]
        for piece, score in zip(found, scores, strict=True):
            if score < weights.veto_threshold:
                for candidate in own:
                    if (_protected(candidate) or (score > 0 and candidate.attribute in _SAID_IN_ITS_OWN_FORM)
                            or not _from_piece(candidate, piece, own)):
                        continue
                    if candidate in kept:
                        kept.remove(candidate)
        added += _general(index, episode, found, margins, kinds, own, subject=subject, who=who, heard=changes[index],
                          kept=[c for c in own if c in kept])
    kept, added = _rules_worded_in_full(kept, added)
    kept, added = _told_once(kept, added, episodes, who)
    ends = {index: ended(episode.content) for index, episode, _ in work}
    found = sorted((replace(c, ends=ends.get(c.episode_index, ()), says_change=changes.get(c.episode_index, False),
                            change_heard=heard.get(c.episode_index, 0.0))
                    for c in kept + added), key=lambda c: c.episode_index)
    return _named_as_they_say(found, episodes, subject=subject, who=who)


def _named_as_they_say(candidates: list[Candidate], episodes: list[EpisodeInput], *, subject: str,
                       who: str) -> list[Candidate]:
    """A name the user gives themselves names them in the whole message that gives it and in the later ones:
    "I got married and took my wife's last name, so it's Hannah Okafor now" wrote "Hannah Schultz is
    married." beside the new name, the old name still current in it. (The rules and this path both render
    with the name known when a clause is read; a name said later in the message came too late for them.)"""
    current, earlier = who, set()
    renamed = []
    for index, group in groupby(candidates, key=lambda c: c.episode_index):
        own = list(group)
        given = [c.value for c in own if _names_the_user(c, subject) and episodes[index].source in SOURCES]
        if given and given[-1].lower() != current.lower():
            earlier.add(current)
            current = given[-1]
        for candidate in own:
            text = candidate.text
            # a text that says the new name tells the change in the old one: "Laura Smith is Laura Jones now"
            if not _names_the_user(candidate, subject) and not re.search(rf"\b{re.escape(current)}\b", text):
                for old in earlier:  # a name in its own case ("Will", not "will"); "the user" in either
                    pattern = rf"\b(?i:{re.escape(old[:1])})(?-i:{re.escape(old[1:])})\b"
                    text = re.sub(pattern, lambda _, name=current: name, text)
            renamed.append(replace(candidate, text=sentence(text)) if text != candidate.text else candidate)
    return renamed


def _names_the_user(candidate: Candidate, subject: str) -> bool:
    return (candidate.attribute == "name" and candidate.subject.lower() == subject.lower()
            and candidate.relation in ("state", "change", "correct"))


def _episode_vectors(episodes: list[EpisodeInput]) -> np.ndarray:
    """Each message's vector as read (`as_read`): the stored one, encoded when it has none or quotes someone."""
    from memoryapp import embeddings

    read = [as_read(episode.content) for episode in episodes]
    stored = [episode.vector if text == episode.content else None for episode, text in zip(episodes, read, strict=True)]
    missing = [text for text, vector in zip(read, stored, strict=True) if vector is None]
    encoded = iter(embeddings.encode(missing) if missing else [])
    return np.vstack([np.asarray(vector, dtype=np.float32) if vector is not None else next(encoded)
                      for vector in stored])


def _change_heard(episodes: list[EpisodeInput], vectors: np.ndarray) -> list[float]:
    """How likely each message says something changed, read whole from its vector and words (the classifier's
    change head)."""
    heard = classifier.change_probability(vectors, [as_read(episode.content) for episode in episodes])
    # "Started learning the piano too": news that joins the old values, replacing none.
    return [0.0 if _ADDS.search(episode.content) else float(likelihood)
            for likelihood, episode in zip(heard, episodes, strict=True)]


def _vectors(work, message_vectors: np.ndarray) -> np.ndarray:
    """One vector per piece: a one-piece message's own vector (`message_vectors`, one a message: what it is
    trained on too, see train.examples), the others' encoded texts in one batch."""
    from memoryapp import embeddings  # imported late: the rules alone never load the model

    rows: list = []
    missing: list[tuple[int, str]] = []
    for (_, episode, found), message_vector in zip(work, message_vectors, strict=True):
        if len(found) == 1:
            rows.append(message_vector)
            continue
        for text in encoded_texts(episode.content, found):
            missing.append((len(rows), text))
            rows.append(None)
    if missing:
        for (row, _), vector in zip(missing, embeddings.encode([text for _, text in missing]), strict=True):
            rows[row] = vector
    return np.vstack(rows)


def encoded_texts(content: str, found: list[str]) -> list[str]:
    """What each piece's vector is computed from: the whole message when it is one piece, else the piece with
    the person it goes on with ("Ted left Siemens and | now works for a bakery": "Ted now works for a bakery")."""
    return [as_read(content)] if len(found) == 1 else resolved_pieces(found)


def resolved_pieces(found: list[str]) -> list[str]:
    """Each piece with who or what it goes on with from the piece before: "now works for a bakery" after "Ted
    left Siemens and" is "Ted now works for a bakery", "It's my comfort game" after "tips for Stardew
    Valley?" is "Stardew Valley is my comfort game"."""
    continued = _continued(found)
    return [continued.get(piece, piece) for piece in found]


# Words of a memory text that say nothing of its own: the rest must be said by a fuller text to stand for it.
_FUNCTION_WORDS = frozenset({"a", "an", "the", "is", "are", "am", "has", "have", "of", "to", "in", "at", "on", "and",
                             "with", "for", "their", "user", "user's", "s"})


# The verb a rule words a taste with, which the user says in their own ("obsessed with baking sourdough"): the taste is
# said in full by its value
_TASTE_VERBS = frozenset(stem(word) for word in ("likes", "loves", "enjoys", "dislikes", "hates"))


def _rules_worded_in_full(rules: list[Candidate], general: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """One memory for one statement: where a general candidate kept outside a one-value slot says all that the
    one rule candidate beside it says and more ("Maria is married to Dave." beside the rule's "Maria is
    married.", "... a night-shift paramedic in Leeds." beside "... a night-shift paramedic.", "... a
    physiotherapist at a sports clinic" read as about sports), the rule's candidate keeps its slot and value
    and takes the fuller words, and the general one goes: the user saw the fact twice."""
    # ...whatever the user is called in each: "Joaquín is a paramedic." beside "The user is a paramedic in
    # Valparaíso." when the message gave the name the general path did not yet know
    named = {stem(word) for c in rules if c.attribute == "name" for word in re.findall(r"[\w']+", c.value.lower())}

    def content(candidate: Candidate, *, of_anyone: bool = False) -> set[str]:
        """`of_anyone`: without the possessive ("girlfriend" of "the user's girlfriend"; a rule's "The user's name is
        ..." is worded by no text that does not say the user's)."""
        words = re.findall(r"[\w']+", candidate.text.lower())
        return ({stem(w.removesuffix("'s").rstrip("'") if of_anyone else w) for w in words}
                - _FUNCTION_WORDS - named - {"user"})

    worded: dict[int, Candidate] = {}  # rule candidate's index -> the general candidate that words it
    told_apart: set[int] = set()  # general candidates the rules tell, each clause in its own memory
    for fuller in general:
        if fuller.attribute and single_valued(fuller.attribute):
            continue  # a value of its own slot, which a change of it must find there
        words, plain = content(fuller), content(fuller, of_anyone=True)
        beside = [rule for rule in rules if rule.episode_index == fuller.episode_index and rule.attribute
                  and rule.kind == "semantic"
                  and all(_said(word, plain) for word in content(rule, of_anyone=True) - _TASTE_VERBS)]
        if len({rule.subject for rule in beside}) > 1 and all(
                _said(word, set().union(*(content(rule, of_anyone=True) for rule in beside))) for word in plain):
            # "I live in Leeds and my girlfriend Sam lives in Bristol": one memory each, never the user's home in
            # words that end with the girlfriend's
            told_apart.add(id(fuller))
            continue
        said = [i for i, rule in enumerate(rules) if rule.episode_index == fuller.episode_index
                and rule.subject == fuller.subject and rule.attribute and rule.kind == "semantic"
                and all(_said(word, words) for word in content(rule) - _TASTE_VERBS)]
        if len(said) == 1 and said[0] not in worded:
            worded[said[0]] = fuller
    if not worded and not told_apart:
        return rules, general
    dropped = {id(candidate) for candidate in worded.values()} | told_apart
    return ([replace(rule, text=worded[i].text) if i in worded else rule for i, rule in enumerate(rules)],
            [candidate for candidate in general if id(candidate) not in dropped])


def _told_once(rules: list[Candidate], general: list[Candidate], episodes: list[EpisodeInput],
               who: str) -> tuple[list[Candidate], list[Candidate]]:
    """One memory for what one message tells in two pieces, in the order they were said:
    - a change: where the message says a change in a slot ("I'm at Flutterwave now", "training as an electrician
      these days") and, in another piece, a change of the same person kept in no slot ("left GTBank finally",
      "Switched careers"), the slotted candidate tells both. Alone, the piece without the news outranked it for
      questions about what holds now;
    - a piece that goes on with "it", "they", "that"... no earlier piece resolved ("asthma nurse gave me a new
      inhaler, it's a purple Seretide one", "two boys, Sam and Leo, they're 8 and 5") is told with the piece said
      before it: alone it said nothing of what it was about ("The user said: it's a purple Seretide one."); so is a
      fragment without a verb ("officially our son")."""
    told: dict[int, list[Candidate]] = {}  # the host candidate's id -> the candidates it now tells
    everything = rules + general
    found = {index: pieces(episodes[index].content) for index in {c.episode_index for c in everything}}
    # in the order said; of two read from one piece the fuller words first ("just turned 19 last month", then the
    # rule's "is 19 years old")
    said_at = {id(c): (_piece_of(_unsaid(c.text, who), found[c.episode_index]), -len(c.text)) for c in everything}
    for index in found:
        own = [c for c in everything if c.episode_index == index and c.kind == "semantic"]
        changes = [c for c in own if c.relation == "change"]
        for rest in (c for c in changes if not c.attribute):
            news = [c for c in changes if c.attribute and c.subject == rest.subject]
            if len(news) == 1:
                told.setdefault(id(news[0]), [news[0]]).append(rest)
        said_before = sorted(own, key=lambda c: said_at[id(c)][0])
        for at, piece in enumerate(said_before):
            taken = any(piece in parts for parts in told.values())
            if at and not taken and piece in general and _goes_with_the_one_before(_unsaid(piece.text, who)):
                # told with the fullest memory of the piece before ("wife Carmen adores sunflowers", not the
                # "wife's name is Carmen" read from the same words)
                earlier = [c for c in said_before[:at] if said_at[id(c)][0] < said_at[id(piece)][0]]
                host = min((c for c in earlier if said_at[id(c)][0] == said_at[id(earlier[-1])][0]),
                           key=lambda c: said_at[id(c)], default=said_before[at - 1])
                told.setdefault(id(host), [host]).append(piece)
    hosts = {id(c) for c in everything if id(c) in told and not any(c in parts[1:] for parts in told.values())}
    folded = {id(part) for host in hosts for part in told[host][1:]}
    if not folded:
        return rules, general

    def telling(candidate: Candidate) -> Candidate:
        if id(candidate) not in hosts:
            return candidate
        content = episodes[candidate.episode_index].content
        parts = sorted(told[id(candidate)], key=lambda part: said_at[id(part)])
        texts = [part.text.rstrip(".!?") for part in parts[:1]] + [_unsaid(part.text, who).rstrip(".!?")
                                                                     for part in parts[1:]]
        joined = "; ".join([texts[0], *(_as_typed(text, content) for text in texts[1:])])
        return replace(candidate, text=f"{joined}.")

    return ([telling(c) for c in rules if id(c) not in folded], [telling(c) for c in general if id(c) not in folded])


def _unsaid(text: str, who: str) -> str:
    """The words of a memory without third_person's "Maria said: " (its words once told with another piece's)."""
    return text.removeprefix(f"{sentence(who)} said: ")


# A piece that goes on with what was said before it, naming it no more than this
# (a "he" or "she" after a piece about one person is that person already: _continued)
_GOES_ON = re.compile(r"(?:it|it's|its|they|they're|theyre|their|that|that's|thats|this|these|those|he|he's|hes|his"
                      r"|she|she's|shes|her)\b", re.I)
# A piece of a few words that names and does not tell: "officially our son", "finally homeowners" (not a fact said
# as a fragment on purpose: "Vegetarian.", "two kids, | both teens").
_FRAGMENT = re.compile(r"\W*(?:(?:officially|finally|now|also)\s+(?:(?:my|our|the|a|an)\s+)?|(?:my|our|the|a|an)\s+)"
                       r"(?:[\w'-]+\s+)?[\w'-]+\W*", re.I)


def _goes_with_the_one_before(piece: str) -> bool:
    """Whether a piece says nothing of what it is about without the piece before it: it goes on with "it", "they"...
    or is a fragment without a verb."""
    return bool(_GOES_ON.match(piece) or _FRAGMENT.fullmatch(piece))


def _piece_of(text: str, found: list[str]) -> int:
    """Which of the message's pieces a memory text was read from: the first that shares most of its stems."""
    words = {stem(word) for word in re.findall(r"[\w'-]+", text.lower())} - _FUNCTION_WORDS
    shared = [len(words & {stem(word) for word in re.findall(r"[\w'-]+", piece.lower())}) for piece in found]
    return max(range(len(found)), key=lambda at: (shared[at], -at)) if found else 0


def _as_typed(text: str, content: str) -> str:
    """A text's first word inside a sentence, in the case the user typed it: "the user", "now the user shares",
    "her name is Lourdes", but "Maya is 4"."""
    first = text.split(" ", 1)[0]
    lowered = first.lower()
    if first == "The" or _GOES_ON.fullmatch(first) or re.search(rf"\b{re.escape(lowered)}\b", content):
        return lowered + text[len(first):]
    return text


# Slots whose rules read only the forms that say them ("I'm seeing someone", "I'm divorced"): a statement in those
# words holds, however little the classifier hears in it (0.14 for "I'm seeing someone.", against 0.98 for "I'm
# single"); a question or a supposition (probability 0) still says nothing.
_SAID_IN_ITS_OWN_FORM = frozenset({"relationship_status"})


def _protected(candidate: Candidate) -> bool:
    # A rule that read a change ("turned 30", "moved to Lyon") read its words, not a mood: news said with
    # "today" or "!!!" is what the classifier most often doubts.
    # A name read as a name ("Lena here", "call me Jo") is rarely said in a way the classifier has heard.
    return (candidate.relation in ("retract", "correct", "negate", "change") or candidate.kind == "procedural"
            or (candidate.attribute == "name" and candidate.value[:1].isupper()))


def _from_piece(candidate: Candidate, piece: str, own: list[Candidate]) -> bool:
    """Whether the rule candidate was read from this piece: most of its value's words are in it
    ("eats eggs" from "I still eat eggs")."""
    words = {stem(w) for w in re.findall(r"\w+", candidate.value)}
    if not words:
        return False
    said = {stem(w) for w in re.findall(r"\w+", piece)}
    return len(words & said) * 2 >= len(words)


_PLAIN_WORDS = frozenset(_ADVERBS) | {"really", "because", "though", "although", "without", "whatever", "anything",
                                       "something", "everything", "nothing", "always", "pretty", "little", "months",
                                       "weeks", "years", "honestly", "actually", "moment", "nowadays", "lately",
                                       "originally",
                                       "called", "named"}  # "a brother called Ben" is "a brother named Ben"


def _key_words(piece: str) -> set[str]:
    """What a memory of the piece must keep: names, numbers and the longer content words."""
    words = re.findall(r"[\w'-]+", piece)
    return {w.lower() for i, w in enumerate(words)
            if w.lower() not in _PLAIN_WORDS and w.lower() != "i"
            and ((i and w[:1].isupper()) or any(c.isdigit() for c in w) or len(w) >= 6)}


def _own_clause_apart(piece: str, own: list[Candidate], subject: str) -> tuple[str, str] | None:
    """A piece that tells of one of the user's people, then of the user in a clause of their own that no rule read,
    in two: "My husband is a firefighter and I teach third grade" -> ("My husband is a firefighter", "I teach third
    grade"). (_covered counts only the longer words, so the rule's memory of the husband said the whole piece.) Not
    a clause that says little without the rest ("... and I love it here"), nor one beside a fact of the user's own
    ("I have diabetes so I'm always checking my levels"), which reads best whole."""
    read = [c for c in own if _from_piece(c, piece, own)]
    if not read or any(c.subject == subject for c in read):
        return None
    clauses = split_clauses(piece)
    left = [clause for clause in clauses[1:] if _OWN_CLAUSE.match(clause) and not _POINTS_BACK.search(clause)
            and not any(_from_piece(c, clause, own) for c in own)]
    at = piece.find(left[0]) if len(left) == 1 else -1
    if at <= 0:
        return None
    lead = _OWN_CLAUSE.match(left[0])
    return piece[:at].rstrip(" ,;"), lead[1] + left[0][lead.end():]


_OWN_CLAUSE = re.compile(r"(?:(?:and|but|so|plus|while)\s+)?((?:i|i'm|i've|im)\b)", re.I)
_POINTS_BACK = re.compile(r"\b(?:it|its|it's|there|here|that|this|them|those|these|they|he|she|him|her|one)\b", re.I)


def _covered(piece: str, own: list[Candidate], subject: str) -> bool:
    """Whether the rule candidates already say what the piece says. One rule memory must hold all its
    names and content words ("the sister is a vet" and "the sister's name is Ana" do not say that Ana is
    a vet), except that facts of the user's own may share them out ("Sam is vegetarian", "Sam lives in
    Porto" say "I'm vegetarian and I live in Porto")."""
    if not any(_from_piece(c, piece, own) for c in own):
        return False
    if any(c.attribute == "instruction" and _from_piece(c, piece, own) for c in own):
        return True  # the instruction keeps the request's own words
    if dated := _dated_from(piece, own):
        # a plan or appointment with its day resolved ("on Thursday" -> "on Thursday 5 June 2025") says the piece
        # unless the piece says more than its day ("a job interview at Amazon tomorrow")
        undated = {stem(w) for w in _key_words(re.sub(r"'s\b", "", _WITHOUT_TIME.sub(" ", piece))) - _PLANNING}
        return all(_said(word, {stem(w) for w in re.findall(r"\w+", dated.text)}) for word in undated)
    wanted = {stem(w) for w in _key_words(piece)}

    def holds(candidates: list[Candidate]) -> bool:
        words = {stem(w) for c in candidates for w in re.findall(r"\w+", c.text)}
        return all(_said(word, words) for word in wanted)

    return any(holds([c]) for c in own) or holds([c for c in own if c.subject == subject])


def _dated_from(piece: str, own: list[Candidate]) -> Candidate | None:
    """The rule's plan or appointment read from this piece, which stops being current when its day has passed."""
    return next((c for c in own if c.valid_to is not None and _from_piece(c, piece, own)), None)


# The families of what is for a day still to come, which a piece no rule read may tell ("got a physio appointment on
# tuesday", "my GP appointment at the Lister surgery is next Monday")...
_PLANS = frozenset({"appointments", "plans", "travel"})
# ...or of whatever family the model hears, an appointment in its own words ("seeing a dermatologist next week about
# my eczema" reads as health)
_AN_APPOINTMENT = re.compile(r"\b(?:appointments?|appt|check-?up|consultation|seeing (?:a|an|the|my|our) (?:\w+ist"
                             r"|\w+ician|doctor|GP|nurse|physio|surgeon|consultant|midwife|counsell?or|optician|vet))\b",
                             re.I)
# ...unless it is told as past, where a weekday or a date alone is the last one ("had a scan on the 3rd")
_TOLD_AS_PAST = re.compile(r"\b(?:had|went|was|were|did|saw|attended|got back|came back|yesterday|last|ago)\b", re.I)
# ...or as going on since then ("I've been seeing a physio since January")
_ONGOING = re.compile(r"\bsince\b|\bbeen \w+ing\b", re.I)


def _plan_ends(piece: str, said_at: datetime) -> datetime | None:
    """When the plan or appointment a piece tells is over, when it names a day (week, month) still to come."""
    ahead = find_time(piece, said_at, prefer_future=True)
    if ahead is None or ahead.period_end <= said_at or _ONGOING.search(piece[: ahead.end]):
        return None
    behind = find_time(piece, said_at)
    if behind is not None and behind.when != ahead.when and _TOLD_AS_PAST.search(piece):
        return None
    return ahead.period_end


def _on_its_day(text: str, said_at: datetime, plan_ends: datetime) -> str:
    """The text of a plan's piece with its day named as the rule's plan names it ("on the 3rd" -> "on Monday 3 March
    2025"): a reader weeks later would take "the 3rd" for another month, and the rule's words are then all in the
    piece's (_rules_worded_in_full: one memory for the plan, with the rest of what was said of it)."""
    found = find_time(text, said_at, prefer_future=True)
    if found is None or found.period_end != plan_ends:
        return text
    return text[: found.start] + calendar_words(found, text[: found.start]) + text[found.end :]


_PLANNING = frozenset({"hoping", "planning", "thinking", "wanting", "intending", "aiming", "booked", "scheduled"})
# The day and hour a plan is for, which its memory says resolved ("tomorrow at 3" -> "on Tuesday 3 June 2025")
_WITHOUT_TIME = re.compile(
    r"\b(?:(?:on|this|next|last|by)\s+)?(?:today|tonight|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday|weekend|week|month|year|morning|afternoon|evening|january|february|march|april|may|june|july|august"
    r"|september|october|november|december|\d{1,2}(?:st|nd|rd|th)|\d{4})\b"
    r"|\bat\s+\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm)?\b|\b\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm)\b", re.I)


def _said(word: str, words: set[str]) -> bool:
    """The word or a spelling of it ("favourite" in "favorite", "colour" in "color")."""
    return word in words or any(SequenceMatcher(None, word, other).ratio() >= 0.8 for other in words)


# "I'm Mia", "my name is Tom Hale": the speaker's name and nothing else, a capitalised word that is none of the
# words people describe themselves with ("I'm British", "I'm Catholic", "I'm Vegan").
_INTRODUCTION = re.compile(r"(?:i'm|im|i am|my name's|my name is|name's)\s+(?P<name>(?-i:[A-Z])[\w'-]+"
                           r"(?:\s+(?-i:[A-Z])[\w'-]+){0,2})", re.I)
_DESCRIBING_WORDS = frozenset(word.lower() for words in (NATIONALITIES, LANGUAGES, DIET_ALIASES, HEALTH_ADJECTIVES,
                                                         RELATIONSHIP_STATUSES, JOB_WORDS) for word in words) | {
    "catholic", "christian", "muslim", "jewish", "hindu", "buddhist", "sikh", "atheist", "agnostic", "mormon",
    "deaf", "blind", "autistic", "gay", "lesbian", "bi", "bisexual", "straight", "queer", "trans", "nonbinary",
    # ...and how one is for now ("I'm Back", "I'm Done")
    "back", "sorry", "done", "home", "fine", "here", "there", "ready", "good", "okay", "ok", "sure", "late", "early",
    "tired", "busy", "free", "off", "out", "away", "new", "happy", "sad", "sick", "ill", "well", "alone", "glad",
    "excited", "stuck", "lost", "bored", "hungry", "full", "thankful", "grateful", "confused", "exhausted"}


def introduces_the_speaker(piece: str) -> bool:
    found = _INTRODUCTION.fullmatch(piece.strip())
    return bool(found) and not any(word.lower() in _DESCRIBING_WORDS for word in found["name"].split())


def _general(index, episode, found, margins, kinds, own, *, subject, who, heard: bool,
             kept: list[Candidate]) -> list[Candidate]:
    """The general candidates of one message's pieces (`found`); `own` are the rules' candidates from it, `kept`
    those of them no piece's doubt vetoed."""
    message_changes = bool(_CHANGE.search(episode.content))
    # Words that say a value was replaced make the statement that says them more likely to be about the
    # speaker's life (not the rest of the message: "we threw him a party" after "my dad turned 70"); so does
    # "now" in a message the classifier hears a change in ("Done with that, now I'm hooked on The Bear",
    # "it's all romcoms now"), which alone is as often a mood ("now I'm confused").
    def bar(piece: str, kind: str) -> float:
        if (_SOMEONES_DEATH.search(piece) or _ALL_CLEAR.search(piece) or _ABSTINENCE.search(piece)
                or _LEFT_WORK.search(piece) or _DEGREE_DONE.search(piece)) and not _MAKE_BELIEVE.match(episode.content):
            return -1.0  # any margin: probabilities run from 0 to 1
        if _FAN.search(piece) or _HABIT.search(piece) or _IDENTITY.search(piece):
            return -FORM_MARGIN
        if (_CHANGE_PIECE.search(piece) or (_ARRIVED.search(piece) and kind in _THINGS_KEPT)
                or (_FIRST_DAYS_AT.search(piece) and kind in _WORK_SLOTS
                    and not _plan_ends(piece, episode.occurred_at))):  # not "first day at Barclays tomorrow"
            return -CHANGE_PIECE_MARGIN
        return -CHANGE_MARGIN if _STRONG_CHANGE.search(piece) or (heard and _NOW_PIECE.search(piece)) else 0.0

    continued = _continued(found)
    # A piece going on with "it", "they"... about what the piece before it said is about that: alone it says too
    # little for the classifier ("Repainted the kitchen, | it's dark green now"), so it is as durable as that one.
    margins = [max(margin, margins[at - 1]) if at and _GOES_ON.match(piece) and continued.get(piece, piece) == piece
               else margin for at, (piece, margin) in enumerate(zip(found, margins, strict=True))]
    # "I'm Mia" opening a message that goes on ("I'm Mia, I'm a pharmacist in Leeds.", "Hey, I'm Tom. I'm 40"):
    # the speaker's name by its form, which the classifier, reading the whole message, often puts just under the bar
    chosen = [(piece, "name" if introduced else kind) for piece, margin, kind in zip(found, margins, kinds, strict=True)
              if margin >= (-INTRODUCTION_MARGIN if (introduced := introduces_the_speaker(piece)) else bar(piece, kind))
              and not _covered(piece, own, subject)]
    # The user's own clause beside what a rule read of one of their people, alone and in no slot (the family is the
    # whole piece's), and what the rule did not read of the rest with its family: "My husband is a firefighter | and
    # I teach third grade", "my boyfriend is a nurse and works nights | so I basically live alone".
    for piece, margin, kind in zip(found, margins, kinds, strict=True):
        if margin >= bar(piece, kind) and (apart := _own_clause_apart(piece, own, subject)):
            rest, clause = apart
            chosen = [c for c in chosen if c[0] != piece]
            chosen += [(rest, kind)] if not _covered(rest, own, subject) else []
            chosen.append((clause, ""))
    # A piece going on with "it", "they"... about what a kept piece said, which no name resolves ("I got a new
    # laptop, | it's a ThinkPad X1") is kept with it, however little it says alone: _told_once tells the two in
    # one memory, so it adds words to a memory and never a memory of its own.
    for before, piece, kind in zip(found[:-1], found[1:], kinds[1:], strict=True):
        kept_before = any(before == c[0] for c in chosen) or any(_from_piece(c, before, kept) for c in kept)
        if (kept_before and _GOES_ON.match(piece) and continued.get(piece, piece) == piece
                and not any(piece == c[0] for c in chosen) and not _covered(piece, own, subject)):
            chosen.append((piece, kind))
    # ...and, the other way, the piece such a kept piece goes on from, when that one is near the bar ("Chopped all
    # my hair off, | it's a pixie cut now"): alone, the "it" says nothing of what it is about; nor does a fragment
    # without a verb ("the adoption order for Kai came through!!! | officially our son").
    for before, piece, margin, kind in zip(found[:-1], found[1:], margins[:-1], kinds[:-1], strict=True):
        if (any(piece == c[0] for c in chosen) and _goes_with_the_one_before(piece)
                and continued.get(piece, piece) == piece
                and not any(before == c[0] for c in chosen) and margin > -CHANGE_MARGIN
                and not _covered(before, own, subject)):
            chosen.append((before, kind))
    ending = [c for c in chosen if _ENDS_ONLY.search(c[0])]
    if message_changes and ending:
        # "I quit German, doing Mandarin now": when the piece that only ends the old value is durable, so is
        # every other statement of the message that says what holds now, even one the classifier alone would
        # doubt: the message as a whole was judged durable.
        rest = [(piece, kind) for piece, margin, kind in zip(found, margins, kinds, strict=True)
                if (piece, kind) not in ending and not _ENDS_ONLY.search(piece) and not _covered(piece, own, subject)
                and margin > -(CHANGE_PIECE_MARGIN if _CHANGE_PIECE.search(piece) else CHANGE_MARGIN)]
        if rest:
            # The ending piece stays, outside any slot, as the history of the change ("The user gave up
            # smoking."): the news is what holds now, and the old value is closed by what it names.
            chosen = [(piece, ending[0][1]) for piece, _ in rest] + [(piece, "") for piece, _ in ending]
    taken = {c.attribute for c in own if c.attribute and c.subject == subject}
    taken_by = {(c.subject, c.attribute) for c in own if c.attribute}
    # One value per single slot from one message: the piece that says "now" (not "not ... anymore") if one
    # does, else the first; the rest is kept outside the slot, unless it says what the old value was like
    # ("I'm vegetarian again; vegan was too hard").
    chosen.sort(key=lambda c: not _NOW.search(c[0]) or bool(_ENDS_ONLY.search(c[0])))
    filled: set[tuple[str, str]] = set()
    made = []
    for piece, kind in chosen:
        said = continued.get(piece, piece)
        if (piece != found[0] and said == piece and _WHAT_IT_WAS_LIKE.match(piece)
                and not _CHANGE.search(piece)):
            continue  # "I'm vegetarian again, being vegan was too hard": how the old value was, not what holds
        if _PASSING_RUN.search(said):
            continue  # "I've had a migraine every day this week": a run of days that ends with the week
        if _visit_of_no_one_named(said):
            continue
        text = third_person(without_old(said), who)
        if not text or len(text) < 8 or _SAYS_NOTHING.fullmatch(said):
            continue
        attribute, single = SLOTS.get(kind, (kind, False))
        about = _about(said, text, subject=subject, who=who)
        ended_kind = "job" if _LEFT_WORK.search(said) else "degree" if _DEGREE_DONE.search(said) else None
        if about == subject and ended_kind:
            # "put in my notice, last day is the 30th", "handed in my notice, going travelling": the job it ends,
            # whatever else the message is about (no plan nor appointment); "passed my viva": the degree
            kind = ended_kind
            attribute, single = SLOTS[kind]
        if about not in (None, subject) and not _OWNED.match(said):
            # "Grandpa turned 89": the user's grandpa (a relative said as a name is a word after "my")
            text = third_person(without_old(f"my {said[:1].lower()}{said[1:]}"), who)
        if about is None:
            attribute = ""  # about someone or something else: never in a slot of the user's
        if about not in (None, subject) and _IN_OR_OUT_OF_THE_HOME.search(said):
            # "my boyfriend moved in with me": who lives with the user, whoever moved ("who do I live with?")
            about, attribute = subject, "home_life"
        if about not in (None, subject) and kind in _THINGS_GIVEN and _GIVEN_ME.search(said):
            # "my son gave me his old Pixel 7": what the user has now, whoever it came from ("what phone do I have?")
            about = subject
        if attribute == "pregnancy" and (about or "").partition("'s ")[2] in _CHILDREN and _BORN.search(said):
            # "Our son Arlo was born on the 3rd": news of the user's children ("do I have kids?"), not a pregnancy of
            # the son's; it still ends the user's pregnancy (services.apply.LATER_STATES)
            about, attribute = subject, "children"
        if about and about != subject and (about, attribute) in taken_by:
            attribute = ""
        if about == subject and attribute in taken:
            attribute = ""  # the rules already fill this slot from this message: keep the words beside it
        if attribute in _NAMED_SLOTS and not _names_something(piece):
            attribute = ""  # "I've moved like 9 times": no place to put in the city slot
        if about == subject and attribute not in _PARTNER_SLOTS and _PARTED.search(said):
            attribute = ""  # "Sam and I ended things, long distance was too much": no home
        if attribute in _PARTNER_SLOTS and not _PARTNER_WORDS.search(episode.content):
            attribute = ""  # "I'm Mia, I'm a pharmacist in Leeds" tells of no partner, whatever the classifier heard
        if _ACCEPTED.search(said):
            attribute = ""  # "resigned myself to another year of this job": beside the job, never its value
        if attribute in _WORK_SLOTS and _ON_THE_SIDE.search(piece):
            attribute = ""  # "I deliver for Deliveroo on weekends": beside the job, not instead of it
        if attribute in _WORK_SLOTS and _FIRST_DAYS_AT.search(said):
            attribute = "employer"  # "survived my first day at KPMG": where they work now, whatever the job
        if attribute == "city" and a_stay(piece, for_a_day=True):
            attribute = ""  # "in Berlin right now for a conference": a stay, beside the home
        if attribute == "commute" and _ONE_TRIP.search(piece):
            attribute = ""  # "got the train to Manchester for the gig on Saturday": one trip, not the way to work
        if _SOMEONES_DEATH.search(piece) or _ABSTINENCE.search(piece):
            # whatever the family model hears in grief ("sadly we lost Salt": city) or in "a year sober" (job):
            # services.apply files news of a death where what it ends was, the slot of the one who died
            attribute = ""
        dated = _dated_from(piece, own)
        plan_ends = (dated.valid_to if dated else _plan_ends(said, episode.occurred_at)
                     if kind in _PLANS or _AN_APPOINTMENT.search(said) else None)
        if plan_ends and single:
            attribute = ""  # "a consultant appointment at the Royal Free on the 3rd": a day's event, no job
        if attribute and single and (about, attribute) in filled:
            if message_changes and _WAS.search(_SUBORDINATE.sub("", piece)):
                continue  # what the old value was like ("vegan was too hard"): it must not stay current
            attribute = ""  # the rest of the news ("got an offer from Amazon", "I'm a warehouse manager there now")
        was = used_to(piece)
        if was:
            attribute = ""  # "I used to live in Dubai": what was, beside the slot's value, never in its place
        if attribute and single:
            filled.add((about, attribute))
        relation = "state"
        # A change (services.apply closes the old value, in its slot or not, or that of a person it names).
        if not was and message_changes and (single or about is None or (_REPLACES.search(episode.content)
                                                                         and not _ADDS.search(episode.content))):
            relation = "change"
        if plan_ends:
            text = _on_its_day(text, episode.occurred_at, plan_ends)
        text = sentence(with_dates_named(text, episode.occurred_at))  # read later, "yesterday" would be wrong
        value = _value(text, who)
        if (attribute == "name" or about == subject) and _CALLED_BY_OTHERS.search(piece):
            attribute = "nickname"  # "everyone at work calls me Raj": what they are called, beside their name
        if attribute in _NAME_TEXTS and about == subject:
            # "I'm Olga Petrova": the slot holds the name, never the rest of the sentence ("is Olga Petrova").
            found_name = _BARE_NAME.fullmatch(piece) or _NAME_GIVEN.search(piece)
            if not found_name:
                attribute = ""
            else:
                value = found_name[0] if found_name.re is _BARE_NAME else found_name["name"] or found_name["here"]
                value = value.rstrip("'\"")  # a name said in quotes ("my grandkids call me 'Nana Jo'")
                if any(c.attribute in _NAME_TEXTS and c.value.lower() == value.lower() for c in own):
                    continue  # "Call me Tom, nobody calls me Thomas": the rules named them; never "Tom goes by Tom."
                text = _NAME_TEXTS[attribute].format(value=value, who=sentence(who))
        made.append(Candidate(
            text=text, subject=about or subject, attribute=attribute, value=value,
            valid_from=episode.occurred_at, importance=GENERAL_IMPORTANCE, confidence=GENERAL_CONFIDENCE,
            relation=relation, episode_index=index,
            # the piece of a plan said with more than its day: it ends with the plan ("interview at Amazon tomorrow")
            valid_to=plan_ends,
        ))
    return made


def _continued(found: list[str]) -> dict[str, str]:
    """The pieces that go on with the person the piece before them began with, given that person: "Ines
    left Siemens and | now works for a bakery" -> "Ines now works for a bakery" (not the speaker's job)."""
    continued = {}
    for before, piece in zip(found, found[1:], strict=False):
        if ((thing := _THING_FIRST.match(piece)) and _SPEAKER.search(piece) and (named := _the_one_name(before))
                and not any(named in old for old in ended(before))):
            # "Can you give me tips for Stardew Valley? | It's my comfort game": what the speaker says of it (not
            # of what the piece before said is over: "moved on from FIFA, | it's all Mario Kart in our house now")
            verb = {"'s": "is", "'re": "are"}.get(thing[2].lower(), thing[2].strip())
            continued[piece] = f"{named} {verb} {piece[thing.end():]}"
            continue
        pronoun = _PRONOUN_FIRST.match(piece)
        asked = [m[0] for m in _ASKED_ABOUT.finditer(before)] if before.endswith("?") else []
        if pronoun and len(asked) == 1 and _the_one_person(asked[0], asked[0], pronoun[1].lower()):
            # "What's a good gift for my mum? | She loves gardening": the one person the question was about
            continued[piece] = _said_of(asked[0], piece, pronoun)
            continue
        lead = _LEAD.match(before)
        if not lead or lead[1].lower() in _NOT_A_LEAD or _a_verb_first(before):
            if pronoun and (person := _the_one_named_within(before, pronoun[1].lower())):
                # "I'm a carer for my mum, | she has Parkinson's": the one of the user's people the piece names
                continued[piece] = _said_of(person, piece, pronoun)
                continue
            if (named := _lowercase_doer(before)) and _third_person_form(next(iter(_words_without_adverbs(piece)), "")):
                # "tariq graduated | now works for the NHS": the verb tells it is Tariq who works, not the speaker
                continued.setdefault(before, named + before[len(named):])
                continued[piece] = f"{named} {piece}"
            continue
        if (_says_what_was_done(piece.split(" ", 1)[0].lower()) and not _OWN_SUBJECT.match(piece)
                and _does_something(before, lead)):
            continued[piece] = f"{lead[1]} {piece}"
        elif pronoun and _the_one_person(before, lead[1], pronoun[1].lower()):
            # "Becky's quit teaching, | she's retraining as a counsellor": Becky's news, not the speaker's;
            # "my dad's name is Rafael, | he's turning 70", "our twins are called Ivy and Rose, | they're 6"
            continued[piece] = _said_of(lead[1], piece, pronoun)
    return continued


def _does_something(piece: str, lead: re.Match) -> bool:
    """Whether the piece's lead is someone doing something ("Tariq graduated", "Becky's quit"), not a capital in a
    name for a day ("Results day!!", "Moving day"): the word after a name is a verb."""
    if not lead[1][:1].isupper() or lead[1].endswith("'s"):
        return True  # "my sister ...", "she ...", "Becky's ..."
    after = piece[lead.end():].split(" ", 1)[0].lower().strip(".,;:!?")
    return (after in _VERBS_AFTER_A_NAME or after in _ADVERBS or _says_what_was_done(after)
            or _third_person_form(after))


def _the_one_named_within(before: str, pronoun: str) -> str | None:
    """The one of the user's people a piece names after its start ("my mum" in "I'm a carer for my mum"), when
    nobody else is named in it and the pronoun agrees with them."""
    named = [found[0] for found in _ASKED_ABOUT.finditer(before)]
    if len(named) != 1 or pronoun == "they":
        return None
    rest = re.sub(r"\bI(?:'m|'ve|'d|'ll)?(?=\s)", "", before.replace(named[0], " ", 1))  # the speaker is no one else
    return named[0] if _the_one_person(f"{named[0]} {rest}", named[0], pronoun) else None


def _lowercase_doer(piece: str) -> str | None:
    """ "tariq graduated": a name typed in lower case, as the one word before the piece's past tense, capitalized."""
    first, second = ([*piece.lower().split(None, 2), "", ""])[:2]
    done = second in _PAST or (second.endswith("ed") and second not in _PRESENT_IN_ED)
    if not done or not first.isalpha() or first in _NOT_A_LEAD or first in _SUBJECTS or first in _POSSESSIVES:
        return None
    return first.capitalize()


def _said_of(person: str, piece: str, pronoun: re.Match) -> str:
    """The piece with the person in the place of its opening pronoun."""
    rest = piece[pronoun.end(1):]
    if contracted := _PRONOUN_CONTRACTED.match(rest):  # "Becky's retraining" would read as a possessive
        plural, perfect = pronoun[1].lower() == "they", contracted[1] or contracted[0].startswith("'ve")
        verb = ("have" if plural else "has") if perfect else ("are" if plural else "is")
        rest = f" {verb} {rest[contracted.end():]}"
    return _POSSESSIVE.sub("", person) + rest


_PRONOUN_FIRST = re.compile(r"(he|she|they)\b", re.I)
_PRONOUN_CONTRACTED = re.compile(r"(?:'s|'re|'ve)\s+(?=(been|got|gone|had)\b)?", re.I)
_THING_FIRST = re.compile(r"(it|that|they|this)('s|'re|\s+is|\s+are|\s+was)\s+", re.I)
_SPEAKER = re.compile(r"\b(?:i|i'm|im|i've|my|me|we|our|us)\b", re.I)
# A name inside a piece (not its first word): "Stardew Valley", "Arctic Monkeys", "a Mazda CX-5", "Glasgow"
_INNER_NAME = re.compile(r"(?<=\s)(?-i:[A-Z][\w'-]*)(?:[ -](?-i:[A-Z0-9][\w'-]*))*")


def _the_one_name(piece: str) -> str | None:
    """The one name a piece holds after its first word, if it holds exactly one."""
    names = [name for name in _INNER_NAME.findall(piece) if name not in {"I", "I'm", "I've", "I'd", "I'll"}]
    return names[0] if len(names) == 1 else None


_POSSESSIVE = re.compile(r"'s$", re.I)
_SHE = frozenset({"mother", "mum", "mom", "mama", "sister", "daughter", "wife", "girlfriend", "gf", "grandma",
                  "granny", "grandmother", "aunt", "auntie", "niece", "fiancee", "fiancée", "stepmom", "stepmother"})
_HE = frozenset({"father", "dad", "papa", "brother", "son", "husband", "boyfriend", "bf", "grandpa", "grandad",
                 "granddad", "grandfather", "uncle", "nephew", "fiance", "fiancé", "stepdad", "stepfather"})


def _the_one_person(before: str, lead: str, pronoun: str) -> bool:
    """Whether "he", "she" or "they" after `before` can only be the person (or the people, for "they") it
    began with: nobody else is named in it ("my brother married Ana, she's a nurse": Ana; the lead's own
    name, "my dad's name is Rafael", is no one else) and a word that tells the lead's sex or number agrees."""
    words = set(re.findall(r"[\w'-]+", lead.lower().replace("'s", "")))
    if (pronoun == "they") != bool(words & _PLURAL_PEOPLE):
        return False
    if words & (_HE if pronoun == "she" else _SHE if pronoun == "he" else frozenset()):
        return False
    rest = _OWN_NAME.sub("", before[len(lead):])
    return not _A_RELATIVE.search(rest) and not _ANOTHER_NAME.search(rest)


_PLURAL_PEOPLE = frozenset({"twins", "kids", "children", "sons", "daughters", "parents", "grandkids",
                            "grandchildren", "grandparents", "in-laws", "folks", "boys", "girls"})
# "my dad's name is Rafael", "our twins are called Ivy and Rose": the lead's own name
_OWN_NAME = re.compile(r"^(?:'s)?\s+(?:name is|names are|is called|are called|is named|are named)\s+"
                       r"(?-i:[A-Z])[\w'-]+(?:\s+and\s+(?-i:[A-Z])[\w'-]+)?", re.I)


# A capitalised word, not a place said as one ("moved to Leeds", "works at Tesco")
_ANOTHER_NAME = re.compile(r"(?<!\bto )(?<!\bin )(?<!\bat )(?<!\bfrom )(?<!\bfor )(?<!\bnear )(?<!\binto )"
                           r"(?<=\s)(?-i:[A-Z])[\w'-]+")


# Who a piece begins with, when it is someone other than the speaker: "my daughter", "our son Leo", "Ines".
_PEOPLE = "|".join(re.escape(word) for word in sorted(RELATIVES, key=len, reverse=True))
_ASKED_ABOUT = re.compile(rf"\b(?:my|our)\s+(?:\w+\s+)?(?:{_PEOPLE})\b(?:'s)?", re.I)
_A_RELATIVE = re.compile(rf"\b(?:{_PEOPLE})\b", re.I)


# The families of who someone is to the user, and how likely another family must be to say instead what a piece
# about one of them tells: "My brother's just started at Microsoft" (siblings 0.35, employer 0.26) is his employer.
_PEOPLES_FAMILIES = frozenset({"siblings", "parents", "children", "partner", "friends", "coworkers", "marriage"})
WHAT_OF_THEM = 0.2
_ONE_OF_THEIRS_FIRST = re.compile(rf"^\W*(?:my|our)\s+(?:\w+\s+)?(?:{_PEOPLE})\b", re.I)


def _kind_of(piece: str, probabilities: np.ndarray) -> str:
    """The family of a piece: the likeliest, unless it only says who the piece is about (_PEOPLES_FAMILIES)."""
    families = classifier.weights().families
    best = families[probabilities.argmax()]
    if best in _PEOPLES_FAMILIES and _ONE_OF_THEIRS_FIRST.match(piece):
        told = max((i for i, family in enumerate(families) if family not in _PEOPLES_FAMILIES),
                   key=lambda i: probabilities[i])
        if probabilities[told] >= WHAT_OF_THEM:
            return families[told]
    return best


_LEAD = re.compile(rf"^((?:my|our)\s+(?:\w+\s+)?(?:{_PEOPLE})(?:\s+(?-i:[A-Z])[\w'-]+|'s(?=\s+names?\b))?"
                   r"|(?-i:[A-Z][a-z])[\w'-]*|he|she)\s(?!(?:and|&)\s+(?:i|me)\b)", re.I)  # "my wife and I": we
_NOT_A_LEAD = frozenset({"i", "we", "my", "our", "your", "his", "her", "their", "the", "it", "this", "that", "so",
                         "and", "but", "also", "then", "now", "just", "finally", "today", "yesterday", "last",
                         "next", "big", "good", "update", "sadly", "well",
                         "after", "before", "since", "when", "once", "as", "because", "while", "in", "on", "at",
                         "for", "with", "from", "during", "over", "within", "until", "by", "a", "an", "some", "all",
                         "every", "each", "these", "those", "there", "here", "what", "who", "how", "why",
                         "where", "if", "though", "although", "yes", "no", "oh", "ok", "okay", "work", "life"})
# "and now he spends every day on his farm": a piece that names its own doer goes on with no one else
_OWN_SUBJECT = re.compile(rf"(?:(?:{'|'.join(_ADVERBS)})\s+)*(?:i|i'm|we|he|she|they|it|you)\b", re.I)


def _about(piece: str, text: str, *, subject: str, who: str) -> str | None:
    """Whose fact the piece states, as candidates name it: the user (`subject`), one of their people
    ("sam's mom": "my mom is 64", "Mom hit 65"), or None for anyone or anything else."""
    if _BOTH_PARENTS.match(piece):
        return f"{subject}'s parents"
    if _WE_TWO.match(piece):
        return subject  # "my wife and I": we
    relative = re.match(rf"(?:(?:my|our)\s+(?:\w+\s+)?)?({_PEOPLE})\b", piece, re.I)
    if relative and (relative[0].lower().startswith(("my", "our")) or piece[:1].isupper()
                     or relative[1].lower() in _KIN):
        return f"{subject}'s {relative_key(relative[1])}"
    # (a text that only reports the words, "The user said: he's at KPMG now", is not the user's by that)
    if _SPEAKER.search(piece) or (text.startswith(sentence(who)) and not text.startswith(f"{sentence(who)} said:")):
        return subject
    if _SOMEONE_ELSE.match(piece):
        return None  # "Aisha moved to Lagos", "Tokyo has ...", "she needs more space": someone else's
    return subject


# Words that name one of the user's people even bare and in lower case at the start of a message ("hubby made
# inspector", "mum retired"); the others also start sentences about anyone ("boy, was I wrong", "friend of
# a friend", "partner in crime").
_KIN = frozenset(RELATIVES) - {"boy", "girl", "friend", "best friend", "partner", "boss", "manager", "twin",
                               "colleague", "coworker", "neighbor", "neighbour", "roommate", "flatmate"}
_OWNED = re.compile(r"(?:my|our)\b", re.I)


# "Mum and Dad moved to Pune", "my mom and dad": the two of them are the parents, not the mother alone.
_BOTH_PARENTS = re.compile(r"(?:(?:my|our)\s+)?(?:mum|mom|mother|dad|father)\s+(?:and|&)\s+(?:my\s+)?"
                           r"(?:mum|mom|mother|dad|father)\b", re.I)
# "my wife and I", "Jake and I", "me and my boyfriend": the user and one of theirs, as one subject
_WE_TWO = re.compile(r"^(?:(?:my|our|the)\s+(?P<theirs>(?:\w+\s+)?[\w'-]+)|(?P<name>(?-i:[A-Z])[\w'-]+))"
                     r"\s+(?:and|&)\s+(?:I|me)\b"
                     r"|^(?:me|I)\s+(?:and|&)\s+(?:(?:my|our)\s+(?P<theirs_after>[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+)?)"
                     r"|(?P<name_after>(?-i:[A-Z])[\w'-]+))\b",
                     re.I)


def someone_named_first(text: str, who: str) -> str | None:
    """The name a memory's text opens with when it is news of someone named doing or being something, and it
    never names `who` (the user as texts call them): "Marco got a job at Google." gives Marco, "Tasha took a job
    in Seattle." Tasha (not "Aer Lingus now.", a name of two words, nor "The user finally got a job.", nor a word
    for a relative or a role: "Grandad passed away", "Doctor says it's type 2 now")."""
    doer = _NAMED_DOER.match(text)
    if not doer or re.search(rf"\b{re.escape(who)}\b", text, re.I):
        return None
    word = doer[1].lower()
    return None if word in _NOT_A_LEAD or word in _KIN or word in JOB_WORDS or word.startswith("grand") else doer[1]


def _the_two_of_them(match: re.Match, who: str) -> str:
    theirs = match["theirs"] or match["theirs_after"]
    return f"{who} and their {theirs}" if theirs else f"{who} and {match['name'] or match['name_after']}"


_SPEAKER = re.compile(r"\b(?:i|i'm|im|i've|i'd|we|we're|we've|my|our|me|us)\b", re.I)
_PAST_WORDS = "|".join(sorted(_PAST))
_BEFORE_THE_VERB = r"(?:(?:now|just|also|still|finally|recently|already|then)\s+)*"  # "Marco just got"
# A name of one word and its verb, in the case memory texts are written in: "Marco got", "Eli turned", "Ana's".
_NAMED_DOER = re.compile(rf"([A-Z][{NAME_LETTERS}]+)(?:'s\s|\s+{_BEFORE_THE_VERB}"
                         rf"(?:is|was|has|had|and|[a-z]+s|[a-z]+ed|{_PAST_WORDS})\b)")
# "Aisha moved", "Marco got a job", "she needs", "his name is Milo" (not the user's name).
_SOMEONE_ELSE = re.compile(rf"(?-i:[A-Z])[\w-]+\s+{_BEFORE_THE_VERB}"
                           rf"(?:is|was|has|had|and|\w+s|\w+ed|{_PAST_WORDS})\b"
                           r"|(?:he|she|they|it|his|her|their|its)\b", re.I)


# "Darlene Kowalski", said alone (not "I'm Darlene", "Name's Darlene")
_BARE_NAME = re.compile(r"(?:(?-i:[A-Z])(?:[\w-]|'(?![sm]\b))+)(?:\s+(?-i:[A-Z])(?:[\w-]|'(?![sm]\b))+){1,3}")
_CALLED_BY_OTHERS = re.compile(r"\b(?:everyone|everybody|people|friends|folks|they|family|all)\b[^.]*\bcalls?\s+me\b"
                               r"|\bgo(?:es)? by\b", re.I)
_NAME_TEXTS = {"name": "{value} is the user's name.", "nickname": "{who} goes by {value}."}
# A name right after the words that give it: "I'm Olga Petrova", "everyone calls me Dani now", "so it's Hannah
# Okafor now", "hi, Dani here". A capitalised word elsewhere in the piece names something else ("I'm done with
# Facebook", "Ported my number to Lebara"), and one after an article a kind of person ("I'm a Pisces").
_NAME_WORDS = r"(?-i:[A-Z])[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+){0,3}"
# (the name of something or someone else the piece is not about: "my car's name is Betsy", "her name is Zara")
_OF_ANOTHER = r"(?<!'s )(?<!s' )(?<!\bhis )(?<!\bher )(?<!\bits )(?<!\btheir )(?<!\byour )(?<!\bour )"
_NAME_GIVEN = re.compile(rf"\b(?:{_OF_ANOTHER}(?:name'?s|name is|named|called|nickname is)|call(?:s|ed)? me|i'm|im|i am"
                         rf"|it's|this is|go(?:es)? by|known as)\s+(?:just\s+)?[\"']?(?P<name>(?!I\b){_NAME_WORDS})"
                         rf"|(?:^|\b(?:hi|hey|hello)\W+)(?P<here>(?!I\b){_NAME_WORDS})\s+here\b", re.I)


def _value(text: str, who: str) -> str:
    value = text[len(who) + 1 :] if text.lower().startswith(who.lower() + " ") else text
    return value.rstrip(".")[:200]
