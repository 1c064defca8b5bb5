"""Functions stay short enough to read at once: no function under functions/ has a body (its statements,
after the docstring) over 60 lines unless the reason is stated here."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCES = Path(__file__).resolve().parents[2] / "functions"
LIMIT = 60
# A long function and why it stays whole.
STATED: dict[str, str] = {}


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return 0 if not body else (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def _long_functions() -> dict[str, int]:
    found = {}
    for path in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _body_lines(node) > LIMIT:
                found[f"{path.relative_to(SOURCES).as_posix()}:{node.name}"] = _body_lines(node)
    return found


def test_no_function_is_long_without_a_stated_reason() -> None:
    assert set(_long_functions()) == set(STATED), _long_functions()


def test_the_measure_counts_statements_not_the_signature_or_docstring() -> None:
    source = 'def f(\n    a: int,\n    b: int,\n) -> int:\n    """Doc.\n\n    More."""\n    x = a\n    return x + b\n'
    (function,) = ast.parse(source).body
    assert isinstance(function, ast.FunctionDef) and _body_lines(function) == 2
