"""LoCoMo evidence recall of the episode search, measured by leaving one conversation out.

    .venv/bin/python bench/locomo_loo.py [--locomo PATH]

Runs on its own embedded servers under MEMORYAPP_DATA_DIR (default var/bench-locomo). The
conversations are imported once (evaluation.locomo.locomo_import_current); then every setting of
GRID (search_episodes' tunables) is run on every conversation's questions, categories 1-4.

For each conversation (a fold), the setting is chosen on the OTHER conversations only: the one with
the best OBJECTIVE over their questions together (ties: the earlier in GRID, whose first entry is
today's default). Recall@1/5/10 of the held-out conversation at that setting is the fold's figure;
the table ends with the mean over the folds. Both rules were fixed before any held-out figure was
looked at:
- OBJECTIVE: the mean of recall@5 and recall@10 (what the issue's goals are on);
- the default the code should carry is the setting with the best OBJECTIVE averaged over the folds'
  training sets (each conversation then counts in two of the three), never a held-out figure.

Every setting runs the real search (selectors.search.search_episodes); only the query's embedding
is computed once per question and reused across settings (the model is deterministic, and the
settings do not change the text embedded).
"""

# ruff: noqa: E402  (Django is configured before the project is imported)
from __future__ import annotations

import argparse
import functools
import itertools
import os
import time
from pathlib import Path

from setup_django import setup_django

ROOT = setup_django("bench-locomo")

from django.core.management import call_command

from memoryapp import embeddings
from memoryapp.actors import ActorRef, Principal
from memoryapp.evaluation.locomo import ImportedConversation, episode_retrievals, locomo_import_current
from memoryapp.evaluation.metrics import Retrieval, mean_recall
from memoryapp.selectors import search
from memoryapp.services.tenancy import agent_create

LOCOMO_ORG = "bench-locomo-loo"
DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
KS = (1, 5, 10)
# search_episodes' tunables: today's defaults first (ties go to the earlier setting). pool None is
# the default candidate pool per leg: max(4k, SEARCH_CANDIDATES) = 40 at k=10.
# neighbour_weight 0: no neighbours (search._with_neighbours).
DEFAULT = {
    "rrf_k": search.EPISODE_RRF_K,
    "lexical_weight": search.EPISODE_LEXICAL_WEIGHT,
    "pool": search.EPISODE_POOL,
    "neighbour_weight": search.EPISODE_NEIGHBOUR_WEIGHT,
}
GRID = [DEFAULT] + [
    setting
    for rrf_k, lexical_weight, pool, neighbour_weight in itertools.product(
        (2, 5, 10), (0.75, 1.0, 1.5, 2.0), (None, 100), (0.0, 0.3, 0.6)
    )
    if (setting := dict(rrf_k=rrf_k, lexical_weight=lexical_weight, pool=pool, neighbour_weight=neighbour_weight))
    != DEFAULT
]


def say(message: str) -> None:
    print(message, flush=True)


def objective(retrievals: list[Retrieval]) -> float:
    recall = mean_recall(retrievals, (5, 10)).recall
    return (recall[5] + recall[10]) / 2


def label(setting: dict) -> str:
    return " ".join(f"{name}={value}" for name, value in setting.items())


def run_grid(principal: Principal, imported: list[ImportedConversation]) -> dict[tuple[str, int], list[Retrieval]]:
    """(conversation, setting index) -> the conversation's retrievals at that setting."""
    runs = {}
    started = time.perf_counter()
    for index, setting in enumerate(GRID):
        for item in imported:
            runs[item.conversation.sample_id, index] = episode_retrievals(principal, item, k=max(KS), **setting)[0]
        if index % 10 == 0:
            say(f"  {index + 1}/{len(GRID)} settings ({time.perf_counter() - started:.0f} s)")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="a LoCoMo-format JSON file")
    args = parser.parse_args()

    say(f"bench data: {os.environ['MEMORYAPP_DATA_DIR']}; {args.locomo}; {len(GRID)} settings")
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    imported, reused = locomo_import_current(
        organization_name=LOCOMO_ORG, path_or_data=args.locomo.resolve(), actor=ActorRef.for_job("bench")
    )
    say(f"  {'reused' if reused else 'imported'} {len(imported)} conversations ({time.perf_counter() - started:.0f} s)")
    organization = imported[0].user.organization
    agent = (
        organization.agents.filter(name="bench").first()
        or agent_create(organization=organization, name="bench", permissions=["read"])[0]
    )
    principal = Principal.for_agent(agent)
    # The settings never change the text embedded: embed each question once.
    embeddings.encode_one = functools.cache(embeddings.encode_one)
    runs = run_grid(principal, imported)

    names = [item.conversation.sample_id for item in imported]
    say(f"\n  {'held out':<10}{'questions':>10}  {'chosen on the other conversations':<46}{'train':>7}"
        + "".join(f"{f'recall@{k}':>11}" for k in KS) + f"{'@5 default':>12}{'@10 default':>12}")
    held_out, training_scores = [], [0.0] * len(GRID)
    for name in names:
        train = [other for other in names if other != name]
        scores = [objective([r for other in train for r in runs[other, i]]) for i in range(len(GRID))]
        training_scores = [total + s for total, s in zip(training_scores, scores, strict=True)]
        best = max(range(len(GRID)), key=lambda i: (scores[i], -i))
        recall = mean_recall(runs[name, best], KS)
        default = mean_recall(runs[name, 0], KS).recall
        held_out.append(recall)
        say(f"  {name:<10}{recall.questions:>10}  {label(GRID[best]):<46}{scores[best]:>7.3f}"
            + "".join(f"{recall.recall[k]:>11.3f}" for k in KS) + f"{default[5]:>12.3f}{default[10]:>12.3f}")
    mean = {k: sum(r.recall[k] for r in held_out) / len(held_out) for k in KS}
    say(f"  {'mean':<10}{sum(r.questions for r in held_out):>10}  {'(of the held-out figures above)':<46}{'':>7}"
        + "".join(f"{mean[k]:>11.3f}" for k in KS))
    final = max(range(len(GRID)), key=lambda i: (training_scores[i], -i))
    say(f"\n  default by the rule (best mean training objective over the folds): {label(GRID[final])}")
    for name, setting in (("today's default", DEFAULT), ("the rule's default", GRID[final])):
        took = sorted(t for item in imported for t in episode_retrievals(principal, item, k=max(KS), **setting)[1])
        say(f"  search took_ms at {name}: p50 {took[len(took) // 2]:.1f} p95 {took[int(len(took) * 0.95)]:.1f}"
            " (query embedding cached: the search's own overhead)")
    say(" ".join(f"held-out mean recall@{k}={mean[k]:.3f}" for k in KS))


if __name__ == "__main__":
    main()
