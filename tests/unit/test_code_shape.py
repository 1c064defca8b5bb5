"""Code stays short enough to read at once: no function under functions/, infra/, bench/ or tools/ has a body
(its statements, after the docstring) over 60 lines unless the reason is stated here, and no module there is over
600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "functions"
LIMIT = 60
MODULE_LIMIT = 600
_CONSTRUCTOR = "a CDK construct's constructor: it declares its resources in the order the template lists them"
# A long function and why it stays whole.
STATED: dict[str, str] = {
    "infra/archive_bucket.py:__init__": _CONSTRUCTOR,
    "infra/detector.py:__init__": _CONSTRUCTOR,
    "infra/detector_function.py:__init__": _CONSTRUCTOR,
    "infra/judge.py:__init__": _CONSTRUCTOR,
    "infra/stream_mapping.py:__init__": _CONSTRUCTOR,
    "infra/throttle_explainer.py:__init__": _CONSTRUCTOR,
}


def _modules() -> list[tuple[str, Path]]:
    found = [(path.relative_to(SOURCES).as_posix(), path) for path in SOURCES.rglob("*.py")]
    return found + [
        (path.relative_to(ROOT).as_posix(), path)
        for folder in ("infra", "bench", "tools")
        for path in (ROOT / folder).glob("*.py")
    ]


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return 0 if not body else (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def _long_functions() -> dict[str, int]:
    found = {}
    for name, path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _body_lines(node) > LIMIT:
                found[f"{name}:{node.name}"] = _body_lines(node)
    return found


def test_no_function_is_long_without_a_stated_reason() -> None:
    assert set(_long_functions()) == set(STATED), _long_functions()


def test_no_module_is_over_six_hundred_lines() -> None:
    lengths = {name: len(path.read_text().splitlines()) for name, path in _modules()}
    assert {"hotkeys/cli/main.py", "infra/stack.py", "bench/stats_requests.py", "tools/mutants.py"} <= set(lengths)
    assert {name: length for name, length in lengths.items() if length > MODULE_LIMIT} == {}


def test_the_measure_counts_statements_not_the_signature_or_docstring() -> None:
    source = 'def f(\n    a: int,\n    b: int,\n) -> int:\n    """Doc.\n\n    More."""\n    x = a\n    return x + b\n'
    (function,) = ast.parse(source).body
    assert isinstance(function, ast.FunctionDef) and _body_lines(function) == 2
