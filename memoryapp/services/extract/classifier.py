"""Small classifiers over the MiniLM sentence vector of a piece of a message: is it a durable
self-disclosure (something about the user or their people that still holds tomorrow), and which
fact family is it about. The first is the mean of two legs: a support-vector machine (RBF kernel)
over the vector (and the whole message's, MESSAGE_WEIGHT) and a logistic regression over the piece's words
and word pairs (tf-idf). The vector
knows topics, the words know how things are said ("I'm allergic", "my X is"); together they keep
more facts at the same rate of spurious memories (out of fold on dev, at 3.8% of the messages that
must yield nothing: 91% of fact pieces; when compared, 87% against 79% for a linear model of the
vector alone). The
family is read the same way, from the vector and from the words, by two logistic regressions trained on
pieces and on the memories written from them (so that the write path can compare an old memory's family
with a new one's). A third classifier reads a whole message: does it
say that something in the speaker's life changed, in any words (services.apply then ends the value it
replaces); out of fold on dev it hears 89% of change statements at 5% of plain fact statements. A fourth
reads a question: which family of fact it asks about (the search weighs memories of that family up:
selectors.search.KIND_WEIGHT). All are trained from the corpus' dev split, the training-only items
(training/README.md) and the dev question set by `python -m memoryapp.services.extract.train` and shipped as
weights.npz; at run time only numpy dot products (importing scikit-learn would cost ingest a second per
worker and nothing at all here)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

WEIGHTS_PATH = Path(__file__).resolve().parent / "weights.npz"

# Lexical cues that say what kind of utterance a piece is, whatever it is about. They sit beside the
# vector because MiniLM embeds topic far more than mood: "I live in Paris" and "if I lived in Paris"
# are neighbours.
_CUES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(pattern, re.I))
    for name, pattern in (
        ("first_person", r"^(?:\W*)(?:i|i'm|im|i've|ive|i'd|my|we|we're|we've|our|me)\b"),
        ("first_person_any", r"\b(?:i|i'm|im|i've|my|we|we're|our|me|mine)\b"),
        ("question_mark", r"\?\s*$"),
        ("question_start", r"^(?:\W*)(?:what|which|who|whom|whose|where|when|why|how|is|are|am|do|does|did|can|could"
                           r"|would|should|will|shall|may|might|any|anyone|is there|are there)\b"),
        ("addressee", r"\b(?:you|your|yours|you're|u)\b"),
        ("request", r"^(?:\W*)(?:please|pls|can you|could you|would you|help me|tell me|give me|show me|write|draft"
                    r"|make|find|suggest|recommend|explain|list|remind me|let's|lets)\b"),
        ("hypothetical", r"\b(?:if|what if|suppose|supposing|imagine|pretend|hypothetically|would|wish|in case)\b"),
        ("transient", r"\b(?:today|tonight|right now|this morning|this afternoon|this evening|at the moment"
                      r"|currently|just now|rn|atm)\b"),
        ("quote", r"[\"'\u201c\u201d\u2018].{3,}[\"'\u201c\u201d\u2019]|\b(?:said|says|told|tells|asked)\b"),
        ("past_habit", r"\b(?:used to|once|when i was)\b"),
        ("short", r"^\W*\w+(?:\W+\w+){0,2}\W*$"),
        ("number", r"\d"),
        ("proper_noun", r"(?<=\w )[A-Z][a-z]+"),
        ("negation", r"\b(?:not|never|no|don't|dont|doesn't|can't|cannot|won't)\b"),
    )
)


# What a life changes by, said of a moment: news, never a passing moment.
_LIFE_EVENT = (r"moved|relocated|started|began|married|engaged|divorced|adopted|quit|joined|graduated|bought|sold"
               r"|turned|retired|became|passed|died|found out|diagnosed|signed|enrolled|broke up|split|switched|left"
               r"|resigned|handed in|gave notice|accepted|proposed|took up|picked up|gave up|stopped|booked|closed on"
               r"|won|hired|fired|laid off|promoted"
               r"|got (?:married|engaged|divorced|a new|my first|our first|a job|the job|promoted|hired|fired|a puppy"
               r"|a dog|a cat|a kitten|diagnosed)|had (?:a|our|my|the) baby|gave birth"
               r"|finished (?:my|our|the) (?:degree|course|studies|treatment|chemo|phd|masters|training"
               r"|apprenticeship)")


# What no durable fact is said as: a question, a request or order to the assistant, a supposition, a
# quotation. A piece that reads so is never a memory, and rule output from it is dropped; the
# classifier is trained on the other pieces only.
_NOT_A_STATEMENT = re.compile(
    # A question mark, except a doubled one after a statement, said in surprise ("finn turned 3 and eats broccoli??")
    r"(?<![?!])\?\s*$"
    r"|^\W*(?:is|are|am|was|were|do|does|did|can|could|will|have|has|any|anyone|anybody)\b.*\?[?!]*\s*$"
    r"|^\W*(?:if|what if|suppose|supposing|imagine|pretend|hypothetically|would|should i|could i|can you|could you"
    r"|would you|will you|please|pls|give me|tell me|show me|write|draft|translate|summarize|summarise|explain"
    r"|list|act as|act like|role-?play|you are|what|which|who|where|when|why|how)\b"
    # a quoted phrase ("translate 'good morning'"), not a name given in quotes ("my grandkids call me 'Nana Jo'")
    r"|(?:^|(?<!\bcall me)(?<!\bcalls me)(?<!\bcalled)(?<!\bknown as)(?<!\bme as)(?<!\bgo by)(?<!\bgoes by)"
    r"(?<!\bnamed)\s)[\"'](?=\S)[^\"']*\s[^\"']*[\"'](?=[\s.,!?;:]|$)"
    # what presents someone's quoted words (left out as the message is read, general.cleaned): "check my sister's
    # cover letter: '…'", "my mate wants this fixed: '…'"
    "|:\\s*[\"']\u2026[\"']\\W*$"
    # someone's view of what the speaker should do: "my mum reckons I should go back to uni"
    r"|\b(?:thinks?|reckons?|says?|feels?|believes?|keeps? (?:telling me|saying))\s+(?:that\s+)?(?:i|we)\s+"
    r"(?:should|ought|need|must|could|would)\b|\bwants? (?:me|us) to\b"
    # and someone else's opinion: "my gran always used to say...", "my sister's friend reckons Lisbon is..."
    r"|\b(?:reckons|thinks|believes|used to say|always says|always said)\b"
    # a wait measured in minutes: "on hold with the insurance company for 40 minutes now"
    r"|\bfor (?:over |about |like |almost )?\w+ (?:minutes|mins|hours|hrs|seconds|secs)(?: now| already)?\W*$"
    # this very moment: "just got back from the gym", "about to head out", "I'm at the airport", "yesterday I
    # ran into an old friend" (what changed in a life is news, not a moment: "just moved", "yesterday I quit")
    # (not "had", "did", "ran": "we just had our second", "just ran my first marathon" are news)
    rf"|^\W*(?:(?:i|we)\s+)?(?:(?:have|'ve|ve)\s+)?just\s+(?!(?:{_LIFE_EVENT})\b)(?:finished|got back|got home|got in"
    r"|got up|woke up|came back|came home|ate|watched|landed|arrived|walked|cooked|spent|burned|burnt|spilled|spilt"
    r"|dropped|missed|forgot)\b"
    r"|\b(?:i am|i'm|im|we're|we are)\s+(?:just\s+)?(?:about to|on (?:my|our) way|heading (?:out|off|home)"
    r"|off to (?:bed|sleep|work|the shops|the gym))\b"
    rf"|^\W*(?:yesterday|last night|this morning|earlier today)\b(?!.*\b(?:{_LIFE_EVENT})\b)"
    r"|\b(?:i am|i'm|im)\s+(?:at|in)\s+(?:the|a)\s+(?:airport|station|gym|beach|park|mall|shops|store|supermarket|pub"
    r"|bar|cafe|café|restaurant|cinema|movies|dentist|doctor'?s|waiting room|queue|line|car|train|bus|plane|taxi)\b"
    r"(?!.*\b(?:every|always|usually|often|a lot|most)\b)"
    # ...sitting, standing or waiting somewhere, or short of sleep: "now I'm sitting in wet socks in a board meeting",
    # "running on four hours of sleep" (not "sitting on the board of a charity", "standing in for my manager")
    r"|(?:^\W*|\bnow\s+)(?:i am|i'm|im)\s+(?:just\s+|currently\s+)?(?:sat|sitting|standing|stood|lying|waiting"
    r"|queuing|queueing)\s+(?:in(?! for\b)|at|outside)\b"
    r"|\brunning on (?:no|only|just|about|like|\d+|a few|one|two|three|four|five)\s+(?:\w+\s+)?hours?(?: of)? sleep\b"
    # what nearly happened, and so did not: "I nearly died laughing", "almost quit my job last week" (not "almost
    # 40", "nearly finished my thesis", nor what happened instead: "almost moved to Spain but stayed in Leeds")
    r"|^(?![^.;!?]*\b(?:but|instead)\b)\W*(?:(?:i|we)(?:'ve|\s+have)?\s+)?(?:(?:just|\w+ly)\s+)?(?:nearly|almost)\s+"
    r"(?!(?:finished|done|completed)\b)(?:[a-z]+ed|fell|lost|quit|left|had|got|went|threw|broke|ran|hit|gave|took"
    r"|made|bought|sold|forgot|spat|caught|fought)\b"
    # a place the speaker spends much time in, said as if they lived there: "I literally live at the library lol",
    # "I practically live in the car between after-school clubs"
    r"|^\W*(?:i|we)\s+(?:literally|practically|basically|virtually|pretty much|kinda|kind of|more or less)\s+"
    r"(?:live|lived|living)\s+(?:in|at)\b"
    # a mishap of the day: "got caught in the rain leaving work", "got soaked walking back", "we got lost driving"
    r"|^\W*(?:(?:i|we)\s+)?(?:just\s+)?got\s+(?:(?:absolutely|completely|totally|so|well)\s+)?(?:soaked|drenched"
    r"|wet|sunburn(?:t|ed)|rained on|snowed in|lost(?!\s+(?:my|our|the|a|an|in (?:my|the) (?:job|work))\b)"
    r"|caught (?:out )?in (?:a|the) (?:[\w-]+\s+)?(?:rain|storm|hailstorm|hail|downpour|shower|snow|thunderstorm"
    r"|blizzard|traffic|wind)"
    r"|stuck in (?:traffic|a queue|the queue|the lift|a lift|a jam))\b"
    # a story's world, told without the speaker in it: "in the movie the dad is a dentist", "the main character
    # lives in Oslo"
    r"|^(?!.*\b(?:i|i'm|im|i've|my|me|we|our|us)\b).*\b(?:(?:in|on) (?:the|that|this) (?:movie|film|book|novel"
    r"|show|series|episode|season|game|story|play|musical|comic|manga|anime|cartoon|sitcom|trailer)"
    r"|the (?:main character|protagonist|villain|narrator|hero|heroine))\b",
    re.I,
)


def not_a_statement(texts: list[str]) -> np.ndarray:
    return np.array([bool(_NOT_A_STATEMENT.search(text)) for text in texts], dtype=bool)


def cue_features(texts: list[str]) -> np.ndarray:
    return np.array([[1.0 if pattern.search(text) else 0.0 for _, pattern in _CUES] for text in texts],
                    dtype=np.float32).reshape(len(texts), len(_CUES))


_NAMES = tuple(name for name, _ in _CUES)
_NOT_PLAIN = tuple(_NAMES.index(name) for name in ("question_mark", "question_start", "request", "hypothetical",
                                                    "transient", "quote"))


def plain(cues: np.ndarray) -> np.ndarray:
    """Which pieces are plain first-person statements: said by the speaker about themselves or theirs,
    not asked, not requested, not supposed, not about this moment, not quoted. Most durable facts are
    said so; for them the classifier's bar is lower."""
    return (cues[:, _NAMES.index("first_person")] == 1) & (cues[:, list(_NOT_PLAIN)].sum(axis=1) == 0)


