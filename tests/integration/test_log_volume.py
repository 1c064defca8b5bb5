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
from hotkeys.cli.events import stream_record
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.consumer.pipeline import BatchOutcome
from hotkeys.detector.handlers import app
from hotkeys.detector.handlers.app import build_handler, container_from
from hotkeys.detector.observability import logger

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
                table=TABLE,
                event_name="REMOVE" if ttl else "INSERT",
                keys={"pk": item["pk"]},
                sequence=str(10**39 + position),  # DynamoDB's longest sequence numbers: 40 digits
                event_time=T0 + position // 100,
                new_image=None if ttl else item,
                old_image=item if ttl else None,
                ttl_delete=ttl,
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
    # When it runs a batch, then another a minute later
    handler(_event(_records(1000)), DeployedContext())  # type: ignore[arg-type]
    first = [line for line in capfd.readouterr().out.splitlines() if line.strip()]
    now[0] = app.METRICS_SECONDS
    handler(_event(_records(1000)), DeployedContext())  # type: ignore[arg-type]
    lines = [line for line in capfd.readouterr().out.splitlines() if line.strip()]
    # Then the first wrote nothing (the archive's per-object line is DEBUG), and the second one line: the
    # EMF line, summing both (the ItemsArchived metric counts what the archive did)
    assert first == []
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
        judge = cost.JUDGE_RUNS_PER_MONTH * (judge_run_bytes() + system)
        written = invocations * sent + minutes * (len(emf) + 1) + judge
        charged = cost.log_bytes(inputs, invocations)
        assert written <= charged <= 1.2 * written, (level, written, charged)


def judge_run_bytes() -> int:
    """What one judge run prints: its EMF line and its "judge run" line (a run of five looks)."""
    from hotkeys.detector.alerts.judge import LookOutcome
    from hotkeys.detector.config import Settings
    from hotkeys.detector.handlers import judge_app

    class Judge:
        def look(self) -> LookOutcome:
            return LookOutcome(tables=1, heads=40, published=0)

    clock = [1_796_083_200.0]
    printed = io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        redirect_stdout(printed),
    ):
        patch.setattr(judge_app, "_this_judge", lambda: (Settings(stats_table_name="s"), Judge()))
        patch.setattr(judge_app.time, "time", lambda: clock[0])
        patch.setattr(judge_app.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
        patch.setattr(logger.registered_handler, "stream", printed)
        judge_app.handler({"source": "aws.events"}, DeployedContext())  # type: ignore[arg-type]
    lines = [line for line in printed.getvalue().splitlines() if line.strip()]
    assert len(lines) == 2, lines  # the EMF line and the run's line
    return sum(len(line) + 1 for line in lines)


def test_the_judges_run_writes_what_the_cost_model_charges(deployed_environment: dict[str, str]) -> None:
    written = judge_run_bytes()
    assert 0.8 * cost.JUDGE_LOG_BYTES_PER_RUN <= written <= cost.JUDGE_LOG_BYTES_PER_RUN, written


def test_a_count_an_alarm_watches_is_written_at_once(
    deployed_environment: dict[str, str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logger.registered_handler, "stream", sys.stdout)
    now = [0.0]
    container = dataclasses.replace(
        container_from(deployed_environment, AwsClients()), metrics=app.MetricsBuffer(lambda: now[0])
    )
    handler = build_handler(lambda: container)
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
