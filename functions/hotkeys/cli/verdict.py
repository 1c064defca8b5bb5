"""The replay's verdict: each hot, possibly hot or heavy-share key the alerts named, with its stored figures
(the rows the top-keys table shows), the throttled keys no alert named, and the fix."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hotkeys.cli.common import (
    partition_of,
    where_of,
)
from hotkeys.cli.health_view import health_lines
from hotkeys.cli.rows import TopRow
from hotkeys.cli.top import top_rows
from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import short_fix
from hotkeys.detector.alerts.rules import Reason
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.diagnosis import SHARD_FAMILY
from hotkeys.detector.domain.rate import is_hot, percent_of_limit, shown, suggested_shards, whole
from hotkeys.detector.throttling.throttles import THROTTLED_ONLY

if TYPE_CHECKING:
    from hotkeys.detector.consumer.snapshots import WindowFigures


def alerted_figures(alerts: list[dict[str, Any]], figures: list[WindowFigures]) -> list[dict[str, Any]]:
    """The stored figures (``top_rows``: rate, share) of every key an alert named while
    hot, in every window whose merged figures list it: what the verdict reads, so that it and the
    top-keys table show one rate for one key and window."""
    named = {(a["table"], a.get("index"), a["key"]) for a in alerts if a["status"] != Message.RESOLVED}
    rows = [
        row.to_json()
        for window in figures
        if any((window.table, window.index, key) in named for key in window.entries)
        for row in top_rows([window], len(window.entries))
        if (row.table, row.index, row.key) in named
    ]
    rows.sort(key=lambda row: (row["table"], row["index"] or "", row["key"], row["window_start"]))
    return rows


@dataclass(frozen=True)
class _Incident:
    """One key's hot alerts (firing, reminders) in a replay and its stored figures."""

    table: str
    index: str | None
    key: str
    alerts: list[dict[str, Any]]
    rows: list[TopRow]  # alerted_figures of this key, one per window that lists it
    throttled: list[dict[str, Any]]  # the throttled-keys table's rows of this key, one per window

    @property
    def partition_limit(self) -> bool:
        return any(alert["reason"] == Reason.PARTITION_LIMIT for alert in self.alerts)

    @property
    def where(self) -> str:
        return partition_of(self.table, self.index, self.key)

    def possibly(self, settings: Settings) -> bool:
        """Possibly hot: every partition-limit alert said so, and no stored rate reached the threshold."""
        alerts = [alert for alert in self.alerts if alert["reason"] == Reason.PARTITION_LIMIT]
        row = self.figure()
        return (
            bool(alerts)
            and all(alert.get("possibly_hot", False) for alert in alerts)
            and (row is None or not is_hot(row.wcu_per_second, settings))
        )

    def reason_alerts(self) -> list[dict[str, Any]]:
        """The alerts of the incident's kind: partition-limit ones when there are any, else share ones."""
        reason = Reason.PARTITION_LIMIT if self.partition_limit else Reason.SHARE
        return [alert for alert in self.alerts if alert["reason"] == reason]

    def figure(self) -> TopRow | None:
        """The stored row the verdict names: the window of the key's highest rate (a hot key), or of its
        largest share among the windows a share alert named (a share of a table: a window under the
        share rule's minimum has shares of nothing)."""
        if self.partition_limit:
            rows = self.rows
            return max(rows, key=lambda row: (row.wcu_per_second, row.window_start), default=None)
        windows = {alert["window_start"] for alert in self.alerts}
        rows = [row for row in self.rows if row.window_start in windows]
        return max(rows, key=lambda row: (row.share, row.window_start), default=None)


