"""``--report FILE.html``: the verdict and the alerts, then a key-by-time heat map per table, then the top keys.

The heat map is computed from the replayed records themselves (exact write units per key per
burst bucket, ``ALERT_MIN_SPAN_SECONDS`` long: the buckets the alert rule reads), read the way
Key Visualizer is read: one row per key, one column per bucket, colour linear in the key's WCU/s
as a share of the partition limit with a step at the alert
threshold, rows ordered by peak, tables hottest first. It is drawn by plotly (zoom, hover); the
page loads plotly.js from one file written beside it (``plotly-VERSION.min.js``, shared by every
report in the folder), so it opens offline and stays small.
"""

from __future__ import annotations

import bisect
import html
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hotkeys.cli.common import at_alert, possibly_hot, where_of
from hotkeys.cli.rows import TopRow
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.rules import Reason
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.ports import IndexesOf, ResolveKey
from hotkeys.detector.domain.rate import percent_of_limit, shown, whole
from hotkeys.detector.domain.records import MalformedRecord, parse_change
from hotkeys.detector.domain.windows import parse_iso_utc, window_start
from hotkeys.detector.throttling.throttles import THROTTLED_ONLY

MAX_KEYS = 30
# Colour is linear in the share of the partition limit (docs/decisions.md §34): pale yellow to orange below
# the alert threshold, then a step to red and on to dark red at the limit, then quickly (by 110%) to magenta
# and on to dark purple at OVER_LIMIT times the limit (cells above that saturate). What the reader must tell
# apart is "safe", "near", "over the threshold" and "over the limit", not 0.1% from 5%.
BELOW_THRESHOLD = ("#fff7bc", "#fec44f", "#fe9929")  # at 0, half the threshold, the threshold
ABOVE_THRESHOLD = ("#cb181d", "#67000d")  # at the threshold, at the limit
ABOVE_LIMIT = ("#ae017e", "#49006a")  # at 110% of the limit, at OVER_LIMIT times the limit
OVER_LIMIT = 2.0
ROW_PIXELS = 26
PLOT_MARGIN = {"l": 220, "r": 40, "t": 60, "b": 70}


class HeatMap:
    """Exact write units per (table, index, key) and bucket, fed one record at a time.

    Index partitions (``indexes``) are rows of their own, in their table's panel. A column is one burst
    bucket, ``alert_min_span_seconds`` long: the replay's setting, which the figures it stores carry too
    (``SegmentSnapshot.alert_min_span_seconds``), so a cell is one of the buckets a key's peak is read from.
    """

    def __init__(self, resolve_key: ResolveKey, alert_min_span_seconds: int, indexes: IndexesOf | None = None) -> None:
        self.alert_min_span_seconds = alert_min_span_seconds
        self._resolve_key = resolve_key
        self._indexes = indexes
        self._cells: dict[tuple[str, str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))

    @property
    def resolve_key(self) -> ResolveKey:
        """The function's key resolution the map reads records with (a Kinesis change's identity needs it)."""
        return self._resolve_key

    def add(self, record: Any) -> None:
        try:
            # The handler's own key resolution: DynamoDB does not order Keys, so the first
            # attribute may be the sort key of a composite primary key.
            change = parse_change(record, self._resolve_key, None, self._indexes)
        except MalformedRecord:
            return
        if change.wcu == 0 and not change.index_writes:
            return
        bucket = window_start(change.event_time, self.alert_min_span_seconds)
        if change.wcu:
            self._cells[(change.table, "", change.key)][bucket] += change.wcu
        for index, key, wcu in change.index_writes:
            self._cells[(change.table, index, key)][bucket] += wcu

    def _rank(self, cell: tuple[str, str, str]) -> tuple[int, int, tuple[str, str, str]]:
        buckets = self._cells[cell].values()
        return -max(buckets), -sum(buckets), cell

    def panels(self, max_keys: int = MAX_KEYS, always: Iterable[tuple[str, str, str]] = ()) -> list[Panel]:
        """One panel per table: its rows ordered by peak (then total), at most ``max_keys`` of them
        plus any of ``always`` ((table, index or '', key): the alerted keys), on one shared time axis."""
        written = {bucket for cells in self._cells.values() for bucket in cells}
        if not written:
            return []
        span = self.alert_min_span_seconds
        buckets = list(range(min(written), max(written) + span, span))
        keep = set(always)
        by_table: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for cell in self._cells:
            by_table[cell[0]].append(cell)
        panels = []
        for table in sorted(by_table):
            ranked = sorted(
                by_table[table], key=lambda c: (-max(self._cells[c].values()), -sum(self._cells[c].values()), c)
            )
            shown = [c for c in ranked[:max_keys]] + [c for c in ranked[max_keys:] if c in keep]
            rows = [
                Row(index or None, key, [self._cells[(table, index, key)].get(b, 0) for b in buckets])
                for _table, index, key in shown
            ]
            panels.append(Panel(table, span, buckets, rows, len(ranked)))
        return panels


