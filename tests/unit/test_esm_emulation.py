"""The event-source-mapping emulation follows Lambda's documented stream semantics.

The handler here is a recording stub on purpose: this tests the emulation itself (what it sends
and in which order), not the detector.
"""

from __future__ import annotations

from typing import Any

import pytest

from hotkeys.deployment import EventSourceSettings
from hotkeys.emulator.esm import Deliveries, Delivery, ShardConsumer, ShardStuck, consume_lineage
from hotkeys.emulator.events import sequence_number

T0 = 1_796_083_200


def records(count: int, start: int = T0, step: float = 1.0) -> list[dict[str, Any]]:
    return [
        {
            "eventID": str(i),
            "dynamodb": {"SequenceNumber": sequence_number(0, i), "ApproximateCreationDateTime": int(start + i * step)},
        }
        for i in range(count)
    ]


class Recorder:
    def __init__(self, behave: Any = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.behave = behave or (lambda event, n: {"batchItemFailures": [], "state": {"n": n}})

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(
            {
                "seqs": [r["dynamodb"]["SequenceNumber"] for r in event["Records"]],
                "state": event.get("state"),
                "final": event.get("isFinalInvokeForWindow"),
            }
        )
        return self.behave(event, len(self.calls))


def test_batches_stay_inside_tumbling_windows_and_each_window_ends_with_a_final_call() -> None:
    # Given 150 records over 150 s (three 60 s windows), batch size 50
    recorder = Recorder()
    ShardConsumer(recorder, "shardId-1", EventSourceSettings(batch_size=50, tumbling_window_seconds=60)).consume(
        records(150)
    )
    sizes = [(len(c["seqs"]), c["final"]) for c in recorder.calls]
    # Then batches are cut at window edges (0-59, 60-119, 120-149) and each window has a final empty call
    assert sizes == [(50, False), (10, False), (0, True), (50, False), (10, False), (0, True), (30, False), (0, True)]
    # and the state returned by one call is the state given to the next call of the same window
    assert recorder.calls[1]["state"] == {"n": 1} and recorder.calls[3]["state"] == {}


def test_a_partial_failure_resumes_at_the_lowest_failed_sequence_number_with_the_returned_state() -> None:
    failing = sequence_number(0, 3)

    def behave(event: dict[str, Any], n: int) -> dict[str, Any]:
        seqs = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        failures = [{"itemIdentifier": s} for s in seqs if s in (failing, sequence_number(0, 6))] if n == 1 else []
        return {"batchItemFailures": failures, "state": {"n": n}}

    recorder = Recorder(behave)
    ShardConsumer(recorder, "s", EventSourceSettings(batch_size=10, tumbling_window_seconds=60)).consume(records(10))
    assert recorder.calls[1]["seqs"][0] == failing and len(recorder.calls[1]["seqs"]) == 7
    assert recorder.calls[1]["state"] == {"n": 1}


def test_function_errors_bisect_then_retries_end_in_the_dlq_with_coordinates() -> None:
    poison = sequence_number(0, 5)

    def behave(event: dict[str, Any], n: int) -> dict[str, Any]:
        if any(r["dynamodb"]["SequenceNumber"] == poison for r in event["Records"]):
            raise RuntimeError("boom")
        return {"batchItemFailures": [], "state": {}}

    recorder = Recorder(behave)
    consumer = ShardConsumer(
        recorder,
        "shardId-9",
        EventSourceSettings(batch_size=8, tumbling_window_seconds=60, retry_attempts=3),
        stream_arn="arn:aws:dynamodb:us-east-1:1:table/t/stream/x",
    )
    run = consumer.consume(records(8))
    batch_sizes = [len(c["seqs"]) for c in recorder.calls if not c["final"]]
    # Bisection: 8 → 4 + 4 → the failing half is halved again until the poison record is alone
    assert batch_sizes[:3] == [8, 4, 4] and 1 in batch_sizes
    (letter,) = run.dead_letters
    assert letter.start_sequence == letter.end_sequence == poison
    assert letter.to_message()["DDBStreamBatchInfo"]["shardId"] == "shardId-9"
    assert letter.to_message()["DDBStreamBatchInfo"]["streamArn"].endswith("/stream/x")
    # Every other record was delivered successfully exactly once
    delivered_ok = [s for c in recorder.calls if poison not in c["seqs"] for s in c["seqs"]]
    assert sorted(delivered_ok) == sorted(
        r["dynamodb"]["SequenceNumber"] for r in records(8) if r["dynamodb"]["SequenceNumber"] != poison
    )


class LoseFirst(Deliveries):
    """Loses the answer of the first invocation only."""

    lost = False

    def lose_response(self) -> bool:
        if not self.lost:
            self.lost = True
            return True
        return False


def test_a_lost_response_is_a_function_error_bisected_with_the_state_from_before() -> None:
    # Given an invocation whose answer is lost (a timeout: Lambda never saw a success)
    recorder = Recorder()
    run = ShardConsumer(
        recorder, "s", EventSourceSettings(batch_size=4, tumbling_window_seconds=60), LoseFirst()
    ).consume(records(4))
    # Then it counts as a function error: the batch is split, and both halves get the old state
    assert run.function_errors == 1
    assert [len(c["seqs"]) for c in recorder.calls] == [4, 2, 2, 0]
    assert recorder.calls[0]["state"] == recorder.calls[1]["state"] == {}
    assert recorder.calls[2]["state"] == {"n": 2}


def test_lost_responses_use_up_the_retries_and_end_in_the_dlq() -> None:
    # Given a single-record batch whose answers are always lost, and 2 retry attempts
    class LoseAll(Deliveries):
        def lose_response(self) -> bool:
            return True

    recorder = Recorder()
    consumer = ShardConsumer(
        recorder, "s", EventSourceSettings(batch_size=1, tumbling_window_seconds=0, retry_attempts=2), LoseAll()
    )
    run = consumer.consume(records(1))
    # Then it is tried 1 + 2 times and its coordinates go to the DLQ
    assert len(recorder.calls) == 3
    assert [(d.start_sequence, d.batch_size) for d in run.dead_letters] == [(sequence_number(0, 0), 1)]


def test_splitting_does_not_count_towards_the_retry_quota() -> None:
    # Given a poison record in a batch of 16 and only one retry attempt
    poison = sequence_number(0, 11)

    def behave(event: dict[str, Any], n: int) -> dict[str, Any]:
        if any(r["dynamodb"]["SequenceNumber"] == poison for r in event["Records"]):
            raise RuntimeError("boom")
        return {"batchItemFailures": [], "state": {"n": n}}

    recorder = Recorder(behave)
    run = ShardConsumer(
        recorder, "s", EventSourceSettings(batch_size=16, tumbling_window_seconds=60, retry_attempts=1)
    ).consume(records(16))
    # Then bisection goes all the way down (16, 8, 4, 2, 1) although only one retry is allowed,
    # and only the poison record reaches the DLQ, after 1 + 1 attempts at size 1
    failing_sizes = [len(c["seqs"]) for c in recorder.calls if poison in c["seqs"]]
    assert failing_sizes == [16, 8, 4, 2, 1, 1]
    assert [(d.start_sequence, d.end_sequence) for d in run.dead_letters] == [(poison, poison)]


@pytest.mark.parametrize("reading", ["returned", "previous"])
def test_the_state_after_a_partial_failure_follows_the_chosen_reading(reading: str) -> None:
    # Given a response that reports record 3 failed and returns a new state
    failing = sequence_number(0, 3)

    def behave(event: dict[str, Any], n: int) -> dict[str, Any]:
        failures = [{"itemIdentifier": failing}] if n == 1 else []
        return {"batchItemFailures": failures, "state": {"n": n}}

    recorder = Recorder(behave)
    ShardConsumer(
        recorder,
        "s",
        EventSourceSettings(batch_size=6, tumbling_window_seconds=60),
        delivery=Delivery(partial_failure_state=reading),  # type: ignore[arg-type]
    ).consume(records(6))
    # Then the retry starts at record 3, with the returned state or with the one from before
    assert recorder.calls[1]["seqs"][0] == failing
    assert recorder.calls[1]["state"] == ({"n": 1} if reading == "returned" else {})


def test_a_failing_final_invocation_suspends_the_shard_until_it_succeeds() -> None:
    # Given a final invocation that fails 7 times (more than the retry quota of 3)
    finals = []

    def behave(event: dict[str, Any], n: int) -> dict[str, Any]:
        if event["isFinalInvokeForWindow"]:
            finals.append(n)
            if len(finals) <= 7:
                raise RuntimeError("stats table unavailable")
        return {"batchItemFailures": [], "state": {"n": n}}

    recorder = Recorder(behave)
    run = ShardConsumer(
        recorder, "s", EventSourceSettings(batch_size=10, tumbling_window_seconds=60, retry_attempts=3)
    ).consume(records(70))
    # Then it is retried with the same state until it succeeds; no window is dropped, nothing is dead-lettered,
    # and the next window starts only afterwards
    assert run.final_failures == 7 and not run.dead_letters
    first_window_finals = [c for c in recorder.calls if c["final"]][:8]
    assert all(c["state"] == first_window_finals[0]["state"] for c in first_window_finals)
    next_window = next(
        i for i, c in enumerate(recorder.calls) if c["seqs"] and int(c["seqs"][0]) >= int(sequence_number(0, 60))
    )
    assert next_window > max(
        i for i, c in enumerate(recorder.calls) if c["final"] and c["state"] == first_window_finals[0]["state"]
    )


def test_a_final_invocation_that_never_succeeds_stops_the_shard() -> None:
    def behave(event: dict[str, Any], n: int) -> dict[str, Any]:
        if event["isFinalInvokeForWindow"]:
            raise RuntimeError("down")
        return {"batchItemFailures": [], "state": {}}

    consumer = ShardConsumer(
        Recorder(behave),
        "s",
        EventSourceSettings(batch_size=10, tumbling_window_seconds=60),
        delivery=Delivery(max_final_attempts=5),
    )
    with pytest.raises(ShardStuck):
        consumer.consume(records(3))


def test_child_shards_start_the_same_window_again_with_a_fresh_state() -> None:
    # Given a parent shard that ends 20 s into a window, and its child carrying on
    recorder = Recorder()
    shard_records = records(40)
    consume_lineage(
        recorder,
        [("parent", shard_records[:20]), ("child", shard_records[20:])],
        EventSourceSettings(batch_size=50, tumbling_window_seconds=60),
    )
    # Then the parent's window closes at its end (a final call), and the child starts with an empty state
    assert [(len(c["seqs"]), c["final"], c["state"]) for c in recorder.calls] == [
        (20, False, {}),
        (0, True, {"n": 1}),
        (20, False, {}),
        (0, True, {"n": 3}),
    ]


def test_window_boundaries_can_be_offset_from_the_epoch() -> None:
    # Given windows that start 30 s after each minute (alignment is not documented)
    recorder = Recorder()
    ShardConsumer(
        recorder,
        "s",
        EventSourceSettings(batch_size=100, tumbling_window_seconds=60),
        delivery=Delivery(window_offset_seconds=30),
    ).consume(records(90))
    # Then batches are cut at :30 (T0 is a whole minute): 0-29, 30-89
    assert [len(c["seqs"]) for c in recorder.calls if not c["final"]] == [30, 60]


def test_a_response_without_state_counts_as_a_failure_in_a_tumbling_window() -> None:
    recorder = Recorder(
        lambda event, n: {"batchItemFailures": []} if n == 1 else {"batchItemFailures": [], "state": {}}
    )
    run = ShardConsumer(recorder, "s", EventSourceSettings(batch_size=5, tumbling_window_seconds=60)).consume(
        records(5)
    )
    assert run.function_errors == 1 and not run.dead_letters
