"""JSON bodies with a size limit: DRF reads the stream directly, past Django's own check."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


# Here, not in memoryapp.api.errors: DRF's views read DEFAULT_PARSER_CLASSES (this module) as they load,
# and errors imports those views, so a parser importing errors closes a cycle.
class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "the request body is too large"


class LimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(f"the request body is larger than {limit} bytes")
        if not body:
            raise exceptions.ParseError("the request body is empty; send a JSON object")
        try:
            data = json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError("the request body is not valid UTF-8") from exc
        except (ValueError, RecursionError) as exc:
            raise exceptions.ParseError(f"malformed JSON: {exc}") from exc
        if _depth(data) > MAX_DEPTH:
            raise exceptions.ParseError(f"JSON nested deeper than {MAX_DEPTH} levels")
        return data


def _depth(value, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
