"""LoCoMo-format import and evidence recall, on a small hand-written conversation (never the
LoCoMo data itself, which is kept for benchmarks)."""

import copy
from datetime import UTC, datetime, timedelta

import pytest

from memoryapp.actors import ActorRef, Principal
from memoryapp.evaluation.locomo import locomo_import, locomo_parse, parse_evidence, parse_session_date
from memoryapp.evaluation.metrics import ALL, Retrieval, evidence_recall, recall_at_k
from memoryapp.models import Episode
from memoryapp.selectors.search import SearchParams, search_episodes
from tests.factories import make_agent

IMPORTER = ActorRef.for_job("locomo-import")

SAMPLE = {
    "sample_id": "conv-ana-ben",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a greyhound, she is called Pixel."},
            {
                "speaker": "Ben",
                "dia_id": "D1:2",
                "text": "Congratulations! Look what I bought for the summer.",
                "img_url": ["https://example.org/kayak.jpg"],
                "blip_caption": "a photo of a red kayak on a lake",
            },
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Beautiful. I have been learning to bake sourdough bread."},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "My sister works as a nurse at the city hospital."},
        ],
        "session_2_date_time": "12:09 am on 19 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I finally ran my first marathon, in Lisbon, on Sunday."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Amazing! We cheered for you from home."},
            {"speaker": "Ana", "dia_id": "D2:3", "text": "I started a new job at a bookshop downtown."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "When did Ben run a marathon?", "answer": 2023, "evidence": ["D2:1; D1:2"], "category": 2},
        {"question": "What did Ana bake?", "evidence": ["D1:3"], "category": 5, "adversarial_answer": "croissants"},
    ],
    "event_summary": {},
    "observation": {},
    "session_summary": {},
}


def sample(**changes):
    data = copy.deepcopy(SAMPLE)
    data.update(changes)
    return data


@pytest.fixture
def conversation():
    return locomo_parse([sample()])[0]


def test_session_dates_become_aware_utc_times():
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    with pytest.raises(ValueError, match="expected like"):
        parse_session_date("yesterday")


def test_turns_keep_their_order_in_time_and_their_captions(conversation):
    turns = {turn.dia_id: turn for turn in conversation.turns}
    assert [turn.dia_id for turn in conversation.turns] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3"]
    assert turns["D1:1"].occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert turns["D1:1"].occurred_at < turns["D1:2"].occurred_at < turns["D1:3"].occurred_at
    assert turns["D2:1"].occurred_at == datetime(2023, 6, 19, 0, 9, tzinfo=UTC) and turns["D2:1"].session == 2
    assert turns["D1:2"].caption == "a photo of a red kayak on a lake" and turns["D1:1"].caption == ""
    assert (conversation.sample_id, conversation.speaker_a, conversation.speaker_b) == ("conv-ana-ben", "Ana", "Ben")


def test_questions_keep_categories_answers_and_split_malformed_evidence(conversation):
    marathon = conversation.questions[1]
    assert [q.category for q in conversation.questions] == [4, 2, 5]
    assert marathon.evidence == ("D2:1", "D1:2") and marathon.answer == "2023"
    assert conversation.questions[2].answer == "croissants"  # the adversarial answer
    assert parse_evidence(["D8:6; D9:17", "D9:17", "see D3"]) == ("D8:6", "D9:17")


def test_sessions_are_read_in_number_order_whatever_the_key_order():
    data = sample()
    data["conversation"]["session_10"] = [{"speaker": "Ana", "dia_id": "D10:1", "text": "Later."}]
    data["conversation"]["session_10_date_time"] = "9:00 am on 1 January, 2024"
    sessions = [turn.session for turn in locomo_parse(data)[0].turns]
    assert sessions == sorted(sessions) and sessions[-1] == 10


