"""Alerts that know the cause: a throttle alarm's minutes, the keys DynamoDB throttled in them, the limit hit.

The function is a CloudWatch alarm action (``infra/throttle_explainer.py``). CloudWatch user guide,
"Invoke a Lambda function from an alarm": "CloudWatch alarms guarantees an asynchronous invocation of
the Lambda function for a given state change" (resource policy for the principal
``lambda.alarms.cloudwatch.amazonaws.com``). The event, per that page's example payload for a metric
alarm: ``{"source": "aws.cloudwatch", "alarmArn", "accountId", "time", "region", "alarmData":
{"alarmName", "state": {"value", "reason", "reasonData"?, "timestamp"}, "previousState": {...},
"configuration": {"description", "metrics": [{"id", "metricStat": {"metric": {"namespace", "name",
"dimensions": {NAME: VALUE}}, "period", "stat", "unit"?}, "returnData"}]}}}``; a metric-math alarm lists
``expression`` entries beside its ``metricStat`` ones. Timestamps read ``2023-08-04T12:36:15.490+0000``;
``reasonData`` is a JSON string whose ``evaluatedDatapoints`` (``timestamp`` each) are the minutes the
alarm judged. Only ``alarmName``, ``state.value`` and the metrics are required here; every other field
is optional, and the minutes fall back to the ``LOOKBACK_SECONDS`` before the state's timestamp.

A table the stack does not own is alarmed on every GSI at once by a Metrics Insights query (its GSIs are
unknown at synth, ``infra/throttle_alarms.py``): the event's entry holds the query as ``expression`` and
no ``metricStat``. The table is read from the query (``metrics_insights``); the GSIs from DescribeTable at
run time; each GSI's throttled keys from its own rule. A query whose table cannot be told is one line in
the function's answer, never an exception: CloudWatch's own notification of the alarm still reaches the
alert topic.

Why an alarm action and not a subscriber of the alert topic: the topic carries the detector's own alerts
(a subscriber would receive this function's messages too, and have to filter them out to avoid a loop),
and a topic subscription would receive CloudWatch's SNS form of the alarm (``alerts/inbound.py``), whose
``Trigger`` names one metric; the Lambda action's event names every metric of the alarm.

Which limit, and what fixes it: the alarmed metric's cause in ``hotkeys.throttling`` (the one catalogue of
DynamoDB's throttle causes, their metrics and their fixes; ``METRIC_BY_NAME``, ``CAUSE_BY_LABEL``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import SUBJECT_LIMIT, display_key, printable_ascii
from hotkeys.detector.alerts.rules import Reason
from hotkeys.detector.domain.diagnosis import key_in_text
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.detector.throttling.metrics_insights import UnreadableQuery, is_query, parse_query
from hotkeys.detector.throttling.ports import IncidentReader, Publish, TableInsightsPort
from hotkeys.detector.throttling.throttle_sources import Source
from hotkeys.detector.throttling.throttles import InsightsUnavailable, ThrottledKey, ThrottlePicture, read_throttles
from hotkeys.throttling import (
    CAUSE_BY_KEY,
    CAUSE_BY_LABEL,
    INDEX_DIMENSION,
    METRIC_BY_NAME,
    NAMESPACE,
    OPERATIONS,
    TABLE_DIMENSION,
)

LOOKBACK_SECONDS = 300
KEYS_NAMED = 10
# DynamoDB's table names (developer guide, "Supported data types and naming rules"): 3 to 255 of these. A
# name read from a query is checked before it reaches an API call or a message.
TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")
CANNOT_TELL = "cannot tell the table from the alarm's query"
QUERY_SHOWN = 300  # characters of an unreadable query quoted in the answer

# (``hotkeys.throttling``: the one catalogue of causes and their fixes)
KEY_RANGE = CAUSE_BY_KEY["KeyRange"].label


@dataclass(frozen=True)
class AlarmedMetric:
    """One DynamoDB throttle metric an alarm watches, with its dimensions and period (not
    ``throttling.ThrottleMetric``, the catalogue of metric names the stack can alarm on): the table's own
    (``index`` None), one GSI's, or the sum over every GSI of the table (``every_index``, ``index`` None: a
    Metrics Insights query that names no index)."""

    name: str
    table: str
    index: str | None
    period: int
    every_index: bool = False

    @property
    def limit(self) -> str | None:
        """The cause's label (``Cause.label``), or None for a metric that is not a throttle metric."""
        metric = METRIC_BY_NAME.get(self.name)
        return metric.cause.label if metric is not None else None

    @property
    def operation(self) -> str:
        operation = next((operation for operation in OPERATIONS if self.name.startswith(operation)), None)
        return f"{operation.lower()}s" if operation is not None else "requests"

    @property
    def scope(self) -> tuple[str, str | None, bool]:
        """What one explanation covers: the table, one GSI, or every GSI of the table."""
        return self.table, self.index, self.every_index


