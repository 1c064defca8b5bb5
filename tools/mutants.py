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

The mutations themselves (``Mutator``) are in ``tools/mutations.py``.
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

from tools.mutations import Mutant, Mutator

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
