"""Evaluation runs end to end: the changing-facts benchmark, LoCoMo recall with the ladder, the
live store metrics, write accuracy, and the `evaluate` command."""

import io
import json
from dataclasses import replace

import pytest
from django.core.management import call_command

from memoryapp.evaluation import changing_facts
from memoryapp.evaluation.metrics import contradiction_rate, duplicate_rate, staleness
from memoryapp.evaluation.runs import LADDER, locomo_run
from memoryapp.models import Job, Organization
from tests.evaluation.corpus import CHANGING, RECOGNISED, SMALL_TALK, changing_corpus
from tests.evaluation.test_locomo import sample
from tests.factories import make_memory


@pytest.fixture
def changing(tmp_path):
    return changing_corpus(tmp_path / "corpus")


def test_conversations_are_made_of_the_corpus_change_pairs_and_small_talk(changing):
    corpus = changing_facts.source("dev", changing)
    befores = {before for _, before, _, _, _, _ in CHANGING}
    for seed in range(5):
        conversation = changing_facts.generate(seed, corpus)
        assert len(conversation.turns) == 50 and len(conversation.facts) == 8
        assert len({f.pair.family for f in conversation.facts}) == 8, "one fact per family"
        changed = [f for f in conversation.facts if f.changed]
        assert len(changed) == 3 and all(f.turn_change > f.turn_first and f.current != f.first for f in changed)
        for fact in conversation.facts:
            assert conversation.turns[fact.turn_first] == fact.pair.before and fact.question == fact.pair.question
            assert fact.current == (fact.pair.after_must if fact.changed else fact.pair.before_must)
        for f in changed:
            assert conversation.turns[f.turn_change] == f.pair.after
        assert set(conversation.turns) <= befores | {f.pair.after for f in changed} | set(SMALL_TALK)
        assert conversation.asked_at > conversation.times[-1]
    assert changing_facts.generate(3, corpus).turns == changing_facts.generate(3, corpus).turns, "reproducible"


def test_outcomes_tell_current_outdated_both_and_neither(changing):
    fact = next(f for f in changing_facts.generate(0, changing_facts.source("dev", changing)).facts if f.changed)
    now, before = " ".join(fact.current), " ".join(fact.first)
    assert changing_facts.outcome(f"The user: {now.upper()}.", fact) == "current_only", "any case, whole words"
    assert changing_facts.outcome(f"{before}\n{now}", fact) == "both", "the old value on a line of its own"
    assert changing_facts.outcome(before, fact) == "outdated_only"
    # One item naming both tells the change, as write accuracy reads a memory; so does one saying the old is over.
    assert changing_facts.outcome(f"switched to {now}, {before} was too dear", fact) == "current_only"
    assert changing_facts.outcome(f"no longer {before}", fact) == "neither"
    assert changing_facts.outcome(f"small talk x{now}x", fact) == "neither", "part of a word is not a mention"


@pytest.mark.django_db
def test_the_full_system_reaches_the_current_version_where_raw_turns_do_not(changing):
    result = changing_facts.run(seeds=1, ks=(1,), split="dev", corpus_dir=changing)
    assert (result["split"], result["pairs"]) == ("dev", 8)
    rows = {row["policy"]: row for row in result["rows"]}
    assert rows["last k turns"]["current_only"] <= 0.25
    # A change written as a second value leaves both current: k = 1 may then bring the old one.
    changed = {f.pair.family for f in changing_facts.generate(0, changing_facts.source("dev", changing)).facts
               if f.changed}
    unrecognised = len(changed - RECOGNISED)
    assert rows[changing_facts.FULL_SYSTEM]["current_only"] >= (8 - 1 - unrecognised) / 8
    assert rows[changing_facts.FULL_SYSTEM]["changed_facts"]["outdated_only"] <= unrecognised / 3
    assert staleness(result["rows"]) <= unrecognised / 3
    assert not Organization.objects.filter(name__startswith="eval-changing-facts").exists(), "cleaned up"


@pytest.mark.django_db
def test_the_full_system_is_asked_when_the_conversation_asks(changing):
    """A plan said in a 2025 conversation has ended by today; asked the day after the conversation, it holds."""
    corpus = changing_facts.source("dev", changing)
    conversation = changing_facts.generate(0, corpus)
    last = len(conversation.turns) - 1  # the day before the questions
    conversation.turns[last] = "I have a dentist appointment next Friday at 10."
    plan = changing_facts.Fact(pair=replace(corpus.pairs[0], before=conversation.turns[last], before_must=("dentist",),
                                            question="When is the user's dentist appointment?"), turn_first=last)
    conversation.facts = [plan]
    [context] = changing_facts.full_system_contexts(conversation, (1,))[(changing_facts.FULL_SYSTEM, 1)]
    assert conversation.asked_at.year == 2025 and changing_facts.outcome(context, plan) == "current_only", context


def test_a_split_without_enough_change_pairs_is_refused(tmp_path):
    with pytest.raises(ValueError, match="at least 8 families"):
        changing_facts.run(seeds=1, ks=(1,), split="test", corpus_dir=changing_corpus(tmp_path, "dev"))


@pytest.mark.django_db
def test_locomo_run_measures_recall_and_the_ladder(acme):
    result = locomo_run(organization=acme, path_or_data=[sample()], ks=(1, 5), budget_tokens=60)
    assert result["questions"] >= 1 and set(result["recall"]) >= {"all"}
    ladder = result["ladder"]
    assert list(ladder) == list(LADDER)
    assert ladder["no memory"] == 0 and ladder["oracle memories"] == 1.0
    assert 0 <= ladder["retrieved memories"] <= ladder["oracle memories"]
    gaps = {gap["name"]: gap["value"] for gap in result["gaps"]}
    assert gaps["delivered lift"] == pytest.approx(ladder["retrieved memories"])
    assert gaps["retrieval headroom"] == pytest.approx(1.0 - ladder["retrieved memories"])


