"""The detector's ports live in its layers' ``ports`` modules: every Protocol of the package is defined in the
``ports`` module of the layer whose logic calls it, except the three ``records.parse_change`` takes (named by
``consumer.ports``) and the rules' read view of a segment (``rules.Tallied``: figures, not I/O)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[2] / "functions" / "hotkeys"
PORTS = {
    "detector/consumer/ports.py": "hotkeys.detector.consumer.ports",
    "detector/alerts/ports.py": "hotkeys.detector.alerts.ports",
    "detector/throttling/ports.py": "hotkeys.detector.throttling.ports",
    "detector/provisioning/ports.py": "hotkeys.detector.provisioning.ports",
}
ELSEWHERE = {
    ("detector/domain/records.py", "ResolveKey"),
    ("detector/domain/records.py", "IndexesOf"),
    ("detector/domain/records.py", "TtlAttributeOf"),
    ("detector/alerts/rules.py", "Figures"),
}
# Value types a ports module defines beside its Protocols (what a port's method takes or returns).
VALUES = {"detector/consumer/ports.py": {"Archived"}, "detector/alerts/ports.py": {"LookClaim"}}


def protocols() -> set[tuple[str, str]]:
    found = set()
    for path in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id == "Protocol" for base in node.bases
            ):
                found.add((path.relative_to(SOURCES).as_posix(), node.name))
    return found


def test_every_port_is_defined_in_a_ports_module() -> None:
    outside = {found for found in protocols() if found[0] not in PORTS}
    assert outside == ELSEWHERE


@pytest.mark.parametrize("path", sorted(PORTS))
def test_each_ports_module_names_its_ports(path: str) -> None:
    defined = {name for module, name in protocols() if module == path}
    named = {name for module, name in ELSEWHERE if module == "detector/domain/records.py"}
    named = named if path == "detector/consumer/ports.py" else set()
    assert defined
    assert set(importlib.import_module(PORTS[path]).__all__) == defined | named | VALUES.get(path, set())
