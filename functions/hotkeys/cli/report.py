"""``--report FILE.html``: a self-contained page with a key-by-time heat map per table and the top keys.

The heat map is computed from the replayed records themselves (exact write units per key per
10-second bucket), read the way Key Visualizer is read: one row per key, one column per bucket,
colour on a log scale of the key's WCU/s against the partition limit, rows ordered by peak.
It is drawn by plotly (zoom, hover), with plotly.js inlined: the file opens offline.
"""

from __future__ import annotations

import html
import itertools
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hotkeys.detector.records import IndexesOf, MalformedRecord, ResolveKey, parse_change
from hotkeys.detector.windows import parse_iso_utc, window_start

BUCKET_SECONDS = 10
MAX_KEYS = 30
# Colour runs from a ten-thousandth of the partition limit (0.1 WCU/s) to the limit, on a log scale:
# 0.1% and 5% of the limit are far apart, as they should be.
DECADES_BELOW_LIMIT = 4
COLOURS = ((0.0, "#fff7bc"), (0.25, "#fec44f"), (0.5, "#fe9929"), (0.75, "#d94801"), (1.0, "#7f0000"))
ROW_PIXELS = 26
PLOT_MARGIN = {"l": 220, "r": 40, "t": 60, "b": 70}


class HeatMap:
    """Exact write units per (table, index, key) and bucket, fed one record at a time.

    Index partitions (``indexes``) are rows of their own, in their table's panel.
    """

    def __init__(
        self, resolve_key: ResolveKey, indexes: IndexesOf | None = None, bucket_seconds: int = BUCKET_SECONDS
    ) -> None:
        self.bucket_seconds = bucket_seconds
        self._resolve_key = resolve_key
        self._indexes = indexes
        self._cells: dict[tuple[str, str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))

    def add(self, record: Any) -> None:
        try:
            # The handler's own key resolution: DynamoDB does not order Keys, so the first
            # attribute may be the sort key of a composite primary key.
            change = parse_change(record, self._resolve_key, None, self._indexes)
        except MalformedRecord:
            return
        if change.wcu == 0 and not change.index_writes:
            return
        bucket = window_start(change.event_time, self.bucket_seconds)
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
        buckets = list(range(min(written), max(written) + self.bucket_seconds, self.bucket_seconds))
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
            panels.append(Panel(table, self.bucket_seconds, buckets, rows, len(ranked)))
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
    bucket_seconds: int
    buckets: list[int]
    rows: list[Row]
    total_keys: int  # distinct keys (and index keys) that wrote in the replay

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "bucket_seconds": self.bucket_seconds,
            "buckets": self.buckets,
            "total_keys": self.total_keys,
            "rows": [{"index": r.index, "key": r.key, "wcu": r.wcu} for r in self.rows],
        }


def colour_at(fraction: float) -> str:
    """The colour scale at ``fraction`` (0..1) in RGB, as plotly interpolates it (linearly in RGB)."""
    fraction = min(1.0, max(0.0, fraction))
    for (low, low_colour), (high, high_colour) in itertools.pairwise(COLOURS):
        if fraction <= high:
            part = (fraction - low) / (high - low)
            below, above = _channels(low_colour), _channels(high_colour)
            return "#" + "".join(f"{round(a + part * (b - a)):02x}" for a, b in zip(below, above, strict=True))
    return COLOURS[-1][1]


