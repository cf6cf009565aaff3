"""The LLM backend against a local fake chat-completions endpoint (a real HTTP server on
127.0.0.1, the `endpoint` fixture of tests/fake_llm.py). No database, no network."""

import logging
from dataclasses import asdict, replace
from datetime import datetime, timedelta, timezone

import pytest
from django.test import override_settings

from memoryapp import llm
from memoryapp.services.extract.base import Candidate, EpisodeInput
from memoryapp.services.extract.llm import LLMExtractor
from memoryapp.services.extract.rules import RulesExtractor

TOKYO = timezone(timedelta(hours=9))
NOW = datetime(2024, 6, 12, 15, 30, tzinfo=TOKYO)


def as_item(candidate: Candidate) -> dict:
    """A candidate as the model is asked to write it."""
    return {**asdict(candidate), "valid_from": candidate.valid_from.isoformat()}


def valid_item(**changes) -> dict:
    item = {
        "text": "Sam is vegetarian.",
        "subject": "sam",
        "attribute": "diet",
        "value": "vegetarian",
        "valid_from": NOW.isoformat(),
        "importance": 8,
        "confidence": 0.9,
        "relation": "state",
        "kind": "semantic",
        "episode_index": 0,
    }
    return {**item, **changes}


EPISODES = [
    EpisodeInput("I'm vegetarian.", NOW),
    EpisodeInput("Nice! Any favourite dish?", NOW, "assistant"),
    EpisodeInput("my sister is vegetarian too. I started at Globex two weeks ago", NOW),
]


# ---------------------------------------------------------------------------------------------
# Valid answers
# ---------------------------------------------------------------------------------------------


def test_valid_facts_become_the_same_candidates_as_the_rules_backend(endpoint):
    expected = RulesExtractor().extract(EPISODES, subject="sam")
    endpoint.answer_facts([as_item(candidate) for candidate in expected])

    candidates = LLMExtractor().extract(EPISODES, subject="sam")

    # how likely the classifier hears a change is the rules backend's own reading of the messages
    assert candidates == [replace(candidate, change_heard=0.0) for candidate in expected]
    assert all(type(candidate) is Candidate for candidate in candidates)


def test_the_request_carries_model_messages_and_authorization(endpoint):
    endpoint.answer_facts([])

    LLMExtractor().extract(EPISODES, subject="sam")

    (request,) = endpoint.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer test-key"
    body = request["json"]
    assert body["model"] == "test-model"
    assert body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert [message["role"] for message in body["messages"]] == ["system", "user"]
    assert '"episode_index": int' in body["messages"][0]["content"]
    assert "I started at Globex two weeks ago" in body["messages"][1]["content"]
    assert NOW.isoformat() in body["messages"][1]["content"]


def test_no_authorization_header_without_an_api_key(endpoint):
    endpoint.answer_content('{"ok": true}')
    with override_settings(MEMORY_LLM_API_KEY=""):
        assert llm.chat_json([{"role": "user", "content": "hi"}]) == {"ok": True}
    assert "Authorization" not in endpoint.requests[0]["headers"]


def test_schema_hint_joins_the_existing_system_message(endpoint):
    endpoint.answer_content("[]")
    llm.chat_json(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], schema_hint="Schema: []"
    )
    messages = endpoint.requests[0]["json"]["messages"]
    assert [message["role"] for message in messages] == ["system", "user"]
    assert messages[0]["content"].startswith("Be brief.") and messages[0]["content"].endswith("Schema: []")


@pytest.mark.parametrize(
    "content",
    ['```json\n{"facts": []}\n```', '<think>the user said hi</think>{"facts": []}', 'Here you go: {"facts": []}'],
)
def test_fences_and_surrounding_text_are_tolerated(endpoint, content):
    endpoint.answer_content(content)
    assert llm.chat_json([{"role": "user", "content": "hi"}]) == {"facts": []}


def test_a_server_that_rejects_json_mode_is_asked_again_without_it(endpoint):
    # LM Studio: 400 {"error": "'response_format.type' must be 'json_schema' or 'text'"}
    endpoint.answer_raw(b"{\"error\": \"'response_format.type' must be 'json_schema' or 'text'\"}", status=400)
    endpoint.answer_content('{"facts": []}')

    assert llm.chat_json([{"role": "user", "content": "hi"}]) == {"facts": []}
    assert "response_format" in endpoint.requests[0]["json"]
    assert "response_format" not in endpoint.requests[1]["json"]


def test_naive_valid_from_takes_the_episode_time_zone(endpoint):
    endpoint.answer_facts([valid_item(valid_from="2019-01-01T00:00:00")])
    (candidate,) = LLMExtractor().extract(EPISODES, subject="sam")
    assert candidate.valid_from == datetime(2019, 1, 1, tzinfo=TOKYO)


def test_missing_valid_from_means_when_it_was_said(endpoint):
    endpoint.answer_facts([valid_item(valid_from=None)])
    (candidate,) = LLMExtractor().extract(EPISODES, subject="sam")
    assert candidate.valid_from == NOW


