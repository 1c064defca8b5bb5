"""Each watched table's StreamUnread alarm (infra/stream_unread.py): its shape in the template, and what it
does when CloudWatch evaluates it over the metrics the consumer really writes.

The behaviour tests run the consumer's own ``MetricsBuffer`` (the one EMF line a minute, at once after a
quiet minute) on a fake clock, for tables whose writes are invoked within Lambda's batching window, and
evaluate the alarm's expression *as synthesized* with a small reading of CloudWatch's metric math
(``IF``, ``FILL``, comparisons, ``AND``) and its "M out of N" rule over sliding periods at every phase.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkeys.deployment import EVENT_SOURCE
from hotkeys.detector.consumer.pipeline import BatchOutcome
from hotkeys.detector.handlers import app
from hotkeys.detector.names import READ_METRIC_PREFIX, metric_name
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.infra


def _unread_alarms(template: Synthesized) -> dict[str, dict[str, Any]]:
    """The StreamUnread alarms by the table their written metric names."""
    found = {}
    for alarm in template.resources("AWS::CloudWatch::Alarm").values():
        metrics = alarm["Properties"].get("Metrics") or []
        written = [m for m in metrics if m.get("Id") == "written"]
        if written:
            (dimension,) = written[0]["MetricStat"]["Metric"]["Dimensions"]
            found[str(dimension["Value"])] = alarm["Properties"]
    return found


@pytest.mark.parametrize("mode", ["multi", "lean", "existing", "compliance", "kinesis", "enable-kinesis"])
def test_every_watched_table_has_its_own_alarm_on_writes_none_read(
    synthesized: dict[str, Synthesized], mode: str
) -> None:
    template = synthesized[mode]
    alarms = _unread_alarms(template)
    # (the Kinesis modes too: their tables share one stream, and each is still alarmed on its own)
    tables = ["orders"] if mode in ("lean", "existing") else ["orders", "users"]
    # One per table, in a lean deployment too (it is how the detector says it stopped watching)
    assert sorted(alarms) == tables
    topic = {"Ref": template.logical_id("AWS::SNS::Topic", "Alerts")}
    # The consumer's metrics line, as the handler writes it for a batch of each table
    app._record_metrics(BatchOutcome(records_read=dict.fromkeys(tables, 3)))
    line = app.metrics.serialize_metric_set()
    app.metrics.clear_metrics()
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    (dimension_set,) = directive["Dimensions"]
    for table, alarm in alarms.items():
        metrics = {m["Id"]: m for m in alarm["Metrics"]}
        written = metrics["written"]["MetricStat"]
        read = metrics["read"]["MetricStat"]
        # The table's own writes, as DynamoDB counts them, against the reads of that table only
        assert written["Metric"]["Namespace"] == "AWS/DynamoDB"
        assert written["Metric"]["MetricName"] == "ConsumedWriteCapacityUnits" and written["Stat"] == "Sum"
        # and its TTL deletions (stream records that consume no write capacity)
        expired = metrics["expired"]["MetricStat"]
        assert expired["Metric"]["Namespace"] == "AWS/DynamoDB" and expired["Stat"] == "Sum"
        assert expired["Metric"]["MetricName"] == "TimeToLiveDeletedItemCount"
        assert expired["Metric"]["Dimensions"] == written["Metric"]["Dimensions"]
        assert read["Metric"]["Namespace"] == directive["Namespace"]
        assert read["Metric"]["MetricName"] == metric_name(READ_METRIC_PREFIX, table)
        assert read["Metric"]["MetricName"] in {m["Name"] for m in directive["Metrics"]}
        assert read["Metric"]["Dimensions"] == [{"Name": n, "Value": line[n]} for n in dimension_set]
        assert written["Period"] == read["Period"] == expired["Period"] == 120
        assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (3, 3)
        assert alarm["TreatMissingData"] == "notBreaching"
        # Named in what the subscriber reads, and sent to the alert topic both ways
        assert f"Table {table} writes and the detector reads none of its stream" in alarm["AlarmDescription"]
        assert topic in alarm["AlarmActions"] and topic in alarm["OKActions"]


@pytest.mark.parametrize("mode", ["kinesis", "enable-kinesis"])
def test_each_alarm_of_a_shared_kinesis_stream_reads_what_the_consumer_counts_for_its_table(
    synthesized: dict[str, Synthesized], mode: str, aws: None
) -> None:
    """The consumer's metrics of one Kinesis batch carrying both tables' changes (as ``hotkeys generate``
    writes them, copies included) name each table's reads apart: the metric its own alarm reads, with that
    table's records only."""
    import boto3

    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore
    from hotkeys.detector.config import Settings
    from hotkeys.detector.consumer.pipeline import Ports, parse_event, process_batch
    from hotkeys.emulator.generate import Workload
    from hotkeys.emulator.kinesis import KinesisOptions, deliveries
    from hotkeys.emulator.local import create_stats_table

    create_stats_table(boto3.client("dynamodb"), "stats")
    stats = DynamoStatsStore(boto3.resource("dynamodb").Table("stats"))
    tables = [Workload(table="orders", rate=5, duration=20, seed=1), Workload(table="users", rate=3, duration=20)]
    records = [made.lambda_record() for made in deliveries(tables, KinesisOptions(duplicates=0.1))]
    outcome = process_batch(
        parse_event({"Records": records}),
        Settings(stats_table_name="stats"),
        Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {})),
    )
    # every record read, each of its own table (a copy is read, and counted once)
    assert outcome.records_read == {"orders": 110, "users": 66} and outcome.copies == 16 and outcome.duplicates == 0
    app._record_metrics(outcome)
    line = app.metrics.serialize_metric_set()
    app.metrics.clear_metrics()
    alarms = _unread_alarms(synthesized[mode])
    assert sorted(alarms) == ["orders", "users"]
    for table, alarm in alarms.items():
        (read,) = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if m.get("Id") == "read"]
        assert line[read["MetricName"]] == [outcome.records_read[table]]


