"""The code stands on floors, and every import points down or across, never up, and never in a circle.

Floors, lowest first (a module's floor is the first pattern its dotted name starts with):

0. ground: `settings`, `embedded`, `logfilters`, `database_versions`, `models`, `actors` (`Principal`
   and `ActorRef`), `timebounds`, `embeddings` (the only module that loads the model) and `llm` (the
   only one that talks to an LLM endpoint): what everything else reads and nothing here depends on.
1. selectors: the read path (scoped querysets, search, context, the dashboard's reads).
2. services: the write path (ingest, extraction, judge and apply, governance, tenancy, jobs' rows).
3. evaluation: the measurements, which drive the services and selectors as a client would.
4. jobs: `jobs` (the registry of background work) and `tasks` (the Celery tasks that run it).
5. entry points: `api`, `web`, `mcp_server`, `management`, `demo` (the seed `make run` writes), and
   the wiring: the package, `celery`, `apps`, `urls`, `wsgi`, `health`, `failures`, `templatetags`.

An arrow may go down or stay on its floor; an arrow up means a lower floor depends on code that
depends on it, which is how the cycles began. A few *leaves* (pure modules that import nothing of
memoryapp: word lists, text helpers, a corpus reader) may be used from any floor.

Imports are read with `ast`, function-level imports included: they are what hid the cycles. An import
under `if TYPE_CHECKING:` never runs and is left out (a selector may name a service's dataclass in an
annotation). Code below the tasks sends them by name (services.jobs.task_named) rather than importing
them.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "memoryapp"

FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("ground", ("settings", "embedded", "logfilters", "database_versions", "models", "actors", "timebounds",
                "embeddings", "llm")),
    ("selectors", ("selectors",)),
    ("services", ("services",)),
    ("evaluation", ("evaluation",)),
    ("jobs", ("jobs", "tasks")),
    ("entry points", ("api", "web", "mcp_server", "management", "demo", "celery", "apps", "urls", "wsgi", "health",
                      "failures", "templatetags", "")),
]

# Pure modules any floor may use; each must stay pure (test_leaves_import_nothing_of_memoryapp).
LEAVES = {
    "memoryapp.services.extract.grammar": "how memory texts name the user and get their small words right",
    "memoryapp.evaluation.write_corpus": "reads the corpus files (the extractor's trainer reads them too)",
    "memoryapp.services.extract.classifier": "the trained classifiers' arithmetic (numpy): the write path reads a "
                                             "text's kind of fact with them, the search a question's",
    "memoryapp.services.extract.lexicon": "word lists: the extractor's, and the search's words for the user's people",
}

# Cycles known and not yet broken, each with why and where it goes. The test fails on any other cycle,
# and on an entry here that no longer occurs (then remove it).
PENDING_CYCLES: dict[frozenset[str], str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:`."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return skipped


def _resolve(name: str) -> str | None:
    """The memoryapp module `name` is, or lies in ("memoryapp.models.Memory" -> "memoryapp.models")."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> dict[str, int]:
    """The memoryapp modules `module` imports, at module level or inside a function, with a line each."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skipped = _type_checking_only(tree)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from memoryapp.services import govern` imports the module govern, not the package
            names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                     for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name) if name.startswith(PACKAGE) else None
            if target and target != module:
                found.setdefault(target, node.lineno)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def floor_of(module: str) -> int:
    relative = module.removeprefix(PACKAGE).removeprefix(".")
    for level, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if relative == prefix or relative.startswith(prefix + ".") or (prefix == "" and relative == ""):
                return level
    raise AssertionError(f"{module} is on no floor: add it to FLOORS in {__name__} (read the module docstring)")


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def _describe(component: list[str]) -> str:
    members = set(component)
    arrows = [f"{source} -> {target} (line {line})" for source in component
              for target, line in GRAPH[source].items() if target in members]
    return "; ".join(arrows)


# Imported for their side effects on a server's start, not in a test process.
NOT_IMPORTED = {"memoryapp.wsgi": "starts loading the embedding model in the background"}


@pytest.mark.parametrize("module", sorted(set(MODULES) - set(NOT_IMPORTED)))
def test_every_module_imports(module):
    importlib.import_module(module)


def test_no_import_cycles():
    found = {frozenset(component): component for component in cycles(GRAPH)}
    new = [_describe(component) for key, component in found.items() if key not in PENDING_CYCLES]
    assert not new, "import cycles (break each by moving the shared part down a floor):\n" + "\n".join(new)
    gone = [sorted(key) for key in PENDING_CYCLES if key not in found]
    assert not gone, f"these cycles are gone: remove them from PENDING_CYCLES: {gone}"


def test_no_upward_imports():
    upward = [
        f"{source} ({FLOORS[floor_of(source)][0]}) -> {target} ({FLOORS[floor_of(target)][0]}), line {line}"
        for source, targets in GRAPH.items()
        for target, line in targets.items()
        if floor_of(target) > floor_of(source) and target not in LEAVES
    ]
    assert not upward, "imports that point up a floor (move the code they need down, or send by name):\n" + \
        "\n".join(upward)


def test_leaves_import_nothing_of_memoryapp():
    impure = {leaf: sorted(GRAPH[leaf]) for leaf in LEAVES if GRAPH[leaf]}
    assert not impure, f"a leaf usable from every floor must import no memoryapp module: {impure}"


def test_the_checks_see_function_level_imports_and_cycles():
    """The reader finds an import inside a function, and a cycle made only of such imports."""
    assert "memoryapp.tasks" in GRAPH["memoryapp.apps"], "apps.ready imports the tasks inside a method"
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
