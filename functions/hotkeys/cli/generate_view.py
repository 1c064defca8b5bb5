"""Shows what ``hotkeys generate`` wrote: a line per file, or their JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

from rich.console import Console


@dataclass(frozen=True)
class Written:
    """One event file the workload was written to, and its records."""

    path: str
    records: int


def json_text(written: list[Written], attributes: dict[str, int]) -> str:
    """A line per file: its path, its records and the ``--attribute`` cardinalities its items carry."""
    return json.dumps([{"path": item.path, "records": item.records, "attributes": attributes} for item in written])


def render(console: Console, written: list[Written]) -> None:
    for item in written:
        console.print(f"wrote {item.records} records to {item.path}")
