"""The package layout tells the pipeline's story (README "Architecture"): every import, lazy ones inside
functions too, points down the list of layers, never up against the data's direction."""

from __future__ import annotations

import ast
from pathlib import Path

import awbench

PACKAGE = Path(awbench.__file__).resolve().parent
# Lowest first: a module may import from its own layer and the ones before it.
LAYERS = (
    "",
    "data",
    "world_model",
    "transport",
    "backends",
    "judging",
    "run",
    "analysis",
    "interop",
    "cli",
    "__main__",
)
SHARED = ("awbench", "awbench._version", "awbench.config", "awbench.domains", "awbench.errors", "awbench.files",
          "awbench.plugins", "awbench.prefix_order", "awbench.records", "awbench.redact", "awbench.resources", "awbench.safe_text",
          "awbench.suggest", "awbench.workers")  # fmt: skip
# The one import allowed upward: the package root keeps `from awbench import pipeline` working, loaded on use.
REEXPORTS = {("awbench", "awbench.run.pipeline")}
# The judging layer's rooms (README "Architecture"), lowest first: "" is what every judge shares (the package's
# `__init__`, `cost`, `injection`); a room imports from itself and the rooms before it. The rule judge shares
# nothing with the LLM judges but the shared vocabulary.
JUDGING_ROOMS = ("", "batch", "llm", "choice")
RULES_ROOM = "rules"


def package_files() -> list[Path]:
    """The package's modules; in an installed wheel, not the bundled sample's scripts (`awbench/_bundled/`)."""
    return sorted(path for path in PACKAGE.rglob("*.py") if "_bundled" not in path.relative_to(PACKAGE).parts)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    if module in SHARED:
        return 0
    package = module.split(".")[1]
    assert package in LAYERS, f"{module} is in no layer of the README's Architecture"
    return LAYERS.index(package)


def imported(path: Path, at_runtime: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every awbench module `path` imports, anywhere in it; `at_runtime`: not those only
    type checkers read (`if TYPE_CHECKING:`), which never run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = (
        {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for statement in node.body
            for inner in ast.walk(statement)
        }
        if at_runtime
        else set()
    )
    found = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "awbench"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "awbench":
            assert node.level == 0, f"{path}:{node.lineno}: a relative import"
            # `from awbench.run import pipeline` imports the module awbench.run.pipeline
            found += [(node.lineno, f"{node.module}.{a.name}") if (PACKAGE.parent / node.module.replace(".", "/") / a.name).with_suffix(".py").exists()
                      else (node.lineno, node.module) for a in node.names]  # fmt: skip
    return found


def test_every_module_is_in_a_layer_of_the_architecture():
    modules = [module_name(path) for path in package_files()]
    assert len(modules) > 60
    for module in modules:
        layer(module)


def test_no_import_points_up_the_pipeline():
    upward = []
    for path in package_files():
        mine = module_name(path)
        for line, target in imported(path):
            if target != "awbench" and layer(target) > layer(mine) and (mine, target) not in REEXPORTS:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {mine} imports {target}")
    assert upward == []


def test_the_run_never_loads_the_analysis_stack():
    """Seen from the other side: no module below `analysis` names it, even lazily (checked above), and a
    run's modules import without numpy's statistics or the charts."""
    run_modules = [module_name(p) for p in (PACKAGE / "run").glob("*.py")]
    assert "awbench.run.pipeline" in run_modules
    for path in (PACKAGE / "run").glob("*.py"):
        assert all(not target.startswith("awbench.analysis") for _, target in imported(path)), path


def judging_room(module: str) -> str:
    """The judging room of a module of the judging layer: its sub-package, or "" for the shared modules."""
    parts = module.split(".")
    inner = parts[2] if len(parts) > 2 else ""
    return inner if (PACKAGE / "judging" / inner).is_dir() and inner else ""


def room_allows(mine: str, target: str) -> bool:
    """Whether judging module `mine` may import judging module `target` (see JUDGING_ROOMS)."""
    ours, theirs = judging_room(mine), judging_room(target)
    if RULES_ROOM in (ours, theirs):
        return theirs in ("", ours)
    return JUDGING_ROOMS.index(theirs) <= JUDGING_ROOMS.index(ours)


def test_the_judging_rooms_import_only_down():
    modules = [module_name(p) for p in package_files() if module_name(p).startswith("awbench.judging")]
    assert {judging_room(m) for m in modules} == {*JUDGING_ROOMS, RULES_ROOM}, "a room the Architecture does not name"
    upward = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {module_name(path)} imports {target}"
        for path in (PACKAGE / "judging").rglob("*.py")
        for line, target in imported(path)
        if target.startswith("awbench.judging") and not room_allows(module_name(path), target)
    ]
    assert upward == []
    # The check itself can fail: the Batch API runner reading the rubric judge, a rule reading a prompt.
    assert not room_allows("awbench.judging.batch.runner", "awbench.judging.llm.direct")
    assert not room_allows("awbench.judging.rules.score", "awbench.judging.llm.prompts")
    assert room_allows("awbench.judging.choice.senders", "awbench.judging.batch.runner")


