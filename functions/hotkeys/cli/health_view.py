"""Data health as the CLI shows it: per table, over the windows read, what the items written say
(``domain.health``): TTL values DynamoDB ignores, items near the size limit, what each GSI costs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hotkeys.detector.consumer.snapshots import WindowFigures
from hotkeys.detector.domain.health import Health, IndexCost, findings
from hotkeys.detector.domain.rate import rate_of
from hotkeys.detector.proposals import is_proposed

# (table, index) -> the index's projection type as DescribeTable states it (None: unknown).
Projections = Callable[[str, str], str | None]


def table_health(
    figures: Iterable[WindowFigures],
    partition_wcu_limit: int,
    projection: Projections | None = None,
) -> dict[str, dict[str, Any]]:
    """Per table: its written items' figures merged over the windows (with the TTL attribute their verdicts
    judged, as stored with them), its GSIs' costs, and the findings."""
    merged: dict[str, Health] = {}
    index_wcu: dict[tuple[str, str], int] = {}
    index_peak: dict[tuple[str, str], float] = {}
    table_wcu: dict[str, int] = {}
    for window in figures:
        if window.index is None:
            merged.setdefault(window.table, Health()).merge(window.health)
            table_wcu[window.table] = table_wcu.get(window.table, 0) + window.wcu
        elif not is_proposed(window.index):
            name = (window.table, window.index)
            index_wcu[name] = index_wcu.get(name, 0) + window.wcu
            span = window.alert_min_span_seconds or 1
            last = window.last_event
            peak = max(
                (rate_of(entry, window.bound(key), last, span).wcu_per_second for key, entry in window.entries.items()),
                default=0.0,
            )
            index_peak[name] = max(index_peak.get(name, 0.0), peak / partition_wcu_limit)
    found = {}
    for table, health in sorted(merged.items()):
        costs = [
            IndexCost(index, wcu, table_wcu[table], index_peak[(name, index)], projection and projection(name, index))
            for (name, index), wcu in sorted(index_wcu.items())
            if name == table
        ]
        found[table] = {
            **_figures(health),
            "ttl_attribute": health.attribute,
            "indexes": [_cost(cost) for cost in costs],
            "findings": findings(table, health, costs, health.attribute),
        }
    return found


def _figures(health: Health) -> dict[str, Any]:
    return {
        "items_written": health.written,
        "ttl": dict(sorted(health.ttl.items())),
        "size_p50_up_to": health.percentile(0.5),
        "size_p95_up_to": health.percentile(0.95),
        "size_p99_up_to": health.percentile(0.99),
        "size_max": health.max_size,
        "near_limit": health.near_limit,
        "items_over_10kb": health.large,
        "units_over_10kb_share": round(health.large_wcu / health.wcu, 4) if health.wcu else 0.0,
    }


def _cost(cost: IndexCost) -> dict[str, Any]:
    return {
        "index": cost.name,
        "wcu": cost.wcu,
        "share_of_table": round(cost.share, 4),
        "peak_share_of_limit": round(cost.peak_share, 4),
        **({"projection": cost.projection} if cost.projection else {}),
    }


def health_lines(found: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The findings of every table, under one heading; nothing when all is well."""
    lines = [line for table in sorted(found) for line in found[table]["findings"]]
    return ["Data health (from the items written):", *(f"  {line}" for line in lines)] if lines else []