@dataclass(frozen=True)
class Row:
    index: str | None
    key: str
    wcu: list[int]  # per bucket

    @property
    def label(self) -> str:
        return self.key if self.index is None else f"[{self.index}] {self.key}"

    @property
    def peak(self) -> int:
        return max(self.wcu)


@dataclass(frozen=True)
class Panel:
    table: str
    alert_min_span_seconds: int  # a column's length (``HeatMap``)
    buckets: list[int]
    rows: list[Row]
    total_keys: int  # distinct keys (and index keys) that wrote in the replay

    def peak_share(self, partition_limit: float) -> float:
        """The hottest key's peak (its heaviest bucket, in WCU/s) as a share of the partition limit."""
        peak = max((row.peak for row in self.rows), default=0)
        return peak / self.alert_min_span_seconds / partition_limit

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "bucket_seconds": self.alert_min_span_seconds,  # the heat-data JSON's name, kept for its readers
            "buckets": self.buckets,
            "total_keys": self.total_keys,
            "rows": [{"index": r.index, "key": r.key, "wcu": r.wcu} for r in self.rows],
        }


def hottest_first(panels: Iterable[Panel], partition_limit: float) -> list[Panel]:
    """Tables ordered by their hottest key's peak as a share of the partition limit (ties: the busier
    hottest key, then the name), so the first panel on screen is the one that needs attention."""

    def rank(panel: Panel) -> tuple[float, int, str]:
        hottest = max(panel.rows, key=lambda row: (row.peak, sum(row.wcu)), default=None)
        return -panel.peak_share(partition_limit), -(sum(hottest.wcu) if hottest else 0), panel.table

    return sorted(panels, key=rank)


def colour_scale(threshold: float, top: float = 1.0) -> list[tuple[float, str]]:
    """The heat map's colour stops (position on a 0..1 scale that spans 0 to ``top`` times the partition
    limit, colour): linear, with a step at the alert threshold (a position given twice is a step, in
    plotly as here). ``top`` is 1, or ``OVER_LIMIT`` when a cell is over the limit: a share keeps its
    colour whatever the scale's top."""
    pale, middle, near = BELOW_THRESHOLD
    hot, limit = ABOVE_THRESHOLD
    stops = [(0.0, pale), (threshold / 2, middle), (threshold, near)]
    if threshold < 1:
        stops.append((threshold, hot))
    stops.append((1.0, limit))  # only the limit itself alerts when the threshold is 1: its cells are the darkest
    if top > 1:
        stops += [(1.1, ABOVE_LIMIT[0]), (top, ABOVE_LIMIT[1])]
    return [(position / top, colour) for position, colour in stops]


def colour_at(fraction: float, threshold: float, top: float = 1.0) -> str:
    """The colour at ``fraction`` (0..1) of the scale in RGB, as plotly computes it: linear in RGB
    between stops, and at a step the colour above it (d3's piecewise scale bisects to the right)."""
    stops = colour_scale(threshold, top)
    positions = [position for position, _colour in stops]
    fraction = min(1.0, max(0.0, fraction))
    i = min(max(bisect.bisect_right(positions, fraction) - 1, 0), len(stops) - 2)
    (low, low_colour), (high, high_colour) = stops[i], stops[i + 1]
    part = 1.0 if high == low else (fraction - low) / (high - low)
    below, above = _channels(low_colour), _channels(high_colour)
    return "#" + "".join(f"{round(a + part * (b - a)):02x}" for a, b in zip(below, above, strict=True))


