"""The layer order of timor_core, read from the code's own import statements (every import: module level,
inside functions and under TYPE_CHECKING), so docs/architecture.md stays true (issue 14)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

# every other import inside a function body defers a load: the table of what each saves (docs/architecture.md)
from call_time_imports import DEFERRALS

# one worker reads the sources once for all the tests here (make test spreads a module's tests over workers)
pytestmark = pytest.mark.xdist_group("architecture")

PACKAGE = Path(__file__).resolve().parents[1] / "timor_core"
TESTS = Path(__file__).resolve().parent

LAYERS = {  # a module may import from its own layer (no circles) and from lower ones, never from higher ones
    "errors": 0,
    "limits": 0,
    "common": 0,
    "model": 1,
    "kinematics": 2,
    "task": 3,
    "export": 4,  # files for other tools (export.formats) and the URDF import (export.urdf_import)
    "search": 4,
    "ros": 5,  # the running ROS 2 system, without rclpy: what timor_ros's nodes and launch files call
    "viz": 5,
    "hardware": 6,  # real robots: profiles, buses, bring-up packages (their launch files use ros.launch_arguments)
    "paper": 7,
    "demo": 7,
    "cli": 8,  # the command line runs everything, the demo and the paper's experiments included
}
SEPARATE = {  # side by side: neither imports the other
    ("export", "search"), ("search", "export"), ("ros", "viz"), ("viz", "ros"),
}  # fmt: skip
DELEGATIONS = {  # the only imports that go up: (module, higher module, the one public function a method delegates to)
    ("timor_core.model.assembly_models", "timor_core.export.formats.urdf", "assembly_to_urdf"),
    ("timor_core.model.assembly_models", "timor_core.export.formats.xacro", "assembly_to_xacro"),
    ("timor_core.model.assembly_models", "timor_core.export.formats.srdf", "assembly_to_srdf"),
    ("timor_core.model.assembly_models", "timor_core.export.formats.mjcf", "assembly_to_mjcf"),
    ("timor_core.model.assembly_models", "timor_core.export.urdf_import.importer", "assembly_from_urdf"),
    ("timor_core.model.assembly_models", "timor_core.kinematics.build", "build_robot"),
    ("timor_core.kinematics.robot", "timor_core.export.urdf_import.importer", "assembly_from_urdf"),
    ("timor_core.kinematics.robot", "timor_core.viz.viewer", "show_robot"),
    ("timor_core.task.task", "timor_core.viz.viewer", "show_task"),
    ("timor_core.task.solution", "timor_core.viz.viewer", "show_solution"),
}
MAX_LINES = 450
MAX_TOP_LEVEL_MODULES = 8


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once for the tests here (which only read the trees)."""
    return ast.parse(path.read_text())


def _call_time_imports(tree: ast.Module) -> set[int]:
    """ids of the ``from ... import name`` nodes (one name) that sit directly in a function's body: run at call time."""
    found = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found |= {id(n) for n in fn.body if isinstance(n, ast.ImportFrom) and len(n.names) == 1}
    return found


def _imports(path: Path, module: str, modules: dict[str, Path]) -> list[tuple[str, str, int, bool]]:
    """(imported module, imported name, line, at call time) for every import of a timor_core module in the file."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    tree = _tree(path)
    call_time = _call_time_imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "timor_core" or target.startswith("timor_core."):
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.append((sub if sub in modules else target, alias.name, node.lineno, id(node) in call_time))
        elif isinstance(node, ast.Import):
            found += [(a.name, "", node.lineno, False) for a in node.names if a.name.startswith("timor_core")]
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _delegation(source: str, target: str, name: str, call_time: bool) -> bool:
    """A listed delegation: a method's call-time import of the one public function it hands its work to."""
    return call_time and (source, target, name) in DELEGATIONS


@pytest.fixture(scope="module")
def graph() -> tuple[nx.DiGraph, list[tuple[str, str, str, int, bool]]]:
    """The import graph (delegations left out: they run at call time, after every module is loaded) and every edge."""
    modules = _modules()
    G = nx.DiGraph()
    edges = []
    for module, path in modules.items():
        G.add_node(module)
        for target, name, line, call_time in _imports(path, module, modules):
            if target != module:
                if not _delegation(module, target, name, call_time):
                    G.add_edge(module, target)
                edges.append((module, target, name, line, call_time))
    return G, edges


