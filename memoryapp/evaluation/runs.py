"""Evaluation runs: LoCoMo evidence recall, the ablation ladder and the changing-facts table.
Each is the work of a Job (memoryapp.jobs), so the command, the worker and the panels share it."""

from __future__ import annotations

import random
import re
import uuid

from memoryapp import llm
from memoryapp.actors import ActorRef, Principal
from memoryapp.evaluation import changing_facts
from memoryapp.evaluation.locomo import ImportedConversation, locomo_import
from memoryapp.evaluation.metrics import ALL, CATEGORY_NAMES, RECALL_CATEGORIES, Retrieval, evidence_recall
from memoryapp.models import Episode, Organization
from memoryapp.selectors.context import count_tokens
from memoryapp.selectors.search import SearchParams, search_episodes

LADDER = ("no memory", "random memories", "retrieved memories", "oracle memories", "full history")
GAPS = (
    ("distraction cost", "random memories", "no memory", "what irrelevant memories cost (or give) the reader"),
    ("delivered lift", "retrieved memories", "no memory", "what the memory system adds over no memory at all"),
    ("retrieval headroom", "oracle memories", "retrieved memories", "what better retrieval could still add"),
    ("compression loss", "full history", "oracle memories", "what fitting the raw history in the budget loses"),
)


def _questions(imported: list[ImportedConversation]):
    for conversation in imported:
        for question in conversation.conversation.questions:
            gold = {conversation.episode_ids[d] for d in question.evidence if d in conversation.episode_ids}
            if question.category in RECALL_CATEGORIES and gold:
                yield conversation, question, gold


def locomo_run(*, organization: Organization, path_or_data, ks=(1, 5, 10), budget_tokens: int = 400,
               progress=None) -> dict:
    """Import the conversations, then evidence recall@k per category and the ladder. The run belongs
    to `organization` (its Job keeps the result), but the conversations go into an evaluation
    organization of their own, deleted when the run ends: imported speakers are not real users, and
    must never show among the organization's users, in its logs or in an agent's search. Deleting at
    the end (also when the run fails) rather than with the Job leaves nothing behind that only an
    admin's later clean-up would remove; a rerun imports again, which the result does not need to
    avoid."""
    sandbox = Organization.objects.create(name=f"{organization.name[:80]} (evaluation run {uuid.uuid4().hex[:8]})")
    try:
        return _locomo_measure(sandbox, path_or_data, ks=ks, budget_tokens=budget_tokens, progress=progress)
    finally:
        sandbox.delete()


def _locomo_measure(organization: Organization, path_or_data, *, ks, budget_tokens: int, progress) -> dict:
    imported = locomo_import(organization=organization, path_or_data=path_or_data,
                             actor=ActorRef.for_job("evaluation"))
    principal = Principal.for_job(organization.id, "evaluation")
    questions = list(_questions(imported))
    retrievals, ladder_scores = [], {condition: [] for condition in LADDER}
    rng = random.Random(0)
    for done, (conversation, question, gold) in enumerate(questions, start=1):
        params = SearchParams(query=question.text, k=max(ks), min_score=-1.0)
        hits = search_episodes(principal, user=conversation.user, params=params).hits
        retrievals.append(Retrieval(category=question.category, retrieved=tuple(h.item.pk for h in hits),
                                    gold=frozenset(gold)))
        contexts = _ladder_contexts(conversation, [h.item for h in hits], gold, budget_tokens, rng)
        for condition, episodes in contexts.items():
            ladder_scores[condition].append(_ladder_score(question, episodes, gold))
        if progress and (done % 10 == 0 or done == len(questions)):
            progress(done, len(questions))
    recall = evidence_recall(retrievals, ks=ks)
    ladder = {condition: round(sum(s) / len(s), 4) if s else 0.0 for condition, s in ladder_scores.items()}
    return {
        "conversations": len(imported), "questions": len(questions), "ks": list(ks), "budget_tokens": budget_tokens,
        "recall": {
            _category(c): {str(k): round(v, 4) for k, v in summary.recall.items()} | {"questions": summary.questions}
            for c, summary in recall.items()
        },
        "ladder": ladder, "ladder_score": "answer accuracy (LLM reader)" if llm.is_configured() else
        "gold evidence in context",
        "gaps": [{"name": name, "value": round(ladder[high] - ladder[low], 4), "explains": why}
                 for name, high, low, why in GAPS],
    }


