"""The gate in front of the write path: secrets out, instructions flagged, sizes bounded.

Pure functions over text, no database. `redact_secrets` runs on every write path before anything
is stored (episodes with their session name and metadata keys and values, memories written from
structured fields, corrections, stored search queries), so a secret is never persisted and never
reaches extraction. `looks_like_instruction` runs only on untrusted content (tool output, web
pages, documents), whose memories are then quarantined: it favours recall, because a false
positive costs an admin a click and a miss lets a stranger steer the agent.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

# ---------------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------------

# Where a pattern has a group named "secret", only that group is replaced, so "my password is
# hunter2" stays readable as "my password is [REDACTED:password]"; otherwise the whole match is.

# Boundaries are lookarounds rather than \b: "-" and "_" are part of most token alphabets, and
# "OPENAI_API_KEY=" must still find "API_KEY" although "_" is a word character.
_NOT_AFTER_TOKEN_CHAR = r"(?<![A-Za-z0-9_\-])"
_NOT_BEFORE_TOKEN_CHAR = r"(?![A-Za-z0-9_\-])"

# How a credential is introduced in prose or config: "password: x", "pwd=x", "password is x",
# "password was changed to x", "Passwort ist x", "mot de passe est x". The group "assigned" notes
# a config assignment, whose value is one word. Spaces and tabs only, so a "Password:" form label
# does not swallow the next line (the label-line pattern decides about that line).
_IS = r"(?:is|was|ist|war|est|es|era|é)"
_STATED_AS = (
    r"(?:[\"']?[ \t]*(?P<assigned>=)[ \t]*"
    r"|[\"']?[ \t]*:[ \t]*"
    rf"|[ \t]+{_IS}(?:[ \t]+(?:now|still|currently|actually))?(?:[ \t]*:)?[ \t]+"
    r"|[ \t]+(?:(?:has[ \t]+been|was|is|got)[ \t]+)?(?:set|changed|updated|reset)[ \t]+to[ \t]+)"
)
# "password for my bank account is ...": up to three words naming what the credential opens.
_CREDENTIAL_FOR = r"(?:[ \t]+(?:for|to|on|of|at)(?:[ \t]+[\w.@\-]+){1,3}?)?"
# What names a credential: "password", "pw", "Passwort", "mot de passe", "wifi code", "door code"...
# A code is only a credential with the thing it opens in front of it: "the code is on GitHub" is not,
# nor is "the building code" or "safe code".
_CREDENTIAL = (
    r"(?:pass(?:word|wd|code|phrase)|pass[ \-]phrase|pwd|pw|passwort|kennwort|mot[ \t]+de[ \t]+passe"
    r"|contrase(?:ñ|n)a|senha|wachtwoord"
    r"|(?:wi-?fi|wlan)[ \t\-]?(?:code|key|pin)|(?:door|gate|alarm|garage|locker|lock|keypad)[ \t\-]?(?:code|pin))"
)
# Words that follow "password is" in prose about passwords rather than in a stated password:
# "the password is the same", "the wifi code is on the fridge", "mein Passwort ist zu kurz".
_PROSE_WORD = (
    r"(?:a|an|the|not|too|very|also|and|or|so|that|this|what|how|is|in|on|at|for|of|to|now|still|being|been|"
    r"my|your|his|her|their|our|its|by|with|from|as|than|enough|yet|every|each|after|before|once|twice|"
    r"here|there|somewhere|under|behind|inside|below|above|online|none|null|"
    r"zu|nicht|sehr|pas|trop|très)\b"
)
# States a password is in: "the password is incorrect", "your PIN is required to continue". Such a
# word is prose when the clause ends after it or goes on with a small word; followed by more plain
# words it is the start of a passphrase ("my passphrase is correct horse battery staple").
_PROSE_STATE = (
    r"(?:incorrect|invalid|wrong|required|correct|missing|empty|blank|weak|strong|expired|reset|changed|same|"
    r"different|case|hidden|secret|safe|set|stored|encrypted|hashed|long|short|valid|ok|okay|fine|mandatory|"
    r"optional|needed|protected|saved|updated|unknown|unchanged|good|bad|easy|hard|visible|shown|displayed|sent|"
    r"used|locked|forgotten|compromised|leaked|written|taped|printed|posted|stuck|available|attached|included|"
    r"provided|given|listed|shared|located|"
    r"falsch|richtig|ungültig|erforderlich|requis|oublié|faux|obligatoire|incorrecto|incorrecta|obligatorio)\b"
)
# Where a stated value stops: a clause-joining word ("... and my PIN is ..."), a time word
# ("changed to x yesterday"), an aside in brackets or another "name: value" pair.
_CLAUSE_BREAK = (
    r"(?:and|but|or|so|because|since|which|who|while|though|although|when|if|unless|until|then|please|"
    r"yesterday|today|tonight|tomorrow|now|again|already|anymore|und|et|y)\b"
    r"|[(\[]|[^\s\"'`]*[:=]"
)
_SIGN_OFF = r"(?:thanks|thank you|thx|ty|cheers|ok|okay|lol|haha|bye|please|pls)\b"
_NOT_A_PASSWORD = (
    rf"(?:{_PROSE_WORD}|{_PROSE_STATE}(?![ \t]+(?!{_PROSE_WORD}|{_CLAUSE_BREAK})[^\s\"'`]))"
)
# One unquoted word: up to whitespace, leaving sentence punctuation after it in place ("!" and
# "?" stay in it: passwords end with them more often than sentences about passwords do).
_TOKEN = r"[^\s\"'`]+?(?=[.,;:)]*(?:\s|$|[\"'`]))"
# A value stated in prose runs to the end of its clause: a passphrase is several words, and
# "correct horse battery staple" must not lose only "correct". Each further word must follow the
# previous one after plain spaces, so a comma, a full stop or a line break ends the value.
# After "=" (config: "PASSWORD=x DEBUG=1") the value is one word.
_STATED_VALUE = (
    r"(?!\[REDACTED:)(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|`[^`\n]+`"
    rf"|(?!{_NOT_A_PASSWORD}){_TOKEN}(?(assigned)|(?:[ \t]+(?!{_CLAUSE_BREAK}){_TOKEN})*))"
)

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # First, so that key material inside the block is not reported as other kinds. A block cut
    # off before its END line is redacted to the end of the text: the part shown is still secret.
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    # This service's own agent keys (Agent.new_key): "mk_" + 12 hex + "_" + token_urlsafe(32).
    (
        "agent_key",
        re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}mk_[0-9a-f]{{12}}_[A-Za-z0-9_\-]{{43}}{_NOT_BEFORE_TOKEN_CHAR}"),
    ),
    # Before OpenAI: Anthropic keys also start with "sk-".
    ("anthropic_key", re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}sk-ant-[A-Za-z0-9_\-]{{20,}}")),
    # Requiring a digit keeps "sk-learn-is-a-python-library" out; real keys almost always have one.
    (
        "openai_key",
        re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{{20,}}"),
    ),
    ("aws_access_key_id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    # A 40-character AWS secret looks like any base64 string, so only its label identifies it.
    (
        "aws_secret_key",
        re.compile(
            r"(?i:aws[_\-. ]?secret[_\-. ]?(?:access[_\-. ]?)?key)[\"']?[ \t]*(?:[:=]|\bis\b)[ \t]*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("gitlab_token", re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}glpat-[A-Za-z0-9_\-]{{20,}}")),
    ("huggingface_token", re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}")),
    ("slack_token", re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}xox[baprs]-[A-Za-z0-9\-]{{10,}}")),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/\-]+")),
    ("google_api_key", re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}AIza[0-9A-Za-z_\-]{{35}}{_NOT_BEFORE_TOKEN_CHAR}")),
    # Publishable keys (pk_) are meant to be public and are left alone.
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{24,})")),
    # Before bearer and generic assignments, which would otherwise claim the JWT under a vaguer kind.
    (
        "jwt",
        re.compile(rf"{_NOT_AFTER_TOKEN_CHAR}eyJ[A-Za-z0-9_\-]{{5,}}\.eyJ[A-Za-z0-9_\-]{{5,}}\.[A-Za-z0-9_\-]{{10,}}"),
    ),
    # The digit keeps "bearer responsibilities" (16 letters) out of it.
    (
        "bearer_token",
        re.compile(r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<secret>(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]{16,}=*)"),
    ),
    ("basic_auth", re.compile(r"(?i:authorization)[ \t]*:[ \t]*(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})")),
    # "OPENAI_API_KEY=...", "x-api-key: ...", '"client_secret": "..."', "SECRET_KEY_BASE=...". The
    # 16-character, no-space value is what separates a credential from prose ("the token economy").
    # The name is matched from its keyword on, never from an open-ended prefix: a prefix like
    # ([a-z]+_)* made this pattern quadratic on text such as "a_a_a_...".
    (
        "generic_secret",
        re.compile(
            r"(?<![A-Za-z0-9])"
            r"(?i:api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key|client[_\-]?secret"
            r"|(?:access|auth|refresh|api|session|id)?[_\-]?token|secret|credentials?)"
            r"(?:[_.\-][A-Za-z0-9]+){0,2}"
            r"[\"']?[ \t]*[:=][ \t]*[\"']?(?P<secret>[A-Za-z0-9_\-./+=~]{16,})"
        ),
    ),
    # "postgres://app:s3cret@db/app": the password of a URL, keeping user and host readable.
    ("url_password", re.compile(r"(?<=://)[^\s:/@]+:(?P<secret>[^\s@/]+)(?=@)")),
    # Passwords stated in text. (?<![A-Za-z0-9]) lets "DB_PASSWORD=x" match while "passwords" and
    # "password managers" do not reach a separator and are left alone.
    (
        "password",
        re.compile(
            rf"(?<![A-Za-z0-9]){_CREDENTIAL}{_CREDENTIAL_FOR}{_STATED_AS}" + _STATED_VALUE,
            re.IGNORECASE,
        ),
    ),
    # A line that names a credential and the password alone on the next: "Password:\nhunter2", "My
    # password is on the next line:\nx", "Here is my password\nx". Only a single word is taken, so
    # "Password:\nEnter it on the next screen." stays as it is, and a sign-off ("thanks") is no password.
    (
        "password",
        re.compile(
            rf"(?<![A-Za-z0-9]){_CREDENTIAL}(?![A-Za-z])[^\n]{{0,80}}\r?\n(?:[ \t]*\r?\n)?"
            rf"[ \t]*(?!\[REDACTED:)(?!(?:{_NOT_A_PASSWORD}|{_SIGN_OFF})[ \t!.]*$)"
            rf"(?P<secret>\S+)(?=[ \t]*(?:\r?\n|\Z))",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    # A credential word followed directly by a value with a digit: "passcode 778899 for the door".
    (
        "password",
        re.compile(
            rf"(?<![A-Za-z0-9]){_CREDENTIAL}[ \t]+(?!\[REDACTED:)(?P<secret>(?=[^\s\"'`]*\d)[^\s\"'`]{{4,}}?)"
            rf"(?=[.,;:)!?]*(?:\s|$))",
            re.IGNORECASE,
        ),
    ),
    # "login sam / hunter2", "credentials: sam/hunter2": a user name, a slash and the password.
    # Not "the login page / the signup page": words that name a part of a login screen are no user.
    (
        "password",
        re.compile(
            r"(?<![A-Za-z0-9])(?:log[ \-]?in|logon|sign[ \-]?in|credentials?|creds"
            r"|user(?:name)?[ \t]*/[ \t]*pass(?:word)?)"
            r"(?:[ \t]*[:=][ \t]*|[ \t]+(?:(?:is|are)[ \t]+)?)"
            r"(?!(?:page|screen|form|flow|button|link|window|prompt|box|field|issue|problem|error|details|info|"
            r"system|process|and|or|the|a|an|with|via|to|for)\b)"
            r"[^\s/\"'`]+[ \t]*/[ \t]*(?!\[REDACTED:)(?P<secret>" + _TOKEN + ")",
            re.IGNORECASE,
        ),
    ),
    # A PIN is only taken when it is digits: "the pin is sharp" is about sewing.
    (
        "password",
        re.compile(
            rf"(?<![A-Za-z0-9])PIN(?:[ \t\-]?(?:code|number))?{_CREDENTIAL_FOR}{_STATED_AS}(?P<secret>\d{{3,12}})(?!\d)",  # noqa: E501
            re.IGNORECASE,
        ),
    ),
)

# Digit groups that could be a card number; which part of a run really is one is decided in
# _redact_card_numbers. Not after "+" (phone numbers) or a decimal point, not inside a word.
# Groups are separated by a space (also a non-breaking or thin one, as word processors write
# "4111\u00a01111\u00a01111\u00a01111") or a hyphen.
_DIGIT_RUN = re.compile(r"(?<![\w+.,/\-])\d{3,19}(?:[ \-\u00a0\u2007\u2009\u202f]\d{3,19})*(?![\w]|[.,]\d)")
# "4111.1111.1111.1111", "4111/1111/1111/1111": a dot or slash also separates dates, versions and
# decimals, so only the printed groupings count there (fours, Amex 4-6-5), with one separator.
_PUNCTUATED_CARD = re.compile(
    r"(?<![\w+.,/\-])(?:\d{4}(?P<sep>[./])\d{4}(?P=sep)\d{4}(?P=sep)\d{3,4}(?:(?P=sep)\d{3})?"
    r"|\d{4}(?P<amex>[./])\d{6}(?P=amex)\d{5})"
    r"(?![\w]|[.,/]\d)"
)
_DIGITS = re.compile(r"\d+")


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _looks_like_card(groups: list[str]) -> bool:
    digits = "".join(groups)
    # Every issuer in use starts with 2-6 (Mastercard 2-series, Amex/Diners/JCB, Visa, Mastercard,
    # Discover/UnionPay); this keeps millisecond timestamps and most ids out at no cost.
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return False
    # Printed cards are grouped in fours (Amex 4-6-5): short groups are lists of numbers, dates, times.
    if len(groups) > 1 and not all(3 <= len(group) <= 6 for group in groups):
        return False
    return _luhn_valid(digits)


def _redact_card_numbers(text: str) -> tuple[str, bool]:
    found = False

    def replace(run_match: re.Match[str]) -> str:
        # A run may hold a card and its neighbours ("4111 1111 1111 1111 123" with a CVV, two
        # numbers in a row): take the longest card-shaped stretch of groups from each start.
        nonlocal found
        run = run_match.group(0)
        groups = list(_DIGITS.finditer(run))
        pieces, cursor, start = [], 0, 0
        while start < len(groups):
            # At most six groups: 19 digits in groups of at least three. This also keeps a long
            # run of numbers linear.
            for end in range(min(len(groups), start + 6), start, -1):
                if _looks_like_card([group.group() for group in groups[start:end]]):
                    pieces += [run[cursor : groups[start].start()], _marker("card_number")]
                    cursor, start, found = groups[end - 1].end(), end, True
                    break
            else:
                start += 1
        pieces.append(run[cursor:])
        return "".join(pieces)

    def replace_punctuated(match: re.Match[str]) -> str:
        nonlocal found
        groups = list(_DIGITS.finditer(match.group(0)))
        for end in range(len(groups), 2, -1):  # the whole, or the card without a trailing CVV
            if _looks_like_card([group.group() for group in groups[:end]]):
                found = True
                return _marker("card_number") + match.group(0)[groups[end - 1].end() :]
        return match.group(0)

    text = _PUNCTUATED_CARD.sub(replace_punctuated, text)
    return _DIGIT_RUN.sub(replace, text), found


def redact_secrets(text: str) -> tuple[str, list[str]]:
    """The text with every secret replaced by `[REDACTED:<kind>]`, and the kinds found.

    Kinds are listed once each, in the order of SECRET_PATTERNS (card numbers last). Patterns
    run in that order, each on the output of the previous one, so a secret claimed by a precise
    pattern (a JWT) is not claimed again by a vaguer one (a bearer header).
    """
    kinds: list[str] = []
    for kind, pattern in SECRET_PATTERNS:

        def replace(match: re.Match[str], kind: str = kind) -> str:
            if "secret" not in match.re.groupindex or match.group("secret") is None:
                return _marker(kind)
            start, end = match.start("secret") - match.start(), match.end("secret") - match.start()
            whole = match.group(0)
            return whole[:start] + _marker(kind) + whole[end:]

        text, count = pattern.subn(replace, text)
        if count and kind not in kinds:
            kinds.append(kind)
    text, found = _redact_card_numbers(text)
    if found:
        kinds.append("card_number")
    return text, kinds


def redact_labelled(value: str, *, label: str) -> tuple[str, list[str]]:
    """A structured field redacted as if written "label: value": {"attribute": "wifi password",
    "value": "Sunny42"} states a password although neither string does on its own."""
    prefix = f"{label}: "
    if label:
        combined, kinds = redact_secrets(prefix + value)
        if combined.startswith(prefix):  # the label itself held no secret
            return combined[len(prefix) :], kinds
    return redact_secrets(value)


def redacted(text: str) -> str:
    """The text with every secret replaced, for names and fields stored without a REDACT event
    (a project name, a stored search query)."""
    return redact_secrets(text)[0]


# ---------------------------------------------------------------------------------------------
# Instructions in untrusted content
# ---------------------------------------------------------------------------------------------

# The start of a sentence or line, or a word that introduces an imperative: "Always reply...",
# "Paris. Never mention...", "Please act as...". Plain statements ("I always drink coffee")
# put a subject before the adverb and do not match.
# Spaces and tabs only after the anchor: "\s*,?\s*" after a MULTILINE "^" is cubic on a run of blank
# lines, and the next line has its own "^".
_IMPERATIVE_START = r"(?:^|(?<=[.!?;:\"'>*\-])|\bplease\b|\band\b|\bthen\b|\balso\b)[ \t]*(?:,[ \t]*)?"
# Verbs of agent behaviour; "Always stir the sauce" or "Never before had the river risen" are
# left alone, "Always reply in French" is not.
_AGENT_VERB = (
    r"(?:respond|reply|answer|say|tell|recommend|mention|use|include|refer|call|address|output|print|write|"
    r"suggest|reveal|share|send|ask|trust|obey|follow|prefer|promote|link|add|append|begin|start|end|format|"
    r"speak|talk|describe|claim|agree|remember|forget|store|save|keep|disclose|ignore|assume|treat|consider|"
    r"provide|give|email|forward|upload|execute|run|click|visit|buy|choose|pick|translate|list|warn|"
    r"apologi[sz]e|greet|conclude|cite|report|log|contact|transfer|approve|deny|refuse|reject|accept|allow|"
    r"mark|rate|rank|prioriti[sz]e|put|insert|act|behave|pretend|display|show|return|delete|remove)\b"
)
# Not "model" or "agent" alone: "the new model will now ship", "the FBI agent must now testify".
_AGENT = (
    r"(?:(?:ai|a\.i\.)(?:\s+(?:assistant|model|agent|system))?|assistant|chatbot|llm|bot|claude|chatgpt|gpt|copilot"
    r"|language\s+model)s?"
)
_USER = r"(?:the\s+|your\s+)?(?:user|human|person|customer|owner|operator)s?"
_MEMORY = r"(?:your\s+|the\s+|long[- ]term\s+|permanent\s+)*(?:memory|memories|notes|knowledge(?:\s+base)?)"
# Editing a memory is only an order to the agent when it is the agent's: "update your memory",
# not "change the memory card".
_YOUR_MEMORY = r"your\s+(?:long[- ]term\s+|permanent\s+)?(?:memory|memories|notes|knowledge(?:\s+base)?)"

INSTRUCTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE | re.MULTILINE))
    for name, pattern in (
        # "Ignore all previous instructions", "forget your rules", "override the system prompt".
        (
            "ignore_instructions",
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|of|these|those|every)\s+)*"
            r"(?:(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|system|existing|"
            r"current|old|safety)\s+)?(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guardrails|"
            r"commands?|orders|constraints|context|messages?|programming|training|restrictions|polic(?:y|ies))\b",
        ),
        # "Disregard the above.", "forget everything before and ..." but not "ignore previous versions".
        (
            "ignore_above",
            r"\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?|everything\s+|anything\s+)?(?:the\s+|that\s+|what\s+"
            r"(?:was|is)\s+)?(?:above|written\s+above|said\s+(?:above|before)|before|previous(?:ly)?|prior|earlier)"
            r"\s*(?:[.,;:!\n]|$|and\b|or\b|then\b)",
        ),
        (
            "forget_what_you_know",
            r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:you\s+(?:know|were\s+told|have\s+been"
            r"\s+told|'ve\s+been\s+told|learned)|else)\b",
        ),
        (
            "from_now_on",
            r"\bfrom\s+now\s+on\b|\bhenceforth\b|\bfrom\s+this\s+(?:point|moment)\s+(?:on|forward)\b"
            r"|\bgoing\s+forward(?:\s*,)?\s+(?:you|always|never|the\s+assistant)\b",
        ),
        ("remember_always", r"\bremember\s+(?:to\s+)?(?:always|never)\b"),
        ("remember_imperative", rf"{_IMPERATIVE_START}remember\s+(?:to|that|this|the\s+following)\b"),
        (
            "memory_write",
            r"\b(?:store|save|remember|record|memori[sz]e|note|keep|write|add|put|commit|insert)\s+"
            r"(?:this|that|these|it|the\s+following|the\s+fact|the\s+information)\b(?:\s+[\w'-]+){0,3}?\s+"
            rf"(?:in|into|to)\s+{_MEMORY}\b",
        ),
        ("save_the_following", r"\b(?:save|store|remember|memori[sz]e|record|note|keep)\s+the\s+following\b"),
        ("memory_edit", rf"\b(?:update|modify|edit|change|overwrite|add\s+to|write\s+to)\s+{_YOUR_MEMORY}\b"),
        ("always_never_imperative", rf"{_IMPERATIVE_START}(?:always|never)\s+{_AGENT_VERB}"),
        (
            "you_always_never",
            rf"\byou\s+(?:(?:should|must|shall|will|need\s+to|have\s+to|are\s+to)\s+)?(?:always|never)\s+{_AGENT_VERB}"
            r"|\byou\s+(?:should|must|shall|need\s+to|have\s+to|are\s+to)\s+(?:always|never)\b",
        ),
        (
            "agent_should",
            rf"\b{_AGENT}\s+(?:(?:should|must|shall|needs?\s+to|has\s+to|is\s+to|are\s+to)\s+"
            r"(?:always|never|now|only|not|from\s+now)|will\s+(?:always|never|from\s+now))\b",
        ),
        (
            "you_must_now",
            r"\byou\s+(?:must|should|will|shall|need\s+to|have\s+to|are\s+(?:required|instructed|to))\s+"
            r"(?:now|henceforth|immediately|from\s+now|only|obey|comply|follow|ignore|forget|pretend|respond|reply)\b",
        ),
        (
            "system_prompt",
            r"\bsystem\s+(?:prompt|message|instructions?)\b|\b(?:developer|admin(?:istrator)?|god|debug)\s+mode\b"
            r"|\bjailbreak",
        ),
        (
            "reveal_prompt",
            r"\b(?:reveal|print|show|repeat|output|leak|disclose)\s+(?:me\s+)?(?:your|the)\s+(?:initial\s+|hidden\s+|"
            r"original\s+)?(?:prompt|instructions|configuration|rules)\b",
        ),
        (
            "new_instructions",
            r"\b(?:new|updated|revised|additional|important|real|actual|secret|hidden|urgent)\s+"
            r"(?:instructions?|directives?|orders|rules)\s*:"
            rf"|\binstructions?\s+(?:for|to)\s+(?:the\s+|any\s+)?{_AGENT}\b"
            rf"|\bnote\s+to\s+(?:the\s+|any\s+)?{_AGENT}\b"
            rf"|\b(?:dear|attention|hey|hello)(?:\s*,)?\s+{_AGENT}\b"
            rf"|\bif\s+you\s+are\s+(?:an?\s+)?{_AGENT}\b"
            rf"|\b{_AGENT}\s+reading\s+this\b",
        ),
        (
            "act_as",
            r"(?:^|(?<=[.!?;:\"'>*\-])|\bplease\b|\byou\s+(?:will|should|must|shall|are\s+to|to)\b|\bnow\b)"
            r"[ \t]*(?:,[ \t]*)?"
            r"act\s+as\b|\bpretend\s+(?:to\s+be|you\s+are|that\s+you)\b|\brole-?\s?play\s+as\b",
        ),
        (
            "you_are_now",
            r"\byou\s+are\s+(?:now|no\s+longer|henceforth)\b|\byou're\s+(?:now|no\s+longer)\b"
            r"|\byour\s+new\s+(?:role|name|task|goal|purpose|instructions?|persona|identity)\b",
        ),
        (
            "conceal_from_user",
            rf"\b(?:do\s+not|don't|never|must\s+not)\s+(?:tell|inform|alert|notify|warn|let)\s+{_USER}\b"
            rf"|\bwithout\s+(?:telling|informing|notifying|alerting|warning)\s+{_USER}\b"
            r"|\b(?:do\s+not|don't|never)\s+(?:mention|reveal|disclose)\s+(?:this|these|that|it)\b"
            rf"|\bkeep\s+(?:this|it)\s+(?:a\s+)?secret\s+from\s+{_USER}\b",
        ),
        (
            "user_wants_you",
            r"\b(?:the\s+)?user\s+(?:wants|would\s+like|has\s+asked|asked|instructed|told|prefers|needs)\s+"
            r"(?:you|the\s+(?:assistant|ai|agent|model))\b",
        ),
        (
            "role_tag",
            r"<\|(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id|end_header_id)\|>"
            r"|\[/?INST\]|<<\s*/?SYS\s*>>|</?(?:system|assistant)(?:_prompt)?>"
            r"|^[ \t]*#{1,6}[ \t]*(?:system|assistant|instructions?|new\s+instructions?)\b[ \t]*:?",
        ),
        # "Assistant: Sure, ..." at the start of a line or sentence impersonates the agent's own turn;
        # "System:" only when followed by an order, since "System: Ubuntu 22.04" is common tool output.
        (
            "role_impersonation",
            r"(?:^|(?<=[.!?]))[ \t]*assistant[ \t]*:"
            r"|^[ \t]*system[ \t]*:[ \t]*(?:you|ignore|disregard|from|always|never|new|act|do\s+not|don't)\b",
        ),
    )
)

# Zero-width characters are a common way to split "ig\u200bnore" past a filter.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def _normalized_for_matching(text: str) -> str:
    # NFKC folds full-width and other look-alike letters onto ASCII; curly apostrophes become straight.
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE).replace("\u2019", "'")


def looks_like_instruction(text: str) -> bool:
    """True when untrusted content tries to instruct the agent or write to its memory."""
    normalized = _normalized_for_matching(text)
    return any(pattern.search(normalized) for _, pattern in INSTRUCTION_PATTERNS)


# ---------------------------------------------------------------------------------------------
# Size
# ---------------------------------------------------------------------------------------------


class GateRefused(Exception):
    """Content the gate will not take; the API answers 413 for too_large, 400 for the others.

    "invalid" is raised by ingest for requests the gate cannot judge (an unknown source).
    """

    def __init__(self, code: Literal["too_large", "empty", "invalid"], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_size(text: str, *, max_chars: int) -> None:
    """Raise GateRefused when the text is over max_chars or blank."""
    # Size first: a megabyte of spaces is refused for its size, not for being blank.
    if len(text) > max_chars:
        raise GateRefused("too_large", f"The content has {len(text)} characters, the limit is {max_chars}.")
    if not text.strip():
        raise GateRefused("empty", "The content is empty (or only whitespace); there is nothing to remember.")