# -- CloudWatch's evaluation, read from its documentation -------------------------------------------------


def _evaluate(expression: str, values: dict[str, float | None]) -> float | None:
    """One period's value of a metric-math expression over its metrics' ``values`` (None: no datapoint)."""

    def fill(value: float | None, default: float) -> float:
        return default if value is None else value

    def if_(condition: Any, then: float, otherwise: float) -> float:
        return then if condition else otherwise

    python = re.sub(r"\bAND\b", " and ", re.sub(r"\bOR\b", " or ", expression))
    python = re.sub(r"\bIF\(", "if_(", re.sub(r"\bFILL\(", "fill(", python))
    namespace = {"fill": fill, "if_": if_, **values}
    # (the template's own expression, with no builtins)
    return float(eval(python, {"__builtins__": {}}, namespace))


def _alarm_times(
    alarm: dict[str, Any],
    writes: dict[int, float],
    reads: dict[int, float],
    end: int,
    expired: dict[int, float] | None = None,
) -> Iterator[int]:
    """The seconds (each minute, as CloudWatch evaluates) at which the alarm is in ALARM: its last
    ``EvaluationPeriods`` periods, each ending at the evaluation, all breaching (DatapointsToAlarm of as many)."""
    (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
    period = next(m["MetricStat"]["Period"] for m in alarm["Metrics"] if m.get("Id") == "written")
    periods, needed = alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]
    assert needed == periods  # (what this reading covers)
    for now in range(period * periods, end + 1, 60):
        breaching = 0
        for k in range(periods):
            start = now - (k + 1) * period
            series = {"written": writes, "read": reads, "expired": expired or {}}
            values = {
                name: sum(v for t, v in points.items() if start <= t < start + period) or None
                for name, points in series.items()
            }
            value = _evaluate(expression, values)
            breaching += value is not None and value >= alarm["Threshold"]
        if breaching >= needed:
            yield now