def thresholds(x: np.ndarray, w: Weights | None = None) -> np.ndarray:
    w = w or weights()
    cues = x[:, -len(_CUES):]
    return np.where(plain(cues), w.plain_threshold, w.durable_threshold)


def features(texts: list[str], vectors: np.ndarray) -> np.ndarray:
    """The classifiers' input: the unit sentence vector, then the cues."""
    return np.hstack([np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1), cue_features(texts)])


# The word leg reads a piece as scikit-learn's TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
# does, without importing it (train.py checks that both give the same vectors).
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def terms(text: str) -> list[str]:
    tokens = _TOKEN.findall(text.lower())
    return tokens + [f"{first} {second}" for first, second in zip(tokens, tokens[1:], strict=False)]


def _word_weights(text: str, index: dict, idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(columns, values) of a text's word vector: sublinear tf times idf, unit length, over a trained
    vocabulary (`index`: term -> column); unknown terms count for nothing."""
    counts: dict[int, int] = {}
    for term in terms(text):
        column = index.get(term)
        if column is not None:
            counts[column] = counts.get(column, 0) + 1
    columns = np.fromiter(counts, dtype=np.int64, count=len(counts))
    values = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float32, count=len(counts)))) * idf[columns]
    norm = float(np.linalg.norm(values))
    return columns, values / norm if norm else values


def word_features(texts: list[str], index: dict, idf: np.ndarray) -> np.ndarray:
    """The texts' word vectors over a vocabulary (`index`, `idf`) as dense rows (for checks; the
    classifiers read them sparse)."""
    rows = np.zeros((len(texts), len(idf)), dtype=np.float32)
    for row, text in enumerate(texts):
        columns, values = _word_weights(text, index, idf)
        rows[row, columns] = values
    return rows


@dataclass(frozen=True)
class Weights:
    support_vectors: np.ndarray  # (vectors, features): the vector leg
    dual_coef: np.ndarray  # (vectors,)
    vector_intercept: float
    gamma: float  # of the RBF kernel
    calibration: np.ndarray  # (scale, shift): the margin as a probability (Platt)
    word_index: dict  # term -> column of the word leg
    word_idf: np.ndarray  # (terms,)
    word_coef: np.ndarray  # (terms,)
    word_intercept: float
    durable_threshold: float  # at or above: durable
    plain_threshold: float  # the same for a plain first-person statement (classifier.plain)
    veto_threshold: float  # below: confident that the piece holds no durable fact
    # Which fact family a text is of: a logistic regression over its vector and one over its words (a
    # vocabulary of its own, with the memories' third-person words), averaged.
    family_coef: np.ndarray  # (families, vector dimensions)
    family_intercept: np.ndarray  # (families,)
    family_word_index: dict  # term -> column
    family_word_idf: np.ndarray  # (terms,)
    family_word_coef: np.ndarray  # (terms, families)
    family_word_intercept: np.ndarray  # (families,)
    families: tuple[str, ...]
    dev_hash: str  # the dev files the weights were trained from (train.dev_hash)
    # Does a whole message say that something about the speaker's life changed: a logistic regression
    # over the message's vector and one over its words (the word leg's vocabulary), averaged.
    change_coef: np.ndarray  # (vector dimensions,)
    change_intercept: float
    change_word_coef: np.ndarray  # (terms,)
    change_word_intercept: float
    change_threshold: float  # at or above: the message says a change
    # Which fact family a question asks about: a logistic regression over the question's vector as the search
    # embeds it (selectors.questions: addressed to the user), trained on the dev question set.
    question_coef: np.ndarray  # (families, vector dimensions), rows in the order of `families`
    question_intercept: np.ndarray  # (families,)
    # The support vectors' squared norms, computed as they load: every call needed them (a tenth of its time).
    support_norms: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "support_norms", (self.support_vectors ** 2).sum(axis=1))


_weights: Weights | None = None
_lock = threading.Lock()


def load(path: Path = WEIGHTS_PATH) -> Weights:
    with np.load(path, allow_pickle=False) as data:
        return from_arrays(data)


def from_arrays(data) -> Weights:
    """The weights from their arrays, by name, as train.train() gives them and weights.npz holds them."""
    return Weights(
        support_vectors=data["support_vectors"],
        dual_coef=data["dual_coef"],
        vector_intercept=float(data["vector_intercept"]),
        gamma=float(data["gamma"]),
        calibration=data["calibration"],
        word_index={str(term): column for column, term in enumerate(data["word_terms"])},
        word_idf=data["word_idf"],
        word_coef=data["word_coef"],
        word_intercept=float(data["word_intercept"]),
        durable_threshold=float(data["durable_threshold"]),
        plain_threshold=float(data["plain_threshold"]),
        veto_threshold=float(data["veto_threshold"]),
        family_coef=data["family_coef"],
        family_intercept=data["family_intercept"],
        family_word_index={str(term): column for column, term in enumerate(data["family_word_terms"])},
        family_word_idf=data["family_word_idf"],
        family_word_coef=np.ascontiguousarray(data["family_word_coef"].astype(np.float32).T),
        family_word_intercept=data["family_word_intercept"],
        families=tuple(str(f) for f in data["families"]),
        dev_hash=str(data["dev_hash"]),
        change_coef=data["change_coef"],
        change_intercept=float(data["change_intercept"]),
        change_word_coef=data["change_word_coef"],
        change_word_intercept=float(data["change_word_intercept"]),
        change_threshold=float(data["change_threshold"]),
        question_coef=data["question_coef"],
        question_intercept=data["question_intercept"],
    )


def weights() -> Weights:
    global _weights
    if _weights is None:
        with _lock:
            if _weights is None:
                _weights = load()
    return _weights


# The vector leg reads the whole message's vector beside the piece's: a piece of a story about a dream, a
# stranger or someone's parrot is no fact of the speaker's ("It bought stuff"), and "It's my comfort game"
# after a question about a game is one. Trained without two training parts of new voices and measured on
# them (the legs alone, before thresholds): AUC 0.890 without, 0.902, 0.903 and 0.908 at weights 1, 1.5 and
# 2.5; fact pieces kept with about 2.5% of their none messages spurious: 66.9% without, 74.5% at 1.5.
MESSAGE_WEIGHT = 1.5


def durable_input(x: np.ndarray, messages: np.ndarray) -> np.ndarray:
    """The vector leg's input: `x` (features) and the vector of the message each piece is of."""
    return np.hstack([np.asarray(x, dtype=np.float32), MESSAGE_WEIGHT * np.asarray(messages, dtype=np.float32)])