def _channels(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


def scale_top(peak_share: float) -> float:
    """The scale's top, in times the partition limit: past 1 only when a cell is over the limit."""
    return OVER_LIMIT if peak_share > 1 else 1.0


def scale_position(rate: float, partition_limit: float, top: float = 1.0) -> float:
    """Where a rate sits on the colour scale: its share of ``top`` times the limit (0 to 1, saturating)."""
    return min(1.0, max(0.0, rate / (partition_limit * top)))


def plotly_script_name() -> str:
    """The shared script's file name, versioned: a report never loads a plotly.js it was not drawn for."""
    from plotly.offline import get_plotlyjs_version

    return f"plotly-{get_plotlyjs_version()}.min.js"


def write(path: Path, page: str) -> None:
    """Write ``page`` to ``path`` and, beside it, the plotly.js it loads, once per folder.

    Both are written to a temporary file and renamed into place, so an interrupted write or two
    reports written at once never leave a half script that every report of the folder would load.
    """
    from plotly.offline import get_plotlyjs

    script = path.parent / plotly_script_name()
    code = get_plotlyjs().encode("utf-8")
    if not (script.is_file() and script.stat().st_size == len(code) and script.read_bytes() == code):
        _replace(script, code)
    _replace(path, page.encode("utf-8"))


def _replace(path: Path, content: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def render(result: dict[str, Any], panels: list[Panel], settings: Settings, *, verdict: Sequence[str]) -> str:
    """The page: the verdict (``verdict``: the replay's own headline lines) and the alerts first,
    then the heat maps hottest table first, then the top keys per window. Limit and threshold are
    ``settings``', the ones the replay ran with."""
    import plotly.graph_objects as go

    partition_limit, threshold = settings.partition_wcu_limit, settings.alert_threshold
    seconds = settings.alert_min_span_seconds  # the replay's: its heat map's columns (``HeatMap``)

    alerts = [a for a in result.get("alerts", []) if a.get("status") != "resolved"]
    panels = hottest_first(panels, partition_limit)
    figures = "".join(
        _figure(go, panel, [a for a in alerts if a["table"] == panel.table], partition_limit, threshold)
        for panel in panels
    )
    # The exact figures behind the picture, for anyone who wants them (and for the tests).
    data = json.dumps([panel.to_json() for panel in panels]).replace("</", "<\\/")
    script = plotly_script_name()
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hot keys: replay report</title>
<script src="{script}"></script>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #222; }}
#verdict {{ font-size: 1.1em; }}
#verdict p {{ font-weight: 600; margin-bottom: 4px; }}
#no-plotly {{ color: #a50f15; font-weight: 600; }}
table.top {{ border-collapse: collapse; margin-top: 8px; }}
table.top td, table.top th {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }}
table.top td.k, table.top th.k {{ text-align: left; }}
tr.hot td {{ color: #a50f15; font-weight: 600; }}
tr.possibly td {{ color: #8c6d1f; }}
</style></head><body>
<h1>Hot keys</h1>
<section id="verdict">{_verdict(verdict)}</section>
<h2>Alerts</h2>{_alerts_table(result.get("alerts", []))}
<h2>Heat</h2>
<p id="no-plotly" hidden>The heat maps need {script} beside this file (replay --report writes it there);
the tables do not.</p>
<script>if (!window.Plotly) document.getElementById("no-plotly").hidden = false;</script>
<p>{result.get("records", 0):,} records from {result.get("shards", 0)} shard(s). Heat: each key's write units per
second in {seconds}-second buckets (exact, from the records), as a share of the {partition_limit:,} WCU/s
partition limit: yellow to orange below the {100 * threshold:.0f}% alert threshold,
red from it to the limit, magenta to purple over it (to {100 * OVER_LIMIT:.0f}% and beyond). Tables hottest first;
rows ordered by peak; alerted keys are always shown. Drag to zoom,
double-click to reset, hover for figures.</p>
{figures or "<p>No writes to show.</p>"}
<script type="application/json" id="heat-data">{data}</script>
<h2>Top keys per window</h2>{_top_table([TopRow.from_json(row) for row in result.get("top", [])], settings)}
{_throttle_section(result.get("throttles"))}
</body></html>
"""


def _figure(go: Any, panel: Panel, alerts: list[dict[str, Any]], partition_limit: int, threshold: float) -> str:
    seconds = panel.alert_min_span_seconds
    times = [datetime.fromtimestamp(b, tz=UTC).strftime("%Y-%m-%d %H:%M:%S") for b in panel.buckets]
    labels = [row.label for row in panel.rows]
    rates = [[wcu / seconds for wcu in row.wcu] for row in panel.rows]
    # z is the share of the limit in percent; an empty bucket stays a gap (white), never the palest colour.
    z = [[100 * rate / partition_limit if rate > 0 else None for rate in line] for line in rates]
    custom = [
        [[shown(rate), percent_of_limit(rate, partition_limit), wcu] for rate, wcu in zip(line, row.wcu, strict=True)]
        for line, row in zip(rates, panel.rows, strict=True)
    ]
    top = scale_top(panel.peak_share(partition_limit))
    ticks = sorted({0.0, 25.0, 50.0, 100 * threshold, 100.0, 100 * top})
    # The scale saturates at its top when cells are over the limit: its tick says "and more".
    tick_text = [
        f"{tick:g}% ({tick * partition_limit / 100:,.0f} WCU/s)"
        + (" alert" if tick == 100 * threshold else "")
        + (" and more" if tick == 100 * top and top > 1 else "")
        for tick in ticks
    ]
    heat = go.Heatmap(
        x=times,
        y=labels,
        z=z,
        customdata=custom,
        zmin=0,
        zmax=100 * top,
        colorscale=[[position, colour] for position, colour in colour_scale(threshold, top)],
        xgap=1,
        ygap=1,
        hoverongaps=False,
        colorbar={"title": {"text": "% of the partition limit"}, "tickvals": ticks, "ticktext": tick_text},
        hovertemplate="%{y}<br>%{x}<br>%{customdata[0]:,.1f} WCU/s (%{customdata[1]:.1f}% of the limit)"
        "<br>%{customdata[2]:,} WCU in the bucket<extra></extra>",
        name=panel.table,
    )
    traces = [heat, *_alert_markers(go, panel, alerts)]
    figure = go.Figure(traces)
    listed = len(panel.rows)
    figure.update_layout(
        title={
            "text": f"{html.escape(panel.table)}: {listed} of {panel.total_keys:,} keys shown (ordered by peak; "
            f"hottest {whole(100 * panel.peak_share(partition_limit))}% of the limit)"
        },
        height=PLOT_MARGIN["t"] + PLOT_MARGIN["b"] + max(4, listed) * ROW_PIXELS,
        margin=PLOT_MARGIN,
        plot_bgcolor="#ffffff",
        xaxis={"title": {"text": "time (UTC)"}, "type": "date", "showgrid": False},
        yaxis={"title": {"text": "partition key"}, "autorange": "reversed", "type": "category", "automargin": True},
        showlegend=bool(alerts),
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
    )
    drawn = figure.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=f"heat-{panel.table}",
        config={"displaylogo": False, "responsive": True},
    )
    return f"<div class='panel' data-table='{html.escape(panel.table, quote=True)}'>{drawn}</div>"


def _verdict(lines: Sequence[str]) -> str:
    """The replay's headline as printed: a line flush left is a paragraph, indented ones its list."""
    parts: list[str] = []
    items: list[str] = []
    for line in [*lines, ""]:
        if line[:1].isspace():
            items.append(f"<li>{html.escape(line.strip())}</li>")
            continue
        if items:
            parts.append(f"<ul>{''.join(items)}</ul>")
            items = []
        if line:
            parts.append(f"<p>{html.escape(line)}</p>")
    return "".join(parts)


def _alert_markers(go: Any, panel: Panel, alerts: list[dict[str, Any]]) -> list[Any]:
    """One marker per alert, on its key's row at the key's heaviest bucket of the alert's window."""
    rows = {(row.index, row.key): row for row in panel.rows}
    xs, ys, texts = [], [], []
    for alert in alerts:
        row = rows.get((alert.get("index"), alert["key"]))
        if row is None:
            continue
        start = parse_iso_utc(alert["window_start"])
        inside = [i for i, b in enumerate(panel.buckets) if start <= b < start + int(alert["window_seconds"])]
        if not inside:
            continue
        heaviest = max(inside, key=lambda i: row.wcu[i])
        xs.append(datetime.fromtimestamp(panel.buckets[heaviest], tz=UTC).strftime("%Y-%m-%d %H:%M:%S"))
        ys.append(row.label)
        texts.append(str(alert.get("subject")))
    if not xs:
        return []
    return [
        go.Scatter(
            x=xs,
            y=ys,
            text=texts,
            mode="markers",
            name="alert (at the key's peak in the alert's window)",
            marker={
                "symbol": "triangle-down",
                "size": 12,
                "color": "#08519c",
                "line": {"color": "#ffffff", "width": 1},
            },
            hovertemplate="%{text}<extra></extra>",
        )
    ]


# The report's alert tables, one per kind of incident: a key near its partition's limit is a hot key; a
# key that takes a large share of a table's writes far from that limit is a warning (issue #27).
ALERT_KINDS = (
    (Reason.PARTITION_LIMIT, "Hot keys (partition-limit alerts)", "alerts-partition-limit"),
    (Reason.SHARE, "Heavy shares of a table's writes (share-of-table alerts; not hot keys)", "alerts-share"),
)


def _alerts_table(alerts: list[dict[str, Any]]) -> str:
    """The alerts, partition-limit incidents apart from share-of-table ones; each with the figures it was
    sent with (the key's rate then, its % of the limit, the key's share of the window so far) beside its
    subject: labelled apart from the top keys' columns, which hold the whole window's stored figures."""
    if not alerts:
        return "<div id='alerts'><p>None.</p></div>"
    parts = []
    for reason, title, anchor in ALERT_KINDS:
        found = [a for a in alerts if a.get("reason") == reason]
        if not found:
            continue
        rows = "".join(
            f"<tr><td class='k'>{html.escape(a['window_start'])}</td><td class='k'>{html.escape(a['status'])}</td>"
            f"<td class='k'>{html.escape(str(a.get('subject')))}</td>"
            + (
                "<td></td><td></td><td></td>"
                if a["status"] == Message.RESOLVED
                else f"<td>{a['wcu_per_second']:,.1f}</td><td>{a['percent_of_limit']:.1f}%</td>"
                f"<td>{100 * a['share']:.1f}%</td>"
            )
            + "</tr>"
            for a in found
        )
        parts.append(
            f"<h3>{html.escape(title)} ({len(found)})</h3><table class='top' id='{anchor}'><thead><tr>"
            "<th class='k'>window</th><th class='k'>status</th><th class='k'>alert</th><th>WCU/s when sent</th>"
            "<th>% of limit when sent</th><th>share of the window so far</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    return f"<div id='alerts'>{''.join(parts)}</div>"


def _top_table(top: list[TopRow], settings: Settings) -> str:
    """The replay's top-keys rows (``top.TopRow``), with the columns and the hot rule of ``top``'s table."""
    body = []
    partition_limit = settings.partition_wcu_limit
    for r in top:
        rate, most = r.wcu_per_second, r.at_most_wcu_per_second
        where = where_of(r.table, r.index)
        possibly = possibly_hot(r, settings, proposals=True)
        hot = " class='hot'" if at_alert(r, settings, proposals=True) else " class='possibly'" if possibly else ""
        percent = f"{percent_of_limit(rate, partition_limit):.1f}" + (
            f"-{percent_of_limit(most, partition_limit):.1f}" if possibly else ""
        )
        body.append(
            f"<tr{hot}><td class='k'>{html.escape(r.window_start)}</td><td class='k'>{html.escape(where)}</td>"
            f"<td class='k'>{html.escape(r.key)}</td><td>{rate:,.1f}</td><td>{most:,.1f}</td>"
            f"<td>{percent}%</td><td>{100 * r.share:.1f}%</td>"
            f"<td>{r.writes:,}</td><td>{r.wcu:,}</td><td>{r.error_bound:,}</td></tr>"
        )
    return (
        "<table class='top' id='top'><thead><tr><th class='k'>window</th><th class='k'>table</th>"
        "<th class='k'>key</th><th>WCU/s</th><th>at most</th>"
        "<th>% of limit</th><th>share</th>"
        f"<th>writes</th><th>WCU</th><th>up to +</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _throttle_section(found: dict[str, Any] | None) -> str:
    """Issue #28: each throttled key beside the write units the stream saw land for it in the same window
    (``cli/throttle_view``); the section is absent when the replay had no throttled-keys answers."""
    if found is None:
        return ""
    line = f"<p class='note'>{html.escape(found['line'])}</p>" if found.get("line") else ""
    rows = "".join(_throttle_row(r) for r in found["rows"])
    table = (
        "<table class='top' id='throttles'><thead><tr><th class='k'>window</th><th class='k'>table</th>"
        "<th class='k'>key</th><th>landed WCU</th><th>throttled requests</th><th class='k'>attempted vs landed</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
        if found["rows"]
        else "<p>None in these windows.</p>"
    )
    return (
        "<h2>Throttled keys (Contributor Insights)</h2><p>Landed: write units from the stream. Throttled: requests "
        "DynamoDB refused in the window's minutes, reads and writes together (the throttled-keys rule does not "
        f"tell them apart).</p>{line}{table}"
    )


def _throttle_row(r: dict[str, Any]) -> str:
    from hotkeys.cli.throttle_view import landed_text, status_text

    where = where_of(r["table"], r.get("index"))
    marked = " class='hot'" if r["status"] == THROTTLED_ONLY else ""
    return (
        f"<tr{marked}><td class='k'>{html.escape(r['window_start'])}</td><td class='k'>{html.escape(where)}</td>"
        f"<td class='k'>{html.escape(r['key'])}</td><td>{html.escape(landed_text(r))}</td>"
        f"<td>{r['throttled_requests']:,}</td><td class='k'>{html.escape(status_text(r))}</td></tr>"
    )
