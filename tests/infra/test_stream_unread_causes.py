"""Each way a table's stream stops being read, applied as it happens (through Lambda's API on moto, answering as
Lambda documents it: ``AsDocumented``), is named by that table's StreamUnread alarm within ten minutes, while
two other tables keep writing and being read and raise nothing.

Three tables write to three stream shards each. Lambda's poller is played as its developer guide describes
it: a mapping reads the shards of its ``EventSourceArn`` only while its ``State`` is Enabled ("pause
invocation and resume later": UpdateEventSourceMapping), invoking the function with each shard's pending
records; "If your function returns an error, Lambda retries the batch until processing succeeds or the data
expires", at most ``MaximumRetryAttempts`` times ("When set to infinite (-1), failed records are retried
until the record expires"), then discards it and the shard goes on. The function is the deployed handler
(its own MetricsBuffer on the poller's clock); the alarm is the template's, evaluated by
tests/infra/test_stream_unread's reading of CloudWatch over the handler's EMF lines and the writes.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import boto3
import pytest

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.handlers import app
from hotkeys.detector.handlers.app import build_handler, container_from
from hotkeys.detector.handlers.stream_mapping_app import on_event
from hotkeys.detector.names import READ_METRIC_PREFIX
from hotkeys.detector.observability import logger
from tests.infra.conftest import Synthesized
from tests.infra.test_stream_unread import _alarm_times, _unread_alarms
from tests.integration.test_log_volume import DeployedContext, deployed_environment  # noqa: F401 (a fixture)
from tests.integration.test_stream_mapping import Sleeps, World, properties, request
from tests.support import create_source_table, write_record

pytestmark = pytest.mark.infra  # (the synthesized template's alarm)

SHARDS = 3
WRITE_EVERY = 60  # each shard of each table gets a write this often (seconds)
CAUSE_AT = 1200
END = 2400
POLL_EVERY = 5


class Poller:
    """Lambda's pollers for every mapping of the detector's function on moto, on a clock of the test's."""

    def __init__(self, world: World, handler: Any, capfd: pytest.CaptureFixture[str]) -> None:
        self.world, self.handler, self.capfd = world, handler, capfd
        self.now = 0.0
        self.pending: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (stream, shard) -> records not yet read
        self.attempts: dict[tuple[str, int], int] = {}
        self.states: dict[tuple[str, int], Any] = {}
        self.denied: set[str] = set()  # streams the function's role may no longer read
        self.writes: dict[str, dict[int, float]] = {}
        self.reads: dict[str, dict[int, float]] = {}
        self.positions: dict[tuple[str, int], int] = {}

    def write(self, table: str, shard: int, poison: bool = False) -> None:
        stream = boto3.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
        position = self.positions.get((table, shard), 0)
        self.positions[(table, shard)] = position + 1
        record = write_record(f"{table}-{shard}-{position % 7}", position, int(self.now), table=table, shard=shard)
        record["eventSourceARN"] = stream
        if poison:
            del record["dynamodb"]["SequenceNumber"]  # (a record the function cannot take: it fails the batch)
        self.pending.setdefault((stream, shard), []).append(record)
        written = self.writes.setdefault(table, {})
        written[int(self.now)] = written.get(int(self.now), 0) + 1

    def poll(self) -> None:
        mappings = self.world.lambda_.list_event_source_mappings(FunctionName=self.world.detector)
        for mapping in mappings["EventSourceMappings"]:
            if mapping["State"] != "Enabled" or mapping["EventSourceArn"] in self.denied:
                continue
            for shard in range(SHARDS):
                self._invoke(mapping, (mapping["EventSourceArn"], shard))

    def _invoke(self, mapping: dict[str, Any], lane: tuple[str, int]) -> None:
        batch = self.pending.get(lane, [])[: mapping["BatchSize"]]
        if not batch:
            return
        start = int(self.now) // 60 * 60
        event = {
            "Records": batch,
            "shardId": f"shardId-{lane[1]:05d}",
            "eventSourceARN": lane[0],
            "window": {"start": _iso(start), "end": _iso(start + 60)},
            "state": self.states.get(lane, {}),
            "isFinalInvokeForWindow": False,
            "isWindowTerminatedEarly": False,
        }
        self.capfd.readouterr()
        try:
            response = self.handler(event, DeployedContext())
        except Exception:
            self.attempts[lane] = self.attempts.get(lane, 0) + 1
            retries = mapping["MaximumRetryAttempts"]
            if retries != -1 and self.attempts[lane] > retries:
                del self.pending[lane][: len(batch)]  # discarded: the on-failure destination gets its coordinates
                self.attempts[lane] = 0
        else:
            failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
            assert not failed, failed  # (no record of these fails alone)
            self.states[lane] = response.get("state", {})
            del self.pending[lane][: len(batch)]
            self.attempts[lane] = 0
        self._read_metrics()

    def _read_metrics(self) -> None:
        for line in self.capfd.readouterr().out.splitlines():
            if '"_aws"' not in line:
                continue
            document = json.loads(line)
            for name, value in document.items():
                if name.startswith(READ_METRIC_PREFIX):
                    table = name[len(READ_METRIC_PREFIX) :]
                    total = sum(value) if isinstance(value, list) else value
                    read = self.reads.setdefault(table, {})
                    read[int(self.now)] = read.get(int(self.now), 0) + total


