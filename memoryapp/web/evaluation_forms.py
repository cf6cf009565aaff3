"""The evaluation page's forms: a LoCoMo file to upload (checked before any run is queued), and the
choices of a write-accuracy or question-set run."""

from __future__ import annotations

import json
import uuid

from django import forms
from django.conf import settings

from memoryapp import llm
from memoryapp.evaluation.locomo import locomo_parse
from memoryapp.evaluation.metrics import RECALL_CATEGORIES
from memoryapp.evaluation.write_accuracy import EXTRACTORS
from memoryapp.evaluation.write_corpus import SPLITS

MAX_UPLOAD_BYTES = 20 * 1024 * 1024


class LocomoUploadForm(forms.Form):
    file = forms.FileField(label="LoCoMo-format JSON file",
                           help_text="A list of samples (sample_id, conversation, qa), up to 20 MB.",
                           widget=forms.FileInput(attrs={"accept": ".json,application/json"}))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is {upload.size / 1024 / 1024:.1f} MB; the limit is 20 MB.")
        raw = upload.read()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"The file is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                                        f"{exc.msg}).") from exc
        except UnicodeDecodeError as exc:
            raise forms.ValidationError("The file is not text in UTF-8: upload the JSON file itself.") from exc
        try:
            conversations = locomo_parse(data)
        except KeyError as exc:
            raise forms.ValidationError(f"This is not a LoCoMo-format file: a sample has no {exc.args[0]!r} "
                                        "field.") from exc
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            detail = str(exc) if isinstance(exc, ValueError) else "expected a list of samples, each with sample_id, " \
                "a conversation of sessions and qa"
            raise forms.ValidationError(f"This is not a LoCoMo-format file: {detail}.") from exc
        if not conversations:
            raise forms.ValidationError("The file holds no conversations.")
        measurable = sum(1 for conversation in conversations for question in conversation.questions
                         if question.category in RECALL_CATEGORIES
                         and set(question.evidence) & {turn.dia_id for turn in conversation.turns})
        if not measurable:
            raise forms.ValidationError("No question of categories 1-4 points at evidence among the turns, so "
                                        "there is nothing to measure.")
        self.raw, self.conversations, self.measurable = raw, conversations, measurable
        return upload


def upload_save(raw: bytes) -> str:
    folder = settings.DATA_DIR / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    saved = folder / f"{uuid.uuid4()}.json"
    saved.write_bytes(raw)
    return str(saved)


def extractors_available() -> list[str]:
    return [name for name in EXTRACTORS if name != "llm" or llm.is_configured()]


class WriteAccuracyForm(forms.Form):
    split = forms.ChoiceField(choices=[(s, s) for s in SPLITS], initial="test")
    extractor = forms.ChoiceField(choices=[(e, e) for e in EXTRACTORS], initial="rules")

    def clean_extractor(self):
        extractor = self.cleaned_data["extractor"]
        if extractor not in extractors_available():
            raise forms.ValidationError("The LLM extractor needs MEMORY_LLM_BASE_URL set on the server.")
        return extractor


class QuestionsForm(forms.Form):
    split = forms.ChoiceField(choices=[(s, s) for s in SPLITS], initial="test")
