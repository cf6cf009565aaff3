"""Logging filters: search text never reaches a log line."""

from __future__ import annotations

import logging
import re

# A path followed by its query string: `/api/v1/memories?q=...` keeps `/api/v1/memories`.
_QUERY_STRING = re.compile(r"(/[^\s?\"]*)\?[^\s\"]*")


def without_query_string(text: str) -> str:
    return _QUERY_STRING.sub(r"\1", text)


class StripQueryStrings(logging.Filter):
    """Drop query strings from request lines (runserver's `"GET /path?q=... HTTP/1.1" 200`): a `q=`
    there is search text. Request bodies are never logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = without_query_string(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(without_query_string(a) if isinstance(a, str) else a for a in record.args)
        return True