def _iso(epoch: int) -> str:
    return f"2026-12-07T{epoch // 3600 % 24:02d}:{epoch // 60 % 60:02d}:{epoch % 60:02d}Z"


def _break(how: str, world: World, poller: Poller, uuid: str, stream: str) -> None:
    if how == "mapping deleted":
        world.lambda_.delete_event_source_mapping(UUID=uuid)
    elif how == "mapping disabled":
        world.lambda_.update_event_source_mapping(UUID=uuid, Enabled=False)
    elif how == "on the table's old stream":
        boto3.client("dynamodb").delete_table(TableName="orders")
        create_source_table("orders")
    elif how == "stuck on a poison record":
        world.lambda_.update_event_source_mapping(UUID=uuid, MaximumRetryAttempts=-1)
    elif how == "the stream denied to the consumer":
        poller.denied.add(stream)


CAUSES = [
    "mapping deleted",
    "mapping disabled",
    "on the table's old stream",
    "stuck on a poison record",
    "every batch of the table failing",
    "the stream denied to the consumer",
]


@pytest.mark.parametrize("how", CAUSES)
def test_each_cause_of_an_unread_stream_is_named_within_ten_minutes_and_masks_nothing(
    synthesized: dict[str, Synthesized],
    deployed_environment: dict[str, str],  # noqa: F811
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    (alarm,) = _unread_alarms(synthesized["existing"]).values()
    world = World()
    world.users = str(create_source_table("users"))
    streams = {"orders": world.orders, "payments": world.payments, "users": world.users}
    # Given the stack's mappings of three tables, made by its own handler
    uuids = {
        table: str(
            on_event(request("Create", properties(world.detector, stream)), lambda_client=world.client, sleep=Sleeps())[
                "PhysicalResourceId"
            ]
        )
        for table, stream in streams.items()
    }
    monkeypatch.setattr(logger.registered_handler, "stream", sys.stdout)
    poller = Poller(world, None, capfd)
    container = dataclasses.replace(
        container_from(deployed_environment, AwsClients()), metrics=app.MetricsBuffer(lambda: poller.now)
    )
    poller.handler = build_handler(lambda: container)
    # When every table writes to each of its shards every minute, and at CAUSE_AT orders stops being read
    for second in range(0, END, POLL_EVERY):
        poller.now = float(second)
        if second == CAUSE_AT:
            _break(how, world, poller, uuids["orders"], streams["orders"])
        if second % WRITE_EVERY == 0:
            for table in streams:
                for shard in range(SHARDS):
                    broken = table == "orders" and second >= CAUSE_AT
                    poison = broken and how in ("stuck on a poison record", "every batch of the table failing")
                    poller.write(table, shard, poison=poison)
        poller.poll()
    # Then the orders alarm fires within ten minutes of its first unread write, and never before it
    fired = {
        table: list(_alarm_times(alarm, poller.writes[table], poller.reads.get(table, {}), END)) for table in streams
    }
    assert fired["orders"] and CAUSE_AT < fired["orders"][0] <= CAUSE_AT + 600, fired["orders"][:3]
    # and the other tables, read all along, never alarm; each record of theirs is counted as its own table's
    assert fired["payments"] == fired["users"] == []
    container.metrics.flush()
    poller._read_metrics()
    for table in ("payments", "users"):
        assert sum(poller.reads[table].values()) == sum(poller.writes[table].values()), table
