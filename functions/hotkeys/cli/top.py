"""``hotkeys top``: the hottest keys per window, merged over all shards from the stats table."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hotkeys.cli.rows import TopRow
from hotkeys.detector.adapters.stats_schema import PARTITION_KEY, SORT_KEY
from hotkeys.detector.consumer.ports import StatsReader
from hotkeys.detector.consumer.snapshots import (
    RetiredWindow,
    SegmentSnapshot,
    WindowFigures,
    WindowRetired,
    index_names,
    merge_window,
)
from hotkeys.detector.domain.diagnosis import shard_families
from hotkeys.detector.domain.items import verdict
from hotkeys.detector.domain.rate import rate_of, shown
from hotkeys.detector.domain.summary import Entry
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.detector.proposals import is_proposed

if TYPE_CHECKING:
    from rich.console import Console

    from hotkeys.detector.adapters.aws import AwsClients

# How far back ``--last N`` looks for N windows with figures (windows are at most 900 s long).
LOOKBACK_SECONDS_PER_WINDOW = 900
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
class HotLeftOut:
    """How many rows at or above the alert threshold ``top`` does not show: past ``--limit`` and in the
    partitions ``--index`` leaves out
    (a hot index partition is the one a user least expects)."""

    beyond_limit: int = 0
    outside_index: int = 0


def windows_in_range(
    reader: StatsReader, *, since: int | None, last: int | None, until: int, table: str | None
) -> list[tuple[int, str, int]]:
    """The (window_start, table, window_seconds) to show: from ``since``, or the ``last`` N windows (of
    any watched table, or of ``table``)."""
    tables = reader.tables()
    names = [table] if table is not None else sorted(tables)
    if since is None:
        latest = max((found for name in names if (found := reader.latest_window(name)) is not None), default=None)
        if latest is None:
            return []
        # Windows with figures are found through their heads; fetch generously, then keep the last N starts.
        since = latest - LOOKBACK_SECONDS_PER_WINDOW * max(last or 1, 1)
    windows = sorted((start, name, seconds) for name in names for start, seconds in reader.windows(name, since, until))
    if last is not None:
        starts = sorted({w[0] for w in windows})[-last:]
        windows = [w for w in windows if w[0] in starts]
    return windows


ALL_INDEXES = "*"
# ``--index real``: the table's and its real GSIs' (no what-if proposal); ``--index proposed``: the proposals'.
REAL_INDEXES, PROPOSED_INDEXES = "real", "proposed"


def window_figures(
    reader: StatsReader, windows: list[tuple[int, str, int]], index: str | None = None
) -> list[WindowFigures]:
    """Each window's merged figures: the table's (``index`` None), one index's, the table's and every
    counted index's (``ALL_INDEXES``), the table's and its real GSIs' (``REAL_INDEXES``), or the what-if
    proposals' (``PROPOSED_INDEXES``)."""
    figures = []
    for start, table, _seconds in windows:
        figures.extend(_merged(reader.window_segments(table, start), index))
    return figures


@dataclass(frozen=True)
class ReadFigures:
    """The figures of the windows that could be read, and the windows left out because some of their
    snapshots are in a retired layout (``snapshots.RetiredWindow``)."""

    figures: list[WindowFigures]
    retired: list[RetiredWindow]


def readable_figures(reader: StatsReader, windows: list[tuple[int, str, int]], index: str | None = None) -> ReadFigures:
    """As ``window_figures``, except that a window stored (in part) in a retired layout is left out whole
    and listed, and the others are still read: figures written before an upgrade stay in the stats
    table until they expire, and a window missing some of its shards' snapshots would understate its keys."""
    figures: list[WindowFigures] = []
    retired: list[RetiredWindow] = []
    for start, table, _seconds in windows:
        try:
            snapshots = reader.window_segments(table, start)
        except WindowRetired as error:
            retired.append(error.window)
            continue
        figures.extend(_merged(snapshots, index))
    return ReadFigures(figures, retired)


def _merged(snapshots: list[SegmentSnapshot], index: str | None) -> list[WindowFigures]:
    if not snapshots:
        return []
    return [merge_window(snapshots, view) for view in [None, *index_names(snapshots)] if selected(index, view)]


