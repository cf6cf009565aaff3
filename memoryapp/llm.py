"""The only module that talks to an LLM endpoint: any OpenAI-compatible chat-completions server
(vLLM, llama.cpp, Ollama, LM Studio, hosted), configured by MEMORY_LLM_BASE_URL, _MODEL,
_API_KEY and _TIMEOUT. Standard library only, so the offline default pulls in nothing.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.error
import urllib.request

from django.conf import settings

logger = logging.getLogger(__name__)

JSON_ONLY = "Reply with a single JSON value and nothing else: no prose, no Markdown."


class LLMError(Exception):
    """The endpoint could not be reached, failed, or did not answer with JSON."""


def is_configured() -> bool:
    return bool(settings.MEMORY_LLM_BASE_URL)


def chat_json(messages: list[dict], *, schema_hint: str = "") -> dict | list:
    """The model's reply to `messages`, parsed as JSON. Deterministic (temperature 0) and in JSON
    mode; `schema_hint` is added to the system message to say which JSON."""
    if not is_configured():
        raise LLMError("no LLM endpoint is configured: set MEMORY_LLM_BASE_URL (e.g. http://127.0.0.1:1234/v1)")
    payload = {
        "model": settings.MEMORY_LLM_MODEL,
        "messages": _with_system_hint(messages, f"{JSON_ONLY} {schema_hint}".strip()),
        "temperature": 0,
        "response_format": {"type": "json_object"},
    }
    try:
        reply = _post(payload)
    except _ResponseFormatRejected:
        # LM Studio answers 400 to json_object (it only knows json_schema); the instruction in the
        # system message still asks for JSON, and the parser below tolerates fences.
        del payload["response_format"]
        reply = _post(payload)
    return parse_json_reply(_content_of(reply))


def parse_json_reply(content: str) -> dict | list:
    """JSON from a model's message: tolerates ```json fences, a <think> preamble and text around it."""
    text = re.sub(r"<think>.*?</think>", "", content, flags=re.DOTALL).strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, flags=re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    for candidate in (text, _outermost_json(text)):
        if candidate:
            try:
                value = json.loads(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict | list):
                return value
    raise LLMError(f"the model did not answer with a JSON object or list: {content[:200]!r}")


def _with_system_hint(messages: list[dict], hint: str) -> list[dict]:
    # One system message, first: several chat templates reject a second one or one later on.
    if messages and messages[0].get("role") == "system":
        first = messages[0]
        return [{**first, "content": f"{first['content']}\n\n{hint}"}, *messages[1:]]
    return [{"role": "system", "content": hint}, *messages]


def _outermost_json(text: str) -> str:
    starts = [index for index in (text.find("{"), text.find("[")) if index >= 0]
    if not starts:
        return ""
    start = min(starts)
    end = text.rfind("}" if text[start] == "{" else "]")
    return text[start : end + 1] if end > start else ""


class _ResponseFormatRejected(LLMError):
    pass


def _post(payload: dict) -> dict:
    url = settings.MEMORY_LLM_BASE_URL.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if settings.MEMORY_LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.MEMORY_LLM_API_KEY}"
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=settings.MEMORY_LLM_TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")[:500]
        if error.code == 400 and "response_format" in detail and "response_format" in payload:
            raise _ResponseFormatRejected(detail) from error
        raise LLMError(f"LLM endpoint {url} answered HTTP {error.code}: {detail}") from error
    except TimeoutError as error:
        raise LLMError(f"LLM endpoint {url} did not answer within {settings.MEMORY_LLM_TIMEOUT} s") from error
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            raise LLMError(f"LLM endpoint {url} did not answer within {settings.MEMORY_LLM_TIMEOUT} s") from error
        raise LLMError(f"cannot reach LLM endpoint {url}: {error.reason}") from error
    except OSError as error:  # connection reset mid-answer, and the like
        raise LLMError(f"LLM endpoint {url} failed: {error}") from error
    logger.debug("LLM call to %s took %.2f s", url, time.monotonic() - started)
    try:
        return json.loads(body)
    except json.JSONDecodeError as error:
        raise LLMError(f"LLM endpoint {url} did not answer with JSON: {body[:200]!r}") from error


def _content_of(reply: dict) -> str:
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as error:
        raise LLMError(f"not a chat-completions answer (no choices[0].message.content): {str(reply)[:200]}") from error
    if not isinstance(content, str):
        raise LLMError(f"the model's message content is not text: {content!r:.200}")
    return content
