"""`hotkeys redrive --stack NAME`: the deployed function's settings, not hand-given flags (issue #23).

The detector is "deployed" with CloudFormation on moto: a stack whose event source mapping feeds
a function with the environment under test, and whose outputs name the DLQ. moto invokes a
mapped function on every later write to the table (and empties the stream doing so), so each
test writes its records before it deploys.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.cli.redrive import Counting, RedriveResult, redrive_records
from hotkeys.cli.redrive_plan import Archiving
from hotkeys.cli.top import window_figures, windows_in_range
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
from hotkeys.detector.adapters.stats_store import DynamoStatsStore
from hotkeys.detector.config import Settings, load_settings
from hotkeys.detector.consumer.pipeline import Ports, StreamBatch, process_batch
from hotkeys.detector.handlers.wiring import build_ports
from hotkeys.emulator.events import shape_stream_record
from hotkeys.emulator.local import create_stats_table
from tests.support import create_source_table, layouts_of, ttl_record, write_record

STACK = "HotKeyDetector"
BUCKET = "hotkeys-archive"


@pytest.fixture(autouse=True)
def short_long_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    # moto waits out a long poll of an empty queue: the shortest wait SQS allows keeps the tests quick.
    monkeypatch.setattr("hotkeys.cli.redrive.LONG_POLL_SECONDS", 1)


@dataclass
class Source:
    arn: str
    shard: str
    records: list[dict[str, Any]]  # shaped from moto's GetRecords answer


def read_source(arn: str) -> Source:
    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    raws = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    return Source(arn, shard, [shape_stream_record(raw, arn) for raw in raws])


def orders_with_writes(count: int = 10) -> Source:
    arn = str(create_source_table("orders"))
    table = boto3.resource("dynamodb").Table("orders")
    for i in range(count):
        table.put_item(Item={"pk": f"order#{i % 3}", "n": i})
    return read_source(arn)


def sessions_expiring(count: int = 4) -> Source:
    """Four sessions, then their TTL deletions as a global-table replica sees them (a REMOVE without
    userIdentity, of an item whose TTL is past): the archive takes them with ARCHIVE_REPLICATED_TTL."""
    dynamodb = boto3.client("dynamodb")
    arn = str(create_source_table("orders"))
    dynamodb.update_time_to_live(
        TableName="orders", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"}
    )
    table = boto3.resource("dynamodb").Table("orders")
    for i in range(count):
        table.put_item(Item={"pk": f"session#{i}", "expires": 1_000_000 + i})
    for i in range(count):
        table.delete_item(Key={"pk": f"session#{i}"})
    return read_source(arn)


def deploy(stream_arn: str, environment: dict[str, str], stack: str = STACK) -> str:
    """The detector's stack on moto's CloudFormation; returns its DeadLetterQueueUrl output."""
    template = {
        "Resources": {
            "ConsumerRole": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "lambda.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    }
                },
            },
            "DeadLetters": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": f"{stack}-DLQ"}},
            "Consumer": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Runtime": "python3.13",
                    "Handler": "index.handler",
                    "Role": {"Fn::GetAtt": ["ConsumerRole", "Arn"]},
                    "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
                    "Environment": {"Variables": environment},
                },
            },
            "ConsumerMapping": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "FunctionName": {"Ref": "Consumer"},
                    "EventSourceArn": stream_arn,
                    "StartingPosition": "TRIM_HORIZON",
                },
            },
        },
        "Outputs": {
            "DeadLetterQueueUrl": {"Value": {"Ref": "DeadLetters"}},
            "StatsTableName": {"Value": environment["STATS_TABLE_NAME"]},
        },
    }
    cloudformation = boto3.client("cloudformation")
    cloudformation.create_stack(StackName=stack, TemplateBody=json.dumps(template))
    outputs = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]
    return next(o["OutputValue"] for o in outputs if o["OutputKey"] == "DeadLetterQueueUrl")


def count_as_the_function(source: Source, records: list[dict[str, Any]], settings: Settings) -> None:
    """The deployed function counted (and archived) these records, in its windows."""
    first = records[0]["dynamodb"]["ApproximateCreationDateTime"]
    start = first - first % settings.window_seconds
    process_batch(
        StreamBatch(records, source.shard, (start, start + settings.window_seconds), {}, True),
        settings,
        build_ports(settings, AwsClients()),
    )


def dead_letter(dlq: str, source: Source, first: int, last: int) -> None:
    body = {
        "requestContext": {"condition": "RetryAttemptsExhausted"},
        "DDBStreamBatchInfo": {
            "shardId": source.shard,
            "streamArn": source.arn,
            "batchSize": last - first + 1,
            "startSequenceNumber": source.records[first]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": source.records[last]["dynamodb"]["SequenceNumber"],
        },
    }
    boto3.client("sqs").send_message(QueueUrl=dlq, MessageBody=json.dumps(body))


def stored(stats_table: str) -> tuple[int, set[int]]:
    """(writes over every stored window of orders, the stored windows' lengths)."""
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table))
    windows = windows_in_range(store, since=0, last=None, until=2**40, table="orders")  # type: ignore[arg-type]
    figures = window_figures(store, windows)  # type: ignore[arg-type]
    return sum(w.writes for w in figures), {seconds for _, seconds in store.windows("orders", 0, 2**40)}