def test_a_retraction_may_have_no_attribute_and_no_value(endpoint):
    endpoint.answer_facts(
        [valid_item(relation="retract", attribute="", value="", text="Sam retracted the previous statement.")]
    )
    (candidate,) = LLMExtractor().extract(EPISODES, subject="sam")
    assert (candidate.relation, candidate.attribute, candidate.value) == ("retract", "", "")


def test_no_episodes_ask_nothing(endpoint):
    assert LLMExtractor().extract([], subject="sam") == []
    assert endpoint.requests == []


# ---------------------------------------------------------------------------------------------
# Invalid answers
# ---------------------------------------------------------------------------------------------

INVALID_ITEMS = {
    "not an object": "Sam is vegetarian.",
    "episode out of range": valid_item(episode_index=3),
    "negative episode": valid_item(episode_index=-1),
    "assistant episode": valid_item(episode_index=1),
    "episode as text": valid_item(episode_index="0"),
    "unknown relation": valid_item(relation="update"),
    "unknown kind": valid_item(kind="episodic"),
    "importance too high": valid_item(importance=11),
    "importance as text": valid_item(importance="8"),
    "importance as bool": valid_item(importance=True),
    "fractional importance": valid_item(importance=7.5),
    "confidence above one": valid_item(confidence=1.5),
    "confidence as text": valid_item(confidence="high"),
    "empty text": valid_item(text="  "),
    "missing text": {key: value for key, value in valid_item().items() if key != "text"},
    "empty value for a state": valid_item(value=""),
    "empty attribute for a state": valid_item(attribute=""),
    "unparseable date": valid_item(valid_from="last Tuesday"),
    "date as number": valid_item(valid_from=20190101),
    "someone unrelated": valid_item(subject="the sushi place"),
    "value as list": valid_item(value=["vegetarian"]),
}


def test_invalid_items_are_dropped_and_the_valid_ones_kept(endpoint, caplog):
    endpoint.answer_facts([*INVALID_ITEMS.values(), valid_item(episode_index=2, importance=7.0, confidence=1)])

    with caplog.at_level(logging.WARNING, logger="memoryapp.services.extract.llm"):
        candidates = LLMExtractor().extract(EPISODES, subject="sam")

    assert [(c.episode_index, c.importance, c.confidence) for c in candidates] == [(2, 7, 1.0)]
    dropped = [record.getMessage() for record in caplog.records]
    assert len(dropped) == len(INVALID_ITEMS)
    assert any("episode_index 3" in message for message in dropped)
    assert any("assistant turn" in message for message in dropped)
    assert any("relation 'update'" in message for message in dropped)


def test_subject_spelling_follows_the_user(endpoint):
    endpoint.answer_facts([valid_item(subject="Sam's Sister", episode_index=2), valid_item(subject="SAM")])
    candidates = LLMExtractor().extract(EPISODES, subject="sam")
    assert [candidate.subject for candidate in candidates] == ["sam", "sam's sister"]


def test_an_answer_without_a_facts_list_is_an_error(endpoint):
    endpoint.answer_content('{"memories": "Sam is vegetarian"}')
    with pytest.raises(llm.LLMError, match="facts"):
        LLMExtractor().extract(EPISODES, subject="sam")


def test_http_500_raises_llm_error_with_the_status(endpoint):
    endpoint.answer_raw(b'{"error": "model crashed"}', status=500)
    with pytest.raises(llm.LLMError, match="HTTP 500.*model crashed"):
        LLMExtractor().extract(EPISODES, subject="sam")


def test_a_body_that_is_not_json_raises_llm_error(endpoint):
    endpoint.answer_raw(b"<html>Bad gateway</html>")
    with pytest.raises(llm.LLMError, match="did not answer with JSON"):
        llm.chat_json([{"role": "user", "content": "hi"}])


def test_content_that_is_not_json_raises_llm_error(endpoint):
    endpoint.answer_content("Sure! Sam is vegetarian.")
    with pytest.raises(llm.LLMError, match="JSON object or list"):
        llm.chat_json([{"role": "user", "content": "hi"}])


def test_an_answer_without_choices_raises_llm_error(endpoint):
    endpoint.answer_raw(b'{"error": {"message": "overloaded"}}')
    with pytest.raises(llm.LLMError, match="choices"):
        llm.chat_json([{"role": "user", "content": "hi"}])


def test_a_slow_endpoint_times_out_with_llm_error(endpoint):
    endpoint.delay = 1.0
    endpoint.answer_content("{}")
    with override_settings(MEMORY_LLM_TIMEOUT=0.2), pytest.raises(llm.LLMError, match="did not answer within"):
        llm.chat_json([{"role": "user", "content": "hi"}])


def test_an_unreachable_endpoint_raises_llm_error():
    with override_settings(MEMORY_LLM_BASE_URL="http://127.0.0.1:9/v1"), pytest.raises(llm.LLMError, match="reach"):
        llm.chat_json([{"role": "user", "content": "hi"}])


def test_is_configured_follows_the_base_url():
    with override_settings(MEMORY_LLM_BASE_URL=""):
        assert not llm.is_configured()
        with pytest.raises(llm.LLMError, match="MEMORY_LLM_BASE_URL"):
            llm.chat_json([{"role": "user", "content": "hi"}])
    with override_settings(MEMORY_LLM_BASE_URL="http://127.0.0.1:1234/v1"):
        assert llm.is_configured()
