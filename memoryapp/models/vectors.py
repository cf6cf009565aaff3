"""The halfvec column type of the embeddings."""

from __future__ import annotations

from functools import cache

import numpy as np
from pgvector import HalfVector
from pgvector.django import HalfVectorField as PgvectorHalfVectorField


class HalfVectorField(PgvectorHalfVectorField):
    """pgvector's halfvec column, its values sent with five significant digits: exactly the half-precision
    value the column keeps (every finite float16 reads back the same), where pgvector-python writes each
    number's full decimal expansion, five times slower (ingest sends two vectors a memory and one an episode)."""

    def get_prep_value(self, value):
        if value is None or isinstance(value, str):
            return super().get_prep_value(value)
        halves = value.to_numpy() if isinstance(value, HalfVector) else np.asarray(value, dtype=np.float16)
        texts = _half_texts()
        bits = halves.astype(np.float16, copy=False).view(np.uint16)  # each number as its 16 bits
        return "[" + ",".join([texts[number] for number in bits.tolist()]) + "]"


@cache
def _half_texts() -> list[str]:
    """The text of each of the 65,536 half-precision values, by its bits: a vector's text is then one look-up a
    number, a sixth of the time formatting each took (ingest writes three vectors a message)."""
    return [f"{number:.5g}" for number in np.arange(2**16, dtype=np.uint16).view(np.float16).tolist()]
