"""The package's layering, read from the source (every import, also those inside functions).

* no import cycles between the project's modules;
* the Lambda code (`hotkeys.detector`) imports nothing of the CLI: its asset leaves the CLI out;
* the detector's logic imports neither the handlers nor AWS SDKs (I/O stays in adapters);
* each package of the Lambda code uses only those before it in the data's flow (`LAYERS`);
* the CDK app imports nothing that builds Powertools objects (nothing of the function runs at synth);
* no fault injection ships: the ESM emulation's delivery choices are its clean defaults.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "functions"
HANDLERS = "hotkeys.detector.handlers"
# The Lambda code's packages, in the order data flows through them, each with the packages it may use
# (config, names, ports, observability and proposals are shared by all; adapters implement ports for the handlers).
SHARED = {"config", "names", "ports", "observability", "proposals"}
LAYERS = {
    "domain": set(),
    "consumer": {"domain"},
    "alerts": {"domain", "consumer"},
    "throttling": {"domain", "alerts"},
    "adapters": {"domain", "consumer", "alerts", "throttling"},
    "handlers": {"domain", "consumer", "alerts", "throttling", "adapters"},
}


def module_name(path: Path) -> str:
    relative = path.relative_to(SOURCES if SOURCES in path.parents else ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    package = module_name(path).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return found


def project_graph() -> dict[str, set[str]]:
    files = [*SOURCES.rglob("*.py"), *(ROOT / "infra").glob("*.py"), ROOT / "app.py"]
    modules = {module_name(path): path for path in files}
    return {name: {i for i in imports_of(path) if i in modules and i != name} for name, path in modules.items()}


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), set()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    path: list[str] = []

    def visit(node: str) -> bool:
        path.append(node)
        for target in sorted(graph.get(node, set())):
            if target == start or (target not in path and target.startswith("hotkeys") and visit(target)):
                return True
        path.pop()
        return False

    return [*path, start] if visit(start) else None


GRAPH = project_graph()


def test_the_graph_sees_the_package() -> None:
    assert "hotkeys.detector.consumer.pipeline" in GRAPH and "hotkeys.cli.main" in GRAPH and "infra.stack" in GRAPH
    assert "hotkeys.detector.config" in GRAPH["hotkeys.detector.consumer.pipeline"] or closure(
        GRAPH, "hotkeys.detector.consumer.pipeline"
    ) >= {"hotkeys.detector.config"}


@pytest.mark.parametrize("module", sorted(name for name in GRAPH if name.startswith("hotkeys")))
def test_no_module_imports_itself_through_others(module: str) -> None:
    assert cycle_through(GRAPH, module) is None, " -> ".join(cycle_through(GRAPH, module) or [])


def test_the_lambda_code_imports_nothing_of_the_cli_nor_the_emulator() -> None:
    for name in GRAPH:
        if name.startswith("hotkeys.detector"):
            assert not {m for m in closure(GRAPH, name) if m.startswith(("hotkeys.cli", "hotkeys.emulator"))}, name


def test_the_emulator_is_below_the_cli() -> None:
    # (the commands and their views use the emulator; the emulator, the benchmarks' and tests' world, no command)
    for name in GRAPH:
        if name.startswith("hotkeys.emulator"):
            assert not {m for m in closure(GRAPH, name) if m.startswith("hotkeys.cli")}, name


def test_the_detectors_logic_stays_out_of_the_handler_layer_and_the_sdk() -> None:
    logic = [
        name
        for name in GRAPH
        if name.startswith("hotkeys.detector.")
        and not name.startswith(HANDLERS)
        and not name.startswith("hotkeys.detector.adapters")
    ]
    assert "hotkeys.detector.consumer.pipeline" in logic and "hotkeys.detector.domain.summary" in logic
    for name in logic:
        reached = closure(GRAPH, name) | {name}
        assert not {m for m in reached if m.startswith(HANDLERS)}, name
        assert not {m for m in reached if m.startswith("hotkeys.detector.adapters")}, name
        external = {i for m in reached for i in imports_of(module_path(m))}
        assert not {i for i in external if i.split(".")[0] in ("boto3", "botocore")}, name


def test_the_cdk_app_builds_no_powertools_objects() -> None:
    reached = closure(GRAPH, "app")
    assert "infra.stack" in reached
    external = {i for m in reached | {"app"} for i in imports_of(module_path(m))}
    assert not {i for i in external if i.startswith("aws_lambda_powertools")}
    assert "hotkeys.detector.observability" not in reached


def module_path(name: str) -> Path:
    for base in (SOURCES, ROOT):
        candidate = base.joinpath(*name.split("."))
        if candidate.with_suffix(".py").is_file():
            return candidate.with_suffix(".py")
        if (candidate / "__init__.py").is_file():
            return candidate / "__init__.py"
    raise KeyError(name)


# Modules under functions/ that draw random numbers, and why: fault injection is test machinery
# (tests/esm_faults.py), so any other use is named here first.
RANDOM_USERS = {
    "hotkeys.emulator.generate": "synthetic workloads, seeded",
    "hotkeys.emulator.emulation": "the judge's watchdog phase and its messages' delivery, seeded by the records",
    "hotkeys.detector.consumer.layout": "spreads the layout refresh of a deploy's containers",
}


def test_no_fault_injection_ships_under_functions() -> None:
    drawing = {name for name, path in ((n, module_path(n)) for n in GRAPH) if "random" in imports_of(path)}
    drawing = {name for name in drawing if name.startswith("hotkeys.")}
    assert drawing == set(RANDOM_USERS), drawing
    from hotkeys.emulator import esm

    # the emulation's delivery choices ship with their clean defaults only
    subclasses = [c for c in vars(esm).values() if isinstance(c, type) and issubclass(c, esm.Deliveries)]
    assert subclasses == [esm.Deliveries]


# The calls through which a Lambda function's environment reaches the one settings schema (config.py).
SETTINGS_READERS = {"load_settings", "container_from", "required_setting"}


def test_the_lambda_code_reads_its_environment_only_through_the_settings_schema() -> None:
    # The CLI (hotkeys.cli) reads its own variables (HOTKEYS_LOG_LEVEL, AWS_REGION): not a function's.
    readers: list[str] = []
    for name in GRAPH:
        if not name.startswith("hotkeys.") or name.startswith(("hotkeys.cli", "hotkeys.emulator")):
            continue
        tree = ast.parse(module_path(name).read_text())
        passed = {
            id(argument)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in SETTINGS_READERS
            for argument in node.args
        }
        for node in ast.walk(tree):
            reads = isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
            if reads and id(node) not in passed:
                readers.append(f"{name}:{node.lineno}")
    assert readers == []


def _package(module: str) -> str | None:
    """The Lambda code's package of ``module`` (``LAYERS``, ``SHARED``), None outside it."""
    if not module.startswith("hotkeys.detector."):
        return None
    return module.split(".")[2]


def test_each_package_uses_only_the_packages_before_it() -> None:
    assert {_package(name) for name in GRAPH} - {None} == set(LAYERS) | SHARED
    crossing = []
    for name, targets in GRAPH.items():
        home = _package(name)
        if home is None:
            continue
        allowed = LAYERS.get(home, set(LAYERS)) | SHARED | {home}  # a shared module may use any (its types)
        crossing += [f"{name} -> {target}" for target in targets if _package(target) not in allowed | {None}]
    assert crossing == []
