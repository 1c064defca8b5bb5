"""What the function writes to CloudWatch Logs per invocation is what `hotkeys cost` charges for.

The handler runs as deployed (INFO logs, EMF metrics on, stats table, alerts and archive) with names
as long as real ones: a CDK-generated function name, a real shard id, 40-digit sequence numbers. The
cost model's per-line figures must cover what it writes and overstate it by at most a fifth.
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from contextlib import redirect_stdout
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hotkeys.cli import cost
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.consumer.pipeline import BatchOutcome
from hotkeys.detector.handlers import app
from hotkeys.detector.handlers.app import build_handler, container_from
from hotkeys.detector.names import READ_METRIC_PREFIX, metric_name
from hotkeys.detector.observability import logger
from hotkeys.emulator.events import ItemChange, stream_record

T0 = 1_796_083_200
TABLE = "customer-orders-prod"
SHARD = "shardId-00000001796083200000-7f3a9c1e"
FUNCTION = "HotKeyDetector-DetectorFunction8C1F2A3B-AbCdEfGhIjKl"


# Lambda's system records of one invocation in the JSON log format (telemetry schema: platform.start and
# platform.report, with the X-Ray context active tracing adds), with values of a warm invocation.
_TRACE = {
    "spanId": "54565fb41ac79632",
    "type": "X-Amzn-Trace-Id",
    "value": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
}
SYSTEM_RECORDS = (
    {
        "time": "2026-12-01T00:00:15.064Z",
        "type": "platform.start",
        "record": {"requestId": "8f507cfc-1a2b-4697-b07a-ac58fc914c95", "version": "$LATEST", "tracing": _TRACE},
    },
    {
        "time": "2026-12-01T00:00:15.402Z",
        "type": "platform.report",
        "record": {
            "requestId": "8f507cfc-1a2b-4697-b07a-ac58fc914c95",
            "metrics": {"durationMs": 337.52, "billedDurationMs": 338, "memorySizeMB": 512, "maxMemoryUsedMB": 131},
            "tracing": _TRACE,
            "status": "success",
        },
    },
)


@dataclass
class DeployedContext:
    function_name: str = FUNCTION
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:eu-central-1:123456789012:function:{FUNCTION}"
    aws_request_id: str = "8f507cfc-1a2b-4697-b07a-ac58fc914c95"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _records(count: int) -> list[dict[str, Any]]:
    records = []
    for position in range(count):
        item = {"pk": f"customer#{position % 37:05d}", "status": "PAID", "total": position, "expireAt": T0}
        ttl = position % 10 == 9
        records.append(
            stream_record(
                ItemChange(
                    event_name="REMOVE" if ttl else "INSERT",
                    keys={"pk": item["pk"]},
                    new_image=None if ttl else item,
                    old_image=item if ttl else None,
                    ttl_delete=ttl,
                ),
                table=TABLE,
                sequence=str(10**39 + position),
                event_time=T0 + position // 100,
            )
        )
    return records


@pytest.fixture
def deployed_environment(aws: None, stats_table_name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")  # as deployed
    # Active tracing: Lambda sets the trace header and the logger adds its id to every line
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
    boto3.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    boto3.client("s3").create_bucket(Bucket="hotkeys-archive")
    topic = boto3.client("sns").create_topic(Name="hotkeys-alerts")["TopicArn"]
    return {
        "STATS_TABLE_NAME": stats_table_name,
        "ARCHIVE_BUCKET_NAME": "hotkeys-archive",
        "ALERT_TOPIC_ARN": topic,
        "TTL_ATTRIBUTE": "expireAt",
    }


def _event(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "Records": records,
        "shardId": SHARD,
        "window": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"},
        "state": {},
        "isFinalInvokeForWindow": False,
    }


def test_a_container_writes_one_metrics_line_a_minute_as_the_cost_model_charges(
    deployed_environment: dict[str, str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (The logger keeps the stdout it found at import, pytest's then: it writes to this test's.)
    monkeypatch.setattr(logger.registered_handler, "stream", sys.stdout)
    # Given the deployed handler, its container's metrics on a clock of our own, and full batches of a
    # busy shard, a tenth of each TTL deletions
    now = [0.0]
    container = container_from(deployed_environment, AwsClients())
    container = dataclasses.replace(container, metrics=app.MetricsBuffer(lambda: now[0]))
    handler = build_handler(lambda: container)
    capfd.readouterr()

    def run_at(second: float) -> list[str]:
        now[0] = second
        handler(_event(_records(1000)), DeployedContext())  # type: ignore[arg-type]
        return [line for line in capfd.readouterr().out.splitlines() if line.strip()]

    # When it runs a batch (its first: its line is written at once), another half a minute later, and one
    # a minute after the first
    assert len(run_at(0)) == 1
    within = run_at(app.METRICS_SECONDS / 2)
    lines = run_at(app.METRICS_SECONDS)
    # Then the second wrote nothing (the archive's per-object line is DEBUG), and the third one line: the
    # EMF line, summing both (the ItemsArchived metric counts what the archive did)
    assert within == []
    (emf,) = lines
    assert json.loads(emf)["ItemsArchived"] == [200] and json.loads(emf)["RecordsCounted"] == [1800]
    # and the model charges for it, within a fifth of its size
    assert 0.8 * cost.EMF_LINE_BYTES <= len(emf) + 1 <= cost.EMF_LINE_BYTES
    # And what a month is billed for covers a line per container-minute and the judge's runs with their
    # system records, and each consumer invocation's system records where its level sends them (INFO;
    # the stack's WARN does not), overstating them by at most a fifth
    system = sum(len(json.dumps(record, separators=(",", ":"))) + 1 for record in SYSTEM_RECORDS)
    minutes = cost.SECONDS_PER_MONTH / 60
    for level, sent in (("WARN", 0), ("INFO", system)):
        inputs = cost.CostInputs(writes_per_second=1000, consumer_system_log_level=level)
        invocations = cost.consumer_invocations(inputs)
        wakes = cost.judge_looks(inputs) + cost.JUDGE_WATCHDOG_RUNS_PER_MONTH
        judge = wakes * (max(judge_wake_bytes(watchdog=False), judge_wake_bytes(watchdog=True)) + system)
        written = invocations * sent + minutes * (len(emf) + 1) + judge
        charged = cost.log_bytes(inputs, invocations)
        assert written <= charged <= 1.2 * written, (level, written, charged)


def judge_wake_bytes(watchdog: bool) -> int:
    """What one wake-up of the judge prints (its EMF line and its "judge look" line): a look woken by its
    chain's message, or a watchdog run that finds the look claimed by the chain."""
    from hotkeys.detector.alerts.judge import LookOutcome
    from hotkeys.detector.alerts.ports import LookClaim
    from hotkeys.detector.config import Settings
    from hotkeys.detector.handlers import judge_app
    from hotkeys.emulator.emulation import MemoryLookClaims

    class Judge:
        def look(self) -> LookOutcome:
            return LookOutcome(tables=1, heads=40, published=0)

    due = 1_796_083_206
    claims = MemoryLookClaims()
    if watchdog:  # the chain's claim of the look, a moment before, and its end
        claims.claim(LookClaim(due, due + 0.3, due + 0.31))
    container = judge_app.Container(
        Settings(stats_table_name="s"),
        Judge(),  # type: ignore[arg-type]
        claims,
        lambda _due, _delay, _sent_at: None,
    )
    event: dict[str, Any] = (
        {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
        if watchdog
        else {"Records": [{"eventSource": "aws:sqs", "body": json.dumps({"due": due, "sent_at": due - 11.6})}]}
    )
    printed = io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        redirect_stdout(printed),
    ):
        patch.setattr(judge_app, "_container", lambda: container)
        patch.setattr(judge_app.time, "time", lambda: due + 0.5)
        patch.setattr(judge_app.time, "sleep", lambda _seconds: None)
        patch.setattr(logger.registered_handler, "stream", printed)
        judge_app.handler(event, DeployedContext())  # type: ignore[arg-type]
    lines = [line for line in printed.getvalue().splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2, lines  # the EMF line (a look made) and the wake-up's line
    return sum(len(line) + 1 for line in lines)


def test_the_judges_wake_ups_write_what_the_cost_model_charges(deployed_environment: dict[str, str]) -> None:
    look, watchdog = judge_wake_bytes(watchdog=False), judge_wake_bytes(watchdog=True)
    assert 0.8 * cost.JUDGE_LOG_BYTES_PER_LOOK <= look <= cost.JUDGE_LOG_BYTES_PER_LOOK, look
    assert watchdog <= cost.JUDGE_LOG_BYTES_PER_LOOK, watchdog


def _printing_handler(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch, now: list[float] | None = None
) -> Any:
    """The deployed handler, its log lines on stdout, its container's metrics on the clock ``now[0]``."""
    clock = now if now is not None else [0.0]
    monkeypatch.setattr(logger.registered_handler, "stream", sys.stdout)
    container = dataclasses.replace(
        container_from(environment, AwsClients()), metrics=app.MetricsBuffer(lambda: clock[0])
    )
    return build_handler(lambda: container)


def test_a_count_an_alarm_watches_is_written_at_once(
    deployed_environment: dict[str, str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = _printing_handler(deployed_environment, monkeypatch)
    # Given a batch with a record without images (the stream is KEYS_ONLY: an alarm watches that count)
    records = _records(10)
    del records[0]["dynamodb"]["NewImage"]
    capfd.readouterr()
    handler(_event(records), DeployedContext())  # type: ignore[arg-type]
    # Then its metrics line is written now, not a minute later
    emf = [json.loads(line) for line in capfd.readouterr().out.splitlines() if '"_aws"' in line]
    assert len(emf) == 1 and emf[0]["RecordsWithoutImages"] == [1]


def test_each_counted_index_adds_what_the_cost_model_charges(
    deployed_environment: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    # Given the metrics of one invocation without and with a counted index of realistic name length
    sizes = []
    for index_wcu in ({}, {(TABLE, "by-status-and-created-at"): 123_456}):
        capfd.readouterr()
        app._record_metrics(BatchOutcome(counted=1000, index_wcu=index_wcu))
        app.metrics.flush_metrics()
        # When the EMF line is written
        (line,) = [line for line in capfd.readouterr().out.splitlines() if '"_aws"' in line]
        sizes.append(len(line))
    # Then the index adds what the model charges per index, within a fifth
    assert 0.8 * cost.EMF_BYTES_PER_INDEX <= sizes[1] - sizes[0] <= cost.EMF_BYTES_PER_INDEX


def test_the_modelled_system_records_have_the_documented_shape() -> None:
    # The model's system records are valid JSON with the fields of the schema's records
    start, report = (json.loads(record) for record in cost.PLATFORM_RECORDS)
    assert [(r["type"], set(r["record"])) for r in (start, report)] == [
        (record["type"], set(record["record"])) for record in SYSTEM_RECORDS
    ]
    assert set(report["record"]["metrics"]) == set(SYSTEM_RECORDS[1]["record"]["metrics"])  # type: ignore[index]


def _metric_names(line: dict[str, Any]) -> set[str]:
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    return {metric["Name"] for metric in directive["Metrics"]}


def test_a_rare_count_is_published_only_in_a_line_where_it_happened(
    deployed_environment: dict[str, str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (CloudWatch bills a custom metric for each hour in which it is published: a zero costs as much as a count)
    now = [0.0]
    handler = _printing_handler(deployed_environment, monkeypatch, now)
    healthy = [record for record in _records(300) if record["eventName"] == "INSERT"]

    def lines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        capfd.readouterr()
        handler(_event(records), DeployedContext())  # type: ignore[arg-type]
        return [json.loads(line) for line in capfd.readouterr().out.splitlines() if '"_aws"' in line]

    # Given a minute of healthy inserts (no TTL deletion, nothing redelivered, every image there): the
    # container's first line at once, then nothing until a minute has passed
    assert len(lines(healthy[:50])) == 1
    now[0] = app.METRICS_SECONDS / 2
    assert lines(healthy[50:100]) == []
    now[0] = app.METRICS_SECONDS
    (quiet,) = lines(healthy[100:200])
    # Then its line publishes RecordsCounted and the table's records read alone: no rare count, not even
    # as a zero
    assert _metric_names(quiet) == {"RecordsCounted", metric_name(READ_METRIC_PREFIX, TABLE)}
    assert not {name for name, _ in app.RARE_METRICS} & set(quiet)
    # and the flush figures ride along as properties of the line, not metrics
    assert {name for name, _ in app.LINE_PROPERTIES} <= set(quiet)
    # When a batch brings a record without images (the stream is not NEW_AND_OLD_IMAGES: an alarm watches it)
    broken = healthy[200:210]
    del broken[0]["dynamodb"]["NewImage"]
    (line,) = lines(broken)
    # Then that count is published, at once
    assert "RecordsWithoutImages" in _metric_names(line) and line["RecordsWithoutImages"] == [1]
    # And items whose TTL DynamoDB ignores (milliseconds) are published in the minute's line
    late = healthy[210:220]
    for record in late:
        record["dynamodb"]["NewImage"]["expireAt"] = {"N": str(T0 * 1000)}
    assert lines(late) == []
    now[0] = 2 * app.METRICS_SECONDS
    (minute,) = lines(healthy[220:230])
    assert "TtlIgnoredItems" in _metric_names(minute) and minute["TtlIgnoredItems"] == [10]