def test_layer_check_catches_an_upward_import(tmp_path):
    """The check itself can fail: a judging module that reads the leaderboard, even inside a function, is
    found and ranked above its own layer."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from awbench.analysis.leaderboard import build_leaderboard\n", encoding="utf-8")
    assert imported(probe) == [(2, "awbench.analysis.leaderboard")]
    assert layer("awbench.analysis.leaderboard") > layer("awbench.judging.llm.direct")


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every module that can reach itself again by imports, with one such path (the shortest, found breadth
    first), each cycle named once by its members."""
    cycles: dict[frozenset[str], list[str]] = {}
    for start in sorted(graph):
        paths = {start: [start]}
        frontier = [start]
        while frontier and start not in {m for f in frontier for m in graph.get(f, ())} - {None}:
            following = []
            for module in frontier:
                for target in sorted(graph.get(module, ())):
                    if target not in paths:
                        paths[target] = [*paths[module], target]
                        following.append(target)
            frontier = following
        closing = next((f for f in frontier if start in graph.get(f, ())), None)
        if closing is not None:
            cycle = [*paths[closing], start]
            cycles.setdefault(frozenset(cycle), cycle)
    return list(cycles.values())


def runtime_imports() -> dict[str, set[str]]:
    """module -> the awbench modules it imports when run, lazy imports inside functions included."""
    return {
        module_name(path): {target for _, target in imported(path, at_runtime=True)} - {"awbench"}
        for path in package_files()
    }


def test_no_import_cycle():
    """No module imports, even lazily, one that imports it back (directly or through others): each module
    can be understood, and loaded, before the ones above it."""
    assert import_cycles(runtime_imports()) == []


def test_no_import_cycle_even_among_imports_only_type_checkers_read():
    """Nor with `if TYPE_CHECKING:` imports counted: each module's types are understood before the modules above
    it (a pair that needs each other's types is one module, or shares a lower one)."""
    every = {module_name(path): {target for _, target in imported(path)} - {"awbench"} for path in package_files()}
    assert import_cycles(every) == []


def test_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path):
    """The check itself can fail: two modules importing each other, one of them inside a function, are a
    cycle; an import only type checkers read is not."""
    upper = tmp_path / "upper.py"
    upper.write_text(
        "from typing import TYPE_CHECKING\nfrom awbench.judging.llm.direct import create\n"
        "if TYPE_CHECKING:\n    from awbench.judging.rules.judge import RuleJudge\n",
        encoding="utf-8",
    )
    lower = tmp_path / "lower.py"
    lower.write_text("def f():\n    from awbench.judging.llm.batch_judge import BatchJudge\n", encoding="utf-8")
    assert imported(upper, at_runtime=True) == [(2, "awbench.judging.llm.direct")]
    assert len(imported(upper)) == 2
    graph = {
        "awbench.judging.llm.direct": {target for _, target in imported(lower)},
        "awbench.judging.llm.batch_judge": {target for _, target in imported(upper, at_runtime=True)},
        "awbench.judging.rules.judge": {"awbench.judging.llm.direct"},
    }
    assert import_cycles(graph) == [
        ["awbench.judging.llm.batch_judge", "awbench.judging.llm.direct", "awbench.judging.llm.batch_judge"]
    ]


def judge_introspection(path: Path) -> list[str]:
    """`getattr(...)` anywhere, `isinstance(x, ...)` where x names a judge, and a judge's attribute set from
    outside (`judge.spent_usd = ...`): a run module that asks what a judge is, or does its work, rather than
    calling the hooks of the Judge protocol."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            subject = ast.unparse(node.args[0]) if node.args else ""
            if node.func.id == "getattr" or (node.func.id == "isinstance" and "judge" in subject.lower()):
                found.append((node.lineno, f"{path.name}:{node.lineno}: {ast.unparse(node)}"))
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and "judge" in ast.unparse(t.value).lower() for t in targets):
                found.append((node.lineno, f"{path.name}:{node.lineno}: {ast.unparse(node)}"))
    return [hit for _, hit in sorted(found)]


def test_the_run_uses_judges_only_through_their_protocol(tmp_path):
    assert [hit for path in sorted((PACKAGE / "run").glob("*.py")) for hit in judge_introspection(path)] == []
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(judge_, stage):\n    isinstance(stage.judge, BatchJudge)\n"
        "    stage.judge.spent_usd = 1.0\n    return getattr(judge_, 'spent_usd', None)\n",
        encoding="utf-8",
    )
    assert judge_introspection(probe) == [
        "probe.py:2: isinstance(stage.judge, BatchJudge)",
        "probe.py:3: stage.judge.spent_usd = 1.0",
        "probe.py:4: getattr(judge_, 'spent_usd', None)",
    ]


def test_inspect_ai_is_imported_only_by_its_integration():
    """inspect_ai is an extra (`awbench[inspect]`): only the task module imports it, and the log import inside
    the function that reads a log, so every other command works without it."""
    importers: dict[str, set[bool]] = {}
    for path in package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(name.split(".")[0] == "inspect_ai" for name in names):
                importers.setdefault(module_name(path), set()).add(node.col_offset == 0)  # 0: at the top
    assert importers == {"awbench.interop.inspect_task": {True}, "awbench.interop.inspect_log": {False}}


def defined_names(path: Path) -> set[str]:
    """The names a module assigns, defines or declares at its top level (not those it imports)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def test_constants_are_imported_from_the_module_that_defines_them():
    """One place for each constant: `from awbench.x import NAME` names the module where NAME is assigned,
    never one that imported it in turn."""
    modules = {module_name(path): path for path in package_files()}
    defined = {module: defined_names(path) for module, path in modules.items()}
    tests = Path(__file__).resolve().parent
    relayed = []
    for path in [*package_files(), *sorted(tests.rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                for alias in node.names:
                    constant = alias.name.isupper() and f"{node.module}.{alias.name}" not in modules
                    if constant and alias.name not in defined[node.module]:
                        relayed.append(f"{path.name}:{node.lineno}: {alias.name} from {node.module}")
    assert relayed == []
