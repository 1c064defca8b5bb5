"""Window arithmetic: tumbling windows aligned to the Unix epoch, in event time."""

from __future__ import annotations

from datetime import UTC, datetime


def window_start(event_time: int, window_seconds: int) -> int:
    """Start (epoch seconds) of the window holding ``event_time``."""
    return event_time - event_time % window_seconds


def iso_utc(epoch_seconds: int | float) -> str:
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso_utc(text: str) -> int:
    """Epoch seconds of an ISO 8601 timestamp; naive timestamps are taken as UTC."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp())
