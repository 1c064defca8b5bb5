"""What the function writes to CloudWatch Logs per invocation is what `hotkeys cost` charges for.

The handler runs as deployed (INFO logs, EMF metrics on, stats table, alerts and archive) with names
as long as real ones: a CDK-generated function name, a real shard id, 40-digit sequence numbers. The
cost model's per-line figures must cover what it writes and overstate it by at most a fifth.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hotkeys.cli import cost
from hotkeys.cli.events import stream_record
from hotkeys.detector import app
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.app import build_handler, container_from
from hotkeys.detector.observability import logger
from hotkeys.detector.pipeline import BatchOutcome

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


def test_an_invocation_writes_what_the_cost_model_charges(
    deployed_environment: dict[str, str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (The logger keeps the stdout it found at import, pytest's then: it writes to this test's.)
    monkeypatch.setattr(logger.registered_handler, "stream", sys.stdout)
    # Given the deployed handler and a full batch of a busy shard, a tenth of it TTL deletions
    handler = build_handler(lambda: container_from(deployed_environment, AwsClients()))
    event = {
        "Records": _records(1000),
        "shardId": SHARD,
        "window": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"},
        "state": {},
        "isFinalInvokeForWindow": False,
    }
    capfd.readouterr()
    # When it runs
    handler(event, DeployedContext())  # type: ignore[arg-type]
    lines = [line for line in capfd.readouterr().out.splitlines() if line.strip()]
    # Then it writes one line, the EMF metrics line: the archive's per-object line is DEBUG (the
    # ItemsArchived metric counts what it said)
    emf = [line for line in lines if '"_aws"' in line]
    assert len(emf) == 1 and len(lines) == 1, lines
    assert json.loads(emf[0])["ItemsArchived"] == [100]
    # and the model charges for it, within a fifth of its size
    assert 0.8 * cost.EMF_LINE_BYTES <= len(emf[0]) + 1 <= cost.EMF_LINE_BYTES
    # And what a month of such invocations is billed for covers that line and Lambda's two system
    # records of the invocation, overstating them by at most a fifth
    written = len(emf[0]) + 1 + sum(len(json.dumps(record, separators=(",", ":"))) + 1 for record in SYSTEM_RECORDS)
    charged = cost.log_bytes(cost.CostInputs(writes_per_second=1000), invocations=10**6) / 10**6
    assert written <= charged <= 1.2 * written, (written, charged)


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
