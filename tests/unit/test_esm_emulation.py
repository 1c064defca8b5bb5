"""The event-source-mapping emulation follows Lambda's documented stream semantics.

The handler here is a recording stub on purpose: this tests the emulation itself (what it sends
and in which order), not the detector.
"""

from __future__ import annotations

from typing import Any

from hotkeys.esm import Chaos, ShardConsumer
from hotkeys.events import sequence_number
from infra.settings import EventSourceSettings

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


def test_a_lost_response_resends_the_same_event_with_the_same_state() -> None:
    class LoseFirst(Chaos):
        lost = False

        def lose_response(self) -> bool:
            if not self.lost:
                self.lost = True
                return True
            return False

    recorder = Recorder()
    ShardConsumer(recorder, "s", EventSourceSettings(batch_size=5, tumbling_window_seconds=60), LoseFirst()).consume(
        records(5)
    )
    assert recorder.calls[0]["seqs"] == recorder.calls[1]["seqs"]
    assert recorder.calls[0]["state"] == recorder.calls[1]["state"] == {}


def test_a_response_without_state_counts_as_a_failure_in_a_tumbling_window() -> None:
    recorder = Recorder(
        lambda event, n: {"batchItemFailures": []} if n == 1 else {"batchItemFailures": [], "state": {}}
    )
    run = ShardConsumer(recorder, "s", EventSourceSettings(batch_size=5, tumbling_window_seconds=60)).consume(
        records(5)
    )
    assert run.function_errors == 1 and not run.dead_letters
