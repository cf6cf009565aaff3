"""Extraction: episodes in, candidate memories out. Two backends with one output type, chosen by
settings.MEMORY_EXTRACTOR: `rules` (offline, the default) and `llm` (an OpenAI-compatible endpoint)."""

from __future__ import annotations

from django.conf import settings

from .base import Candidate, EpisodeInput, Extractor
from .llm import LLMExtractor
from .rules import RulesExtractor

EXTRACTORS = {"rules": RulesExtractor, "llm": LLMExtractor}

__all__ = ["Candidate", "EpisodeInput", "Extractor", "LLMExtractor", "RulesExtractor", "get_extractor"]


def get_extractor(name: str | None = None) -> Extractor:
    """The extractor called `name`, or the configured one (MEMORY_EXTRACTOR)."""
    name = name or settings.MEMORY_EXTRACTOR
    if name not in EXTRACTORS:
        raise ValueError(f"unknown extractor {name!r}: set MEMORY_EXTRACTOR to one of {', '.join(EXTRACTORS)}")
    return EXTRACTORS[name]()