def selected(index: str | None, view: str | None) -> bool:
    """Whether the partitions of ``view`` (None: the table's; else a counted index's name) are among those
    ``index`` asks for (as ``window_figures`` takes it)."""
    if index == ALL_INDEXES:
        return True
    if index == REAL_INDEXES:
        return not is_proposed(view)
    if index == PROPOSED_INDEXES:
        return is_proposed(view)
    return view == index


def key_row(window: WindowFigures, key: str, entry: Entry) -> TopRow:
    """The row of ``key`` (its merged ``entry`` in the window's summary; an open window's rates run to
    its latest record)."""
    rate = rate_of(entry, window.bound(key), window.last_event, window.alert_min_span_seconds)
    return TopRow(
        table=window.table,
        index=window.index,
        key=key,
        window_start=iso_utc(window.window_start),
        window_seconds=window.window_seconds,
        writes=entry.writes,
        wcu=entry.wcu,
        wcu_per_second=shown(rate.wcu_per_second),
        at_most_wcu_per_second=shown(rate.at_most),
        share=round(entry.wcu / window.wcu, 6) if window.wcu else 0.0,
        error_bound=window.error_bound,
        items=_items_of(window, key),
    )


def top_rows(figures: list[WindowFigures], limit: int) -> list[TopRow]:
    """The hottest rows by rate (ties: the higher upper end, heavier, earlier, then by name)."""
    rows = _rows(figures)
    rows.sort(key=hottest_first)
    return rows[:limit]


def hottest_first(row: TopRow) -> tuple[float, float, int, str, str, str, str]:
    """The order of every listing of rows: by rate, then the upper end, write units, window and name."""
    return (
        -row.wcu_per_second,
        -row.at_most_wcu_per_second,
        -row.wcu,
        row.window_start,
        row.table,
        row.index or "",
        row.key,
    )


def _rows(figures: list[WindowFigures]) -> list[TopRow]:
    return [key_row(window, key, entry) for window in figures for key, entry in window.ranked()]


def shown_rows(
    figures: list[WindowFigures], outside: list[WindowFigures], limit: int, hot: Callable[[TopRow], bool]
) -> tuple[list[TopRow], HotLeftOut]:
    """The first ``limit`` rows of ``figures`` (the partitions ``--index`` selects), and how many rows ``hot``
    judges at or above the alert threshold are left out: past ``limit``, and in ``outside`` (the partitions
    it does not select)."""
    ranked = top_rows(figures, sys.maxsize)
    left_out = HotLeftOut(beyond_limit=sum(map(hot, ranked[limit:])), outside_index=sum(map(hot, _rows(outside))))
    return ranked[:limit], left_out


def _items_of(window: WindowFigures, key: str) -> str | None:
    """What the key's alert says of its items (the same rule: ``alerts.diagnose``): a table without a sort key
    holds one item per key, a single hot item; an index partition has none said."""
    if window.index is not None:
        return None
    found = verdict(window.items.get(key), window.has_sort_key, window.has_local_indexes)
    return found[0] if found else None


def family_rows(figures: list[WindowFigures], partition_limit: int) -> list[dict[str, Any]]:
    """The write-sharded key families of each window (diagnosis.shard_families), rolled up."""
    rows = []
    for window in figures:
        for family in shard_families((key, entry.wcu) for key, entry in window.ranked()):
            rows.append(
                {
                    "table": window.table,
                    "index": window.index,
                    "window_start": iso_utc(window.window_start),
                    "stem": family.stem,
                    "shards": family.shards,
                    "wcu": family.wcu,
                    "avg_wcu_per_second": shown(family.wcu / window.window_seconds),
                    "hottest_key": family.hottest_key,
                    "spread": round(family.spread, 2),
                    "verdict": family.verdict(window.window_seconds, partition_limit),
                }
            )
    return rows


def show_throttles(console: Console, aws: AwsClients, figures: list[WindowFigures]) -> None:
    """Issue #28: the throttled keys of the windows shown (Contributor Insights, table and every index),
    beside the write units that landed; one line when it cannot be read (``cli/throttle_view``)."""
    from hotkeys.cli.throttle_view import live_picture, render

    render(console, live_picture(aws, figures))