def durable_probability(x: np.ndarray, messages: np.ndarray, texts: list[str], w: Weights | None = None) -> np.ndarray:
    """The mean of the vector leg's and the word leg's probabilities (`x`: features(texts, ...); `messages`:
    the vector of the whole message each piece is of, its own for a message of one piece)."""
    w = w or weights()
    x = durable_input(x, messages)
    squared = (x * x).sum(axis=1, keepdims=True) + w.support_norms - 2 * x @ w.support_vectors.T
    margin = np.exp(-w.gamma * np.maximum(squared, 0.0)) @ w.dual_coef + w.vector_intercept
    vector_leg = _sigmoid(w.calibration[0] * margin + w.calibration[1])
    word_leg = _sigmoid(_word_logits(texts, w.word_coef, w.word_index, w.word_idf) + w.word_intercept)
    return (vector_leg + word_leg) / 2


def _word_logits(texts: list[str], coef: np.ndarray, index: dict, idf: np.ndarray) -> np.ndarray:
    """Each text's word vector over a vocabulary (`index`, `idf`) times `coef` (terms,) or (terms, classes),
    read sparse: (texts,) or (texts, classes)."""
    weighted = (_word_weights(text, index, idf) for text in texts)
    return np.array([values @ coef[columns] for columns, values in weighted],
                    dtype=np.float32).reshape(len(texts), *coef.shape[1:])