def test_every_module_belongs_to_a_layer():
    unknown = sorted({_layer(m) for m in _modules()} - set(LAYERS) - {"__init__"})
    assert not unknown, f"add these to LAYERS and docs/architecture.md: {unknown}"


def test_no_import_circles(graph):
    G, _ = graph
    circles = [sorted(c) for c in nx.strongly_connected_components(G) if len(c) > 1]
    assert not circles, circles


def test_layers_import_only_downwards(graph):
    _, edges = graph
    wrong = []
    for source, target, name, line, call_time in edges:
        a, b = _layer(source), _layer(target)
        if a == "__init__" or _delegation(source, target, name, call_time):
            continue  # the package facade re-exports the public API of every layer; a listed delegation may go up
        if b == "__init__":
            wrong.append(f"{source}:{line} imports the timor_core facade (import the defining module)")
        elif LAYERS[b] > LAYERS[a] or (a, b) in SEPARATE:
            wrong.append(f"{source}:{line} ({a}) imports {target} ({b})")
    assert not wrong, "\n".join(wrong)


def test_no_private_names_across_files(graph):
    _, edges = graph
    private = [f"{s}:{line} imports {name} from {t}" for s, t, name, line, _ in edges
               if name.startswith("_") and not name.startswith("__")]  # fmt: skip
    assert not private, "\n".join(private)


def test_every_delegation_is_used_and_documented(graph):
    """The table holds no stale entry, each goes up a layer, and docs/architecture.md lists every one."""
    _, edges = graph
    used = {(s, t, name) for s, t, name, _line, call_time in edges if _delegation(s, t, name, call_time)}
    assert used == DELEGATIONS, f"listed but not used: {sorted(DELEGATIONS - used)}"
    assert all(LAYERS[_layer(t)] > LAYERS[_layer(s)] for s, t, _ in DELEGATIONS), "a delegation must go up a layer"
    text = (PACKAGE.parents[2] / "docs" / "architecture.md").read_text()
    undocumented = [
        f"{t}.{name}" for s, t, name in DELEGATIONS if f"`{t.removeprefix('timor_core.')}.{name}`" not in text
    ]
    assert not undocumented, f"add these to the delegation table of docs/architecture.md: {undocumented}"


MAY_IMPORT = "May import from timor_core:"
RULED = {"export", "export.formats", "export.urdf_import", "ros", "hardware", "search"}  # these state their imports


def _import_rules() -> dict[str, set[str]]:
    """package -> what its ``__init__`` docstring says it may import (its line ``May import from timor_core: ...``)."""
    rules = {}
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(_tree(init)) or ""
        for paragraph in doc.split("\n\n"):
            if paragraph.startswith(MAY_IMPORT):  # the line and the lines it continues on
                names = " ".join(paragraph.split()).removeprefix(MAY_IMPORT).strip().rstrip(".").split(",")
                rules[_module_name(init).removeprefix("timor_core.")] = {n.strip() for n in names}
    return rules


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_each_package_imports_only_what_its_init_says(graph):
    """export's and search's subpackages, ros and hardware say in their ``__init__`` what they may import; the code
    keeps to it."""
    _, edges = graph
    rules = _import_rules()
    parts = {
        _module_name(p.parent).removeprefix("timor_core.")
        for layer in ("export", "search")
        for p in (PACKAGE / layer).glob("*/__init__.py")
    }
    assert RULED | parts <= set(rules), f"add a '{MAY_IMPORT} ...' line to: {sorted(RULED | parts - set(rules))}"
    for package, allowed in rules.items():
        mine = package.split(".")[0]
        above = [a for a in allowed if LAYERS[a.split(".")[0]] > LAYERS[mine] or (mine, a.split(".")[0]) in SEPARATE]
        assert not above, f"{package} may not import a higher or a side-by-side layer: {above}"
    wrong = []
    for source, target, name, line, call_time in edges:
        src, tgt = source.removeprefix("timor_core."), target.removeprefix("timor_core.")
        for package, allowed in rules.items():
            if _within(src, package) and not _delegation(source, target, name, call_time):
                if not any(_within(tgt, a) for a in allowed | {package}):
                    wrong.append(f"{source}:{line} imports {target}, which {package}/__init__ does not allow")
    assert not wrong, "\n".join(wrong)


