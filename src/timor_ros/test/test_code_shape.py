"""timor_ros's code stays readable (issue 27): no function over 60 lines, every error class a TimorError."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "timor_ros").glob("*.py")) + sorted((ROOT / "launch").glob("*.launch.py"))
MAX_FUNCTION_LINES = 60


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_function_over_60_lines(path):
    long = [f"{node.name}: {node.end_lineno - node.lineno + 1} lines" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]  # fmt: skip
    assert not long, long


def test_every_error_class_is_a_timor_error():
    import importlib

    from timor_core.errors import TimorError

    errors = []
    for path in FILES[: len(list((ROOT / "timor_ros").glob("*.py")))]:
        module = importlib.import_module(f"timor_ros.{path.stem}")
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                errors.append((name, issubclass(value, TimorError)))
    assert errors and all(ok for _, ok in errors), errors
