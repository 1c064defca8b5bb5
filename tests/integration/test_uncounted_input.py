"""Input the detector cannot count, or can count only in part, is said so at the top (issue #27).

The records come from boto3 parsing a moto server's GetRecords answers: a file of
`aws dynamodbstreams get-records` output (no eventSourceARN), and a KEYS_ONLY stream's records.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from hotkeys.cli.main import main
from hotkeys.emulator.events import shape_stream_record
from tests.support import create_source_table


@pytest.fixture(scope="module")
def endpoint(moto_endpoint: str) -> str:
    return moto_endpoint


def _get_records(endpoint: str, arn: str) -> dict[str, Any]:
    """One GetRecords answer of the stream's first shard, as boto3 parses it."""
    streams = boto3.client("dynamodbstreams", endpoint_url=endpoint, config=Config(account_id_endpoint_mode="disabled"))
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    answer: dict[str, Any] = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)
    answer.pop("ResponseMetadata", None)
    return answer


def _as_cli_prints(value: Any) -> Any:
    """What the AWS CLI prints for a parsed value: ISO 8601 times (its default), base64 binary."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(type(value))


def _fill(endpoint: str, name: str, view: str, writes: int) -> str:
    arn = create_source_table(name, view, endpoint_url=endpoint)
    assert arn is not None
    table = boto3.resource("dynamodb", endpoint_url=endpoint).Table(name)
    for i in range(writes):
        table.put_item(Item={"pk": f"user#{i % 3}", "blob": "x" * 1500})
    return arn


def test_a_file_of_get_records_output_is_not_counted_and_says_why(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Given what `aws dynamodbstreams get-records` prints, saved to a file (records without eventSourceARN)
    arn = _fill(endpoint, "captured", "NEW_AND_OLD_IMAGES", 12)
    answer = _get_records(endpoint, arn)
    assert len(answer["Records"]) == 12 and "eventSourceARN" not in answer["Records"][0]
    path = tmp_path / "get-records.json"
    path.write_text(json.dumps(answer, default=_as_cli_prints))
    # When it is replayed
    status = main(["replay", str(path)])
    out = capsys.readouterr().out
    # Then nothing could be counted: the exit status says so, and the first lines say how many, why,
    # where they went and what replay reads instead; no verdict pretends the table was quiet
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith("None of the 12 records could be counted") and "replay's DLQ (12 entries" in lines[0]
    assert lines[1].strip() == "12: eventSourceARN is missing or not a string"
    assert "get-records" in lines[2] and "hotkeys watch" in lines[2]
    assert "No hot key" not in out and "No verdict: nothing was counted." in out
    # and --json carries the same figures, with the same status
    assert main(["replay", str(path), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["counted"] == 0
    assert result["not_counted"] == {
        "records": 12,
        "dlq_entries": len(result["dead_letters"]),
        "reasons": {"eventSourceARN is missing or not a string": 12},
    }


def test_a_replay_with_some_malformed_records_names_them_and_still_answers(capsys: pytest.CaptureFixture) -> None:
    # Given the poison sample: one record of six has an attribute of an unknown type
    # When it is replayed (no HOTKEYS_LOG_LEVEL: the function's logs are not shown)
    status = main(["replay", "events/poison-record.json"])
    lines = capsys.readouterr().out.splitlines()
    # Then the run answers (status 0) and says first what was not counted, and why
    assert status == 0
    assert lines[0].startswith("1 of the 6 records could not be counted") and "(1 entry, listed below)" in lines[0]
    assert lines[1].strip() == "1: unparsable image: unknown attribute type 'Q'"
    assert lines[2].startswith("No hot key")


def test_records_without_images_are_warned_about_in_replay(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Given a KEYS_ONLY stream's records, in Lambda's event format
    arn = _fill(endpoint, "keys-only", "KEYS_ONLY", 9)
    records = [shape_stream_record(raw, arn) for raw in _get_records(endpoint, arn)["Records"]]
    assert all("NewImage" not in record["dynamodb"] for record in records)
    path = tmp_path / "keys-only.json"
    path.write_text(json.dumps({"Records": records}))
    # When it is replayed
    assert main(["replay", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    # Then the first line says every figure is a lower estimate, and why
    assert (
        first.startswith("9 of the 9 records carry the keys or one item image, not both images")
        and "NEW_AND_OLD_IMAGES" in first
    )
    assert main(["replay", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["without_images"] == 9 and result["counted"] == 9


def test_records_without_images_are_warned_about_in_watch(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    # Given a KEYS_ONLY stream with writes of 1.5 KB items (2 WCU each, counted as 1)
    _fill(endpoint, "watched-keys-only", "KEYS_ONLY", 6)
    flags = ["watch", "--table", "watched-keys-only", "--endpoint-url", endpoint, "--from", "trim-horizon", "--once"]
    # When it is watched
    assert main(flags) == 0
    out = " ".join(capsys.readouterr().out.split())
    # Then the view says its figures are lower estimates
    assert (
        "6 of the 6 records read carry the keys or one item image, not both images" in out
        and "NEW_AND_OLD_IMAGES" in out
    )
    # and with --json the warning goes to stderr, the JSON stays alone on stdout
    assert main([*flags, "--json"]) == 0
    captured = capsys.readouterr()
    assert (
        json.loads(captured.out)
        and "6 of the 6 records read carry the keys or one item image, not both images" in captured.err
    )


def _poisoned(tmp_path: Path, change: Any) -> Path:
    """The poison sample's first good record, then a copy of it that ``change`` spoils."""
    good = json.loads(Path("events/poison-record.json").read_text())["Records"][0]
    bad = json.loads(json.dumps(good))
    bad["eventID"] = "spoiled"
    bad["dynamodb"]["SequenceNumber"] = str(int(good["dynamodb"]["SequenceNumber"]) + 1)
    change(bad)
    path = tmp_path / "spoiled.json"
    path.write_text(json.dumps({"Records": [good, bad]}))
    return path


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda r: r.__setitem__("dynamodb", "text"), "record has no numeric dynamodb.SequenceNumber"),
        (lambda r: r.__setitem__("dynamodb", None), "record has no numeric dynamodb.SequenceNumber"),
        (
            lambda r: r["dynamodb"].__setitem__("ApproximateCreationDateTime", 1e300),
            "dynamodb.ApproximateCreationDateTime is not a time a stream can carry",
        ),
        (
            lambda r: r["dynamodb"].__setitem__("ApproximateCreationDateTime", -5),
            "dynamodb.ApproximateCreationDateTime is not a time a stream can carry",
        ),
    ],
    ids=["dynamodb a string", "dynamodb null", "time past year 9999", "time before 1970"],
)
def test_a_spoiled_record_is_dead_lettered_with_its_reason_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture, change: Any, reason: str
) -> None:
    status = main(["replay", str(_poisoned(tmp_path, change))])
    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    assert lines[0].startswith("1 of the 2 records could not be counted")
    assert lines[1].strip() == f"1: {reason}"


def test_a_batch_the_function_fails_on_names_what_it_raised(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Given a record that is no stream record at all (the function refuses the whole event, as Lambda would)
    path = tmp_path / "not-a-record.json"
    path.write_text(json.dumps({"Records": [{"foo": 1}]}))
    status = main(["replay", str(path)])
    lines = capsys.readouterr().out.splitlines()
    # Then the reason names what the function raised, not only where to look
    assert status == 1
    assert (
        lines[1].strip().startswith("1: the function failed on the batch (NotAStreamEvent: not a DynamoDB stream event")
    )
