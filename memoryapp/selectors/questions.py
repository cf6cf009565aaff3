"""Questions as agents ask them: in the user's own words ("where do I live?") about memories written
in the third person ("Sam lives in Lisbon."), and naming a user every one of their memories names.

Two steps, both about the user the search is for:
- first person to third: "I", "my", "me", "am I", "do I" become the name the write path gives the
  user in memory texts (selectors.names.user_display_name), so "where do I live?" is asked as
  "where does Sam live?";
- the name carries no relevance: every memory of Sam's says "Sam", so the name's own direction is
  taken out of the query's vector and the candidates' vectors before they are compared
  (`NameNeutral`), and the name is no search word. "When is Sam's dentist appointment?" is then
  as unrelated to "Sam lives in Lisbon." as "When is the dentist appointment?" is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from memoryapp import embeddings
from memoryapp.models import User
from memoryapp.selectors.names import user_display_name
from memoryapp.services.extract.grammar import THE_USER, readable_name

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


def subject_names(user: User) -> tuple[str, ...]:
    """Every way memory texts may call the user, the current one first: the write path's name now,
    then the ones older texts may use (an admin's display name, the external id read as a name,
    "the user")."""
    names = [user_display_name(user), user.first_name.strip(), readable_name(user.external_id), THE_USER]
    return tuple(dict.fromkeys(name for name in names if name))


def name_words(names: tuple[str, ...]) -> set[str]:
    """The search words of the names ("Mary-Jane" -> mary, jane; "the user" -> user)."""
    return {word for name in names for word in re.findall(r"[a-z0-9]+", name.lower()) if word != "the"}


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
