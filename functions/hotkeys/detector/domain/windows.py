"""Window arithmetic: tumbling windows aligned to the Unix epoch, in event time."""

from __future__ import annotations

from datetime import UTC, datetime


def window_start(event_time: int, window_seconds: int) -> int:
    """Start (epoch seconds) of the window holding ``event_time``."""
    return event_time - event_time % window_seconds


_ISO_CACHE_LIMIT = 4096
_iso_texts: dict[int, str] = {}


def iso_utc(epoch_seconds: int | float) -> str:
    # A busy shard's records share their second (1,000 a second): the archive formats each one's time,
    # and strftime per record showed in a TTL deletion's cost (docs/measurements.md).
    if type(epoch_seconds) is int:
        text = _iso_texts.get(epoch_seconds)
        if text is None:
            if len(_iso_texts) >= _ISO_CACHE_LIMIT:
                _iso_texts.clear()
            text = _iso_texts[epoch_seconds] = _format(epoch_seconds)
        return text
    return _format(epoch_seconds)


def _format(epoch_seconds: int | float) -> str:
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso_utc(text: str) -> int:
    """Epoch seconds of an ISO 8601 timestamp; naive timestamps are taken as UTC."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp())
