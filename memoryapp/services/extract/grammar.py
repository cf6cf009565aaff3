"""How memory texts name the user and get their small words right: "a UX designer", "an hour",
"James's", "The user lives in Madrid." Pure functions, shared by every extraction backend."""

from __future__ import annotations

import re

# Who "the user" is when nothing readable names them. Lowercase: it starts a sentence only after
# `sentence` capitalises it ("The user lives in Madrid.", but "Standing instruction from the user").
THE_USER = "the user"

# External ids that are words but name nobody ("user", "guest", "test").
_GENERIC_IDS = frozenset(
    {"user", "usr", "users", "guest", "anonymous", "anon", "customer", "client", "admin", "test", "tester", "demo",
     "default", "unknown", "none", "null", "member", "visitor", "account", "id", "me", "someone", "person", "agent"}
)
_ID_WORD = re.compile(r"[A-Z]?[a-z]+(?:'[a-z]+)?|[A-Z]+")
_VOWEL = re.compile(r"[aeiouy]", re.I)
_CONSONANT_RUN = re.compile(r"[^aeiouy]{5,}", re.I)


def readable_name(external_id: str) -> str:
    """The external id as a name when it reads as one ("sam" -> "Sam", "mary-jane" -> "Mary-Jane"),
    else "" (an email address, a uuid, hex, "usr_7f3a9c21", any id with digits, a random-looking token
    or a generic word such as "user"): a memory text must never call a person by their account key."""
    external_id = external_id.strip()
    if not external_id or len(external_id) > 40 or "@" in external_id:
        return ""
    words = re.split(r"[ ._-]+", external_id)
    if not all(_ID_WORD.fullmatch(word) and _pronounceable(word) for word in words):
        return ""  # digits, underscores and mixed-case tokens ("xKq9", "Usr_7f3a") land here
    if any(word.lower() in _GENERIC_IDS for word in words):
        return ""
    separators = re.findall(r"[ ._-]+", external_id)
    parts = [_capitalised(words[0])]
    for separator, word in zip(separators, words[1:], strict=True):
        parts.append(("-" if separator == "-" else " ") + _capitalised(word))
    return "".join(parts)


def _capitalised(word: str) -> str:
    return word.capitalize() if word.isupper() else word[:1].upper() + word[1:]


def _pronounceable(word: str) -> bool:
    if not 2 <= len(word) <= 20 or (len(word) >= 6 and re.fullmatch(r"[a-f]+", word, re.I)):  # hex
        return False
    return bool(_VOWEL.search(word)) and not _CONSONANT_RUN.search(word)


def possessive(who: str) -> str:
    """ "James" -> "James's", "the user" -> "the user's"."""
    return f"{who}'" if who.endswith("'s") else f"{who}'s"


def sentence(text: str) -> str:
    """A sentence starts with a capital, whoever it is about ("the user ..." -> "The user ...")."""
    return text[:1].upper() + text[1:]


# Initialisms read letter by letter: these letters' names start with a vowel sound ("an MBA", "an FBI
# agent", but "a UX designer", "a PhD").
_VOWEL_SOUND_LETTERS = frozenset("AEFHILMNORSX")
# Acronyms said as words ("a NASA engineer", "a NATO summit"): consonants and vowels alternate.
_SAID_AS_A_WORD = re.compile(r"(?:[^AEIOU]?[AEIOU]){2,}[^AEIOU]?")
# Spelled with a vowel, said with a consonant ("a university", "a European", "a one-off").
_CONSONANT_SOUND_STARTS = ("uni", "use", "usu", "uti", "ure", "uri", "uro", "ura", "ubi", "uku", "ufo", "uga",
                           "uvu", "eu", "ewe", "one", "once")
# Spelled with a consonant, said with a vowel ("an hour", "an honest mistake").
_VOWEL_SOUND_STARTS = ("hour", "honest", "honor", "honour", "heir", "herb")


def article(phrase: str) -> str:
    """ "a " or "an " for the phrase, by how its first word sounds; "" when it starts with a number."""
    first = re.split(r"[\s-]", phrase.strip(), maxsplit=1)[0] if phrase.strip() else ""
    word = first.strip("\"'(")
    if not word or word[0].isdigit():
        return ""
    if len(word) > 1 and word.isupper() and word.isalpha() and not _SAID_AS_A_WORD.fullmatch(word):
        return "an " if word[0] in _VOWEL_SOUND_LETTERS else "a "
    lower = word.lower()
    if lower.startswith(_VOWEL_SOUND_STARTS):
        return "an "
    if lower.startswith(_CONSONANT_SOUND_STARTS) and not lower.startswith(("unin", "unim", "unid")):
        return "a "
    if len(lower) == 1:  # a lone letter: "an x-ray", "a b-movie"
        return "an " if lower.upper() in _VOWEL_SOUND_LETTERS else "a "
    return "an " if lower[0] in "aeiou" else "a "


_SUFFIXES = ("ings", "ing", "ers", "er", "ies", "es", "ed", "s", "y")
_DOUBLED = frozenset("bdgmnprt")


def stem(word: str) -> str:
    """A word's rough stem, so that a value said in another form still matches: "bartending" and
    "bartender", "photography" and "photographer", "cats" and "cat". One suffix is taken off when at
    least four letters stay, with a doubled consonant before it ("running", "swimmer"), and the "s" of a
    four-letter word ("runs"); long words compare by their first eight letters."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] in _DOUBLED:
                word = word[:-1]  # "running", "swimmer", "shopping": run, swim, shop
            break
    else:
        if len(word) == 4 and word.endswith("s") and word[-2] not in "aeiousy'":
            word = word[:-1]  # a short word's "s": "runs", "cats" (not "this", "bus")
    return word[:8]


def addressed(text: str, names: tuple[str, ...]) -> str:
    """The text with the user's `names` (and "the user") replaced by "you"/"your", the form memories and
    questions about the user are embedded in: "The user lives in Reading." -> "You lives in Reading.",
    "Where does Riley live?" -> "Where does you live?". MiniLM reads "the user" as software's user and a
    name as that name: either pulls all of one user's memories together and away from a question that
    words them otherwise. Verbs are left as they are: agreement moved no figure (dev questions)."""
    words = sorted({name for name in (*names, THE_USER) if name.strip()}, key=len, reverse=True)
    alternatives = "|".join(re.escape(word) for word in words)
    pattern = re.compile(rf"\b(?:{alternatives})(?:'s\b|'(?=\s|$)|(?!\w))", re.IGNORECASE)
    replaced = pattern.sub(lambda match: "your" if match.group().endswith(("'s", "'")) else "you", text)
    return sentence(replaced)
