from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memoryapp.evaluation import questions_eval, write_accuracy
from memoryapp.evaluation.changing_facts import table as changing_facts_table
from memoryapp.evaluation.runs import locomo_table
from memoryapp.evaluation.write_corpus import SPLITS
from memoryapp.jobs import job_execute
from memoryapp.models import Job
from memoryapp.services.jobs import job_create
from memoryapp.services.tenancy import organization_get_or_create

# The corpus evaluations: one split, one extractor, a job of this kind, printed by this table.
CORPUS_RUNS = {
    "write-accuracy": (Job.Kind.EVALUATE_WRITE_ACCURACY, write_accuracy.table),
    "questions": (Job.Kind.EVALUATE_QUESTIONS, questions_eval.table),
}


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise CommandError(f"--k takes numbers like 1,5,10, not {text!r}") from exc
    if not ks or ks[0] < 1 or ks[-1] > 50:
        raise CommandError("--k values must be within 1-50")
    return ks


class Command(BaseCommand):
    help = "Run an evaluation (stored as a job, like the dashboard's) and print its table."

    def add_arguments(self, parser):
        benchmarks = parser.add_subparsers(dest="benchmark", required=True)
        facts = benchmarks.add_parser("changing-facts", help="the built-in changing-facts benchmark")
        facts.add_argument("--seeds", type=int, default=5)
        facts.add_argument("--k", default="1,3,5")
        facts.add_argument("--split", choices=[*SPLITS, "both"], default="both",
                           help="which split of the corpus' change pairs the sentences come from (default both)")
        writes = benchmarks.add_parser("write-accuracy", help="missed and spurious writes and change recognition on "
                                                              "the hand-written corpus")
        writes.add_argument("--split", choices=SPLITS, default="dev")
        writes.add_argument("--extractor", choices=write_accuracy.EXTRACTORS, default="rules",
                            help="llm needs MEMORY_LLM_BASE_URL (and _MODEL, _API_KEY as the endpoint requires)")
        questions = benchmarks.add_parser("questions", help="recall@1/@5 and abstention on the hand-written "
                                                             "question set, asked of users built from the corpus")
        questions.add_argument("--split", choices=SPLITS, default="dev")
        questions.add_argument("--extractor", choices=write_accuracy.EXTRACTORS, default="rules",
                               help="the write path's extractor; llm needs MEMORY_LLM_BASE_URL")
        locomo = benchmarks.add_parser("locomo", help="evidence recall and the ablation ladder on a LoCoMo file")
        locomo.add_argument("path", type=Path)
        locomo.add_argument("--k", default="1,5,10")
        locomo.add_argument("--org", default="Evaluation",
                            help="the organization the run belongs to; its conversations go "
                            "into an evaluation organization deleted when the run ends")
        locomo.add_argument("--budget", type=int, default=400, help="token budget of each ladder condition")

    def handle(self, *args, benchmark, **options):
        if benchmark == "changing-facts":
            if not 1 <= options["seeds"] <= 100:
                raise CommandError("--seeds must be within 1-100")
            ks = _ks(options["k"])
            splits = SPLITS if options["split"] == "both" else [options["split"]]
            for number, split in enumerate(splits):
                params = {"seeds": options["seeds"], "ks": ks, "split": split}
                job = job_create(kind=Job.Kind.EVALUATE_CHANGING_FACTS, organization=None, params=params)
                self.stdout.write(("\n" if number else "") + changing_facts_table(job_execute(job)))
            return
        if benchmark in CORPUS_RUNS:
            kind, table = CORPUS_RUNS[benchmark]
            try:
                write_accuracy.extractor_for(options["extractor"])
            except write_accuracy.ExtractorUnavailable as exc:
                raise CommandError(str(exc)) from exc
            params = {"split": options["split"], "extractor": options["extractor"]}
            job = job_create(kind=kind, organization=None, params=params)
            self.stdout.write(table(job_execute(job)))
            return
        path = options["path"].resolve()
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        organization = organization_get_or_create(name=options["org"])
        params = {"path": str(path), "ks": _ks(options["k"]), "budget_tokens": options["budget"]}
        job = job_create(kind=Job.Kind.EVALUATE_LOCOMO, organization=organization, params=params)
        self.stdout.write(locomo_table(job_execute(job)))
