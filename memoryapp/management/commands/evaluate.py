from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memoryapp.evaluation.changing_facts import table as changing_facts_table
from memoryapp.evaluation.runs import locomo_table
from memoryapp.jobs import job_execute
from memoryapp.services.jobs import job_create
from memoryapp.services.tenancy import organization_get_or_create


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
        locomo = benchmarks.add_parser("locomo", help="evidence recall and the ablation ladder on a LoCoMo file")
        locomo.add_argument("path", type=Path)
        locomo.add_argument("--k", default="1,5,10")
        locomo.add_argument("--org", default="Evaluation", help="the organization the conversations go into")
        locomo.add_argument("--budget", type=int, default=400, help="token budget of each ladder condition")

    def handle(self, *args, benchmark, **options):
        if benchmark == "changing-facts":
            if not 1 <= options["seeds"] <= 100:
                raise CommandError("--seeds must be within 1-100")
            params = {"seeds": options["seeds"], "ks": _ks(options["k"])}
            job = job_create(kind="evaluate_changing_facts", organization=None, params=params)
            self.stdout.write(changing_facts_table(job_execute(job)))
            return
        path = options["path"].resolve()
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        organization = organization_get_or_create(name=options["org"])
        params = {"path": str(path), "ks": _ks(options["k"]), "budget_tokens": options["budget"]}
        job = job_create(kind="evaluate_locomo", organization=organization, params=params)
        self.stdout.write(locomo_table(job_execute(job)))