@dataclass(frozen=True)
class AlarmChange:
    """A Lambda alarm action's event, the parts we use."""

    name: str
    state: str
    metrics: list[AlarmedMetric]
    start: int  # the first minute the alarm judged (epoch seconds)
    end: int  # the state change (epoch seconds)
    arn: str | None = None
    reason: str | None = None
    unread: list[str] = field(default_factory=list)  # one line per query whose table cannot be told


class NotAnAlarmEvent(ValueError):
    """The event is not a CloudWatch alarm action's (the handler logs it and returns)."""


def parse_time(text: str) -> int:
    """``2023-08-04T12:36:15.490+0000`` (CloudWatch's alarm timestamps) or ISO 8601, as epoch seconds."""
    for pattern in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            return int(datetime.strptime(text, pattern).timestamp())
        except ValueError:
            continue
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def parse_alarm_event(event: Any) -> AlarmChange:
    data = event.get("alarmData") if isinstance(event, Mapping) else None
    if not isinstance(data, Mapping) or not isinstance(data.get("alarmName"), str):
        raise NotAnAlarmEvent("no alarmData.alarmName: not a CloudWatch alarm action's event")
    state = _mapping(data.get("state"))
    value = state.get("value")
    if not isinstance(value, str):
        raise NotAnAlarmEvent("no alarmData.state.value")
    configuration = _mapping(data.get("configuration"))
    metrics: list[AlarmedMetric] = []
    unread: list[str] = []
    for entry in configuration.get("metrics") or []:
        try:
            metrics.extend(_metrics(entry))
        except UnreadableQuery as error:
            query = " ".join(str(_mapping(entry).get("expression")).split())
            shown = query if len(query) <= QUERY_SHOWN else query[: QUERY_SHOWN - 3] + "..."
            unread.append(f"{CANNOT_TELL}: {error} (query: {shown})")
    end = _time_of(state.get("timestamp")) or _time_of(event.get("time"))
    if end is None:
        raise NotAnAlarmEvent("no state timestamp")
    judged = _evaluated_minutes(state.get("reasonData"))
    period = max((m.period for m in metrics), default=60)
    start = min(judged) if judged else end - max(LOOKBACK_SECONDS, period)
    return AlarmChange(
        name=data["alarmName"],
        state=value,
        metrics=metrics,
        start=start,
        end=max(end, max(judged) + period if judged else end),
        arn=event.get("alarmArn") if isinstance(event.get("alarmArn"), str) else None,
        reason=state.get("reason") if isinstance(state.get("reason"), str) else None,
        unread=unread,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _metrics(entry: Any) -> list[AlarmedMetric]:
    """The DynamoDB metrics of one ``configuration.metrics`` entry: its ``metricStat``, or its Metrics
    Insights query; none for another namespace or for metric math over the alarm's other entries."""
    entry = _mapping(entry)
    if "metricStat" in entry:
        metric = _metric(entry)
        return [metric] if metric is not None else []
    expression = entry.get("expression")
    if isinstance(expression, str) and is_query(expression):
        period = entry.get("period")
        return _queried(expression, int(period) if isinstance(period, int | float) and period > 0 else 60)
    return []


def _queried(expression: str, period: int) -> list[AlarmedMetric]:
    """The metrics a Metrics Insights query sums; ``UnreadableQuery`` when its table cannot be told.

    A query naming a GSI (``GlobalSecondaryIndexName = '...'``) is that GSI's metric; a SCHEMA with the
    index dimension and no index named is every GSI (the stack's own query); a SCHEMA without it, the
    table's own metric; ``FROM "AWS/DynamoDB"`` with no SCHEMA matches both the table's and every GSI's."""
    query = parse_query(expression)
    if query.namespace != NAMESPACE:
        return []
    table = query.fixed.get(TABLE_DIMENSION)
    if table is None:
        raise UnreadableQuery(f"its WHERE clause names no single {TABLE_DIMENSION} (a {TABLE_DIMENSION} = '...')")
    if not TABLE_NAME.fullmatch(table):
        raise UnreadableQuery(f"{table[:80]!r} is not a DynamoDB table name")
    if query.schema is not None and TABLE_DIMENSION not in query.schema:
        raise UnreadableQuery(f"its SCHEMA has no {TABLE_DIMENSION}, so it matches no table's metric")
    index = query.fixed.get(INDEX_DIMENSION)
    if index is not None:
        return [AlarmedMetric(query.metric, table, index, period)]
    table_metric = AlarmedMetric(query.metric, table, None, period)
    every_index = AlarmedMetric(query.metric, table, None, period, every_index=True)
    if query.schema is None:
        return [table_metric, every_index]
    return [every_index] if INDEX_DIMENSION in query.schema else [table_metric]


def _metric(entry: Any) -> AlarmedMetric | None:
    stat = _mapping(_mapping(entry).get("metricStat"))
    metric = _mapping(stat.get("metric"))
    if metric.get("namespace") != NAMESPACE:
        return None
    dimensions = _mapping(metric.get("dimensions"))
    table, name = dimensions.get(TABLE_DIMENSION), metric.get("name")
    if not isinstance(table, str) or not isinstance(name, str):
        return None
    index = dimensions.get(INDEX_DIMENSION)
    period = stat.get("period")
    return AlarmedMetric(name, table, index if isinstance(index, str) else None, int(period) if period else 60)


def _time_of(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _evaluated_minutes(reason_data: Any) -> list[int]:
    try:
        data = json.loads(reason_data) if isinstance(reason_data, str) else None
    except ValueError:
        return []
    points = data.get("evaluatedDatapoints") if isinstance(data, Mapping) else None
    found = [_time_of(p.get("timestamp")) for p in points or [] if isinstance(p, Mapping)]
    return [t for t in found if t is not None]


@dataclass(frozen=True)
class NamedKey:
    key: str
    index: str | None
    requests: int
    minutes: int
    confirmed: bool  # a stream partition-limit incident on this key came first


@dataclass
class Explanation:
    """What one alarm's minutes show: the limit hit, the keys throttled, and what to do. ``every_index``: the
    alarm sums every GSI of the table (``index`` None); ``indexes`` then holds each GSI whose rule was read
    and its throttled requests in the minutes (0: none), most first."""

    alarm: str
    table: str
    index: str | None
    limits: list[str]
    operations: list[str]
    start: int
    end: int
    keys: list[NamedKey] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    more_keys: int = 0
    every_index: bool = False
    indexes: dict[str, int] = field(default_factory=dict)

    @property
    def throttled_indexes(self) -> list[str]:
        return [index for index, requests in self.indexes.items() if requests]

    @property
    def named_index(self) -> str | None:
        """The one GSI this explanation is about, if one: its own, or the only GSI of an every-index alarm
        whose rule names throttled keys."""
        if self.index is not None or not self.every_index:
            return self.index
        throttled = self.throttled_indexes
        return throttled[0] if len(throttled) == 1 else None

    @property
    def where(self) -> str:
        if self.named_index is not None:
            return f"{self.table} index {self.named_index}"
        if not self.every_index:
            return self.table
        throttled = self.throttled_indexes
        return f"{self.table} indexes {', '.join(throttled)}" if throttled else f"a GSI of {self.table}"

    @property
    def confirmed(self) -> list[NamedKey]:
        return [k for k in self.keys if k.confirmed]


def explain(change: AlarmChange, insights: TableInsightsPort, incidents: IncidentReader) -> list[Explanation]:
    """One explanation per table, GSI, or every-GSI sum the alarm watches (usually one)."""
    by_scope: dict[tuple[str, str | None, bool], list[AlarmedMetric]] = {}
    for metric in change.metrics:
        by_scope.setdefault(metric.scope, []).append(metric)
    explanations = []
    for (table, index, every_index), metrics in by_scope.items():
        notes: list[str] = []
        if every_index:
            sources, listed = _every_index(insights, table)
            notes += [listed] if listed else []
        else:
            sources = [Source(table, index)]
        found = read_throttles(insights, sources, change.start, change.end)
        notes += found.notes
        try:
            stream = _stream_incidents(incidents, table)
        except _IncidentsUnreadable as error:
            stream = {}
            notes.append(f"the stream's open incidents could not be read ({error}), so none is marked confirmed")
        keys = _named(found.keys, stream)
        explanation = Explanation(
            alarm=change.name,
            table=table,
            index=index,
            limits=list(dict.fromkeys(m.limit for m in metrics if m.limit is not None)),
            operations=list(dict.fromkeys(m.operation for m in metrics)),
            start=change.start,
            end=change.end,
            keys=keys[:KEYS_NAMED],
            notes=notes,
            more_keys=max(0, len(keys) - KEYS_NAMED),
            every_index=every_index,
            indexes=_per_index(found) if every_index else {},
        )
        if (index is not None or every_index) and "writes" in explanation.operations and not found.keys:
            # DynamoDB: "Write throttling caused by insufficient write capacity for a global secondary
            # index is not measured" by Contributor Insights: the stream's index incidents name them.
            if every_index:
                named = sorted(f"{key} ({on})" for on, key in stream if on is not None)
            else:
                named = sorted(key for on, key in stream if on == index)
            explanation.notes.append(
                "Contributor Insights does not measure write throttling caused by an index (GSI back-pressure)"
                + (f"; the stream's index count names {', '.join(named)}" if named else "")
            )
        explanations.append(explanation)
    return explanations


def _every_index(insights: TableInsightsPort, table: str) -> tuple[list[Source], str | None]:
    """The GSIs an every-index alarm sums, as DescribeTable lists them now (the query names none, and the
    stack could not list them at synth); a note when there are none to read."""
    try:
        indexes = insights.global_indexes(table)
    except InsightsUnavailable as error:
        return [], f"the GSIs of {table} could not be listed: {error}; no GSI's throttled keys are named"
    if not indexes:
        return [], f"DescribeTable lists no GSI on {table} now: no GSI's throttled keys to read"
    return [Source(table, index) for index in indexes], None


def _per_index(found: ThrottlePicture) -> dict[str, int]:
    """Each GSI whose rule was read, and its throttled requests in the minutes, most first."""
    totals = {source.index: 0 for source in found.read if source.index is not None}
    for item in found.keys:
        if item.index in totals:
            totals[item.index] += item.requests
    return dict(sorted(totals.items(), key=lambda pair: (-pair[1], pair[0])))


class _IncidentsUnreadable(RuntimeError):
    pass


def _stream_incidents(incidents: IncidentReader, table: str) -> dict[tuple[str | None, str], int]:
    """The table's open partition-limit incidents from the stream, as (index or None, key), and when each
    fired."""
    # The incidents only add "confirmed": whatever fails reading them (the port's error, denied, throttled),
    # the alert still goes out, and says the stream's side could not be read.
    try:
        found = incidents.open_incidents(table)
    except Exception as error:
        raise _IncidentsUnreadable(str(error).splitlines()[0][:160] if str(error) else type(error).__name__) from None
    return {
        (incident.index, incident.key): incident.fired_window
        for incident, _version in found
        if incident.reason is Reason.PARTITION_LIMIT and incident.firing
    }


def _named(throttled: Sequence[ThrottledKey], stream: Mapping[tuple[str | None, str], int]) -> list[NamedKey]:
    """Each (index, key)'s throttled requests and minutes; confirmed when the stream alerted on the same key
    of the same table or GSI no later than its last throttled minute."""
    totals: dict[tuple[str | None, str], list[int]] = {}
    for item in throttled:
        total = totals.setdefault((item.index, item.key), [0, 0, item.minute])
        total[0] += item.requests
        total[1] += 1
        total[2] = max(total[2], item.minute)
    named = [
        NamedKey(key, index, requests, minutes, (index, key) in stream and stream[(index, key)] <= last)
        for (index, key), (requests, minutes, last) in totals.items()
    ]
    named.sort(key=lambda k: (-k.requests, k.key, k.index or ""))
    return named


# ---- the message: the detector's alert shapes (one publish, a form per subscriber kind) ----


def subject(explanation: Explanation, key_display: str = "raw", salt: str = "") -> str:
    limit = explanation.limits[0] if explanation.limits else "unknown"
    tag = "[throttling, confirmed]" if explanation.confirmed else "[throttling]"
    head = f"{tag} {explanation.where}: {limit} limit"
    if explanation.keys and limit == KEY_RANGE:
        key = display_key(explanation.keys[0].key, key_display, salt)
        room = SUBJECT_LIMIT - len(head) - 2
        shown = printable_ascii(key[: SUBJECT_LIMIT + 1])
        head += f", {shown if len(shown) <= room else shown[: max(room - 3, 8)] + '...'}"
    return printable_ascii(head)[:SUBJECT_LIMIT]


def document(explanation: Explanation, key_display: str = "raw", salt: str = "") -> dict[str, Any]:
    """The JSON form (default, sqs, lambda, email-json subscribers)."""
    return {
        "kind": "throttle_explanation",
        "reason": Reason.THROTTLING,
        "status": Message.FIRING,
        "alarm": explanation.alarm,
        "table": explanation.table,
        "index": explanation.named_index,
        # An alarm on every GSI of the table: each GSI whose throttled keys were read, with its requests.
        "every_index": explanation.every_index,
        "indexes": [{"index": name, "throttled_requests": n} for name, n in explanation.indexes.items()],
        "limits": explanation.limits,
        "operations": explanation.operations,
        "minutes_start": iso_utc(explanation.start),
        "minutes_end": iso_utc(explanation.end),
        "keys": [
            {
                "key": display_key(k.key, key_display, salt),
                "index": k.index,
                "throttled_requests": k.requests,
                "minutes": k.minutes,
                "confirmed": k.confirmed,
            }
            for k in explanation.keys
        ],
        "more_keys": explanation.more_keys,
        "notes": explanation.notes,
        "what_to_do": [CAUSE_BY_LABEL[limit].what_to_do for limit in explanation.limits],
    }


def email_text(explanation: Explanation, key_display: str = "raw", salt: str = "") -> str:
    operations = " and ".join(explanation.operations)
    lines = [
        f"DynamoDB throttled {operations} on {explanation.where} between {iso_utc(explanation.start)} and "
        f"{iso_utc(explanation.end)} (alarm {explanation.alarm}).",
        "",
    ]
    for limit in explanation.limits or ["unknown"]:
        cause = CAUSE_BY_LABEL.get(limit)
        lines.append(f"Limit hit: {limit}: {cause.what_to_do if cause else 'not a DynamoDB throttle metric we know'}.")
    if explanation.every_index and explanation.indexes:
        each = ", ".join(f"{name} {n:,}" if n else f"{name} none" for name, n in explanation.indexes.items())
        lines += [
            "",
            f"The alarm sums every GSI of {explanation.table}. "
            f"Throttled requests per GSI (Contributor Insights): {each}.",
        ]
    if explanation.keys:
        lines += ["", "Keys throttled in those minutes (Contributor Insights, reads and writes together):"]
        for k in explanation.keys:
            shown = key_in_text(display_key(k.key, key_display, salt))
            confirmed = (
                " — confirmed: throttling (the stream alerted on this key's partition limit first)"
                if k.confirmed
                else ""
            )
            on = f" on index {k.index}" if explanation.every_index and k.index else ""
            lines.append(f"  '{shown}'{on}: {k.requests:,} throttled requests in {k.minutes} minute(s){confirmed}")
        if explanation.more_keys:
            lines.append(f"  ... and {explanation.more_keys} more")
    elif KEY_RANGE in explanation.limits:
        lines += ["", "No throttled keys could be named for these minutes."]
    for note in explanation.notes:
        lines.append(f"Note: {note}.")
    top = f" --index {explanation.named_index}" if explanation.named_index else ""
    lines += ["", f"See the stream's side: hotkeys top --stats-table <StatsTableName> --table {explanation.table}{top}"]
    return "\n".join(lines) + "\n"


def chatbot_payload(explanation: Explanation, key_display: str = "raw", salt: str = "") -> dict[str, Any]:
    """AWS Chatbot's custom notification schema, v1.0 (as ``messages.chatbot_payload``)."""
    title = subject(explanation, key_display, salt)
    return {
        "version": "1.0",
        "source": "custom",
        "id": f"{explanation.where}:{Reason.THROTTLING}:{explanation.alarm}:{explanation.end}",
        "content": {
            "textType": "client-markdown",
            "title": title,
            "description": email_text(explanation, key_display, salt),
            "keywords": [explanation.table, *_indexes_named(explanation), Reason.THROTTLING],
        },
        "metadata": {
            "threadId": f"throttling-{explanation.where}"[:256],
            "summary": title,
            "eventType": "ThrottlingExplained",
            "relatedResources": [explanation.table],
        },
    }


def sns_publish_arguments(
    topic_arn: str, explanation: Explanation, key_display: str = "raw", salt: str = ""
) -> dict[str, Any]:
    """One publish, one form per protocol, as the detector's alerts (``messages.sns_publish_arguments``)."""
    body = json.dumps(document(explanation, key_display, salt))
    structure = {
        "default": body,
        "sqs": body,
        "lambda": body,
        "email": email_text(explanation, key_display, salt),
        "email-json": body,
        "https": json.dumps(chatbot_payload(explanation, key_display, salt)),
    }
    attributes = [("table", explanation.table), ("reason", Reason.THROTTLING), ("status", Message.FIRING)]
    if explanation.named_index:
        attributes.append(("index", explanation.named_index))
    return {
        "TopicArn": topic_arn,
        "Subject": subject(explanation, key_display, salt),
        "Message": json.dumps(structure),
        "MessageStructure": "json",
        "MessageAttributes": {name: {"DataType": "String", "StringValue": value} for name, value in attributes},
    }


def _indexes_named(explanation: Explanation) -> list[str]:
    if explanation.index is not None:
        return [explanation.index]
    return explanation.throttled_indexes


@dataclass(frozen=True)
class Publication:
    """Where an explanation goes: SNS ``Publish`` on the alert topic (``topic_arn``), its keys shown as the
    detector's alerts show them (``key_display``, ``salt``: ``messages.display_key``)."""

    publish: Publish
    topic_arn: str
    key_display: str = "raw"
    salt: str = ""

    def send(self, explanation: Explanation) -> None:
        self.publish(**sns_publish_arguments(self.topic_arn, explanation, self.key_display, self.salt))


def handle_alarm(
    event: Any, insights: TableInsightsPort, incidents: IncidentReader, publication: Publication
) -> dict[str, Any]:
    """One alarm action: in ALARM, one alert per table or index it watches; other states publish nothing
    (the alarm's own notifications cover them). A query whose table cannot be told is a ``why`` (or, beside
    metrics that could be read, an ``unread``) line in the answer. Raises on a failed publish, so Lambda's
    asynchronous retries (then the function's on-failure destination) keep the alert."""
    change = parse_alarm_event(event)
    if change.state != "ALARM":
        return {"alarm": change.name, "state": change.state, "published": 0}
    if not change.metrics:
        why = change.unread[0] if change.unread else "no DynamoDB throttle metric"
        return {"alarm": change.name, "state": change.state, "published": 0, "why": why}
    published = 0
    for explanation in explain(change, insights, incidents):
        publication.send(explanation)
        published += 1
    outcome: dict[str, Any] = {"alarm": change.name, "state": change.state, "published": published}
    if change.unread:
        outcome["unread"] = change.unread
    return outcome
