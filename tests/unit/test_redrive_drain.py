"""`hotkeys redrive`'s drain of the DLQ: long polls, and SQS's counts, decide when it is drained.

SQS's answers come from botocore's Stubber on a real client, so every request and response is
validated against the service model. A short poll "samples a subset of its servers" and may
answer empty while messages remain (SQS developer guide, short and long polling): the stubs
play that answer, which moto never gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hotkeys.cli.redrive import EMPTY_POLLS, LONG_POLL_SECONDS, drain
from hotkeys.detector.adapters.aws import SDK_CONFIG

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/HotKeyDetector-DLQ"


def message(n: int) -> dict[str, Any]:
    body = json.dumps({"DDBStreamBatchInfo": {"shardId": f"shardId-{n}"}})
    return {"MessageId": f"m-{n}", "ReceiptHandle": f"handle-{n}", "Body": body}


def counts(visible: int, not_visible: int = 0) -> dict[str, Any]:
    return {
        "Attributes": {
            "ApproximateNumberOfMessages": str(visible),
            "ApproximateNumberOfMessagesNotVisible": str(not_visible),
            "ApproximateNumberOfMessagesDelayed": "0",
        }
    }


@pytest.fixture
def sqs() -> Iterator[tuple[Any, Stubber, list[dict[str, Any]]]]:
    """A stubbed SQS client, and the parameters of every ReceiveMessage it was sent."""
    client = boto3.client("sqs", region_name="us-east-1", config=SDK_CONFIG)
    receives: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.sqs.ReceiveMessage", lambda params, **_: receives.append(dict(params))
    )
    with Stubber(client) as stub:
        yield client, stub, receives
        stub.assert_no_pending_responses()


def test_a_first_empty_answer_does_not_end_the_drain(sqs: tuple[Any, Stubber, list[dict[str, Any]]]) -> None:
    client, stub, receives = sqs
    # Given a queue whose first receive answers empty while SQS still counts two visible entries
    stub.add_response("receive_message", {})
    stub.add_response("get_queue_attributes", counts(visible=2))
    stub.add_response("receive_message", {"Messages": [message(1), message(2)]})
    stub.add_response("receive_message", {})
    stub.add_response("get_queue_attributes", counts(visible=0, not_visible=2))
    # When drained
    drained = drain(client, URL)
    # Then both entries are received, nothing is left, and every receive was a long poll
    assert [m["MessageId"] for m in drained.messages] == ["m-1", "m-2"]
    assert drained.remaining == 0
    assert receives and all(r["WaitTimeSeconds"] >= 1 for r in receives)


def test_the_drain_is_bounded_and_reports_what_sqs_still_counts(
    sqs: tuple[Any, Stubber, list[dict[str, Any]]],
) -> None:
    client, stub, receives = sqs
    # Given SQS counting three visible entries that no receive returns
    for _ in range(EMPTY_POLLS):
        stub.add_response("receive_message", {})
        stub.add_response("get_queue_attributes", counts(visible=3))
    # When drained, then it stops after EMPTY_POLLS polls (no further call is stubbed) and says three remain
    drained = drain(client, URL)
    assert drained.messages == [] and drained.remaining == 3
    assert len(receives) == EMPTY_POLLS


def test_an_entry_received_again_is_kept_once_with_its_newest_receipt_handle(
    sqs: tuple[Any, Stubber, list[dict[str, Any]]],
) -> None:
    client, stub, _ = sqs
    again = {**message(1), "ReceiptHandle": "handle-1-again"}
    stub.add_response("receive_message", {"Messages": [message(1)]})
    stub.add_response("receive_message", {"Messages": [again]})
    stub.add_response("get_queue_attributes", counts(visible=0, not_visible=1))
    drained = drain(client, URL)
    assert [(m["MessageId"], m["ReceiptHandle"]) for m in drained.messages] == [("m-1", "handle-1-again")]
    assert drained.remaining == 0


def test_entries_held_by_another_reader_count_as_remaining(sqs: tuple[Any, Stubber, list[dict[str, Any]]]) -> None:
    client, stub, _ = sqs
    stub.add_response("receive_message", {"Messages": [message(1)]})
    stub.add_response("receive_message", {})
    stub.add_response("get_queue_attributes", counts(visible=0, not_visible=3))
    drained = drain(client, URL)
    assert len(drained.messages) == 1 and drained.in_flight_elsewhere == 2 and drained.remaining == 2


def test_the_long_poll_ends_before_the_sdk_gives_up_on_the_answer() -> None:
    # SQS: "ensure that the HTTP response timeout for ReceiveMessage requests is longer than the
    # WaitTimeSeconds parameter"; the CLI's clients use SDK_CONFIG.
    assert 1 <= LONG_POLL_SECONDS < SDK_CONFIG.read_timeout


@pytest.mark.parametrize(
    ("run", "status"),
    [
        ({}, 0),
        ({"results": [{"counted": 3}]}, 0),
        ({"results": [{"unreadable": "TrimmedDataAccessException"}]}, 1),
        ({"results": [{"refused": "a range the consumer is still counting"}]}, 1),
        # entries that wait for a flag: a usage error, which running again as is cannot mend
        ({"results": [{"refused": "a TTL deletion to archive", "needs": ["--archive-prefix"]}]}, 2),
        ({"results": [{"unreadable": "gone"}, {"refused": "…", "needs": ["--archive-bucket"]}], "visible": 4}, 2),
        ({"results": [{"counted": 3}], "dry_run": True}, 1),
        ({"results": [{"counted": 3}], "keep": True}, 1),
        ({"dry_run": True}, 0),  # nothing received, nothing kept
        ({"spool_moved": 2, "spool_empty": False}, 1),
        ({"spool_moved": 2}, 0),
        ({"visible": 4}, 1),  # entries this run did not receive
    ],
)
def test_a_run_exits_1_while_work_remains_and_2_while_entries_wait_for_flags(run: dict[str, Any], status: int) -> None:
    from hotkeys.cli.redrive import Drained, QueueCounts, RedriveRun

    drained = Drained([], QueueCounts(visible=run.pop("visible", 0)))
    assert RedriveRun(run.pop("results", []), drained, **run).exit_status == status
