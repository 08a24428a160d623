"""The project's import graph has no circles, and no module outgrows ~400 lines.

Why: a circle is two ideas that do not know which stands on which; it shows up as an
import-order bug only later, when someone moves a line. The graph is read with ``ast``
over every file of the project's own packages: module-level and function-level imports
alike, relative imports resolved, ``from pkg import name`` counted as an import of the
submodule ``pkg.name`` where there is one, and importing a package counted as importing
its ``__init__`` (the packages above a module count too, except those the importer sits
in: Python is already running them).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("memgraft", "pipelines", "serving", "training", "bench")
MAX_LINES = 400


def project_modules(repo: Path = REPO) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the project's roots (a package is its ``__init__``)."""
    out: dict[str, Path] = {}
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            parts = list(path.relative_to(repo).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` written inside ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that importing ``module`` runs, from every import statement in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    explicit: set[str] = set()
    implied: set[str] = set()  # packages run on the way to a submodule
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            explicit.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, is_package, node.level, node.module)
            subs = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
            explicit |= subs
            if len(subs) < len(node.names):  # a name taken from the module itself, not a submodule
                explicit.add(base)
            else:
                implied.add(base)
    running = set(_ancestors(module)) | {module}  # the packages around the importer are already running
    out = set()
    for target in explicit:
        implied.update(_ancestors(target))
        out.add(target)
    out |= implied - running
    return (out & known) - {module}


def import_graph(repo: Path = REPO) -> dict[str, set[str]]:
    modules = project_modules(repo)
    known = set(modules)
    return {m: imports_of(m, p, known) for m, p in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return sorted(found)


def test_imports_are_read_the_way_python_runs_them(tmp_path):
    assert resolve("memgraft.collab.bank.store", False, 1, "search") == "memgraft.collab.bank.search"
    assert resolve("memgraft.collab.bank", True, 1, "store") == "memgraft.collab.bank.store"
    assert resolve("memgraft.collab.bank.store", False, 2, "types") == "memgraft.collab.types"
    known = {"memgraft", "memgraft.collab", "memgraft.collab.types", "memgraft.collab.api", "memgraft.collab.m",
             "memgraft.models", "memgraft.models.embedder"}
    src = tmp_path / "m.py"
    src.write_text("from memgraft.collab import types\ndef f():\n    from . import api\n"
                   "    import memgraft.models.embedder\n")
    assert imports_of("memgraft.collab.m", src, known) == {"memgraft.collab.types", "memgraft.collab.api",
                                                          "memgraft.models", "memgraft.models.embedder"}
    src.write_text("from memgraft.collab import Thing\n")  # a name from the package's own __init__
    assert imports_of("memgraft.collab.m", src, known) == {"memgraft.collab"}


def test_circles_are_found_and_named():
    graph = {"a": {"a.x"}, "a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "b": {"a"}}
    assert circles(graph) == [["a.x", "a.y", "a.z"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_circle_in_the_project():
    found = circles(import_graph())
    assert not found, "import circles (modules that import each other, directly or around):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_no_module_over_400_lines():
    long = {str(p.relative_to(REPO)): n for p in project_modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


# memgraft/collab/ in the paper's order: a stage imports only the stages before it (the facade, api.py,
# ingest.py and __main__.py, stands above them all).
STAGES = ("types", "data", "bank", "maintain", "retrieve", "answer", "evaluate", "train")


def test_collab_stages_import_only_earlier_stages():
    def stage(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["memgraft", "collab"] and parts[2] in STAGES else None

    back = sorted(f"{a} -> {b}" for a, targets in import_graph().items() for b in targets
                  if stage(a) and stage(b) and STAGES.index(stage(b)) > STAGES.index(stage(a)))
    assert not back, "imports from a later stage of memgraft/collab/:\n" + "\n".join(back)
