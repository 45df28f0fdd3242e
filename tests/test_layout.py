"""The layout tells the architecture: data flows one way.

Imports are read from the source (``ast``), those inside functions too, since
a function-level import hides a cycle but does not remove it.
"""
import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("benchmarks", "xla_backends")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str, modules) -> set[str]:
    """The project modules ``path`` imports, anywhere in it: ``from P import
    m`` of a submodule ``m`` imports ``P.m``; of a name, ``P`` itself."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return found


def import_graph() -> nx.DiGraph:
    files = {_module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        for target in _imports(path, module, files):
            if target in files and target != module:
                graph.add_edge(module, target)
    return graph


# benchmarks/ in groups, and which groups each may import: a run flows
# command line -> running -> rows in the store; results flow store ->
# compare/merge -> report/plots/dashboard -> the judge -> the nightly job (its gate); the
# standalone tools sit on top. ``usage`` is every command's error type. A
# night on disk (``benchmarks.nightly.night``: its files' names, ``Night``)
# is below them all: the dashboard reads nights through it.
GROUPS = {
    "benchmarks.usage": set(),
    "benchmarks.run.signals": set(),  # the standard library only: how Ctrl-C and SIGTERM stop any step
    "benchmarks.models": set(),
    "benchmarks.nightly.night": set(),
    "benchmarks.results": {"benchmarks.usage", "benchmarks.nightly.night"},
    "benchmarks.run": {"benchmarks.results", "benchmarks.models", "benchmarks.usage", "benchmarks.run.signals"},
    "benchmarks.cli": {"benchmarks.run", "benchmarks.run.signals", "benchmarks.results", "benchmarks.usage"},
    "benchmarks.judge": {"benchmarks.results", "benchmarks.nightly.night", "benchmarks.usage"},
    "benchmarks.nightly": {"benchmarks.nightly.night", "benchmarks.cli", "benchmarks.results", "benchmarks.usage",
                           "benchmarks.run.signals", "benchmarks.judge"},
    "benchmarks.tools": {"benchmarks.nightly", "benchmarks.nightly.night", "benchmarks.judge", "benchmarks.cli",
                         "benchmarks.run",
                         "benchmarks.run.signals", "benchmarks.results",
                         "benchmarks.models", "benchmarks.usage"},
}


def _group(module: str) -> str | None:
    """The group of ``module``: the longest group name it is or starts with."""
    return max((g for g in GROUPS if module == g or module.startswith(g + ".")), key=len, default=None)


def test_every_module_of_benchmarks_is_in_a_group():
    loose = [m for m in import_graph() if m.startswith("benchmarks.") and _group(m) is None]
    assert loose == [], f"put these in a group of GROUPS: {loose}"


def test_groups_import_only_the_groups_below_them():
    graph = import_graph()
    wrong = [(m, t) for m, t in graph.edges if _group(m) and _group(t) and _group(m) != _group(t)
             and _group(t) not in GROUPS[_group(m)]]
    assert wrong == [], wrong


def _private_defined(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, attributes it
    assigns (``self._x = ...``), variables and parameters."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _foreign(tree: ast.AST) -> set[str]:
    """Names a module binds to other projects' modules and objects (torch,
    torch_xla): their private names are theirs to keep, not ours."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names
                         if not a.name.startswith(PACKAGES))
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith(PACKAGES):
            names.update(a.asname or a.name for a in node.names)
    return names


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def test_no_module_reaches_into_another_ones_private_names():
    """``from m import _x``, ``m._x``, and ``obj._x`` where ``_x`` is a
    private name another module of the project defines and this one does
    not: a tool needing one asks for a public hook instead. (Private
    modules, ``_xlac``, are their package's own business.)"""
    files = {_module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}
    trees = {m: ast.parse(p.read_text(), str(p)) for m, p in files.items()}
    defined = {m: _private_defined(t) for m, t in trees.items()}
    reach = []
    for module, tree in trees.items():
        others = set().union(*(d for m, d in defined.items() if m != module)) - defined[module]
        foreign = _foreign(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGES)):
                reach += [f"{module}: from {'.' * node.level}{node.module or ''} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
                          and not any(m.endswith("." + a.name) for m in files)]
            elif isinstance(node, ast.Attribute) and node.attr in others and _root(node.value) not in foreign:
                reach.append(f"{module}:{node.lineno}: .{node.attr}")
    assert reach == [], reach


def test_no_module_imports_one_that_imports_it_back():
    cycles = list(nx.simple_cycles(import_graph()))
    assert cycles == [], cycles


def test_backends_know_nothing_of_the_harness():
    graph = import_graph()
    for module in graph:
        if module.startswith("xla_backends"):
            assert not [t for t in nx.descendants(graph, module) if t.startswith("benchmarks")], module


def test_models_know_nothing_of_backends_or_the_harness():
    graph = import_graph()
    for module in graph:
        if module.startswith("benchmarks.models"):
            reach = nx.descendants(graph, module)
            assert all(t.startswith("benchmarks.models") for t in reach), (module, reach)


def test_compare_computes_and_plots_draw_it():
    graph = import_graph()
    assert graph.has_edge("benchmarks.results.plots", "benchmarks.results.compare")
    assert "benchmarks.results.plots" not in nx.descendants(graph, "benchmarks.results.compare")


def test_the_parent_and_merge_do_not_load_torch():
    """The process that schedules workers, and merge, stay light: torch is
    for the workers."""
    code = ("import sys, benchmarks.cli, benchmarks.run.orchestrate, benchmarks.results.merge, benchmarks.results.report; "
            "print(sorted(m for m in ('torch', 'benchmarks.run.worker', 'benchmarks.run.suite') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_data_layer_knows_nothing_of_the_command_line():
    """The schema and the store raise their own errors; the command lines
    turn them into usage errors."""
    graph = import_graph()
    for module in ("benchmarks.results.schema", "benchmarks.results.store"):
        reach = nx.descendants(graph, module) | {module}
        assert not [t for t in reach if t in ("benchmarks.usage", "benchmarks.cli")
                    or t.startswith("benchmarks.cli.")], (module, reach)


def test_the_nightly_is_one_package_importing_at_the_top():
    """The nightly lives in benchmarks/nightly/, a module per step; a step's
    module is chosen by the command line (``importlib``), and no module
    hides an import inside a function."""
    package = REPO / "benchmarks" / "nightly"
    assert (package / "__init__.py").is_file() and not (REPO / "benchmarks" / "nightly.py").exists()
    hidden = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                hidden += [f"{path.name}:{n.lineno}" for n in ast.walk(node)
                           if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert hidden == [], hidden


def test_a_nights_file_names_are_defined_once():
    """night.json, performance.csv, compare.json and the date pattern are
    spelled in benchmarks/nightly/night.py alone; the rest of the nightly and
    the dashboard use its names."""
    spelled = {}
    for path in [*(REPO / "benchmarks" / "nightly").glob("*.py"),
                 *(REPO / "benchmarks" / "results" / "dashboard").glob("*.py")]:
        if path.name == "night.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in (
                    "night.json", "performance.csv", "compare.json", r"^\d{4}-\d{2}-\d{2}$"):
                spelled.setdefault(node.value, []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert spelled == {}, spelled
