"""The event-source-mapping emulation reads a Kinesis shard as the Lambda developer guide's Kinesis page says:
windows by the records' arrival ("the time when records were inserted into the stream"), checkpoints at
``kinesis.sequenceNumber``, ``KinesisBatchInfo`` for a discarded batch. A recording function on purpose: this
tests the emulation, not the detector."""

from __future__ import annotations

from typing import Any

from hotkeys.deployment import EventSourceSettings
from hotkeys.emulator import kinesis
from hotkeys.emulator.esm import ShardConsumer
from hotkeys.emulator.lanes import EventSourceMapping, Turns, consume_side_by_side

T0 = 1_796_083_200
SETTINGS = EventSourceSettings(batch_size=50, tumbling_window_seconds=60, retry_attempts=1)


def kinesis_records(arrivals_ms: list[int], created_s: int = T0) -> list[dict[str, Any]]:
    """Records arriving at these times, every change made in the same second ``created_s``."""
    change = {"tableName": "orders", "dynamodb": {"ApproximateCreationDateTime": created_s * 1_000_000}}
    return [
        kinesis.lambda_record(change, "K", kinesis.shard_id(0), kinesis.sequence_number(0, i), at, kinesis.stream_arn())
        for i, at in enumerate(arrivals_ms)
    ]


class Recorder:
    def __init__(self, fail_at: str | None = None, always_fail: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail_at, self.always_fail = fail_at, always_fail

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        sequences = [record["kinesis"]["sequenceNumber"] for record in event["Records"]]
        self.calls.append({"seqs": sequences, "window": event.get("window"), "final": event["isFinalInvokeForWindow"]})
        if self.always_fail and sequences:
            raise RuntimeError("boom")
        failures = [{"itemIdentifier": self.fail_at}] if self.fail_at in sequences else []
        if failures:
            self.fail_at = None  # fails once
        return {"batchItemFailures": failures, "state": {}}


def test_windows_follow_the_arrival_time_not_the_changes_creation_time() -> None:
    # Given changes all made in the first minute, the last two arriving in the next one
    arrivals = [T0 * 1000 + 10, T0 * 1000 + 59_999, (T0 + 60) * 1000, (T0 + 61) * 1000 + 500]
    recorder = Recorder()
    ShardConsumer(recorder, kinesis.shard_id(0), SETTINGS).consume(kinesis_records(arrivals))
    windows = [(len(call["seqs"]), call["window"]["start"], call["final"]) for call in recorder.calls]
    assert windows == [
        (2, "2026-12-01T00:00:00Z", False),
        (0, "2026-12-01T00:00:00Z", True),
        (2, "2026-12-01T00:01:00Z", False),
        (0, "2026-12-01T00:01:00Z", True),
    ]


def test_a_partial_failure_checkpoints_at_the_kinesis_sequence_number_it_names() -> None:
    records = kinesis_records([T0 * 1000 + i for i in range(5)])
    failing = records[3]["kinesis"]["sequenceNumber"]
    recorder = Recorder(fail_at=failing)
    ShardConsumer(recorder, kinesis.shard_id(0), SETTINGS).consume(records)
    batches = [call["seqs"] for call in recorder.calls if not call["final"]]
    assert batches == [
        [r["kinesis"]["sequenceNumber"] for r in records],
        [failing, records[4]["kinesis"]["sequenceNumber"]],
    ]


def test_a_discarded_kinesis_batch_goes_to_the_destination_as_kinesis_batch_info() -> None:
    records = kinesis_records([T0 * 1000 + 835, T0 * 1000 + 1580])
    run = ShardConsumer(
        Recorder(always_fail=True), kinesis.shard_id(0), SETTINGS, stream_arn=kinesis.stream_arn()
    ).consume(records)
    messages = [letter.to_message() for letter in run.dead_letters]
    assert [list(message) for message in messages] == [["requestContext", "KinesisBatchInfo"]] * 2  # bisected
    first = messages[0]["KinesisBatchInfo"]
    assert first == {
        "shardId": "shardId-000000000000",
        "startSequenceNumber": records[0]["kinesis"]["sequenceNumber"],
        "endSequenceNumber": records[0]["kinesis"]["sequenceNumber"],
        "approximateArrivalOfFirstRecord": "2026-12-01T00:00:00.835Z",
        "approximateArrivalOfLastRecord": "2026-12-01T00:00:00.835Z",
        "batchSize": 1,
        "streamArn": kinesis.stream_arn(),
    }


def test_lanes_run_kinesis_shards_side_by_side_in_arrival_time() -> None:
    # Given two shards whose records arrive interleaved in time
    early = kinesis_records([T0 * 1000, (T0 + 20) * 1000])
    late = kinesis_records([(T0 + 10) * 1000, (T0 + 30) * 1000])
    order: list[tuple[str, int]] = []

    def handler(name: str) -> Any:
        def invoke(event: dict[str, Any]) -> dict[str, Any]:
            order.extend((name, int(r["kinesis"]["approximateArrivalTimestamp"]) - T0) for r in event["Records"])
            return {"batchItemFailures": [], "state": {}}

        return invoke

    settings = EventSourceSettings(batch_size=1, max_batching_window_seconds=0, tumbling_window_seconds=60)
    consume_side_by_side(
        [[("shardId-000000000000", early)], [("shardId-000000000001", late)]],
        [handler("a"), handler("b")],
        EventSourceMapping(settings),
        Turns(),
    )
    # Then the invocations run in the records' arrival order across the shards
    assert order == [("a", 0), ("b", 10), ("a", 20), ("b", 30)]
