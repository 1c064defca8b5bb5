"""`hotkeys watch` against a moto server: a real HTTP endpoint, a real stream, the key being hammered."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from events.live import create_table
from hotkeys.cli.main import main
from hotkeys.emulator.events import to_dynamodb_json
from tests import reference_sizing
from tests.support import create_source_table


@pytest.fixture(scope="module")
def endpoint(moto_endpoint: str) -> str:
    return moto_endpoint


def make_table(endpoint: str, name: str, stream: bool) -> None:
    create_table(boto3.client("dynamodb", endpoint_url=endpoint), name, stream)


def _start_well_inside_a_window(seconds: int, margin: int) -> None:
    left = seconds - time.time() % seconds
    if left < margin:
        time.sleep(left + 0.5)


def test_watch_shows_the_key_being_hammered(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    # Given a table whose "event#42" partition takes most writes, with 3 KB items, all written in one
    # 900-second window (the writes take a few seconds on a loaded machine: never across a window's end)
    _start_well_inside_a_window(900, margin=30)
    make_table(endpoint, "tickets", stream=True)
    table = boto3.resource("dynamodb", endpoint_url=endpoint).Table("tickets")
    for i in range(120):
        table.put_item(Item={"pk": "event#42", "sk": f"seat#{i}", "blob": "x" * 3000})
    for i in range(30):
        table.put_item(Item={"pk": f"user#{i % 10}", "sk": "profile", "n": i})
    # When `hotkeys watch` reads the stream from the beginning
    assert (
        main(
            [
                "watch",
                "--table",
                "tickets",
                "--endpoint-url",
                endpoint,
                "--from",
                "trim-horizon",
                "--once",
                "--window-seconds",
                "900",
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    # Then the hammered key leads, with its exact write units (3 WCU per 3 KB item)
    assert rows[0]["key"] == "event#42"
    assert rows[0]["writes"] == 120 and rows[0]["wcu"] == 360
    assert rows[0]["share"] > 0.9
    assert {row["key"] for row in rows[1:]} <= {f"user#{i}" for i in range(10)}


def test_watch_on_a_table_without_stream_says_so(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    make_table(endpoint, "plain", stream=False)
    assert main(["watch", "--table", "plain", "--endpoint-url", endpoint, "--once"]) == 2
    assert "has no stream" in capsys.readouterr().err


def test_replay_runs_against_an_endpoint(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    # The same replay, on a real HTTP endpoint instead of in-process moto
    assert main(["replay", "events/poison-record.json", "--endpoint-url", endpoint, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sum(window["writes"] for window in result["windows"]) == 5
    assert [d["startSequenceNumber"] for d in result["dead_letters"]] == ["100000000000000000003"]


def test_replay_on_an_endpoint_says_what_it_created_there(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["replay", "events/poison-record.json", "--endpoint-url", endpoint]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(f"Created on {endpoint}:"))
    stats_table = line.split("stats table ", 1)[1].split(",", 1)[0]
    # The named stats table is really there, and `hotkeys top` can read it
    assert main(["top", "--stats-table", stats_table, "--endpoint-url", endpoint, "--json", "--last", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]


def test_watch_shows_a_hot_index_partition_beside_the_tables_keys(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    # Given orders spread over many keys, all written with the same status, which a GSI indexes
    create_source_table("orders-live", status_index=True, endpoint_url=endpoint)
    table = boto3.resource("dynamodb", endpoint_url=endpoint).Table("orders-live")
    for i in range(60):
        table.put_item(Item={"pk": f"order#{i}", "status": "PENDING", "blob": "x" * 2000})
    # When `hotkeys watch` reads the stream
    arguments = ["watch", "--table", "orders-live", "--endpoint-url", endpoint, "--from", "trim-horizon", "--once"]
    assert main([*arguments, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    # Then the index partition PENDING leads (60 one-unit KEYS_ONLY entries), named with its index,
    # while each table key took one 2 KB write
    assert (rows[0]["index"], rows[0]["key"], rows[0]["writes"], rows[0]["wcu"]) == ("by-status", "PENDING", 60, 60)
    assert all(row["index"] is None and row["wcu"] == 2 for row in rows[1:])
    # and without index counting only the table's keys show
    assert main([*arguments, "--json", "--count-indexes", "false"]) == 0
    assert all(row["index"] is None for row in json.loads(capsys.readouterr().out)["rows"])


def test_watch_shows_the_peak_the_alert_rule_reads(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    # Given a key written 40 times with 3 KB items (3 WCU each) within a few seconds
    make_table(endpoint, "peaks", stream=True)
    table = boto3.resource("dynamodb", endpoint_url=endpoint).Table("peaks")
    for i in range(40):
        table.put_item(Item={"pk": "event#7", "sk": f"seat#{i}", "blob": "x" * 3000})
    # When `hotkeys watch` reads the stream
    arguments = ["watch", "--table", "peaks", "--endpoint-url", endpoint, "--from", "trim-horizon", "--once"]
    assert main([*arguments, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    # Then its rate is the rule's: 120 units within one 10 s span (its own first to last write) are
    # 12 WCU/s, and nothing was pruned, so the most it can be is that rate
    assert row["wcu"] == 120 and row["wcu_per_second"] == 12.0 == row["at_most_wcu_per_second"]
    # and the row is top's (one row type, one meaning per field)
    from dataclasses import fields

    from hotkeys.cli.rows import TopRow

    assert list(row) == [field.name for field in fields(TopRow)]


def test_watch_counts_binary_attributes_read_from_a_moto_server(endpoint: str, capsys: pytest.CaptureFixture) -> None:
    # Given items with binary values at every depth (boto3 decodes them all to bytes on the way back)
    make_table(endpoint, "binaries", stream=True)
    table = boto3.resource("dynamodb", endpoint_url=endpoint).Table("binaries")
    item = {
        "pk": "device#1",
        "blob": b"\x00\xff" * 800,  # 1,600 raw bytes (2,136 as base64 text)
        "chunks": {b"\x01", b"\x02\xff"},
        "nested": {"inner": {"b": b"\xfe" * 9, "bs": {b"\x07"}}, "list": [b"\x09", {"b": b"\x0b"}]},
    }
    for i in range(4):
        table.put_item(Item={**item, "sk": f"reading#{i}"})
    # When watched
    arguments = ["watch", "--table", "binaries", "--endpoint-url", endpoint, "--from", "trim-horizon", "--once"]
    assert main([*arguments, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    # Then every record counts (none malformed), each with its write units by the raw byte sizes
    assert (row["key"], row["writes"]) == ("device#1", 4)
    assert row["wcu"] == 4 * reference_sizing.write_units(None, to_dynamodb_json({**item, "sk": "reading#0"}))