def verdict(result: dict[str, Any], settings: Settings) -> list[str]:
    """The answer first: which keys were hot (at or near the partition limit), how hot at their peak,
    and what to do; then the keys DynamoDB throttled that no alert named (Contributor Insights' throttled
    keys recorded beside the events); then, apart, the keys that took a heavy share of a table's writes
    while far from the limit (share-of-table alerts: a warning, not a hot key). Each key once.

    Every figure is the stored one the top-keys table shows (``alerted_figures``): the peak is the key's
    highest rate in a window (``rules.rate_of``), the share the whole window's; a throttled count is the
    throttled-keys table's. A key whose rate stayed under the threshold, and only its upper end (the
    summary's bound added) reached it, is possibly hot, listed apart with its range. The rate the first
    alert quoted (when it was sent) is named apart when it differs. A write-sharded family's line is the
    families line of that window."""
    grouped = _by_partition(alert for alert in result["alerts"] if alert["status"] != Message.RESOLVED)
    stored: dict[Partition, list[TopRow]] = {}
    for row in map(TopRow.from_json, result.get("alerted_figures", [])):
        stored.setdefault((row.table, row.index, row.key), []).append(row)
    throttled = _by_partition((result.get("throttles") or {}).get("rows", []))
    incidents = [
        _Incident(*name, found, stored.get(name, []), throttled.get(name, [])) for name, found in grouped.items()
    ]
    ranked = sorted((i for i in incidents if i.partition_limit), key=lambda i: (-_rank(i), i.where))
    judged = [(incident, incident.possibly(settings)) for incident in ranked]
    hot = [incident for incident, possibly in judged if not possibly]
    possibly = [incident for incident, possibly in judged if possibly]
    shares = sorted((i for i in incidents if not i.partition_limit), key=lambda i: (-_rank(i), i.where))
    unalerted = {name: rows for name, rows in throttled.items() if name not in grouped}
    families = result.get("families", [])
    if hot:
        confirmed = sum(1 for incident in hot if incident.throttled)
        lines = [
            f"{len(hot)} hot key{'' if len(hot) == 1 else 's'} (at or near the partition limit"
            + (f"; DynamoDB throttled {confirmed} of them" if confirmed else "")
            + "):"
        ]
        lines.extend(_hot_line(incident, families, settings, possibly=False) for incident in hot)
    else:
        lines = ["No hot key: no partition key's rate reached the partition-limit alert threshold."]
    if possibly:
        many = len(possibly) > 1
        lines.append(
            f"{len(possibly)} key{'s' if many else ''} possibly hot (the rate stayed under the threshold; only its "
            "upper end, with what the summary may have left uncounted, reached it):"
        )
        lines.extend(_hot_line(incident, families, settings, possibly=True) for incident in possibly)
    lines.extend(what_if_lines(result.get("what_if", []), result.get("what_if_unseen", [])))
    if unalerted:
        many = len(unalerted) > 1
        lines.append(
            f"{len(unalerted)} key{'s' if many else ''} DynamoDB throttled that no alert named (Contributor "
            "Insights' throttled keys; the stream sees only the writes that landed):"
        )
        lines.extend(
            _throttled_line(name, rows)
            for name, rows in sorted(unalerted.items(), key=lambda item: (-_requests(item[1]), item[0][2]))
        )
    if shares:
        many = len(shares) > 1
        lines.append(
            f"{len(shares)} key{'s' if many else ''} with a heavy share of {'their' if many else 'its'} table's "
            f"writes (share-of-table alert{'s' if many else ''}; under the partition-limit threshold, not hot):"
        )
        lines.extend(_share_line(incident, families) for incident in shares)
    lines.extend(health_lines(result.get("health", {})))
    return lines


Partition = tuple[str, str | None, str]  # (table, index or None, key)