class _Consumer:
    """The consumer's containers for one table: each batch is one invocation of the next container in turn,
    its outcome added to that container's real MetricsBuffer; each EMF line is kept with its time."""

    def __init__(self, table: str, containers: int, monkeypatch: pytest.MonkeyPatch) -> None:
        self.table, self.now = table, 0.0
        self.reads: dict[int, float] = {}
        self.buffers = [app.MetricsBuffer(lambda: self.now) for _ in range(containers)]
        self.turn = 0
        monkeypatch.setattr(app, "_record_metrics", self._line)
        monkeypatch.setattr(app.metrics, "flush_metrics", lambda: None)

    def _line(self, totals: BatchOutcome) -> None:
        read = totals.records_read.get(self.table, 0)
        if read:
            self.reads[int(self.now)] = self.reads.get(int(self.now), 0) + read

    def invoke(self, at: float, records: int, read: bool = True) -> None:
        self.now = at
        buffer = self.buffers[self.turn % len(self.buffers)]
        self.turn += 1
        # (read=False: every record failed, reported as batch item failures; the function still answered)
        buffer.add(BatchOutcome(records_read={self.table: records} if read else {}))


def _run(
    alarm: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    write_seconds: list[int],
    delays: list[int],
    containers: int,
    blind_from: int | None = None,
    failing: bool = False,
) -> list[int]:
    consumer = _Consumer("orders", containers, monkeypatch)
    writes: dict[int, float] = {}
    for second, delay in zip(sorted(write_seconds), delays, strict=False):
        writes[second] = writes.get(second, 0) + 1
        if blind_from is not None and second >= blind_from:
            if failing:
                consumer.invoke(second + delay, 1, read=False)
            continue  # (mapping deleted, disabled or on the old stream: no invocation at all)
        consumer.invoke(second + delay, 1)
    end = max(write_seconds) + 900
    return list(_alarm_times(alarm, writes, consumer.reads, end))


@settings(max_examples=150, deadline=None)
@given(
    write_seconds=st.lists(st.integers(0, 3600), min_size=1, max_size=120),
    delays=st.lists(st.integers(0, EVENT_SOURCE.max_batching_window_seconds + 2), min_size=120, max_size=120),
    containers=st.integers(1, 3),
    phase=st.integers(0, 119),
)
def test_a_table_read_as_it_writes_never_alarms_however_sparse_its_writes(
    synthesized: dict[str, Synthesized],
    write_seconds: list[int],
    delays: list[int],
    containers: int,
    phase: int,
) -> None:
    (alarm,) = _unread_alarms(synthesized["existing"]).values()
    with pytest.MonkeyPatch.context() as monkeypatch:
        shifted = [second + phase for second in write_seconds]
        assert _run(alarm, monkeypatch, shifted, delays, containers) == []


@pytest.mark.parametrize("failing", [False, True], ids=["nothing invoked", "every record fails"])
@pytest.mark.parametrize("every", [1, 20, 60, 110])
@pytest.mark.parametrize("phase", [0, 17, 59, 101])
def test_a_table_left_unread_is_named_within_ten_minutes(
    synthesized: dict[str, Synthesized], monkeypatch: pytest.MonkeyPatch, failing: bool, every: int, phase: int
) -> None:
    (alarm,) = _unread_alarms(synthesized["existing"]).values()
    # Given a table writing every ``every`` seconds for an hour, read until 30 minutes in, then left unread
    # (its mapping gone, disabled or on an old stream; or every record of it failing)
    blind_from = 1800 + phase
    seconds = list(range(phase, 3600 + phase, every))
    alarmed = _run(alarm, monkeypatch, seconds, [3] * len(seconds), 2, blind_from, failing)
    # Then the alarm fires within ten minutes of the first unread write, and never before it
    first_unread = min(s for s in seconds if s >= blind_from)
    assert alarmed and first_unread < alarmed[0] <= first_unread + 600, (alarmed[:3], first_unread)


def test_a_table_that_only_expires_items_is_named_when_they_go_unread(synthesized: dict[str, Synthesized]) -> None:
    (alarm,) = _unread_alarms(synthesized["existing"]).values()
    # Given a table no one writes to, whose items expire (TTL deletions: stream records, no write units) every
    # 30 s, read until 20 minutes in
    expired = dict.fromkeys(range(0, 3600, 30), 1.0)
    reads = {t + 2: 1.0 for t in expired if t < 1200}
    alarmed = list(_alarm_times(alarm, {}, reads, 3600, expired))
    # Then its alarm fires within ten minutes of the first deletion left unread, and not before
    assert alarmed and 1200 < alarmed[0] <= 1800