@pytest.mark.django_db
def test_contradictions_are_counted_per_slot(alice):
    make_memory(alice, "Alice lives in Porto.", subject="alice", attribute="city", value="Porto", cardinality="single")
    assert contradiction_rate()["contradiction_rate"] == 0
    from memoryapp.models import Project

    project = Project.objects.create(organization=alice.organization, name="move")
    make_memory(alice, "Alice lives in Lisbon.", subject="alice", attribute="city", value="Lisbon",
                cardinality="single", project=project)
    measured = contradiction_rate()
    assert measured["slots"] == 1 and measured["contradicting_slots"] == 1 and measured["contradiction_rate"] == 1.0


@pytest.mark.django_db
def test_unstructured_contradictions_are_sampled(alice):
    make_memory(alice, "Alice likes working late at night.")
    make_memory(alice, "Alice no longer likes working late at night.")
    assert contradiction_rate()["unstructured_contradictions"] == 1


@pytest.mark.django_db
def test_duplicate_rate_finds_unmerged_restatements(alice):
    make_memory(alice, "Alice drinks her coffee black.")
    make_memory(alice, "Alice drinks her coffee black.")  # written twice, not yet consolidated
    make_memory(alice, "Alice plays the cello.")
    assert duplicate_rate()["duplicate_rate"] == pytest.approx(2 / 3, abs=0.01)


@pytest.mark.django_db
def test_evaluate_command_prints_the_tables_and_a_summary_line(tmp_path, acme, monkeypatch):
    from memoryapp.evaluation import write_corpus

    monkeypatch.setattr(write_corpus, "CORPUS_DIR", changing_corpus(changing_corpus(tmp_path / "c", "dev"), "test"))
    out = io.StringIO()
    call_command("evaluate", "changing-facts", "--seeds", "1", "--k", "1", stdout=out)
    printed = out.getvalue()
    assert "changing facts, dev split" in printed and "changing facts, test split" in printed, "both by default"
    summaries = [line for line in printed.splitlines() if line.startswith("full_system_current_only@k=1=")]
    assert [line.split()[-1] for line in summaries] == ["split=dev", "split=test"]
    assert printed.strip().splitlines()[-1] == summaries[-1] and "last k turns" in printed
    jobs = Job.objects.filter(kind="evaluate_changing_facts").order_by("created_at")
    assert [(job.params["split"], job.status) for job in jobs] == [("dev", "succeeded"), ("test", "succeeded")]

    out = io.StringIO()
    call_command("evaluate", "changing-facts", "--seeds", "1", "--k", "1", "--split", "test", stdout=out)
    assert "test split" in out.getvalue() and "dev split" not in out.getvalue()

    path = tmp_path / "mini.json"
    path.write_text(json.dumps([sample()]))
    out = io.StringIO()
    call_command("evaluate", "locomo", str(path), "--k", "1,5", "--org", "Acme", stdout=out)
    assert out.getvalue().strip().splitlines()[-1].startswith("recall@5=")
    assert "ablation ladder" in out.getvalue() and "retrieval headroom" in out.getvalue()
    job = Job.objects.get(kind="evaluate_locomo")
    assert job.params["ks"] == [1, 5] and job.result["recall"]["all"]["questions"] >= 1


@pytest.mark.django_db
def test_with_an_llm_reader_the_ladder_scores_answer_accuracy(acme, endpoint):
    from memoryapp.evaluation.locomo import locomo_parse

    questions = [q for q in locomo_parse([sample()])[0].questions if q.category in (1, 2, 3, 4)]
    for question in questions:
        for condition in LADDER:
            # The fake reader answers right only when it was given context.
            answer = "unknown" if condition == "no memory" else question.answer
            endpoint.answer_content(json.dumps({"answer": answer}))
    result = locomo_run(organization=acme, path_or_data=[sample()], ks=(1, 5), budget_tokens=400)
    assert result["ladder_score"] == "answer accuracy (LLM reader)"
    assert result["ladder"]["no memory"] == 0.0 and result["ladder"]["oracle memories"] == 1.0
    sent = endpoint.requests[1]["json"]["messages"][-1]["content"]
    assert "Question:" in sent and "Excerpts:" in sent


@pytest.mark.django_db
def test_a_locomo_run_keeps_its_conversations_out_of_the_organization_and_removes_them(acme, alice):
    from memoryapp.models import Episode, User

    seen = {}

    def progress(done, total):  # during the run: where the imported speakers are
        speakers = Organization.objects.filter(users__external_id="conv-ana-ben")
        seen["orgs"] = set(speakers.values_list("name", flat=True))

    result = locomo_run(organization=acme, path_or_data=[sample()], ks=(1, 5), budget_tokens=60, progress=progress)
    assert result["questions"] >= 1
    assert seen["orgs"] and all("evaluation run" in name for name in seen["orgs"]), "imported into its own org"
    assert set(User.objects.filter(organization=acme).values_list("external_id", flat=True)) == {"alice"}
    assert not User.objects.filter(external_id="conv-ana-ben").exists(), "removed when the run ends"
    assert not Episode.objects.exists()
    assert list(Organization.objects.values_list("name", flat=True)) == [acme.name]
