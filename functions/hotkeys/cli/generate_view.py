"""Shows what ``hotkeys generate`` wrote: a line per file, or their JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from hotkeys.emulator.generate import Workload


@dataclass(frozen=True)
class Written:
    """One event file the workload was written to, and its records."""

    path: str
    records: int


def json_text(written: list[Written], workloads: Sequence[Workload]) -> str:
    """A line per file: its path, its records and the ``--attribute`` cardinalities its items carry; with
    several tables on one stream, each table's instead: its name, changes (copies aside) and attributes."""
    if len(workloads) == 1:
        shown: dict[str, Any] = {"attributes": dict(workloads[0].attributes)}
    else:
        tables = [
            {"table": one.table, "changes": one.record_count(), "attributes": dict(one.attributes)} for one in workloads
        ]
        shown = {"tables": tables}
    return json.dumps([{"path": item.path, "records": item.records, **shown} for item in written])


def render(console: Console, written: list[Written]) -> None:
    for item in written:
        console.print(f"wrote {item.records} records to {item.path}")


# One stream shard is one partition's change log, and a partition serves at most this many write units a
# second: a shard that carries more describes writes DynamoDB would have throttled.
SHARD_WCU_PER_SECOND = 1000


def shard_overload(counts: list[int], duration: int, item_bytes: int, shards: int) -> str | None:
    """The warning for a workload whose busiest shard carries more write units a second than one
    partition serves (about: records of ``item_bytes`` at 1 KB a write unit), or None."""
    units = max(1, -(-item_bytes // 1024))
    busiest = max(counts, default=0) / max(1, duration) * units
    if busiest <= SHARD_WCU_PER_SECOND:
        return None
    return (
        f"{'the busiest shard' if shards > 1 else 'its one shard'} carries about {busiest:,.0f} WCU/s, more than "
        f"one partition serves ({SHARD_WCU_PER_SECOND:,} WCU/s; one stream shard is one partition's): DynamoDB "
        "would have throttled the excess; lower --rate or add --shards (one key's writes stay on one shard)"
    )