def change_probability(vectors: np.ndarray, texts: list[str], w: Weights | None = None) -> np.ndarray:
    """How likely each whole message (its sentence vector and its words) says that something about the
    speaker's life changed: "Aer Lingus now, nicer routes", "Baby Aiko arrived on Tuesday", "passed my
    driving test today!!!" (against a plain statement of a fact)."""
    w = w or weights()
    vector_leg = _sigmoid(np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1) @ w.change_coef
                          + w.change_intercept)
    word_leg = _sigmoid(_word_logits(texts, w.change_word_coef, w.word_index, w.word_idf) + w.change_word_intercept)
    return (vector_leg + word_leg) / 2


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def family_probabilities(texts: list[str], vectors: np.ndarray, w: Weights | None = None) -> np.ndarray:
    """(texts, families): how likely each text is of each fact family, the mean of the vector model's and
    the word model's softmax. Both were trained on the pieces of messages and on the memories the general
    path writes from them ("I live in Hamburg", "The user lives in Hamburg."), so they read either."""
    w = w or weights()
    vector_scores = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1) @ w.family_coef.T
    word_scores = _word_logits(texts, w.family_word_coef, w.family_word_index, w.family_word_idf)
    return (_softmax(vector_scores + w.family_intercept) + _softmax(word_scores + w.family_word_intercept)) / 2


def question_family_probabilities(vectors: np.ndarray, w: Weights | None = None) -> np.ndarray:
    """(questions, families): how likely each question, by its vector as the search embeds it, asks about
    each fact family."""
    w = w or weights()
    vectors = np.asarray(vectors, dtype=np.float32).reshape(-1, w.question_coef.shape[1])
    return _softmax(vectors @ w.question_coef.T + w.question_intercept)


def kind_agreement(question_vector: np.ndarray, texts: list[str], vectors: np.ndarray,
                   w: Weights | None = None, *, asked: np.ndarray | None = None) -> np.ndarray:
    """(texts,): how likely each memory text (with its vector as written) is of the family of fact the question
    asks about: the dot product of the question's family probabilities and the memory's. `asked`: the question's
    family probabilities, where the caller has them already."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    w = w or weights()
    if asked is None:
        asked = question_family_probabilities(question_vector, w)[0]
    return family_probabilities(texts, vectors, w) @ asked


def _softmax(scores: np.ndarray) -> np.ndarray:
    exp = np.exp(scores - scores.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)