def _every_call_time_import(path: Path, module: str, modules: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(imported module, function, line) of every import inside a function body, at any depth (``from X import y``:
    ``X.y`` where that is a timor_core module, else ``X``)."""
    found = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name if function is None else f"{function}.{child.name}")
            elif isinstance(child, ast.ImportFrom) and function is not None:
                base = child.module or ""
                subs = [f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in modules]
                found.extend((target, function, child.lineno) for target in subs or [base])
            elif isinstance(child, ast.Import) and function is not None:
                found.extend((alias.name, function, child.lineno) for alias in child.names)
            else:
                visit(child, function)

    visit(_tree(path), None)
    return found


def test_every_call_time_import_is_a_delegation_or_a_listed_deferral():
    """An import inside a function is a delegation (DELEGATIONS) or a deferral with its measured saving (DEFERRALS);
    the table holds no stale entry and docs/architecture.md shows every row with its figure."""
    modules = _modules()
    delegating = {(s, t) for s, t, _ in DELEGATIONS}
    seen, unlisted = set(), []
    for module, path in modules.items():
        for target, function, line in _every_call_time_import(path, module, modules):
            seen.add((module, target))
            if (module, target) not in delegating | set(DEFERRALS):
                unlisted.append(f"{module}:{line} ({function}) imports {target}")
    assert not unlisted, "move to the top of the file, or measure and list in call_time_imports.py:\n" + "\n".join(
        unlisted
    )
    stale = sorted(set(DEFERRALS) - seen)
    assert not stale, f"listed but no longer imported at call time: {stale}"
    small = [k for k, (saving, why) in DEFERRALS.items() if saving < 1.0 and why == "start-up" or saving <= 0.0]
    assert not small, f"these save nothing or under 1 ms off the cold paths: move them to the top: {small}"
    text = (PACKAGE.parents[2] / "docs" / "architecture.md").read_text()
    missing = [row for row in _deferral_rows() if row not in text]
    assert not missing, "add these rows to docs/architecture.md:\n" + "\n".join(missing)


def _deferral_rows() -> list[str]:
    return [
        f"| `{m.removeprefix('timor_core.')}` | `{t.removeprefix('timor_core.')}` | {saving:.1f} | {why} |"
        for (m, t), (saving, why) in sorted(DEFERRALS.items())
    ]


def _test_files() -> dict[str, Path]:
    """Every Python file of the tests folder (tests, conftest.py and the helper modules the tests import)."""
    return {p.stem: p for p in sorted(TESTS.glob("*.py"))}


def test_files_stay_small():
    """One concept a file: at most 450 lines, in the package and in its tests (a test file's shared fixtures and
    helpers go to a module the tests import, such as reach_cases.py, or to conftest.py)."""
    files = _modules() | {f"tests/{name}": path for name, path in _test_files().items()}
    sizes = {m: len(p.read_text().splitlines()) for m, p in files.items()}
    too_big = {m: n for m, n in sizes.items() if n > MAX_LINES}
    assert not too_big, f"split these (one concept a file): {too_big}"


def _private_uses(path: Path, local: set[str]) -> list[str]:
    """The private names (``_x``) of the tests folder's files ``path`` takes: imported by name, or read off a module
    of the folder imported whole (``import test_x`` then ``test_x._y``)."""
    tree = _tree(path)
    modules = {(alias.asname or alias.name): alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names if alias.name in local}  # fmt: skip
    uses = [
        f"tests/{path.name}:{node.lineno} imports {alias.name} from {node.module}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and not node.level and node.module in local
        for alias in node.names
        if alias.name.startswith("_")
    ]
    return uses + [
        f"tests/{path.name}:{node.lineno} reads {node.attr} of {modules[node.value.id]}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]


def test_no_private_names_across_test_files():
    """A test file takes no private name (``_x``) of another file of the tests folder, imported or read off the
    module: what tests share is public, in a helper module or conftest.py (as in the package,
    test_no_private_names_across_files)."""
    local = set(_test_files())
    private = [use for path in _test_files().values() for use in _private_uses(path, local)]
    assert not private, "\n".join(private)


def test_few_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(top) + 1 <= MAX_TOP_LEVEL_MODULES, top


def test_the_architecture_document_names_every_layer():
    text = (PACKAGE.parents[2] / "docs" / "architecture.md").read_text()
    missing = [layer for layer in LAYERS if f"`{layer}" not in text]
    assert not missing, f"docs/architecture.md does not mention {missing}"
    readme = (PACKAGE.parents[2] / "README.md").read_text()
    assert "docs/architecture.md" in readme
