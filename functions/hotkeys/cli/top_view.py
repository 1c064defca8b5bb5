"""Shows ``hotkeys top``'s rows (``top.top_rows``): the top-keys table, the write-sharded families and
the throttled keys beside them, or the rows' JSON."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from hotkeys.cli import throttle_view
from hotkeys.cli.common import render_families, render_top
from hotkeys.cli.rows import TopRow
from hotkeys.cli.top import HotLeftOut
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.snapshots import RetiredWindow
from hotkeys.detector.domain.windows import iso_utc


@dataclass(frozen=True)
class TopAnswer:
    """What ``top`` found for the selection: the rows, the write-sharded families and the throttled keys beside
    them (``throttles``, as the replay's JSON names it; None when there were no rows to compare), each table's data
    health (``health_view.table_health``), the rows at or above the alert threshold it left out, and the line on
    the windows it could not read (``retired_line``)."""

    rows: list[TopRow]
    families: list[dict[str, Any]]
    throttles: Mapping[str, Any] | None
    health: Mapping[str, Mapping[str, Any]]
    left_out: HotLeftOut
    skipped: str | None = None


@dataclass(frozen=True)
class Selection:
    """What ``top`` was asked for: ``--index`` as typed (named when it was not counted) and ``--table``, with the
    tables that have figures when that table has none (a misspelt name)."""

    index: str
    table: str | None = None
    other_tables: list[str] = field(default_factory=list)


def json_text(answer: TopAnswer) -> str:
    """What the text shows, whole: the rows, the families, the throttled keys with every note on why a table or
    index's could not be read, each table's data health and how many hot rows it left out."""
    document = {"rows": [row.to_json() for row in answer.rows], "families": answer.families}
    left_out = answer.left_out
    hot = {"hot_rows_beyond_limit": left_out.beyond_limit, "hot_rows_outside_index": left_out.outside_index}
    return json.dumps({**document, "throttles": answer.throttles, "health": dict(answer.health), **hot}, indent=2)


def left_out_lines(left_out: HotLeftOut, limit: int, index: str, settings: Settings) -> list[str]:
    """A line for the rows at or above the alert threshold that ``--limit`` left out, and one for those in
    the partitions ``--index`` (as typed) left out; none when there are none."""
    threshold = f"at or above the alert threshold ({settings.alert_threshold:.0%} of the partition limit)"
    lines = []
    if left_out.beyond_limit:
        count = left_out.beyond_limit
        rows = "1 more row" if count == 1 else f"{count:,} more rows"
        lines.append(f"{rows} {threshold} after these {limit}: raise --limit to see {'it' if count == 1 else 'them'}.")
    if left_out.outside_index:
        count = left_out.outside_index
        rows, verb, them = ("1 row", "is", "it") if count == 1 else (f"{count:,} rows", "are", "them")
        lines.append(
            f"{rows} {threshold} in these windows {verb} in partitions that --index {shlex.quote(index)} "
            f"leaves out: --index all ranks {them} with the rest."
        )
    return lines


def health_line(health: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One line for what the items written say (a line, not a flood): the first finding, and how many more."""
    found = [line for table in sorted(health) for line in health[table]["findings"]]
    if not found:
        return None
    more = f" (and {len(found) - 1} more: --json lists them)" if len(found) > 1 else ""
    return f"Data health: {found[0]}{more}"


def render(console: Console, answer: TopAnswer, settings: Settings, selection: Selection) -> None:
    """The rows under ``settings``' threshold and limit, or one line saying there are none (naming the index or
    the tables with figures, from the ``selection``), and lines for the rows at or above the alert threshold it
    left out; then the data health's line (``health_line``); last, the windows it could not read."""
    rows = answer.rows
    if not rows:
        more = (
            f" (index {selection.index!r} is not counted in these windows)"
            if selection.index not in ("all", "table", "real", "proposed")
            else ""
        )
        if selection.table is not None and selection.other_tables:
            tables = ", ".join(selection.other_tables)
            more = f" (no window of table {selection.table!r}; tables with figures: {tables})"
        console.print(f"No figures yet for that selection{more}.", markup=False, highlight=False, soft_wrap=True)
    else:
        render_top(console, rows, settings, title="Hottest partition keys")
    for line in left_out_lines(answer.left_out, len(rows), selection.index, settings):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if rows:
        render_families(console, answer.families)
        throttle_view.render(console, answer.throttles)
    for note in (health_line(answer.health), answer.skipped):
        if note:
            console.print(note, markup=False, highlight=False, soft_wrap=True)


def retired_line(retired: list[RetiredWindow]) -> str | None:
    """One line for the windows left out because they were stored in a retired layout, or None."""
    if not retired:
        return None
    count = len(retired)
    windows = "1 window" if count == 1 else f"{count} windows"
    expiry = iso_utc(max(window.expires_at for window in retired))
    return (
        f"{windows} stored before the upgrade to this version of the detector {'was' if count == 1 else 'were'} "
        f"skipped (a layout it no longer reads); {'it expires' if count == 1 else 'they expire'} by {expiry}."
    )
