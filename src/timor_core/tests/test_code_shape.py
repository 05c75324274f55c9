"""The shape of the code of timor_core and timor_ros (issue 27): short functions, one error hierarchy.

Read from the source with ``ast``, so it holds for every file, imported or not.
"""

from __future__ import annotations

import ast
import builtins
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2]
PACKAGES = [SRC / "timor_core" / "timor_core", SRC / "timor_ros" / "timor_ros"]
MAX_FUNCTION_LINES = 60

# one worker reads the sources once for all the tests here (make test spreads a module's tests over workers)
pytestmark = pytest.mark.xdist_group("code_shape")

# builtin exceptions a language protocol asks for, or raised and caught again a few lines below (never seen by a
# caller): file name -> the builtin exceptions allowed there, with why
ALLOWED_BUILTIN_RAISES = {
    "__init__.py": {"AttributeError"},  # module __getattr__: Python's protocol for a missing name
    "json_text.py": {"TypeError"},  # json's ``default`` hook says "not serializable" so (the caller's own data)
    "cluster.py": {"ValueError"},  # a bad checkpoint's shape, turned into ClusterError by the same function
    "tolerance_base.py": {"AssertionError"},  # an unreachable branch (projections are checked on construction)
}
ALWAYS_ALLOWED = {"NotImplementedError", "SystemExit", "StopIteration", "KeyboardInterrupt"}


def _sources() -> list[Path]:
    return [p for package in PACKAGES if package.is_dir() for p in sorted(package.rglob("*.py"))]


@functools.cache
def _trees() -> tuple[tuple[Path, ast.Module], ...]:
    """Every source file with its syntax tree, parsed once for the tests here (which only read the trees)."""
    return tuple((path, ast.parse(path.read_text())) for path in _sources())


def _builtin_exception(name: str) -> bool:
    obj = getattr(builtins, name, None)
    return isinstance(obj, type) and issubclass(obj, BaseException)


def test_the_packages_are_found():
    assert (SRC / "timor_core" / "timor_core" / "errors.py").is_file()
    assert len(_sources()) > 100


def test_no_function_over_60_lines():
    """Long functions are split into named parts (issue 27): every def of both packages, nested ones too."""
    long = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split these:\n" + "\n".join(long)


def test_every_raise_is_a_timor_error():
    """A raise names a TimorError subclass (which may also be a builtin one), not a bare builtin exception."""
    raw = []
    for path, tree in _trees():
        allowed = ALWAYS_ALLOWED | ALLOWED_BUILTIN_RAISES.get(path.name, set())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and _builtin_exception(exc.id) and exc.id not in allowed:
                raw.append(f"{path.relative_to(SRC)}:{node.lineno} raises {exc.id}")
    assert not raw, "raise a TimorError subclass instead:\n" + "\n".join(raw)


def test_every_error_class_is_a_timor_error():
    """Every exception class defined in the packages derives from TimorError (directly or through another)."""
    classes: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                classes.setdefault(node.name, bases)
                where.setdefault(node.name, f"{path.relative_to(SRC)}:{node.lineno}")

    def timor(name: str, seen: frozenset[str] = frozenset()) -> bool | None:
        """True if it derives from TimorError, False if an exception that does not, None if no exception."""
        if name == "TimorError":
            return True
        if name in seen or name not in classes:
            return False if _builtin_exception(name) else None
        verdicts = [timor(b, seen | {name}) for b in classes[name]]
        return True if True in verdicts else (False if False in verdicts else None)

    # a private exception class used only inside its file for control flow (caught there) is allowed
    private_internal = {"_DuplicateKeyError"}
    wrong = [f"{where[n]} {n}" for n in classes if n not in private_internal and timor(n) is False]
    assert not wrong, "derive these from TimorError:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", ["SpaceIndexError", "NoFitError", "ToolMissingError"])
def test_errors_that_keep_their_builtin_meaning(name):
    """Errors a protocol or the reference's API catches as a builtin are both: TimorError and that builtin."""
    from timor_core.errors import TimorError
    from timor_core.export.formats.urdfdom import ToolMissingError
    from timor_core.model.growth import NoFitError
    from timor_core.search.spaces.space import SpaceIndexError

    cls, builtin = {
        "SpaceIndexError": (SpaceIndexError, IndexError),
        "NoFitError": (NoFitError, LookupError),
        "ToolMissingError": (ToolMissingError, FileNotFoundError),
    }[name]
    assert issubclass(cls, TimorError) and issubclass(cls, builtin)