def _by_partition(rows: Iterable[dict[str, Any]]) -> dict[Partition, list[dict[str, Any]]]:
    """Alerts or rows of the result, by the partition they name, in their order."""
    found: dict[Partition, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault((row["table"], row.get("index"), row["key"]), []).append(row)
    return found


def _requests(rows: list[dict[str, Any]]) -> int:
    return sum(int(row["throttled_requests"]) for row in rows)


def _throttled_text(rows: list[dict[str, Any]]) -> str:
    """ "4,100 requests in the window starting A and 1,250 in the window starting B": the table's counts."""
    ordered = sorted(rows, key=lambda row: row["window_start"])
    parts = [
        f"{row['throttled_requests']:,}{' requests' if i == 0 else ''} in the window starting {row['window_start']}"
        for i, row in enumerate(ordered)
    ]
    return " and ".join(parts)


def _throttled_line(name: Partition, rows: list[dict[str, Any]]) -> str:
    table, index, key = name
    where = partition_of(table, index, key)
    if all(row["status"] == THROTTLED_ONLY for row in rows):
        landed = (
            "none of its writes landed on the stream (throttled only: its reads, or writes that never landed); "
            "suggested fix: if these are reads, one partition serves 3,000 RCU/s: cache them or spread them over "
            f"copies of the item; if writes, write-shard the key ({key}#1..N) and retry with backoff"
        )
    else:
        wcu = sum(int(row["landed_wcu"] or 0) for row in rows)
        spread = (
            f"suffix the index key ({key}#1..N) or pick a higher-cardinality index key"
            if index is not None
            else f"write-shard the key ({key}#1..N)"
        )
        landed = (
            f"{wcu:,} of its write units landed, under the alert threshold: more was attempted than landed, in "
            f"bursts shorter than the alert's; suggested fix: {spread}"
        )
    return f"  {where}: DynamoDB throttled {_throttled_text(rows)}; {landed}"


def _rank(incident: _Incident) -> float:
    """Hottest first: the stored peak (a hot key) or share (a share of a table), else the alert's figure."""
    row = incident.figure()
    alerts = incident.reason_alerts()
    if incident.partition_limit:
        return row.wcu_per_second if row else max(alert["wcu_per_second"] for alert in alerts)
    return row.share if row else max(alert["share"] for alert in alerts)


def _hot_line(incident: _Incident, families: list[dict[str, Any]], settings: Settings, *, possibly: bool) -> str:
    """One hot (or, ``possibly``, possibly hot: ``_Incident.possibly``) key's line of the verdict."""
    alerts = incident.reason_alerts()
    # The rate the incident fired at (its firing message's), as its subscriber first read it
    firing = [alert for alert in alerts if alert["status"] == Message.FIRING]
    fired = firing[0] if firing else max(alerts, key=lambda alert: (alert["wcu_per_second"], alert["window_start"]))
    limit = int(fired["partition_wcu_limit"])
    alert_rate = float(fired["wcu_per_second"])
    row = incident.figure()
    if row is None:  # no stored figures under the alert's name (a hashed key display): the alert's own
        said = (
            f"alerted at {whole(alert_rate)} WCU/s ({whole(percent_of_limit(alert_rate, limit))}% of the partition "
            "limit; "
            f"no stored figures name the key) in the window starting {fired['window_start']}"
        )
        peak, share, window = alert_rate, max(alert["share"] for alert in incident.alerts), fired["window_start"]
    elif possibly:
        # Possibly hot: its rate stayed under the threshold; the most it could have been, as its stored row and
        # its alerts (on the figures of their time) bound it
        peak, share, window = row.wcu_per_second, row.share, row.window_start
        most = max(row.at_most_wcu_per_second, *(float(alert["at_most_wcu_per_second"]) for alert in alerts))
        said = (
            f"peaked at {whole(peak)} to at most {whole(most)} WCU/s ({whole(percent_of_limit(peak, limit))}-"
            f"{whole(percent_of_limit(most, limit))}% of the partition limit) in the window starting {window}"
        )
    else:
        # (never under what its messages said it peaked at: a rate quoted mid-window can exceed the window's
        # final one, docs/decisions.md §79)
        told = max(float(alert.get("peak_wcu_per_second") or 0.0) for alert in alerts)
        peak, share, window = max(row.wcu_per_second, told), row.share, row.window_start
        said = (
            f"peaked at {whole(peak)} WCU/s ({whole(percent_of_limit(peak, limit))}% of the partition limit) in the "
            "window "
            f"starting {window}{_alerted(alert_rate, peak, fired['window_start'], window)}"
        )
    # Never fewer suffixes than an alert asked for (a reminder's count follows the incident's highest rate).
    shards = max(
        suggested_shards(peak, settings),
        *(int(a["suggested_shards"]) for a in alerts),
    )
    return f"  {incident.where} {said}{_confirmed(incident)}{_fix(incident, families, window, shards, share)}"


def _share_line(incident: _Incident, families: list[dict[str, Any]]) -> str:
    alerts = incident.reason_alerts()
    fired = max(alerts, key=lambda alert: (alert["share"], alert["window_start"]))
    limit = int(fired["partition_wcu_limit"])
    row = incident.figure()
    if row is None:
        share, window = float(fired["share"]), fired["window_start"]
        said = (
            f"took {100 * share:.0f}% of the table's writes (at the alert; no stored figures name the key) "
            f"in the window starting {window}, alerted at {whole(fired['wcu_per_second'])} WCU/s"
        )
    else:
        share, window, peak = row.share, row.window_start, row.wcu_per_second
        at_alert = (
            f"; alerted at {100 * fired['share']:.0f}%" if round(100 * fired["share"]) != round(100 * share) else ""
        )
        said = (
            f"took {100 * share:.0f}% of the table's writes in the window starting {window}{at_alert} "
            f"(rate {whole(peak)} WCU/s, {whole(percent_of_limit(peak, limit))}% of the partition limit)"
        )
    return f"  {incident.where} {said}{_confirmed(incident)}{_fix(incident, families, window, 1, share)}"


def _confirmed(incident: _Incident) -> str:
    """ "; confirmed: DynamoDB throttled N requests in the window starting W" when it did."""
    return f"; confirmed: DynamoDB throttled {_throttled_text(incident.throttled)}" if incident.throttled else ""


def _alerted(alert_rate: float, peak: float, alert_window: str, window: str) -> str:
    """ ", first alerted at X WCU/s" when the rate the first alert quoted (its key's rate when it was sent)
    reads differently from the peak."""
    if alert_window != window:
        return f", first alerted at {whole(alert_rate)} WCU/s in the window starting {alert_window}"
    return f", first alerted at {whole(alert_rate)} WCU/s" if whole(alert_rate) != whole(peak) else ""


def _fix(incident: _Incident, families: list[dict[str, Any]], window: str, shards: int, share: float) -> str:
    pattern = next((a["pattern"] for a in incident.alerts if a.get("pattern")), None)
    shows = f" ({pattern})" if pattern else ""
    fix = short_fix(incident.key, shards, share, incident.index)
    if pattern == SHARD_FAMILY:  # one shard of a family: the family's verdict is the fix, as its line says it
        family = _family_of(incident, families, window)
        fix = family["verdict"] if family else next(a["remedy"] for a in incident.alerts if a.get("remedy"))
    return f"{shows}; suggested fix: {fix}"


def _family_of(incident: _Incident, families: list[dict[str, Any]], window: str) -> dict[str, Any] | None:
    for family in families:
        stem = family["stem"]
        if (
            (family["table"], family.get("index"), family["window_start"]) == (incident.table, incident.index, window)
            and incident.key.startswith(stem)
            and incident.key[len(stem) :].isdigit()
        ):
            return family
    return None


def what_if_lines(found: list[dict[str, Any]], unseen: list[str] | None = None) -> list[str]:
    """Each proposal's hottest partition, apart from the real ones: when it would pass the alert rate,
    its peak and fix, else how far under it stays; and each proposal no write reached (a misspelt
    attribute or table)."""
    if not found and not unseen:
        return []
    lines = ["What-if (proposals counted from the same writes; never an incident, nobody paged):"]
    for row in found:
        where = where_of(row["table"], row["proposal"])
        peak = f"{_rate(row['wcu_per_second'])} WCU/s, {whole(row['percent_of_limit'])}% of limit"
        if row["hot"]:
            also = f" (also over the alert rate: {', '.join(row['also_hot'])})" if row["also_hot"] else ""
            lines.append(
                f"  {where}: {row['key']} would peak at {peak}, in the window starting {row['window_start']}{also}"
            )
            lines.append(f"      fix: {row['advice']}")
        else:
            lines.append(f"  {where}: no hot partition (hottest {row['key']} peaks at {peak})")
    lines.extend(f"  {line}" for line in unseen or [])
    return lines


def _rate(value: float) -> str:
    """A rate as the verdict shows it: whole units, one decimal under ten (never a 0 that is not)."""
    return whole(value) if value >= 10 or value == 0 else f"{shown(value):.1f}"
