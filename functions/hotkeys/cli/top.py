"""``hotkeys top``: the hottest keys per window, merged over all shards from the stats table."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hotkeys.detector.adapters.stats_schema import PARTITION_KEY, SORT_KEY
from hotkeys.detector.diagnosis import shard_families
from hotkeys.detector.items import verdict
from hotkeys.detector.ports import StatsReader
from hotkeys.detector.snapshots import SegmentSnapshot, WindowFigures, index_names, merge_window
from hotkeys.detector.windows import iso_utc

TABLE_LOOKBACK_SECONDS = 86_400
_STATS_KEY = ((PARTITION_KEY, "HASH"), (SORT_KEY, "RANGE"))


def not_a_stats_table(name: str, description: dict[str, Any]) -> str | None:
    """Why the table DescribeTable describes cannot be the detector's stats table, or None if it can be.

    The stats table is keyed by ``pk`` and ``sk`` (``stats_schema``); a source table passed by
    mistake usually is not, and would otherwise read as "no figures yet"."""
    schema = tuple((key["AttributeName"], key["KeyType"]) for key in description.get("KeySchema", []))
    if sorted(schema) == sorted(_STATS_KEY):
        return None
    shown = ", ".join(f"{attribute} ({kind})" for attribute, kind in schema) or "none"
    return (
        f"--stats-table {name!r} is not the detector's stats table (its key is {shown}; the stats table's "
        f"is {PARTITION_KEY} (HASH), {SORT_KEY} (RANGE)): pass the stack output StatsTableName"
    )


@dataclass(frozen=True)
class TopRow:
    table: str
    index: str | None  # a global secondary index's partition key (None: the table's)
    key: str
    window_start: str
    window_seconds: int
    writes: int
    wcu: int
    wcu_per_second: float
    share: float
    error_bound: int
    # Hot item or hot collection (items.verdict) for a table with a sort key; None otherwise.
    items: str | None = None
    # The key's heaviest burst bucket as WCU/s (what the alert rule reads); None for older figures.
    peak_wcu_per_second: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def windows_in_range(
    reader: StatsReader, *, since: int | None, last: int | None, until: int, table: str | None
) -> list[tuple[int, str, int]]:
    """The (window_start, table, window_seconds) to show: from ``since``, or the ``last`` N windows."""
    if since is None:
        latest = reader.latest_window()
        if latest is None:
            return []
        # The catalog is ordered by window start; fetch generously, then keep the last N distinct starts.
        # The latest window is the latest of any table: for one table, look back a day for its own.
        since = latest - (TABLE_LOOKBACK_SECONDS if table is not None else 900 * max(last or 1, 1))
    windows = sorted(set(reader.catalog(since, until)))
    if table is not None:
        windows = [w for w in windows if w[1] == table]
    if last is not None:
        starts = sorted({w[0] for w in windows})[-last:]
        windows = [w for w in windows if w[0] in starts]
    return windows


ALL_INDEXES = "*"


def window_figures(
    reader: StatsReader, windows: list[tuple[int, str, int]], index: str | None = None
) -> list[WindowFigures]:
    """Each window's merged figures: the table's (``index`` None), one index's, or the table's and
    every counted index's (``ALL_INDEXES``)."""
    figures = []
    for start, table, _seconds in windows:
        snapshots = reader.window_segments(table, start)
        if not snapshots:
            continue
        if index is None or index == ALL_INDEXES:
            figures.append(merge_window(snapshots))
        names = index_names(snapshots) if index == ALL_INDEXES else [index] if index is not None else []
        figures.extend(merge_window(snapshots, name) for name in names if _counted(snapshots, name))
    return figures


def _counted(snapshots: list[SegmentSnapshot], index: str) -> bool:
    return any(index in snapshot.indexes for snapshot in snapshots)


def top_rows(figures: list[WindowFigures], limit: int) -> list[TopRow]:
    rows = [
        TopRow(
            table=window.table,
            key=key.key,
            window_start=iso_utc(window.window_start),
            window_seconds=window.window_seconds,
            writes=key.writes,
            wcu=key.wcu,
            wcu_per_second=round(key.wcu / window.window_seconds, 3),
            share=round(key.wcu / window.wcu, 6) if window.wcu else 0.0,
            error_bound=key.error_bound,
            index=window.index,
            items=_items_of(window, key.key),
            peak_wcu_per_second=round(key.peak_wcu / window.bucket_seconds, 1) if window.bucket_seconds else None,
        )
        for window in figures
        for key in window.keys
    ]
    rows.sort(key=lambda row: (-row.wcu_per_second, -row.wcu, row.window_start, row.table, row.index or "", row.key))
    return rows[:limit]


def _items_of(window: WindowFigures, key: str) -> str | None:
    if window.index is not None or not window.has_sort_key:
        return None
    found = verdict(window.items.get(key), True, window.pinned)
    return found[0] if found else None


def family_rows(figures: list[WindowFigures], partition_limit: int) -> list[dict[str, Any]]:
    """The write-sharded key families of each window (diagnosis.shard_families), rolled up."""
    rows = []
    for window in figures:
        for family in shard_families((key.key, key.wcu) for key in window.keys):
            rows.append(
                {
                    "table": window.table,
                    "index": window.index,
                    "window_start": iso_utc(window.window_start),
                    "stem": family.stem,
                    "shards": family.shards,
                    "wcu": family.wcu,
                    "wcu_per_second": round(family.wcu / window.window_seconds, 1),
                    "hottest_key": family.hottest_key,
                    "spread": round(family.spread, 2),
                    "verdict": family.verdict(window.window_seconds, partition_limit),
                }
            )
    return rows
