"""``--report FILE.html``: a self-contained page with a key-by-time heat map and the top keys.

The heat map is computed from the replayed records themselves (exact write units per key
per 10-second bucket), the way Key Visualizer shows heat: one row per key, one column per
bucket, colour by the key's WCU/s against the partition limit. No scripts, no external
files: it opens offline.
"""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from hotkeys.detector.records import IndexesOf, MalformedRecord, ResolveKey, parse_change
from hotkeys.detector.windows import window_start

BUCKET_SECONDS = 10
MAX_KEYS = 25


def heat_map(
    shards: list[tuple[str, list[dict[str, Any]]]],
    resolve_key: ResolveKey,
    bucket_seconds: int = BUCKET_SECONDS,
    max_keys: int = MAX_KEYS,
    indexes: IndexesOf | None = None,
) -> dict[str, Any]:
    """Exact write units per (table, index or None, key) and bucket; index partitions (``indexes``)
    are rows of their own."""
    cells: dict[tuple[str, str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    times: set[int] = set()
    for _shard, records in shards:
        for record in records:
            try:
                # The handler's own key resolution: DynamoDB does not order Keys, so the first
                # attribute may be the sort key of a composite primary key.
                change = parse_change(record, resolve_key, None, indexes)
            except MalformedRecord:
                continue
            if change.wcu == 0:
                continue
            bucket = window_start(change.event_time, bucket_seconds)
            cells[(change.table, "", change.key)][bucket] += change.wcu
            for index, key, wcu in change.index_writes:
                cells[(change.table, index, key)][bucket] += wcu
            times.add(bucket)
    if not times:
        return {"bucket_seconds": bucket_seconds, "buckets": [], "rows": []}
    totals = sorted(cells, key=lambda k: (-sum(cells[k].values()), k))[:max_keys]
    buckets = list(range(min(times), max(times) + bucket_seconds, bucket_seconds))
    rows = [
        {
            "table": table,
            "index": index or None,
            "key": key,
            "wcu": [cells[(table, index, key)].get(b, 0) for b in buckets],
        }
        for table, index, key in totals
    ]
    return {"bucket_seconds": bucket_seconds, "buckets": buckets, "rows": rows}


def _colour(rate: float, limit: float) -> str:
    """White → yellow → red as the key approaches (and passes) the partition limit."""
    level = max(0.0, min(1.0, rate / limit))
    if level == 0:
        return "#ffffff"
    red, green = (255, int(255 - 90 * level / 0.5)) if level < 0.5 else (255, int(165 * (1 - level) / 0.5))
    blue = int(200 * (1 - min(1.0, level * 4)))
    return f"#{red:02x}{max(green, 0):02x}{max(blue, 0):02x}"


def render(result: dict[str, Any], heat: dict[str, Any], partition_limit: int = 1000) -> str:
    from hotkeys.detector.windows import iso_utc

    seconds = heat["bucket_seconds"]
    head = "".join(
        f"<th class='t'>{html.escape(iso_utc(b)[11:19]) if i % 6 == 0 else ''}</th>"
        for i, b in enumerate(heat["buckets"])
    )
    body = []
    for row in heat["rows"]:
        cells = "".join(
            f"<td class='c' data-wcu='{wcu}' style='background:{_colour(wcu / seconds, partition_limit)}' "
            f"title='{html.escape(row['key'])} {iso_utc(b)}: {wcu / seconds:.1f} WCU/s'></td>"
            for b, wcu in zip(heat["buckets"], row["wcu"], strict=True)
        )
        where = row["table"] if not row.get("index") else f"{row['table']} index {row['index']}"
        label = html.escape(f"{where}: {row['key']}")
        body.append(f"<tr data-key='{html.escape(row['key'])}'><th class='k'>{label}</th>{cells}</tr>")
    top = "".join(
        f"<tr><td>{html.escape(r['window_start'])}</td>"
        f"<td>{html.escape(r['table'] if not r.get('index') else r['table'] + ' index ' + r['index'])}</td>"
        f"<td>{html.escape(r['key'])}</td><td>{r['wcu_per_second']:.1f}</td>"
        f"<td>{'—' if r.get('peak_wcu_per_second') is None else format(r['peak_wcu_per_second'], '.1f')}</td>"
        f"<td>{100 * r['share']:.1f}%</td>"
        f"<td>{r['writes']}</td><td>{r['wcu']}</td><td>{r['error_bound']}</td></tr>"
        for r in result.get("top", [])
    )
    alerts = "".join(f"<li>{html.escape(str(a.get('subject')))}</li>" for a in result.get("alerts", []))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hot keys: replay report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #222; }}
table.heat {{ border-collapse: collapse; }}
table.heat td.c {{ width: 9px; height: 18px; border: 1px solid #eee; padding: 0; }}
table.heat th.k {{ text-align: right; padding-right: 8px; font-weight: normal; white-space: nowrap; }}
table.heat th.t {{ font-weight: normal; font-size: 11px; text-align: left; white-space: nowrap; }}
table.top {{ border-collapse: collapse; margin-top: 16px; }}
table.top td, table.top th {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }}
.legend span {{ display: inline-block; width: 40px; height: 12px; margin-right: 4px; }}
</style></head><body>
<h1>Hot keys</h1>
<p>{result.get("records", 0)} records from {result.get("shards", 0)} shard(s).
Heat: write units per second per key, {seconds}-second buckets, against the {partition_limit} WCU/s partition limit.</p>
<p class="legend">{
        "".join(
            f"<span style='background:{_colour(p * partition_limit, partition_limit)}'></span>"
            for p in (0.05, 0.25, 0.5, 0.8, 1.0)
        )
    } 5% · 25% · 50% · 80% · 100%</p>
<table class="heat" id="heatmap"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>
<h2>Alerts</h2><ul id="alerts">{alerts or "<li>none</li>"}</ul>
<h2>Top keys per window</h2>
<table class="top" id="top"><thead><tr><th>window</th><th>table</th><th>key</th><th>WCU/s</th>
<th>peak WCU/s</th><th>share</th><th>writes</th><th>WCU</th><th>± WCU</th></tr></thead><tbody>{top}</tbody></table>
</body></html>
"""