def archived(prefix: str = "") -> dict[str, list[str]]:
    """Object key → the event ids of its lines, for every archive object under ``prefix``."""
    s3 = boto3.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]
    return {
        key: [
            json.loads(line)["event_id"]
            for line in gzip.decompress(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()).decode().splitlines()
        ]
        for key in keys
    }


def archived_ids(prefix: str = "") -> list[str]:
    return sorted(event for events in archived(prefix).values() for event in events)


def dlq_depth(dlq: str) -> int:
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- the window ---------------------------------------------------------------------------------------
def test_the_window_is_the_deployed_one_and_a_disagreeing_window_is_refused(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a detector deployed with 300 s windows that counted records 0..5, and a DLQ entry for 3..9
    source = orders_with_writes()
    environment = {"STATS_TABLE_NAME": stats_table_name, "WINDOW_SECONDS": "300"}
    count_as_the_function(source, source.records[:6], load_settings(environment))
    dlq = deploy(source.arn, environment)
    dead_letter(dlq, source, 3, 9)
    # When redrive is given a window that disagrees with the stack, or (without a stack) with the stored
    # windows, by flag or by default, then it refuses in one line naming the flag and both values
    refusals = [
        (["--window-seconds", "60"], ("--window-seconds 60", "WINDOW_SECONDS=300")),
        (
            ["--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name],
            ("--window-seconds (default 60)", "300 s"),
        ),
        (
            ["--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--window-seconds", "60"],
            ("--window-seconds 60", "300 s"),
        ),
    ]
    for flags, words in refusals:
        assert main(["redrive", *flags]) == 2
        line = one_line_error(capsys)
        assert all(word in line for word in words), line
    assert stored(stats_table_name) == (6, {300})
    # When redriven with the stack's settings (the default stack), then 3..5 are found counted, 6..9
    # counted now, in the deployed 300 s windows: 10 writes, no 60 s window beside the 300 s one
    assert main(["redrive", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert (result["already_counted"], result["counted"]) == (3, 4)
    assert stored(stats_table_name) == (10, {300})
    assert dlq_depth(dlq) == 0


def test_records_counted_in_windows_of_another_length_are_refused_not_counted_twice(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given records 0..5 counted in 60 s windows, then the detector redeployed with 300 s windows
    source = orders_with_writes()
    count_as_the_function(source, source.records[:6], Settings(stats_table_name=stats_table_name))
    dlq = deploy(source.arn, {"STATS_TABLE_NAME": stats_table_name, "WINDOW_SECONDS": "300"})
    dead_letter(dlq, source, 3, 9)
    # When redriven with the stack's (new) window, then the entry is refused and stays in the DLQ
    assert main(["redrive"]) == 1
    out = capsys.readouterr().out
    assert "refused" in out and "counted in 60 s windows" in out and "--window-seconds 60" in out
    assert stored(stats_table_name) == (6, {60}) and dlq_depth(dlq) == 1
    # And with the window those records were counted in, it is redriven exactly
    argv = ["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--window-seconds", "60"]
    assert main(argv) == 0
    assert stored(stats_table_name) == (10, {60}) and dlq_depth(dlq) == 0


# -- the archive ----------------------------------------------------------------------------------------
def archive_environment(stats_table: str) -> dict[str, str]:
    return {
        "STATS_TABLE_NAME": stats_table,
        "ARCHIVE_BUCKET_NAME": BUCKET,
        "ARCHIVE_PREFIX": "custom",
        "ARCHIVE_REPLICATED_TTL": "true",
        "TTL_ATTRIBUTE": "expires",
    }


def test_the_archive_prefix_and_replicated_ttl_are_the_deployed_ones(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a detector that archives under custom/, replicated TTL deletions included, and that counted
    # (and archived) the first two of four TTL deletions before a batch with the last two was dead-lettered
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    source = sessions_expiring()
    environment = archive_environment(stats_table_name)
    count_as_the_function(source, source.records[:6], load_settings(environment))
    removals = [r["eventID"] for r in source.records if r["eventName"] == "REMOVE"]
    assert len(removals) == 4 and archived_ids() == sorted(removals[:2])
    dlq = deploy(source.arn, environment)
    dead_letter(dlq, source, 4, 7)
    # When a flag disagrees with the deployed prefix, then redrive refuses it in one line
    assert main(["redrive", "--archive-prefix", "ttl-archive/"]) == 2
    line = one_line_error(capsys)
    assert "--archive-prefix ttl-archive/" in line and "ARCHIVE_PREFIX=custom/" in line
    # When redriven with the stack's settings
    assert main(["redrive", "--stack", STACK, "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    # Then the two replica TTL deletions are counted and archived, under the deployed prefix
    assert (result["already_counted"], result["counted"], result["archived"]) == (2, 2, 2)
    objects = archived()
    assert all(key.startswith("custom/table=orders/") for key in objects), sorted(objects)
    assert archived_ids() == sorted(removals)
    assert stored(stats_table_name)[0] == 8


def test_without_an_archive_configured_ttl_deletions_are_refused_not_lost(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a detector that archives, and a dead-lettered batch of four sessions and their TTL deletions
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    source = sessions_expiring()
    dlq = deploy(source.arn, archive_environment(stats_table_name))
    dead_letter(dlq, source, 0, 7)
    # When redriven without the stack and without an archive bucket (the command README used to show)
    argv = ["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--json"]
    assert main(argv) == 2
    (result,) = json.loads(capsys.readouterr().out)
    # Then the range is refused whole: nothing counted, nothing marked covered, the entry stays, and
    # the flags that would tell what the deployment does are named
    assert "4 TTL deletion(s)" in result["refused"] and result["counted"] == 0
    assert result["needs"] == ["--archive-bucket", "--archive-prefix", "--archive-replicated-ttl"]
    assert stored(stats_table_name) == (0, set()) and dlq_depth(dlq) == 1 and archived() == {}
    # When redriven with the stack, then all eight are counted and the four deletions archived
    assert main(["redrive", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert (result["counted"], result["archived"]) == (8, 4)
    assert len(archived_ids("custom/")) == 4
    assert stored(stats_table_name)[0] == 8 and dlq_depth(dlq) == 0


def no_stack(dlq: str, stats_table: str, *flags: str) -> list[str]:
    return ["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table, *flags]


@pytest.mark.parametrize("replicated", ["true", "false"])
def test_without_the_stack_replica_ttl_deletions_wait_for_word_of_whether_they_are_archived(
    stats_table_name: str, capsys: pytest.CaptureFixture[str], replicated: str
) -> None:
    # Given a detector that archives under custom/ (replica TTL deletions or not), that counted the first
    # two of four replica TTL deletions before a batch with the last two was dead-lettered
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    source = sessions_expiring()
    environment = {**archive_environment(stats_table_name), "ARCHIVE_REPLICATED_TTL": replicated}
    count_as_the_function(source, source.records[:6], load_settings(environment))
    before = archived_ids()
    dlq = deploy(source.arn, environment)
    dead_letter(dlq, source, 4, 7)
    argv = no_stack(dlq, stats_table_name, "--archive-bucket", BUCKET, "--archive-prefix", "custom")
    # When redriven without the stack and without saying whether replica TTL deletions are archived
    assert main(argv) == 2
    # Then one line names the flag, and nothing is counted, archived or taken out of the DLQ
    line = one_line_error(capsys)
    assert "1 DLQ entry kept (nothing of it counted)" in line and "--archive-replicated-ttl true|false" in line, line
    assert "--archive-prefix" not in line and "--archive-bucket" not in line, line
    assert dlq_depth(dlq) == 1 and archived_ids() == before and stored(stats_table_name)[0] == 6
    # When the deployment's choice is given, then the two are counted and archived as it does
    assert main([*argv, "--archive-replicated-ttl", replicated, "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    archives = replicated == "true"
    assert (result["already_counted"], result["counted"], result["archived"]) == (2, 2, 2 if archives else 0)
    removals = sorted(r["eventID"] for r in source.records if r["eventName"] == "REMOVE")
    assert archived_ids("custom/") == (removals if archives else before) == archived_ids()
    assert dlq_depth(dlq) == 0 and stored(stats_table_name)[0] == 8


def test_without_the_stack_ttl_deletions_to_archive_wait_for_the_archive_prefix(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a detector that archives replica TTL deletions under custom/, and a dead-lettered batch of them
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    source = sessions_expiring()
    dlq = deploy(source.arn, archive_environment(stats_table_name))
    dead_letter(dlq, source, 0, 7)
    argv = no_stack(dlq, stats_table_name, "--archive-bucket", BUCKET, "--archive-replicated-ttl", "true")
    # When redriven without the stack and without the archive prefix (the default would put the objects
    # outside the deployed prefix, for good)
    assert main(argv) == 2
    # Then one line names the flag; nothing is counted nor archived and the entry stays
    line = one_line_error(capsys)
    assert "--archive-prefix PREFIX" in line and "--archive-replicated-ttl" not in line, line
    assert dlq_depth(dlq) == 1 and archived() == {} and stored(stats_table_name)[0] == 0
    # When the deployed prefix is given, then the deletions are archived under it
    assert main([*argv, "--archive-prefix", "custom", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert (result["counted"], result["archived"]) == (8, 4)
    assert len(archived_ids("custom/")) == 4 == len(archived_ids())
    assert dlq_depth(dlq) == 0


@pytest.mark.parametrize("environment", [{}, {"FORCE_COLOR": "1", "TERM": "dumb"}], ids=["pipe", "dumb-terminal"])
def test_piped_output_keeps_each_line_whole(
    stats_table_name: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
) -> None:
    # Given a range refused with a long reason (no archive configured), and stdout not a terminal (rich
    # takes it for a dumb terminal, 80 columns, where FORCE_COLOR is set and TERM=dumb)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    source = sessions_expiring()
    dlq = deploy(source.arn, archive_environment(stats_table_name))
    dead_letter(dlq, source, 0, 7)
    assert main(no_stack(dlq, stats_table_name, "--json")) == 2
    (result,) = json.loads(capsys.readouterr().out)
    # When the same run prints its report as text
    assert main(no_stack(dlq, stats_table_name)) == 2
    captured = capsys.readouterr()
    out = re.sub(r"\x1b\[[0-9;]*m", "", captured.out)  # the colours rich adds for a terminal
    # Then the refusal, with its reason longer than any console's width, is one line, and so is the error
    where = f"{result['shard_id']} {result['start']}..{result['end']}"
    assert len(result["refused"]) > 160
    assert f"refused {where}: {result['refused']}" in out.splitlines(), out
    assert "Entries remain in the DLQ (exit status 2)." in out.splitlines(), out
    (line,) = captured.err.splitlines()
    assert line.startswith("hotkeys: 1 DLQ entry kept (nothing of it counted)"), line
    assert line.endswith("or run with --stack NAME"), line


def test_an_archive_s3_refuses_is_spooled_and_moved_by_the_next_run(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a deployed archive bucket that cannot be written (not there yet)
    source = sessions_expiring()
    dlq = deploy(source.arn, archive_environment(stats_table_name))
    dead_letter(dlq, source, 0, 7)
    # When redriven, then the range is counted, its archive object spooled (S3 refused it), and the run
    # exits 1 while S3 still refuses it
    assert main(["redrive", "--json"]) == 1
    (result,) = json.loads(capsys.readouterr().out)
    assert result["counted"] == 8 and result["refused"] is None and dlq_depth(dlq) == 0
    assert stored(stats_table_name)[0] == 8
    # When the bucket is back and redrive runs again, then the spooled object reaches S3; nothing counts twice
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    assert main(["redrive", "--json"]) == 0
    assert "moved 1 spooled archive object(s) into S3" in capsys.readouterr().err
    assert stored(stats_table_name)[0] == 8
    assert len(archived_ids("custom/")) == 4


def test_a_deployment_without_an_archive_counts_ttl_deletions(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = sessions_expiring()
    dlq = deploy(source.arn, {"STATS_TABLE_NAME": stats_table_name, "TTL_ATTRIBUTE": "expires"})
    dead_letter(dlq, source, 0, 7)
    # A flag claiming an archive the deployment does not have is refused
    assert main(["redrive", "--archive-bucket", BUCKET]) == 2
    assert "--archive-bucket hotkeys-archive disagrees with the deployment" in one_line_error(capsys)
    assert main(["redrive", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert (result["counted"], result["archived"], result["refused"]) == (8, 0, None)


def test_own_region_ttl_deletions_are_never_counted_unarchived_unless_no_archive_is_deployed(
    stats_table_name: str,
) -> None:
    # Records as Lambda delivers them (moto's stream has no userIdentity): two writes, two TTL deletions
    at = 1_764_547_200
    records = [write_record("k", 1, at), ttl_record("a", 2, at), write_record("k", 3, at), ttl_record("b", 4, at)]
    settings = Settings(stats_table_name=stats_table_name)
    store = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    ports = Ports(stats=store, resolve_key=PartitionKeyResolver(None, lambda name: {}), layouts=layouts_of(store))

    def redrive(archiving: Archiving | None) -> RedriveResult:
        result = RedriveResult("shardId-1", "1", "4", read=len(records))
        return redrive_records(records, "orders", result, Counting(settings, ports, store, archiving), False)

    # Without an archiver and without knowing the deployment archives nothing: refused, nothing stored
    unknown = redrive(None)
    assert unknown.refused is not None and "2 TTL deletion(s)" in unknown.refused and unknown.counted == 0
    assert store.windows("orders", 0, 2**40) == []
    # Known to archive nothing (as the function then does): counted
    absent = redrive(Archiving.ABSENT)
    assert (absent.refused, absent.counted) == (None, 4)
    # The deployment's archive without an archiver port is a programming error, not a silent count
    with pytest.raises(ValueError, match="archiver"):
        redrive(Archiving.DEPLOYED)


# -- one-line errors ------------------------------------------------------------------------------------
def test_stack_mistakes_are_one_line_errors(
    stats_table_name: str, capsys: pytest.CaptureFixture[str], aws: None
) -> None:
    assert main(["redrive", "--stack", "Nope"]) == 2
    assert "no stack named 'Nope'" in one_line_error(capsys)
    boto3.client("cloudformation").create_stack(
        StackName="JustAQueue",
        TemplateBody=json.dumps({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}),
    )
    assert main(["redrive", "--stack", "JustAQueue"]) == 2
    assert "stack 'JustAQueue' has no event source mapping" in one_line_error(capsys)
    source = orders_with_writes(1)
    deploy(source.arn, {"STATS_TABLE_NAME": stats_table_name})
    assert main(["redrive", "--stats-table", "other"]) == 2
    assert "--stats-table other disagrees with the deployment" in one_line_error(capsys)
    assert main(["redrive", "--dlq-url", "https://sqs.us-east-1.amazonaws.com/123456789012/other"]) == 2
    assert "DeadLetterQueueUrl is https://sqs.us-east-1.amazonaws.com/123456789012/HotKeyDetector-DLQ" in (
        one_line_error(capsys)
    )
    assert main(["redrive", "--no-stack", "--stats-table", stats_table_name]) == 2
    assert "--no-stack needs --dlq-url and --stats-table" in one_line_error(capsys)
    assert main(["redrive", "--stack", STACK, "--no-stack"]) == 2
    assert "not allowed with argument" in one_line_error(capsys)


# -- the drain --------------------------------------------------------------------------------------------
def test_an_entry_someone_else_holds_is_not_reported_as_an_empty_dlq(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a DLQ entry received by another reader (invisible to this run for its visibility timeout)
    source = orders_with_writes(2)
    dlq = deploy(source.arn, {"STATS_TABLE_NAME": stats_table_name})
    dead_letter(dlq, source, 0, 1)
    assert boto3.client("sqs").receive_message(QueueUrl=dlq, VisibilityTimeout=300)["Messages"]
    # When redriven, then it says the entry is still there and exits 1
    assert main(["redrive"]) == 1
    out = capsys.readouterr().out
    assert "The DLQ is empty" not in out and "1 received by someone else" in out


# -- the command's own output -------------------------------------------------------------------------------
def test_json_output_is_json_alone_while_the_pipeline_archives(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the archive scenario on a moto server (the pipeline's structured logs go to the real stdout)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    create_stats_table(boto3.client("dynamodb"), "stats-json")
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    source = sessions_expiring()
    dlq = deploy(source.arn, archive_environment("stats-json"))
    dead_letter(dlq, source, 0, 7)
    # When `hotkeys redrive --json` runs as a process
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "hotkeys.cli.main", "redrive", "--json", "--endpoint-url", moto_endpoint],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root / "functions")},
        check=False,
        timeout=120,
    )
    # Then its stdout is the JSON report alone, and the deletions were archived
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert (result["counted"], result["archived"]) == (8, 4)
