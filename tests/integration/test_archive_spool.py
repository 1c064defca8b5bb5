"""The archive spool (stats table) against moto: races between drains and writes, and a drain that stays short."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hotkeys.detector.adapters.archive_spool import DynamoArchiveSpool, spool_partition_of, spool_pk
from hotkeys.detector.adapters.archive_store import S3ObjectStore


@pytest.fixture
def spool(stats_table_name: str) -> DynamoArchiveSpool:
    return DynamoArchiveSpool(boto3.resource("dynamodb").Table(stats_table_name))


@pytest.fixture
def s3(aws: None) -> S3ObjectStore:
    boto3.client("s3").create_bucket(Bucket="archive")
    return S3ObjectStore(boto3.client("s3"), "archive")


def in_s3() -> list[str]:
    return [entry["Key"] for entry in boto3.client("s3").list_objects_v2(Bucket="archive").get("Contents", [])]


def never(key: str, error: Exception) -> None:
    raise AssertionError(f"{key}: {error}")


def test_an_object_spooled_while_a_drain_runs_is_never_forgotten(
    spool: DynamoArchiveSpool, s3: S3ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one spooled object, and a drain that, while it works, sees another container drain the spool
    # and a third spool a new object (the marker is deleted and written again in between)
    spool.put("shardId-a", "ttl/first.json.gz", b"first")
    complete_objects = DynamoArchiveSpool._complete_objects
    meanwhile: list[str] = []

    def racing(self: DynamoArchiveSpool, pk: str) -> list[tuple[str, str]]:
        if not meanwhile:
            meanwhile.append(pk)
            assert DynamoArchiveSpool(self._table).drain(s3, 25, never) == (1, True)
            DynamoArchiveSpool(self._table).put("shardId-c", "ttl/second.json.gz", b"second")
        return complete_objects(self, pk)

    monkeypatch.setattr(DynamoArchiveSpool, "_complete_objects", racing)
    # When the first drain finishes (it moved the new object), then it leaves the marker it did not read
    assert spool.drain(s3, 25, never) == (1, False)
    monkeypatch.undo()
    assert spool.waiting() is not None
    assert sorted(in_s3()) == ["ttl/first.json.gz", "ttl/second.json.gz"]
    # and the next drain finds nothing left and clears the marker
    assert spool.drain(s3, 25, never) == (0, True) and spool.waiting() is None


def test_a_drain_stops_at_the_first_object_s3_refuses(spool: DynamoArchiveSpool, s3: S3ObjectStore) -> None:
    # Given 30 spooled objects and an S3 that refuses every write
    for index in range(30):
        spool.put(f"shardId-{index}", f"ttl/{index}.json.gz", b"x")
    attempts: list[str] = []

    class Down:
        def put(self, key: str, body: bytes) -> None:
            attempts.append(key)
            raise RuntimeError("ServiceUnavailable")

    refused: list[str] = []
    # When a container drains, then it tries one object, is told, and leaves all of them spooled
    assert spool.drain(Down(), 25, lambda key, error: refused.append(key)) == (0, False)
    assert len(attempts) == 1 and refused == attempts and spool.waiting() is not None
    # and once S3 is back, drains of at most 25 objects move them all
    assert spool.drain(s3, 25, never) == (25, False)
    assert spool.drain(s3, 25, never) == (5, True)
    assert len(in_s3()) == 30


def test_a_forced_drain_looks_without_a_marker_and_parts_cut_short_do_not_hold_the_marker(
    spool: DynamoArchiveSpool, s3: S3ObjectStore
) -> None:
    # Given an object whose write was cut short after its first of two parts (its batch was retried under
    # other object keys), and a complete object whose marker was lost
    table: Any = spool._table
    pk = spool_pk(spool_partition_of("shardId-a"))
    table.put_item(
        Item={"pk": pk, "sk": "abc#0000", "object_key": "ttl/cut.json.gz", "part": 0, "parts": 2, "body": b"x"}
    )
    spool.put("shardId-a", "ttl/whole.json.gz", b"whole")
    # When a container drains, then the whole object moves and the marker goes (the cut one is left alone)
    assert spool.drain(s3, 25, never) == (1, True)
    assert in_s3() == ["ttl/whole.json.gz"] and spool.waiting() is None
    # and an object without a marker is found by a forced drain (`hotkeys redrive`), not by an unforced one
    spool.put("shardId-b", "ttl/late.json.gz", b"late")
    table.delete_item(Key={"pk": "SPOOL#MARK", "sk": "-"})
    assert spool.drain(s3, 25, never) == (0, True)
    assert spool.drain(s3, 25, never, force=True) == (1, True)
    assert sorted(in_s3()) == ["ttl/late.json.gz", "ttl/whole.json.gz"]