def _channels(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


def scale_position(rate: float, partition_limit: float) -> float:
    """Where a rate sits on the log colour scale (0: 0.1 WCU/s at a 1,000 limit, 1: the limit and above)."""
    if rate <= 0:
        return 0.0
    return min(1.0, max(0.0, 1 + math.log10(rate / partition_limit) / DECADES_BELOW_LIMIT))


def render(result: dict[str, Any], panels: list[Panel], partition_limit: int = 1000, threshold: float = 0.8) -> str:
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    alerts = [a for a in result.get("alerts", []) if a.get("status") != "resolved"]
    figures = "".join(
        _figure(go, panel, [a for a in alerts if a["table"] == panel.table], partition_limit) for panel in panels
    )
    # The exact figures behind the picture, for anyone who wants them (and for the tests).
    data = json.dumps([panel.to_json() for panel in panels]).replace("</", "<\\/")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hot keys: replay report</title>
<script>{get_plotlyjs()}</script>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #222; }}
table.top {{ border-collapse: collapse; margin-top: 8px; }}
table.top td, table.top th {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }}
table.top td.k, table.top th.k {{ text-align: left; }}
tr.hot td {{ color: #a50f15; font-weight: 600; }}
</style></head><body>
<h1>Hot keys</h1>
<p>{result.get("records", 0):,} records from {result.get("shards", 0)} shard(s). Heat: each key's write units per
second in {panels[0].bucket_seconds if panels else BUCKET_SECONDS}-second buckets (exact, from the records), on a
log scale against the {partition_limit:,} WCU/s partition limit. Rows are ordered by peak; alerted keys are
always shown. Drag to zoom, double-click to reset, hover for figures.</p>
{figures or "<p>No writes to show.</p>"}
<script type="application/json" id="heat-data">{data}</script>
<h2>Alerts</h2>{_alerts_table(result.get("alerts", []))}
<h2>Top keys per window</h2>{_top_table(result.get("top", []), partition_limit, threshold)}
</body></html>
"""


def _figure(go: Any, panel: Panel, alerts: list[dict[str, Any]], partition_limit: int) -> str:
    seconds = panel.bucket_seconds
    times = [datetime.fromtimestamp(b, tz=UTC).strftime("%Y-%m-%d %H:%M:%S") for b in panel.buckets]
    labels = [row.label for row in panel.rows]
    rates = [[wcu / seconds for wcu in row.wcu] for row in panel.rows]
    bottom = math.log10(partition_limit) - DECADES_BELOW_LIMIT
    z = [[math.log10(rate) if rate > 0 else None for rate in line] for line in rates]
    custom = [
        [[rate, 100 * rate / partition_limit, wcu] for rate, wcu in zip(line, row.wcu, strict=True)]
        for line, row in zip(rates, panel.rows, strict=True)
    ]
    ticks = [bottom + step for step in range(DECADES_BELOW_LIMIT + 1)]
    tick_text = [f"{10**t:,.4g} WCU/s ({100 * 10**t / partition_limit:.4g}%)" for t in ticks]
    heat = go.Heatmap(
        x=times,
        y=labels,
        z=z,
        customdata=custom,
        zmin=bottom,
        zmax=math.log10(partition_limit),
        colorscale=[[position, colour] for position, colour in COLOURS],
        xgap=1,
        ygap=1,
        hoverongaps=False,
        colorbar={"title": {"text": "WCU/s (% of limit)"}, "tickvals": ticks, "ticktext": tick_text},
        hovertemplate="%{y}<br>%{x}<br>%{customdata[0]:,.1f} WCU/s (%{customdata[1]:.1f}% of the limit)"
        "<br>%{customdata[2]:,} WCU in the bucket<extra></extra>",
        name=panel.table,
    )
    traces = [heat, *_alert_markers(go, panel, alerts)]
    figure = go.Figure(traces)
    shown = len(panel.rows)
    figure.update_layout(
        title={"text": f"{html.escape(panel.table)}: {shown} of {panel.total_keys:,} keys shown (ordered by peak)"},
        height=PLOT_MARGIN["t"] + PLOT_MARGIN["b"] + max(4, shown) * ROW_PIXELS,
        margin=PLOT_MARGIN,
        plot_bgcolor="#ffffff",
        xaxis={"title": {"text": "time (UTC)"}, "type": "date", "showgrid": False},
        yaxis={"title": {"text": "partition key"}, "autorange": "reversed", "type": "category", "automargin": True},
        showlegend=bool(alerts),
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
    )
    return str(
        figure.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"heat-{panel.table}",
            config={"displaylogo": False, "responsive": True},
        )
    ).replace("<div>", f"<div class='panel' data-table='{html.escape(panel.table)}'>", 1)


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


def _alerts_table(alerts: list[dict[str, Any]]) -> str:
    if not alerts:
        return "<p id='alerts'>None.</p>"
    rows = "".join(
        f"<tr><td class='k'>{html.escape(a['window_start'])}</td><td class='k'>{html.escape(a['status'])}</td>"
        f"<td class='k'>{html.escape(str(a.get('subject')))}</td></tr>"
        for a in alerts
    )
    return (
        "<table class='top' id='alerts'><thead><tr><th class='k'>window</th><th class='k'>status</th>"
        f"<th class='k'>alert</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _top_table(top: list[dict[str, Any]], partition_limit: int, threshold: float) -> str:
    body = []
    for r in top:
        peak = r.get("peak_wcu_per_second")
        rate = max(r["wcu_per_second"], peak or 0.0)
        where = r["table"] if not r.get("index") else f"{r['table']} index {r['index']}"
        hot = " class='hot'" if rate >= threshold * partition_limit else ""
        body.append(
            f"<tr{hot}><td class='k'>{html.escape(r['window_start'])}</td><td class='k'>{html.escape(where)}</td>"
            f"<td class='k'>{html.escape(r['key'])}</td><td>{r['wcu_per_second']:,.1f}</td>"
            f"<td>{'—' if peak is None else format(peak, ',.1f')}</td>"
            f"<td>{100 * rate / partition_limit:.1f}%</td><td>{100 * r['share']:.1f}%</td>"
            f"<td>{r['writes']:,}</td><td>{r['wcu']:,}</td><td>{r['error_bound']:,}</td></tr>"
        )
    return (
        "<table class='top' id='top'><thead><tr><th class='k'>window</th><th class='k'>table</th>"
        "<th class='k'>key</th><th>avg WCU/s</th><th>peak WCU/s</th><th>% of partition</th><th>share</th>"
        f"<th>writes</th><th>WCU</th><th>± WCU</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
