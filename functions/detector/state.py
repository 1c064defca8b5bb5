"""A shard's in-flight figures, carried between invocations in Lambda's tumbling-window state.

Lambda hands each invocation the state the previous invocation of the same shard
and window returned. The state holds, per (table, window) segment, the exact
totals and the bounded heavy-hitter summary, plus the high-water mark: the
highest sequence number already folded in. Records at or below it are skipped,
so a redelivered record is never counted twice, whatever Lambda re-sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from detector import summary
from detector.records import Change, Kind

STATE_VERSION = 1


@dataclass
class Segment:
    """One shard's figures for one (table, window), from its first record on."""

    table: str
    window_start: int
    first_sequence: str
    entries: dict[str, list[int]] = field(default_factory=dict)
    pruned: int = 0
    writes: int = 0
    wcu: int = 0
    ttl_deletes: int = 0
    first_event: int = 0
    last_event: int = 0
    last_sequence: int = -1
    flushed_at_event: int = -1
    catalogued: bool = False
    dirty: bool = True

    def apply(self, change: Change, capacity: int) -> None:
        self.last_event = max(self.last_event, change.event_time)
        self.last_sequence = change.sequence
        self.dirty = True
        if change.kind is Kind.TTL_DELETE:
            self.ttl_deletes += 1
            return
        self.writes += 1
        self.wcu += change.wcu
        self.pruned += summary.add(self.entries, change.key, change.wcu, change.event_time, capacity)

    def to_json(self) -> dict[str, Any]:
        return {
            "t": self.table,
            "w": self.window_start,
            "s": self.first_sequence,
            "k": self.entries,
            "p": self.pruned,
            "n": self.writes,
            "u": self.wcu,
            "x": self.ttl_deletes,
            "e0": self.first_event,
            "e1": self.last_event,
            "q": str(self.last_sequence),
            "f": self.flushed_at_event,
            "c": self.catalogued,
            "d": self.dirty,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Segment:
        return cls(
            table=data["t"],
            window_start=int(data["w"]),
            first_sequence=data["s"],
            entries={key: [int(v) for v in entry] for key, entry in data["k"].items()},
            pruned=int(data["p"]),
            writes=int(data["n"]),
            wcu=int(data["u"]),
            ttl_deletes=int(data["x"]),
            first_event=int(data["e0"]),
            last_event=int(data["e1"]),
            last_sequence=int(data["q"]),
            flushed_at_event=int(data["f"]),
            catalogued=bool(data["c"]),
            dirty=bool(data["d"]),
        )


class StateError(ValueError):
    """The carried state is not one this version wrote."""


@dataclass
class ShardState:
    high_water: int = -1
    archived_high_water: int = -1
    segments: dict[tuple[str, int], Segment] = field(default_factory=dict)
    notified: dict[str, int] = field(default_factory=dict)

    def apply(self, change: Change, window_seconds: int, capacity: int) -> Segment:
        event_time = change.event_time
        start = event_time - event_time % window_seconds
        segment = self.segments.get((change.table, start))
        if segment is None:
            segment = Segment(
                table=change.table,
                window_start=start,
                first_sequence=str(change.sequence),
                first_event=change.event_time,
                last_event=change.event_time,
            )
            self.segments[(change.table, start)] = segment
        segment.apply(change, capacity)
        self.high_water = change.sequence
        return segment

    def to_json(self) -> dict[str, Any]:
        return {
            "v": STATE_VERSION,
            "hwm": str(self.high_water),
            "ahwm": str(self.archived_high_water),
            "seg": [segment.to_json() for segment in self.segments.values()],
            "ntf": self.notified,
        }

    @classmethod
    def from_json(cls, data: Any) -> ShardState:
        if not data:
            return cls()
        if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
            raise StateError("the tumbling-window state was not written by this version of the detector")
        segments = [Segment.from_json(item) for item in data.get("seg", [])]
        return cls(
            high_water=int(data.get("hwm", -1)),
            archived_high_water=int(data.get("ahwm", -1)),
            segments={(segment.table, segment.window_start): segment for segment in segments},
            notified={key: int(value) for key, value in data.get("ntf", {}).items()},
        )
