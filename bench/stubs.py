"""Stand-ins for AWS calls in the timing benchmarks (the timing measures CPU work, not the network)."""

from __future__ import annotations

from typing import Any


class NullTable:
    """Accepts calls like a boto3 Table and does nothing (timing only)."""

    def __init__(self) -> None:
        self.calls = 0

    def update_item(self, **kwargs: Any) -> None:
        self.calls += 1


class NullStats:
    def __init__(self) -> None:
        self.calls = 0

    def save_segment(self, snapshot: Any, expires_at: int, bucket: int = 0) -> None:
        self.calls += 1

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[Any]:
        self.calls += 1
        return []

    def save_seen(self, name: str, data: bytes, expires_at: int) -> None:
        self.calls += 1

    def load_seen(self, name: str) -> bytes | None:
        self.calls += 1
        return None
