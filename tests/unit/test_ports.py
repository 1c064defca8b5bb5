"""The detector's ports live in one module: every Protocol of the package is defined in
``hotkeys.detector.ports``, except the three ``records.parse_change`` takes (named there too) and the
rules' read view of a segment (``rules.Tallied``: figures, not I/O)."""

from __future__ import annotations

import ast
from pathlib import Path

from hotkeys.detector import ports

SOURCES = Path(__file__).resolve().parents[2] / "functions" / "hotkeys"
ELSEWHERE = {
    ("detector/domain/records.py", "ResolveKey"),
    ("detector/domain/records.py", "IndexesOf"),
    ("detector/domain/records.py", "TtlAttributeOf"),
    ("detector/alerts/rules.py", "Figures"),
}


def protocols() -> set[tuple[str, str]]:
    found = set()
    for path in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id == "Protocol" for base in node.bases
            ):
                found.add((path.relative_to(SOURCES).as_posix(), node.name))
    return found


def test_every_port_is_defined_in_the_ports_module() -> None:
    outside = {found for found in protocols() if found[0] != "detector/ports.py"}
    assert outside == ELSEWHERE


def test_the_ports_module_names_every_port() -> None:
    defined = {name for module, name in protocols() if module == "detector/ports.py"}
    named = {name for module, name in ELSEWHERE if module == "detector/domain/records.py"}
    assert set(ports.__all__) == defined | named | {"Archived", "LookClaim"}
