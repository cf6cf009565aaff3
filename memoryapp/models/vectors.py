"""The halfvec column type of the embeddings."""

from __future__ import annotations

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
        return "[" + ",".join([f"{number:.5g}" for number in halves.tolist()]) + "]"
