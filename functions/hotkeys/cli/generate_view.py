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


def json_text(written: list[Written]) -> str:
    return json.dumps([{"path": item.path, "records": item.records} for item in written])


def render(console: Console, written: list[Written]) -> None:
    for item in written:
        console.print(f"wrote {item.records} records to {item.path}")
