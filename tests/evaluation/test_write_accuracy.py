"""`evaluate write-accuracy`: missed, spurious and change recognition on a tiny corpus through the
real write path (real embedding model), stored as a job, printed, and shown on the Evaluation page."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memoryapp.evaluation import write_accuracy, write_corpus
from memoryapp.jobs import job_execute
from memoryapp.models import Job, Organization
from memoryapp.services.jobs import job_create
from tests.evaluation.corpus import continuation, fact, message, pair, tiny_corpus, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(tmp_path):
    return tiny_corpus(tmp_path / "corpus")


def test_missed_spurious_and_changes_are_counted_as_defined(corpus):
    result = write_accuracy.run(split="dev", extractor="rules", corpus_dir=corpus)

    assert (result["split"], result["extractor"]) == ("dev", "rules")
    assert (result["messages"], result["expected"], result["missed"]) == (5, 3, 1)
    assert result["missed_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert (result["none_messages"], result["spurious"]) == (3, 1)
    assert result["spurious_rate"] == pytest.approx(1 / 3, abs=1e-4)
    families = {row["family"]: row for row in result["families"]}
    assert set(families) == {"home", "employer"}, "none is counted as spurious, not as a family of facts"
    assert (families["home"]["missed"], families["employer"]["missed"], families["employer"]["expected"]) == (0, 1, 2)

    changes = result["changes"]
    assert (changes["pairs"], changes["recognised"], changes["recognised_rate"]) == (2, 1, 0.5)
    assert (changes["new_written"], changes["old_current"]) == (1, 1)
    ways = {row["way"]: row for row in result["ways"]}
    assert ways["moved"]["recognised"] == 1 and ways["left_joined"]["recognised"] == 0
    assert ways["left_joined"]["old_current"] == 1

    examples = result["examples"]
    assert [e["id"] for e in examples["missed"]] == ["t-m2"] and examples["missed"][0]["must"] == ["Zanzibar"]
    assert [e["id"] for e in examples["spurious"]] == ["t-m3"]
    assert not Organization.objects.filter(name__startswith="eval-write-accuracy").exists(), "cleaned up"


def test_a_pairs_user_holds_other_facts_and_those_a_change_ends_are_counted(tmp_path):
    folder = write(tmp_path / "collateral", {
        "messages-t.dev.jsonl": [message("t-m1", "employer", "I work at Initech.", [fact(["Initech"])]),
                                 message("t-m2", "home", "I live in Oslo.", [fact(["Oslo"])])],
        "changes-t.dev.jsonl": [pair("t-c1", "home", "moved", "I live in Lisbon.", ["Lisbon"],
                                     "I moved to Berlin and I now work at Hooli.", ["Berlin"], "Where?")],
    })
    result = write_accuracy.run(split="dev", extractor="rules", corpus_dir=folder)

    changes = result["changes"]
    assert changes["recognised"] == 1
    # The pair's user held the employer fact (a home message is of the pair's own family: never a
    # distractor), and the after message ended it: that is what the figure counts.
    assert (changes["unrelated_held"], changes["unrelated_closed"], changes["unrelated_closed_rate"]) == (1, 1, 1.0)
    assert result["examples"]["collateral"] == [{"id": "t-c1", "after": "I moved to Berlin and I now work at Hooli.",
                                                 "closed": ["Initech"]}]


def test_news_on_a_facts_topic_that_changes_nothing_must_leave_it_current(tmp_path):
    folder = write(tmp_path / "continued", {
        "messages-t.dev.jsonl": [message("t-m1", "employer", "I work at Initech.", [fact(["Initech"])])],
        "continues-t.dev.jsonl": [
            # labelled as changing nothing on purpose: a move ends the old city, so it counts as ended
            continuation("t-k1", "tricky", "I live in Lisbon.", ["Lisbon"], "I moved to Berlin.", ["Berlin"]),
            continuation("t-k2", "detail", "I live in Porto.", ["Porto"], "thanks!", ["thanks"]),
            # a first statement never written is not counted: nothing was there to end
            continuation("t-k3", "detail", "how are you today?", ["Zanzibar"], "I moved to Oslo.", ["Oslo"]),
        ],
    })
    result = write_accuracy.run(split="dev", extractor="rules", corpus_dir=folder)

    continued = result["continuations"]
    assert (continued["held"], continued["ended"], continued["ended_rate"]) == (2, 1, 0.5)
    assert {row["kind"]: (row["held"], row["ended"]) for row in continued["kinds"]} == {"tricky": (1, 1),
                                                                                         "detail": (1, 0)}
    assert [e["id"] for e in result["examples"]["continued_ended"]] == ["t-k1"]
    assert "same topic ended    50.0%  (1 of 2 facts" in write_accuracy.table(result)


def test_what_holds_is_read_when_it_was_said_not_on_the_day_of_the_run(tmp_path):
    """A plan rescheduled within 2025 is over by the time anyone runs this; it was current when it was said."""
    folder = write(tmp_path / "dated", {
        "messages-t.dev.jsonl": [message("t-m1", "employer", "I work at Initech.", [fact(["Initech"])])],
        "changes-t.dev.jsonl": [pair("t-c1", "appointments", "rescheduled", "I have a dentist appointment on 20 June.",
                                     ["dentist"], "My dentist appointment got moved to the 28th of July.", ["July"],
                                     "When is the dentist?")],
    })
    result = write_accuracy.run(split="dev", extractor="rules", corpus_dir=folder)
    assert result["changes"]["new_current"] == 1


def test_the_test_split_is_measured_alone_and_keeps_no_examples(corpus):
    result = write_accuracy.run(split="test", extractor="rules", corpus_dir=corpus)
    assert (result["messages"], result["expected"], result["missed"]) == (1, 1, 0)
    assert result["changes"]["pairs"] == 0
    assert result["examples"] == {}, "nothing of the test split is shown for tuning"


def test_the_command_stores_a_job_and_prints_the_table(corpus, monkeypatch):
    monkeypatch.setattr(write_corpus, "CORPUS_DIR", corpus)
    out = io.StringIO()
    call_command("evaluate", "write-accuracy", "--split", "dev", stdout=out)
    printed = out.getvalue()
    assert "dev split, rules extractor" in printed
    assert "missed writes       33.3%  (1 of 3 expected facts in 2 messages)" in printed
    assert "spurious writes     33.3%  (1 of 3 messages that must yield nothing)" in printed
    assert "change recognised   50.0%  (1 of 2 pairs" in printed and "old value still current 1" in printed
    assert "employer" in printed and "left_joined" in printed
    assert printed.strip().splitlines()[-1] == ("write_accuracy split=dev extractor=rules missed=0.333 "
                                                "spurious=0.333 changes_recognised=0.500 unrelated_closed=0.000 "
                                                "same_topic_ended=0.000")
    job = Job.objects.get(kind="evaluate_write_accuracy")
    assert job.status == Job.Status.SUCCEEDED and job.organization is None
    assert job.params == {"split": "dev", "extractor": "rules"} and job.result["missed"] == 1


def test_the_llm_extractor_is_refused_without_an_endpoint(settings):
    settings.MEMORY_LLM_BASE_URL = ""
    with pytest.raises(CommandError, match="MEMORY_LLM_BASE_URL"):
        call_command("evaluate", "write-accuracy", "--extractor", "llm", stdout=io.StringIO())
    assert not Job.objects.filter(kind="evaluate_write_accuracy").exists()


def test_the_llm_extractor_is_a_parameter_of_the_run(tmp_path, endpoint, settings):
    settings.MEMORY_EXTRACTOR = "rules"
    folder = write(tmp_path / "llm", {"messages-t.dev.jsonl": [message("t-l1", "home", "I live in Porto.",
                                                                         [fact(["Porto"])])]})
    # The model says something else than the rules would: what is measured is the model's answer.
    endpoint.answer_facts([{"text": "The user lives in Zanzibar.", "subject": "user", "attribute": "city",
                            "value": "Zanzibar", "valid_from": "2025-06-02T10:00:00+00:00", "importance": 7,
                            "confidence": 0.9, "relation": "state", "kind": "semantic", "episode_index": 0}])
    job = job_create(kind="evaluate_write_accuracy", organization=None,
                     params={"split": "dev", "extractor": "llm", "corpus_dir": str(folder)})
    result = job_execute(job)
    assert endpoint.requests, "the LLM was asked"
    assert result["extractor"] == "llm" and result["missed"] == 1
    assert settings.MEMORY_EXTRACTOR == "rules", "the configured extractor is left alone"


def test_a_memory_that_names_both_values_tells_the_change_and_does_not_hold_the_old_one():
    pair = write_corpus.ChangePair(id="t-c9", family="pets", way="died", before="Our dog is Rex.", before_must=("Rex",),
                                   after="Rex died, we adopted Bonnie.", after_must=("Bonnie",), question="Dog?",
                                   split="dev")
    assert not write_accuracy.holds_old_value(["Rex died, the user's household adopted Bonnie."], pair)
    assert write_accuracy.holds_old_value(["The user's dog is Rex.", "The user adopted Bonnie."], pair)


def test_a_memory_that_says_the_old_value_is_over_does_not_hold_it_unless_the_old_value_said_so_too():
    def pair(before: str, before_must: str, after: str, after_must: str):
        return write_corpus.ChangePair(id="t-c10", family="diet", way="no_longer", before=before,
                                       before_must=(before_must,), after=after, after_must=(after_must,),
                                       question="Diet?", split="dev")

    veggie = pair("I'm vegetarian.", "vegetarian", "Not vegetarian anymore, I eat chicken now.", "chicken")
    assert not write_accuracy.holds_old_value(["The user is no longer vegetarian.", "The user eats chicken."], veggie)
    assert write_accuracy.holds_old_value(["The user is vegetarian.", "The user eats chicken."], veggie)
    # The first statement was itself a negative: the same negative still holds the old value.
    no_meat = pair("I don't eat meat.", "meat", "I eat fish again, pescatarian now.", "pescatarian")
    assert write_accuracy.holds_old_value(["The user doesn't eat meat."], no_meat)
    # "passed" of a death, a pet rehomed: over too ("passed" of a test is not)
    cat = pair("Our cat is Tigger.", "Tigger", "Tigger passed in May, we got a puppy.", "puppy")
    assert not write_accuracy.holds_old_value(["Tigger passed in May.", "The user got a puppy."], cat)
    assert not write_accuracy.holds_old_value(["The user had to rehome Tigger."], cat)
    assert write_accuracy.holds_old_value(["Tigger passed the vet check."], cat)
    # a plan called off: over too
    trip = pair("I'm flying to Oslo in May.", "Oslo", "The Oslo trip's off, we're doing Rome instead.", "Rome")
    assert not write_accuracy.holds_old_value(["The Oslo trip's off.", "The user is going to Rome."], trip)
    assert not write_accuracy.holds_old_value(["The user scrapped the Oslo plan."], trip)
    assert write_accuracy.holds_old_value(["The user is flying to Oslo in May."], trip)


def test_the_corpus_and_the_training_items_are_sound():
    assert write_corpus.problems() == []


def test_a_training_item_that_says_a_test_item_is_refused(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(write_corpus, "CORPUS_DIR", corpus)
    monkeypatch.setattr(write_corpus, "TRAINING_DIR", tmp_path)
    tested = write_corpus.messages("test", corpus)[0].text
    # the same words in other case and punctuation, and one more: said again, nearly
    item = {"id": "tr-m1", "family": "none", "text": tested.upper().rstrip(".!") + " honestly!!", "facts": []}
    (tmp_path / "messages-x.train.jsonl").write_text(json.dumps(item) + "\n")
    assert any("training item says a test item" in problem for problem in write_corpus.problems())


def test_a_must_word_counts_in_the_form_the_third_person_gives_it():
    # "I drive to work." is remembered as "The user drives to work.": the fact is there
    assert write_corpus.mentions("The user drives to work every day.", ("drive",))
    assert write_corpus.mentions("Sam studies nursing at night.", ("study", "nursing"))
    assert write_corpus.mentions("The user watches anime.", ("watch",))
    # still whole words, and a number is only that number
    assert not write_corpus.mentions("The user is a driver.", ("drive",))
    assert not write_corpus.mentions("The user is 34.", ("3",))
    assert not write_corpus.mentions("The user lives in Leeds.", ("Lee",))