def _category(category) -> str:
    return "all" if category == ALL else CATEGORY_NAMES[category]


def _within_budget(episodes: list[Episode], budget_tokens: int) -> list[Episode]:
    chosen, used = [], 0
    for episode in episodes:
        cost = count_tokens(episode.content + "\n")
        if used + cost > budget_tokens:
            continue
        chosen.append(episode)
        used += cost
    return chosen


def _ladder_contexts(conversation: ImportedConversation, retrieved: list[Episode], gold: set, budget_tokens: int,
                     rng: random.Random) -> dict[str, list[Episode]]:
    """The five conditions, each filled up to the same token budget."""
    history = list(Episode.objects.filter(user=conversation.user).order_by("occurred_at").only("id", "content"))
    shuffled = history[:]
    rng.shuffle(shuffled)
    return {
        "no memory": [],
        "random memories": _within_budget(shuffled, budget_tokens),
        "retrieved memories": _within_budget(retrieved, budget_tokens),
        "oracle memories": _within_budget([e for e in history if e.pk in gold], budget_tokens),
        "full history": list(reversed(_within_budget(list(reversed(history)), budget_tokens))),  # the latest turns
    }


def _ladder_score(question, episodes: list[Episode], gold: set) -> float:
    if llm.is_configured():
        return _answer_accuracy(question, episodes)
    return len(gold & {e.pk for e in episodes}) / len(gold)


READER_PROMPT = ("Answer the question from the conversation excerpts only, in a few words. If they do not say, "
                 'answer "unknown". Reply {"answer": "..."}.')


def _answer_accuracy(question, episodes: list[Episode]) -> float:
    """1 when the LLM reader's answer shares most words with the gold answer, else 0."""
    excerpts = "\n".join(e.content for e in episodes) or "(no excerpts)"
    try:
        reply = llm.chat_json([{"role": "system", "content": READER_PROMPT},
                               {"role": "user", "content": f"Excerpts:\n{excerpts}\n\nQuestion: {question.text}"}])
    except llm.LLMError:
        return 0.0
    answer = str(reply.get("answer", "")) if isinstance(reply, dict) else ""
    return 1.0 if _token_f1(answer, question.answer) >= 0.5 else 0.0


def _token_f1(answer: str, gold: str) -> float:
    a, g = re.findall(r"\w+", answer.lower()), re.findall(r"\w+", str(gold).lower())
    common = sum(min(a.count(w), g.count(w)) for w in set(g))
    if not a or not g or not common:
        return 0.0
    precision, recall = common / len(a), common / len(g)
    return 2 * precision * recall / (precision + recall)


def locomo_table(result: dict) -> str:
    ks = result["ks"]
    lines = [f"LoCoMo evidence recall: {result['conversations']} conversations, {result['questions']} questions "
             "(categories 1-4), turn level, within each question's own conversation",
             f"{'category':14} {'questions':>9} " + " ".join(f"{'R@' + str(k):>7}" for k in ks)]
    for name, row in result["recall"].items():
        lines.append(f"{name:14} {row['questions']:9d} " + " ".join(f"{row[str(k)]:7.1%}" for k in ks))
    lines.append(f"\nablation ladder, {result['budget_tokens']} tokens each, score = {result['ladder_score']}")
    for condition, value in result["ladder"].items():
        lines.append(f"  {condition:20} {value:6.1%}")
    for gap in result["gaps"]:
        lines.append(f"  {gap['name']:20} {gap['value']:+6.1%}  {gap['explains']}")
    k = 5 if 5 in ks else ks[0]
    lines.append(f"recall@{k}={result['recall']['all'][str(k)]:.3f}")
    return "\n".join(lines)


def changing_facts_run(*, seeds: int = 5, ks=(1, 3, 5), split: str = "test", corpus_dir=None, progress=None) -> dict:
    return changing_facts.run(seeds=seeds, ks=tuple(ks), split=split, corpus_dir=corpus_dir, progress=progress)

