"""Mutation testing of the detector's rules: does a changed rule fail a test?

``python -m tools.mutants`` (``make mutants``) makes small changes (mutants) to the modules the
alerts and figures rest on, one at a time, and runs the tests that pin each module against every
mutant. A mutant is killed when a test fails (or the run exceeds its time limit: a mutated loop
that never ends); it survives when every test passes. Each survivor must be either killed by a new
test or listed in ``tools/equivalent_mutants.py`` with the reason it cannot change behaviour. The
report (``docs/mutants.md``) is written by this command; it exits non-zero while a survivor is
neither killed nor explained, or when an explanation names a mutant that no longer survives.

How a mutant runs: the parent imports the heavy third-party packages once, then forks one child per
mutant. The child installs an import hook that serves the mutated module's code (compiled from the
mutated syntax tree, so line numbers stay those of the file) and runs pytest in-process on the
module's test files, stopping at the first failure. Nothing is written to the source tree.

The mutations (``Mutator``) are the classic ones: comparison operators (``<`` and ``<=``, ``==``
and ``!=``, ``in`` and ``not in``, ``is`` and ``is not``), arithmetic (``+`` and ``-``, ``*``
and ``/``, ``//`` to ``/``, ``%`` to ``/``), ``and`` and ``or``, ``not x`` to ``x``, ``-x`` to
``x``, ``max`` and ``min``, ``True`` and ``False``, an integer ``n`` to ``n + 1``, a float
``x`` to ``1.1 x``, an ``if``'s condition negated, ``continue`` and ``break``, and a call's keyword
argument dropped (one at a time: the callee's default, if it has one, is then used). Docstrings,
strings, annotations and decorators are left alone.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = ROOT / "functions"

# Module (dotted name) -> the test files that pin its behaviour: the fast unit tests that call it, so
# each mutant costs seconds (the property tests of the same modules take minutes per run and are not
# needed to kill a mutant here). A key's rate and the rules first, then the judge's verdicts and the judge,
# the summary last.
TARGETS: dict[str, tuple[str, ...]] = {
    "hotkeys.detector.domain.rate": ("tests/unit/test_rate.py", "tests/unit/test_rules.py"),
    "hotkeys.detector.alerts.rules": ("tests/unit/test_rules.py",),
    "hotkeys.detector.alerts.verdicts": ("tests/unit/test_verdicts.py", "tests/unit/test_rules.py"),
    "hotkeys.detector.alerts.judge": ("tests/unit/test_judge_memory.py", "tests/unit/test_judge_app.py"),
    "hotkeys.detector.domain.windows": ("tests/unit/test_windows.py",),
    "hotkeys.detector.domain.sizing": ("tests/unit/test_sizing.py",),
    "hotkeys.detector.domain.indexes": ("tests/unit/test_index_writes.py",),
    "hotkeys.detector.domain.summary": ("tests/unit/test_summary_behaviour.py",),
}

# Heavy packages the tests import: loaded once in the parent, shared by every forked child.
WARM_IMPORTS = ("pytest", "hypothesis", "boto3", "botocore.session", "moto", "aws_lambda_powertools", "rich")

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITHMETIC_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
}
_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.And: "and",
    ast.Or: "or",
}


@dataclass(frozen=True)
class Mutant:
    module: str
    ordinal: int  # the site's position in the module's walk: how the mutant is applied
    function: str  # the enclosing function or class (``<module>`` at the top level)
    line: int
    change: str  # what the mutation does, e.g. ``'<' -> '<='``
    occurrence: int  # the same change of the same code in the same function: 1, 2, ...
    context: str = ""  # the mutated code as written (normalised by ast.unparse)

    @property
    def ident(self) -> str:
        """A name that survives edits anywhere but in the mutated code itself (no line number, no ordinal)."""
        short = self.module.rsplit(".", 1)[-1]
        suffix = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"{short}.{self.function}: `{self.context}` {self.change}{suffix}"


class Mutator(ast.NodeTransformer):
    """Walks a module in a fixed order, numbering every mutation site; with ``apply`` set, performs the
    mutation at that number (the tree is then the mutant's)."""

    def __init__(self, apply: int | None = None) -> None:
        self.apply = apply
        self.sites: list[tuple[str, int, str, str]] = []  # (function, line, change, context)
        self._scope: list[str] = []
        self._statements: list[ast.stmt] = []
        self._parents: list[ast.AST] = []

    def visit(self, node: ast.AST) -> Any:
        self._parents.append(node)
        if isinstance(node, ast.stmt):
            self._statements.append(node)
        try:
            return super().visit(node)
        finally:
            self._parents.pop()
            if isinstance(node, ast.stmt):
                self._statements.pop()

    def _context(self, node: ast.AST, statement: ast.stmt | None = None) -> str:
        """Where a site is: its statement as written (a compound statement by its head), normalised by
        ast.unparse, then the mutated expression when it is not the whole statement. ``statement``: the
        one to name instead of the innermost (a ``continue`` is named by the statement that holds it)."""
        if self.apply is not None:
            return ""  # only the listing pass names sites (children may already be mutated here)
        if statement is None:
            statement = self._statements[-1] if self._statements else None
        if statement is None:
            return ast.unparse(node)
        head = {ast.If: "test", ast.While: "test", ast.For: "iter", ast.With: None}.get(type(statement), "")
        if head == "":
            where = ast.unparse(statement)
        elif head is None:
            where = "with " + ", ".join(ast.unparse(item) for item in statement.items)  # type: ignore[attr-defined]
        else:
            keyword = "for … in" if isinstance(statement, ast.For) else type(statement).__name__.lower()
            where = f"{keyword} {ast.unparse(getattr(statement, head))}"
        where = " ".join(where.split())
        if len(where) > 72:
            where = where[:60] + "…" + hashlib.sha256(where.encode()).hexdigest()[:8]
        what = "" if node is statement or isinstance(node, ast.Constant) else ast.unparse(node)
        return where if not what or what == where else f"{where} ⟨{what[:40]}⟩"

    # Scopes and what is never mutated
    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        self._scope.append(node.name)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # Defaults are behaviour; annotations are not (and are text under ``from __future__``).
            node.args.defaults = [self.visit(d) for d in node.args.defaults]
            node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        else:
            node.bases = [self.visit(b) for b in node.bases]
        node.body = self._body(node.body)
        self._scope.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._scoped(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return self._scoped(node)

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for position, statement in enumerate(body):
            docstring = (
                position == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            ) and isinstance(statement.value.value, str)
            if docstring:
                out.append(statement)
                continue
            visited = self.visit(statement)
            if isinstance(visited, ast.stmt):
                out.append(visited)
        return out

    def visit_Module(self, node: ast.Module) -> ast.AST:
        node.body = self._body(node.body)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        return node  # the error's message: raising at all is what tests pin

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node  # text

    # Sites
    def _site(self, node: ast.AST, change: str, statement: ast.stmt | None = None) -> bool:
        """Numbers one site; True if it is the one to mutate."""
        function = ".".join(self._scope) or "<module>"
        self.sites.append((function, getattr(node, "lineno", 0), change, self._context(node, statement)))
        return self.apply == len(self.sites) - 1

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for position, op in enumerate(node.ops):
            swapped = _COMPARE_SWAPS.get(type(op))
            if swapped is not None and self._site(node, f"'{_SYMBOLS[type(op)]}' -> '{_SYMBOLS[swapped]}'"):
                node.ops[position] = swapped()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        swapped = _ARITHMETIC_SWAPS.get(type(node.op))
        if swapped is not None and self._site(node, f"'{_SYMBOLS[type(node.op)]}' -> '{_SYMBOLS[swapped]}'"):
            node.op = swapped()
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        swapped = _ARITHMETIC_SWAPS.get(type(node.op))
        if swapped is not None and self._site(node, f"'{_SYMBOLS[type(node.op)]}=' -> '{_SYMBOLS[swapped]}='"):
            node.op = swapped()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._site(node, f"'{_SYMBOLS[type(node.op)]}' -> '{_SYMBOLS[other]}'"):
            node.op = other()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._site(node, "'not x' -> 'x'"):
            return node.operand
        if isinstance(node.op, ast.USub) and self._site(node, "'-x' -> 'x'"):
            return node.operand
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        if self._site(node, "if c -> if not c"):
            node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
            other = "min" if node.func.id == "max" else "max"
            if self._site(node, f"{node.func.id}() -> {other}()"):
                node.func = ast.Name(id=other, ctx=ast.Load())
        for keyword in list(node.keywords):
            # One keyword argument dropped (``**mapping`` is left alone): the callee's default then
            # applies, or the call fails (a required argument), which any test that reaches it sees.
            if keyword.arg is not None and self._site(node, f"{keyword.arg}= dropped"):
                node.keywords = [other for other in node.keywords if other is not keyword]
        return node

    def _loop_exit(self, node: ast.Continue | ast.Break, other: type[ast.Continue | ast.Break]) -> ast.AST:
        # Named by the statement that holds it (an ``if``'s head, a loop's), not by itself: a function's
        # ``continue`` statements are told apart by where they are, not by their order.
        holder = self._statements[-2] if len(self._statements) > 1 else None
        mine, theirs = type(node).__name__.lower(), other.__name__.lower()
        if self._site(node, f"{mine} -> {theirs}", holder):
            return ast.copy_location(other(), node)
        return node

    def visit_Continue(self, node: ast.Continue) -> ast.AST:
        return self._loop_exit(node, ast.Break)

    def visit_Break(self, node: ast.Break) -> ast.AST:
        return self._loop_exit(node, ast.Continue)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool):
            if self._site(node, f"{value} -> {not value}"):
                return ast.Constant(value=not value)
        elif isinstance(value, int):
            if self._site(node, f"{value} -> {value + 1}"):
                return ast.Constant(value=value + 1)
        elif isinstance(value, float):
            mutated = round(value * 1.1, 12) if value else 1.0
            if self._site(node, f"{value} -> {mutated}"):
                return ast.Constant(value=mutated)
        return node


def source_path(module: str) -> Path:
    return FUNCTIONS.joinpath(*module.split(".")).with_suffix(".py")


def mutants_of(module: str) -> list[Mutant]:
    tree = ast.parse(source_path(module).read_text(encoding="utf-8"))
    mutator = Mutator()
    mutator.visit(tree)
    seen: dict[tuple[str, str, str], int] = {}
    found = []
    for ordinal, (function, line, change, context) in enumerate(mutator.sites):
        seen[(function, context, change)] = seen.get((function, context, change), 0) + 1
        found.append(Mutant(module, ordinal, function, line, change, seen[(function, context, change)], context))
    return found


def mutated_code(mutant: Mutant) -> CodeType:
    path = source_path(mutant.module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mutator = Mutator(apply=mutant.ordinal)
    tree = ast.fix_missing_locations(mutator.visit(tree))
    return compile(tree, str(path), "exec")


class _MutatedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module's mutated code in place of its file."""

    def __init__(self, name: str, path: Path, code: CodeType) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(self.code, module.__dict__)


def _pytest_args(tests: Sequence[str], log: Path) -> list[str]:
    return [
        *tests,
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-o",
        "addopts=-rf --strict-markers",
        "--hypothesis-profile=mutants",
        f"--junit-xml={log}",
    ]


def _child(mutant: Mutant | None, tests: Sequence[str], log: Path) -> int:
    """In the forked child: run the tests against the mutant (None: the module as it is)."""
    import hypothesis
    import pytest

    # Deterministic examples, no example database carried between mutants, no deadlines (a mutant
    # may be slower without being wrong).
    hypothesis.settings.register_profile("mutants", derandomize=True, database=None, deadline=None)
    if mutant is not None:
        code = mutated_code(mutant)
        sys.meta_path.insert(0, _MutatedModule(mutant.module, source_path(mutant.module), code))
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    return int(pytest.main(_pytest_args(tests, log)))


def _killer(log: Path) -> str:
    """The first failing test's name, from the child's JUnit report."""
    try:
        text = log.read_text(encoding="utf-8")
    except OSError:
        return ""
    for match in re.finditer(r'<testcase classname="([^"]*)" name="([^"]*)"[^>]*>\s*<(failure|error)', text):
        return f"{match.group(1).rsplit('.', 1)[-1]}::{match.group(2)}"
    return ""


@dataclass
class Outcome:
    mutant: Mutant | None
    killed: bool
    how: str  # the failing test, "timeout", or "" (survived)
    seconds: float


def run_all(jobs: list[tuple[Mutant | None, tuple[str, ...]]], workers: int, timeout: float) -> Iterator[Outcome]:
    """Runs each (mutant, tests) in a forked child, ``workers`` at a time; yields outcomes as they end."""
    pending = list(enumerate(jobs))
    running: dict[int, tuple[Mutant | None, Path, float]] = {}
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        while pending or running:
            while pending and len(running) < workers:
                number, (mutant, tests) = pending.pop(0)
                log = Path(scratch) / f"{number}.xml"
                pid = os.fork()
                if pid == 0:  # the child
                    status = 70
                    try:
                        status = _child(mutant, tests, log)
                    finally:
                        os._exit(status)
                running[pid] = (mutant, log, time.monotonic())
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for child, (mutant, _log, started) in list(running.items()):
                    if now - started > timeout:
                        os.kill(child, signal.SIGKILL)
                        os.waitpid(child, 0)
                        del running[child]
                        yield Outcome(mutant, True, "timeout", now - started)
                time.sleep(0.05)
                continue
            if pid not in running:
                continue
            mutant, log, started = running.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            # pytest: 0 all passed, 1 a test failed; anything else (collection or import error) also kills.
            yield Outcome(
                mutant, code != 0, "" if code == 0 else (_killer(log) or f"exit {code}"), time.monotonic() - started
            )


def report(results: dict[str, list[Outcome]], equivalent: dict[str, str], command: str) -> tuple[str, list[str]]:
    """The Markdown report, and the problems (unexplained survivors, stale explanations)."""
    problems: list[str] = []
    lines = [
        "# Mutation testing of the rules",
        "",
        f"Written by `{command}` (tools/mutants.py): each mutant is one small change to one module, run",
        "against the module's test files (tools/mutants.py `TARGETS`). Killed: a test failed (or the run",
        "timed out); survived: every test passed. A survivor is listed with the reason it cannot change",
        "behaviour (tools/equivalent_mutants.py); an unexplained survivor makes the command fail.",
        "",
        "| module | tests | mutants | killed | survived (equivalent) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for module, outcomes in results.items():
        alive = sum(not o.killed for o in outcomes)
        lines.append(
            f"| {module.rsplit('.', 1)[-1]}.py | {', '.join(Path(t).name for t in TARGETS[module])} "
            f"| {len(outcomes)} | {len(outcomes) - alive} | {alive} |"
        )
    for module, outcomes in results.items():
        survived = sorted((o.mutant for o in outcomes if not o.killed and o.mutant), key=lambda m: m.ordinal)
        lines += ["", f"## {module.rsplit('.', 1)[-1]}.py: surviving mutants", ""]
        if not survived:
            lines.append("None.")
        for mutant in survived:
            reason = equivalent.get(mutant.ident)
            if reason is None:
                problems.append(f"unexplained survivor: {mutant.ident} (line {mutant.line})")
                reason = "**UNEXPLAINED: add a test that kills it, or the reason it is equivalent**"
            lines.append(f"- `{mutant.ident}` (line {mutant.line}): {reason}")
        prefix = module.rsplit(".", 1)[-1] + "."
        idents = {m.ident for m in survived}
        for ident in equivalent:
            if ident.startswith(prefix) and ident not in idents:
                problems.append(f"explained but not surviving (remove it from tools/equivalent_mutants.py): {ident}")
    return "\n".join(lines) + "\n", problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutants", description=__doc__.split("\n")[0])
    parser.add_argument("--module", action="append", choices=[m.rsplit(".", 1)[-1] for m in TARGETS])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--output", default="docs/mutants.md", help="the report (default docs/mutants.md)")
    parser.add_argument("--show", metavar="IDENT", help="print one mutant's changed line and exit")
    parser.add_argument("--fresh", action="store_true", help="run every mutant again, even if nothing changed")
    args = parser.parse_args(argv)
    chosen = [m for m in TARGETS if args.module is None or m.rsplit(".", 1)[-1] in args.module]
    os.chdir(ROOT)
    for path in (str(ROOT), str(FUNCTIONS)):
        if path not in sys.path:
            sys.path.insert(0, path)

    every = {module: mutants_of(module) for module in TARGETS}
    if args.list or args.show:
        _list_mutants([m for module in chosen for m in every[module]], args.show)
        return 0

    from tools.equivalent_mutants import EQUIVALENT

    for name in WARM_IMPORTS:
        __import__(name)
    results: dict[str, list[Outcome]] = {}
    for module in TARGETS:
        cached = None if args.fresh and module in chosen else _cached(module, every[module])
        if cached is not None:
            results[module] = cached
            continue
        if module not in chosen:
            print(f"{module}: changed since its last run, or never run (run it with --module)", file=sys.stderr)
            continue
        outcomes = _run_module(module, every[module], args.jobs)
        if outcomes is None:
            return 2
        results[module] = outcomes
    text, problems = report(results, EQUIVALENT, "python -m tools.mutants")
    problems += [f"{module}: not run" for module in TARGETS if module not in results]
    Path(args.output).write_text(text, encoding="utf-8")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"report: {args.output}")
    return 1 if problems else 0


def _list_mutants(mutants: list[Mutant], show: str | None) -> None:
    """Each mutant's line and id, or (``show``: an id) that mutant's changed line."""
    for mutant in mutants:
        if show is None:
            print(f"{mutant.line:5d}  {mutant.ident}")
        elif mutant.ident == show:
            print(ast.unparse(mutated_code_tree(mutant, mutant.line)))


def _run_module(module: str, mutants: list[Mutant], jobs: int) -> list[Outcome] | None:
    """Every mutant of ``module`` against its tests, each survivor named as it comes, the outcomes stored
    for the next run; None: the tests fail without a mutant (said on stderr)."""
    tests = TARGETS[module]
    digest = _digest(module)  # before the run: files edited while it runs make its results stale
    started = time.monotonic()
    (baseline,) = run_all([(None, tests)], 1, timeout=900)
    if baseline.killed:
        print(f"{module}: the tests fail without a mutant ({baseline.how}); fix them first", file=sys.stderr)
        return None
    timeout = max(30.0, 5 * baseline.seconds)
    outcomes = []
    for outcome in run_all([(m, tests) for m in mutants], jobs, timeout):
        outcomes.append(outcome)
        if not outcome.killed and outcome.mutant is not None:
            print(f"survived: {outcome.mutant.ident} (line {outcome.mutant.line})", flush=True)
    killed = sum(o.killed for o in outcomes)
    print(
        f"{module}: {len(outcomes)} mutants, {killed} killed, {len(outcomes) - killed} survived "
        f"({time.monotonic() - started:.0f} s; tests alone {baseline.seconds:.1f} s)",
        flush=True,
    )
    _store(module, digest, outcomes)
    return outcomes


# Outcomes of the last run per module, kept while the module, its tests and this tool are unchanged:
# `make mutants` then runs only what changed.
CACHE = ROOT / ".mutants"


# Bumped when the mutations change (the report's wording may change without rerunning them).
MUTATIONS_VERSION = "3"  # 2: ids name the mutated code (no occurrence numbers that move with edits); 3: continue
# and break, keyword arguments dropped


def _digest(module: str) -> str:
    """The module's source and its tests as they are when its run starts."""
    digest = hashlib.sha256(MUTATIONS_VERSION.encode())
    for path in (source_path(module), *(ROOT / test for test in TARGETS[module])):
        digest.update(path.read_bytes() if path.exists() else b"-")
    return digest.hexdigest()


def _cached(module: str, mutants: list[Mutant]) -> list[Outcome] | None:
    try:
        stored = json.loads((CACHE / f"{module}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if stored.get("digest") != _digest(module) or len(stored["outcomes"]) != len(mutants):
        return None
    return [Outcome(mutants[ordinal], killed, how, seconds) for ordinal, killed, how, seconds in stored["outcomes"]]


def _store(module: str, digest: str, outcomes: list[Outcome]) -> None:
    CACHE.mkdir(exist_ok=True)
    rows = sorted([o.mutant.ordinal, o.killed, o.how, round(o.seconds, 1)] for o in outcomes if o.mutant)
    (CACHE / f"{module}.json").write_text(json.dumps({"digest": digest, "outcomes": rows}), encoding="utf-8")


def mutated_code_tree(mutant: Mutant, line: int) -> ast.AST:
    """The statement at ``line`` of the mutant's module, mutated (for ``--show``)."""
    tree = ast.parse(source_path(mutant.module).read_text(encoding="utf-8"))
    tree = Mutator(apply=mutant.ordinal).visit(tree)
    assert isinstance(tree, ast.AST)
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and getattr(node, "lineno", None) == line and not hasattr(node, "body"):
            return node
    return tree


if __name__ == "__main__":
    sys.exit(main())
