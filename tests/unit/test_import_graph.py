"""The package's layering, read from the source (every import, also those inside functions).

* no import cycles between the project's modules;
* the Lambda code (`hotkeys.detector`) imports nothing of the CLI: its asset leaves the CLI out;
* the detector's logic imports neither the handlers nor the adapters nor AWS SDKs (I/O stays in adapters, and
  in the deploy-time custom resources' logic, `provisioning`, whose work is AWS's API);
* every module of the Lambda code (the function asset: `hotkeys` without the CLI and the emulator) sits in one
  layer of `LAYERS`, and imports only modules of its own layer and of the layers its layer names, all below
  it: no module is exempt, `hotkeys.deployment` and `hotkeys.throttling` included;
* the CDK app imports nothing that builds Powertools objects (nothing of the function runs at synth);
* no fault injection ships: the ESM emulation's delivery choices are its clean defaults.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "functions"
HANDLERS = "hotkeys.detector.handlers"
# Not the Lambda code: what the function asset leaves out (infra/settings.py FUNCTION_ASSET_EXCLUDE).
NOT_LAMBDA = ("hotkeys.cli", "hotkeys.emulator")
# The Lambda code's layers, bottom first (the order data flows through the detector): each with the modules it
# holds ("pkg.*": a package and every module in it) and the layers below it that its modules may import.
LAYERS: dict[str, tuple[tuple[str, ...], set[str]]] = {
    # The shared vocabulary: names, the settings schema, proposals, the throttle catalogue, the logger (and the
    # applications' throttle hook, which imports none of them).
    "base": (
        (
            "hotkeys",
            "hotkeys.detector",
            "hotkeys.detector.names",
            "hotkeys.detector.proposals",
            "hotkeys.detector.config",
            "hotkeys.detector.observability",
            "hotkeys.throttling",
            "hotkeys.throttle_hook",
        ),
        set(),
    ),
    # How the stack deploys the function (the mapping's settings, its window the settings' own default).
    "deployment": (("hotkeys.deployment",), {"base"}),
    "domain": (("hotkeys.detector.domain.*",), {"base"}),
    "consumer": (("hotkeys.detector.consumer.*",), {"base", "deployment", "domain"}),
    "alerts": (("hotkeys.detector.alerts.*",), {"base", "deployment", "domain", "consumer"}),
    "throttling": (("hotkeys.detector.throttling.*",), {"base", "domain", "alerts"}),
    # The deploy-time custom resources' logic: a stream's mapping, a table's stream, Contributor Insights.
    "provisioning": (("hotkeys.detector.provisioning.*",), {"base", "deployment", "domain", "throttling"}),
    # The ports' implementations on AWS.
    "adapters": (
        ("hotkeys.detector.adapters.*",),
        {"base", "domain", "consumer", "alerts", "throttling", "provisioning"},
    ),
    "handlers": (
        (f"{HANDLERS}.*",),
        {"base", "deployment", "domain", "consumer", "alerts", "throttling", "provisioning", "adapters"},
    ),
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
    logic = [name for name in GRAPH if layer_of(name) not in (None, "adapters", "handlers")]
    assert "hotkeys.detector.consumer.pipeline" in logic and "hotkeys.detector.domain.summary" in logic
    for name in logic:
        reached = closure(GRAPH, name) | {name}
        assert not {m for m in reached if m.startswith(HANDLERS)}, name
        assert not {m for m in reached if m.startswith("hotkeys.detector.adapters")}, name
        if layer_of(name) == "provisioning":
            continue  # (its logic is what Lambda's and DynamoDB's APIs answer: it takes clients, builds none)
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
    "hotkeys.emulator.kinesis": "a synthetic workload's Kinesis arrival times and duplicates, seeded",
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


def _holds(member: str, module: str) -> bool:
    return module == member.removesuffix(".*") or (member.endswith(".*") and module.startswith(member[:-1]))


def layer_of(module: str) -> str | None:
    """The layer of ``LAYERS`` holding ``module``; None outside the Lambda code (the CLI, the emulator, infra)."""
    if not (module == "hotkeys" or module.startswith("hotkeys.")) or module.startswith(NOT_LAMBDA):
        return None
    holding = [layer for layer, (members, _) in LAYERS.items() if any(_holds(m, module) for m in members)]
    assert len(holding) == 1, f"{module} is in {holding or 'no layer'}: name it in exactly one of LAYERS"
    return holding[0]


def test_each_layer_names_only_layers_below_it() -> None:
    order = list(LAYERS)
    for position, (layer, (_, allowed)) in enumerate(LAYERS.items()):
        assert allowed <= set(order[:position]), layer


def test_every_module_of_the_lambda_code_is_in_one_layer() -> None:
    placed = {name: layer_of(name) for name in GRAPH}
    assert placed["hotkeys.deployment"] == "deployment" and placed["hotkeys.throttling"] == "base"
    assert placed["hotkeys.detector.handlers.app"] == "handlers" and placed["hotkeys.cli.main"] is None
    assert {layer for layer in placed.values() if layer is not None} == set(LAYERS)


def test_each_layer_uses_only_its_own_and_the_layers_it_names() -> None:
    crossing = []
    for name, targets in GRAPH.items():
        home = layer_of(name)
        if home is None:
            continue
        allowed = LAYERS[home][1] | {home}
        crossing += [f"{name} -> {target}" for target in targets if layer_of(target) not in allowed]
    assert crossing == []


def test_the_readmes_package_map_is_this_layering() -> None:
    # README's numbered layers, in order, are LAYERS' names: a layer added, removed or moved changes both.
    section = (ROOT / "README.md").read_text().split("## Package map", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\s+\d+\. \*\*(\w+)\*\*", section, flags=re.MULTILINE) == list(LAYERS)
