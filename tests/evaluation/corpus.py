"""A tiny corpus in the format of memoryapp/evaluation/corpus, written to a temporary folder, so
evaluation tests never depend on the real corpus' content.

Labels are chosen so the figures do not depend on how good the extractor is: a fact labelled
with a word its message does not hold is always missed, and a message labelled `none` that
states where the user lives is always spurious (the write path stores where people live)."""

import json
from pathlib import Path


def fact(must: list[str]) -> dict:
    return {"subject": "user", "attribute": "x", "value": " ".join(must), "must": must}


def message(id: str, family: str, text: str, facts: list[dict] = ()) -> dict:
    return {"id": id, "family": family, "text": text, "facts": list(facts), "tags": []}


def pair(id: str, family: str, way: str, before: str, before_must: list[str], after: str, after_must: list[str],
         question: str) -> dict:
    return {"id": id, "family": family, "way": way, "before": {"text": before, "must": before_must},
            "after": {"text": after, "must": after_must}, "question": question}


def continuation(id: str, kind: str, before: str, before_must: list[str], after: str, after_must: list[str]) -> dict:
    return {"id": id, "family": "home", "kind": kind, "before": {"text": before, "must": before_must},
            "after": {"text": after, "must": after_must}}


DEV_MESSAGES = [
    message("t-m1", "home", "I live in Porto.", [fact(["Porto"])]),
    message("t-m2", "employer", "I work at Initech.", [fact(["Initech"]), fact(["Zanzibar"])]),  # Zanzibar: missed
    message("t-m3", "none", "I live in Oslo."),  # labelled none on purpose: spurious
    message("t-m4", "none", "how are you today?"),
    message("t-m5", "none", "thanks!"),
]
DEV_CHANGES = [
    pair("t-c1", "home", "moved", "I live in Lisbon.", ["Lisbon"], "I live in Berlin.", ["Berlin"],
         "Where does the user live now?"),
    # The change is never said: not recognised, the old value stays current.
    pair("t-c2", "employer", "left_joined", "I work at Globex.", ["Globex"], "thanks!", ["Hooli"],
         "Where does the user work now?"),
]
TEST_MESSAGES = [message("t-m9", "home", "I live in Lima.", [fact(["Lima"])])]


def write(folder: Path, files: dict[str, list[dict]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, items in files.items():
        (folder / name).write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return folder


def tiny_corpus(folder: Path) -> Path:
    return write(folder, {"messages-t.dev.jsonl": DEV_MESSAGES, "changes-t.dev.jsonl": DEV_CHANGES,
                          "messages-t.test.jsonl": TEST_MESSAGES})


# Change pairs of 8 families for the changing-facts benchmark: the rules extractor recognises the
# first seven as changes; the pet's new name it writes as a second value (RECOGNISED).
CHANGING = [
    ("home", "I live in Porto.", ["Porto"], "I moved to Lisbon.", ["Lisbon"], "Where does the user live?"),
    ("employer", "I work at Initech.", ["Initech"], "I now work at Globex.", ["Globex"], "Where does the user work?"),
    ("job", "I am a nurse.", ["nurse"], "I work as a pilot now.", ["pilot"], "What is the user's job?"),
    ("diet", "I am vegetarian.", ["vegetarian"], "I eat fish now.", ["fish"], "What does the user eat?"),
    ("marriage", "I am single.", ["single"], "I am married now.", ["married"], "Is the user married or single?"),
    ("age", "I am 29 years old.", ["29"], "I am 30 years old.", ["30"], "How old is the user?"),
    ("pets", "My dog is called Rex.", ["Rex"], "My dog is called Milo now.", ["Milo"],
     "What is the name of the user's dog?"),
    ("hometown", "I am from Oslo.", ["Oslo"], "I am from Lima now.", ["Lima"], "Where is the user from?"),
]
RECOGNISED = {family for family, *_ in CHANGING} - {"pets"}
SMALL_TALK = ["haha ok", "thanks!", "how are you today?", "that sounds great", "nice weather today",
              "tell me a joke", "I need more coffee", "good morning", "lol", "any good podcast recommendations?"]


def changing_corpus(folder: Path, split: str = "dev") -> Path:
    pairs = [pair(f"t-{split}-c{i}", family, "now", before, before_must, after, after_must, question)
             for i, (family, before, before_must, after, after_must, question) in enumerate(CHANGING)]
    none = [message(f"t-{split}-n{i}", "none", text) for i, text in enumerate(SMALL_TALK)]
    return write(folder, {f"changes-t.{split}.jsonl": pairs, f"messages-t.{split}.jsonl": none})