@pytest.mark.django_db
def test_import_stores_every_turn_as_a_dated_episode_of_the_sample_user(acme):
    [imported] = locomo_import(organization=acme, path_or_data=[sample()], actor=IMPORTER)
    episodes = {e.metadata["dia_id"]: e for e in Episode.objects.filter(user=imported.user)}
    assert imported.user.external_id == "conv-ana-ben" and imported.user.organization == acme
    assert set(episodes) == set(imported.episode_ids) and len(episodes) == 7 and imported.created == 7
    kayak = episodes["D1:2"]
    assert kayak.content == (
        "Ben: Congratulations! Look what I bought for the summer. [a photo of a red kayak on a lake]"
    )
    assert kayak.metadata == {"dia_id": "D1:2", "speaker": "Ben"} and kayak.session == "session_1"
    assert kayak.occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC) + timedelta(seconds=5)
    assert episodes["D2:3"].session == "session_2" and episodes["D2:3"].occurred_at.date().isoformat() == "2023-06-19"
    assert all(e.source == "user" and e.embedding is not None for e in episodes.values())
    assert all(e.extraction == Episode.Extraction.PENDING for e in episodes.values())  # nothing was extracted


@pytest.mark.django_db
def test_reimporting_a_sample_reuses_its_user_and_adds_only_missing_turns(acme):
    first = locomo_import(organization=acme, path_or_data=[sample()], actor=IMPORTER)[0]
    longer = sample()
    longer["conversation"]["session_2"].append({"speaker": "Ben", "dia_id": "D2:4", "text": "See you soon!"})
    again = locomo_import(organization=acme, path_or_data=[longer], actor=IMPORTER)[0]
    assert again.user == first.user and again.created == 1
    assert Episode.objects.filter(user=first.user).count() == 8
    assert {k: v for k, v in again.episode_ids.items() if k != "D2:4"} == first.episode_ids


@pytest.mark.django_db
def test_import_batches_turns_within_the_request_limit(acme, settings):
    settings.MEMORY_MAX_MESSAGES_PER_REQUEST = 2
    [imported] = locomo_import(organization=acme, path_or_data=[sample()], actor=IMPORTER)
    assert imported.created == 7


def test_recall_at_k_is_the_share_of_gold_in_the_top_k():
    retrieved = ["a", "b", "c", "d"]
    assert recall_at_k(retrieved, {"a", "c", "z"}, 1) == pytest.approx(1 / 3)
    assert recall_at_k(retrieved, {"a", "c", "z"}, 3) == pytest.approx(2 / 3)
    assert recall_at_k(retrieved, {"d"}, 10) == 1.0 and recall_at_k([], {"d"}, 5) == 0.0
    with pytest.raises(ValueError, match="gold"):
        recall_at_k(retrieved, set(), 5)
    with pytest.raises(ValueError, match="k must"):
        recall_at_k(retrieved, {"a"}, 0)


def test_evidence_recall_averages_per_category_and_leaves_out_adversarial_questions():
    retrievals = [
        Retrieval(1, ("a", "b"), frozenset({"a", "x"})),  # @1: 0.5
        Retrieval(1, ("b", "a"), frozenset({"a"})),  # @1: 0, @2: 1
        Retrieval(4, ("c",), frozenset({"c"})),  # @1: 1
        Retrieval(5, ("q",), frozenset({"q"})),  # adversarial: not scored
        Retrieval(2, ("q",), frozenset()),  # no gold: not scored
    ]
    table = evidence_recall(retrievals, ks=(1, 2))
    assert table[1].questions == 2 and table[1].recall == {1: 0.25, 2: 0.75}
    assert table[4].recall == {1: 1.0, 2: 1.0} and table[2].questions == 0 and 5 not in table
    assert table[ALL].questions == 3 and table[ALL].recall[1] == pytest.approx(1.5 / 3)


@pytest.mark.django_db
def test_a_direct_question_finds_its_evidence_turn_with_the_real_model(acme):
    [imported] = locomo_import(organization=acme, path_or_data=[sample()], actor=IMPORTER)
    agent, _ = make_agent(acme, permissions=["read"])
    dia_id = {episode_id: dia for dia, episode_id in imported.episode_ids.items()}
    for question, evidence in (("What is the name of Ana's dog?", "D1:1"), ("Where does Ben's sister work?", "D1:4")):
        result = search_episodes(
            Principal.for_agent(agent), user=imported.user, params=SearchParams(query=question, k=3, min_score=0)
        )
        assert evidence in [dia_id[hit.item.id] for hit in result.hits], question
