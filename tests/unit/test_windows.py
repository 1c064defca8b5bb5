"""Window arithmetic and the times it prints, at the edges."""

from __future__ import annotations

import time

import pytest

from hotkeys.detector.domain import windows
from hotkeys.detector.domain.windows import iso_utc, parse_iso_utc, window_start

T0 = 1_796_083_200  # 2026-12-01T00:00:00Z


def test_a_window_holds_its_first_second_and_not_the_next_windows() -> None:
    assert window_start(T0, 60) == T0
    assert window_start(T0 + 59, 60) == T0
    assert window_start(T0 + 60, 60) == T0 + 60
    assert window_start(T0 - 1, 60) == T0 - 60
    assert window_start(T0 + 7, 900) == T0  # 2026-12-01 starts a quarter hour


def test_times_print_as_utc_seconds() -> None:
    assert iso_utc(T0) == "2026-12-01T00:00:00Z"
    assert iso_utc(T0 + 3661) == "2026-12-01T01:01:01Z"
    assert iso_utc(T0 + 0.9) == "2026-12-01T00:00:00Z"  # a fraction is cut, not rounded
    assert iso_utc(0) == "1970-01-01T00:00:00Z"


def test_the_printed_times_cache_stays_bounded_and_right() -> None:
    # More distinct seconds than the cache holds: each still prints its own time
    limit = windows._ISO_CACHE_LIMIT
    for offset in range(limit + 10):
        assert parse_iso_utc(iso_utc(T0 + offset)) == T0 + offset
    assert len(windows._iso_texts) <= limit
    # A second seen before the cache was cleared prints the same
    assert iso_utc(T0) == "2026-12-01T00:00:00Z"


def test_timestamps_parse_with_or_without_a_zone() -> None:
    assert parse_iso_utc("2026-12-01T00:00:00Z") == T0
    assert parse_iso_utc("2026-12-01T00:00:00") == T0  # naive: UTC
    assert parse_iso_utc("2026-12-01T01:00:00+01:00") == T0
    assert parse_iso_utc("2026-12-01T00:00:01.999Z") == T0 + 1


def test_times_are_utc_whatever_the_machines_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a machine whose local zone is not UTC (Lambda's is; a laptop's may not be)
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert windows.iso_utc(1_234_567_891) == "2009-02-13T23:31:31Z"
        assert windows.iso_utc(1_234_567_893.5) == "2009-02-13T23:31:33Z"
        assert windows.parse_iso_utc("2009-02-13T23:31:31") == 1_234_567_891  # naive: taken as UTC
    finally:
        monkeypatch.undo()
        time.tzset()
