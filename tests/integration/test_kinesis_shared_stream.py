"""Two tables on one Kinesis stream (issue #49): each table's figures, alerts, what-if and data health are its
own, as when it is read alone. ``hotkeys generate --source kinesis`` puts both tables' changes on the same
shards, ``hotkeys replay`` runs the deployment's emulation (each shard's consumer, the judge on its clock)
and ``top --table`` reads each table back."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.main import main
from hotkeys.cli.replay import create_resources, replay_settings, run_replay
from hotkeys.cli.replay_view import collect
from hotkeys.detector.adapters.aws import AwsClients

# A hot key in carts only, for 15 s; carts writes on after orders stops (orders is then a quiet table whose
# shards, the same as carts', go on delivering carts' records).
CARTS = ["--keys", "120", "--rate", "10", "--duration", "200", "--seed", "3", "--hot", "cart#7:60wcu@40s+15s"]
# In orders only: a low-cardinality attribute under a real index (by-region) and another under a proposed
# one (by-tier), and expireAt in milliseconds on about half of its keys (TTL ignores them).
ORDERS = ["--keys", "300", "--zipf", "0.6", "--rate", "20", "--duration", "130", "--seed", "5"]
ORDERS += ["--item-bytes", "6000", "--attribute", "region=2", "--attribute", "tier=3"]
ORDERS += ["--ttl-values", "seconds=0.5,milliseconds=0.5"]
KINESIS = ["--source", "kinesis", "--kinesis-shards", "2", "--reorder", "5", "--duplicates", "0.05"]
WHAT_IF = "orders:by-tier=tier"
# (the settings _replay runs with, as docs/kinesis.md gives them to `hotkeys replay`)
REPLAY_FLAGS = ["--partition-limit", "50", "--summary-capacity", "1000", "--what-if-index", WHAT_IF]
ORDERS_TABLE = {
    "TableName": "orders",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "region", "AttributeType": "S"},
    ],
    "GlobalSecondaryIndexes": [
        {
            "IndexName": "by-region",
            "KeySchema": [{"AttributeName": "region", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
        }
    ],
    "BillingMode": "PAY_PER_REQUEST",
}
# What an incident's life is: its messages, each with the figures it quotes. (Not the table's share in a
# message sent mid-window: that is of the heads written by then, and a shard that also carries another
# table's records fills its batches sooner, so writes its heads at other moments.)
LIFE = ("table", "index", "key", "reason", "status", "window_start", "started", "lasted_seconds", "wcu_per_second")


def _generate(path: Path, *options: str) -> None:
    assert main(["generate", "--out", str(path), *options]) == 0


def _replay(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The replay's findings (``replay --json``'s), and ``top --json --table`` of each table."""
    resources = create_resources()
    # A partition limit of 50 WCU/s: the same rules at a twentieth of the records; every key kept.
    settings = dataclasses.replace(
        replay_settings(resources), partition_wcu_limit=50, summary_capacity=1000, what_if_indexes=WHAT_IF
    )
    report = run_replay([str(path)], resources, settings=settings)
    assert report.uncounted.records == 0, report.uncounted
    found = collect(report, per_window=5, aws=AwsClients())
    capsys.readouterr()
    for table in ("carts", "orders"):
        top = ["top", "--stats-table", resources.stats_table, "--table", table, "--since", "2026-12-01T00:00:00Z"]
        assert main([*top, "--limit", "1000", "--json"]) == 0
        found[f"top {table}"] = json.loads(capsys.readouterr().out)
    return found


def _lives(alerts: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    return [{name: alert[name] for name in LIFE} for alert in alerts if alert["table"] == table]


def _changes(path: Path, table: str) -> list[tuple[str, int, dict[str, Any]]]:
    """A table's records in a Kinesis file: (shard, arrival, change), in arrival order."""
    records = json.loads(gzip.decompress(path.read_bytes()))["Records"]
    found = []
    for record in records:
        change = json.loads(base64.b64decode(record["kinesis"]["data"]))
        if change["tableName"] == table:
            arrival = record["kinesis"]["approximateArrivalTimestamp"]
            found.append((record["eventID"].split(":")[0], arrival, change))
    return found


def test_generate_puts_each_tables_own_stream_on_the_shared_shards(tmp_path: Path) -> None:
    _generate(tmp_path / "shared.json.gz", *KINESIS, "--table", "carts", *CARTS, "--table", "orders", *ORDERS)
    for table, options in (("carts", CARTS), ("orders", ORDERS)):
        _generate(tmp_path / f"{table}.json.gz", *KINESIS, "--table", table, *options)
        alone = _changes(tmp_path / f"{table}.json.gz", table)
        # each table's records, shards, arrival times and copies are those of its stream alone
        assert _changes(tmp_path / "shared.json.gz", table) == alone and len(alone) > 2500
    shared = json.loads(gzip.decompress((tmp_path / "shared.json.gz").read_bytes()))["Records"]
    arrivals = [record["kinesis"]["approximateArrivalTimestamp"] for record in shared]
    assert arrivals == sorted(arrivals)  # the two tables interleaved in arrival order
    by_shard: dict[str, set[str]] = {}
    for record in shared:
        change = json.loads(base64.b64decode(record["kinesis"]["data"]))
        by_shard.setdefault(record["eventID"].split(":")[0], set()).add(change["tableName"])
    assert by_shard == {"shardId-000000000000": {"carts", "orders"}, "shardId-000000000001": {"carts", "orders"}}


def test_two_tables_on_one_stream_each_have_their_own_figures_alerts_and_health(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given both tables on one Kinesis stream of 2 shards, and each alone: on Kinesis (the same shards,
    # arrivals and copies) and from its own DynamoDB stream (the same changes)
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "orders.json").write_text(json.dumps(ORDERS_TABLE))
    _generate(tmp_path / "shared.json.gz", *KINESIS, "--table", "carts", *CARTS, "--table", "orders", *ORDERS)
    for table, options in (("carts", CARTS), ("orders", ORDERS)):
        _generate(tmp_path / f"{table}-kinesis.json.gz", *KINESIS, "--table", table, *options)
        _generate(tmp_path / f"{table}-streams.json.gz", "--table", table, *options)
    # When each is replayed
    shared = _replay(tmp_path / "shared.json.gz", capsys)
    alone = {name: _replay(tmp_path / f"{name}.json.gz", capsys) for name in _names()}

    # Then `top --table` shows each table's own keys only, as its own DynamoDB stream gives them
    for table in ("carts", "orders"):
        rows = shared[f"top {table}"]["rows"]
        assert rows and {row["table"] for row in rows} == {table}
        assert shared[f"top {table}"] == alone[f"{table}-streams"][f"top {table}"]
    carts_keys = {row["key"] for row in shared["top carts"]["rows"]}
    assert "cart#7" in carts_keys and "cart#7" not in {row["key"] for row in shared["top orders"]["rows"]}
    assert {row["index"] for row in shared["top orders"]["rows"]} == {None, "by-region", "by-tier (proposed)"}
    assert {row["index"] for row in shared["top carts"]["rows"]} == {None}

    # and the alerts: carts' hot key, orders' index partitions, each firing and resolving in the table's
    # own windows (orders' last ones while the shards still carry carts' records)
    alerts = shared["alerts"]
    assert {(a["table"], a["index"], a["key"]) for a in alerts} == {
        ("carts", None, "cart#7"),
        ("orders", "by-region", "region#1"),
        ("orders", "by-region", "region#2"),
    }
    resolved = {(a["table"], a["key"]): a["window_start"] for a in alerts if a["status"] == "resolved"}
    assert resolved == {
        ("carts", "cart#7"): "2026-12-01T00:01:00Z",
        ("orders", "region#1"): "2026-12-01T00:03:00Z",
        ("orders", "region#2"): "2026-12-01T00:03:00Z",
    }
    # each incident lived as it does with its table alone on the same shards: the other table's heads and
    # shards neither delay, hold back nor add to its judging
    for table in ("carts", "orders"):
        assert _lives(alerts, table) == _lives(alone[f"{table}-kinesis"]["alerts"], table)
    # and carts' (a table key on one shard: its consumer's own first alarm) starts and resolves as from its
    # DynamoDB stream
    from_streams = alone["carts-streams"]["alerts"]
    assert [(a["status"], a["started"], a["window_start"]) for a in from_streams] == [
        ("firing", "2026-12-01T00:00:49Z", "2026-12-01T00:00:00Z"),
        ("resolved", "2026-12-01T00:00:49Z", "2026-12-01T00:01:00Z"),
    ]
    assert {(a["started"], a["lasted_seconds"]) for a in alerts if a["table"] == "carts"} >= {
        ("2026-12-01T00:00:49Z", 11)
    }

    # and the what-if finding and the data health are orders' alone, as from its own stream
    assert {(w["table"], w["proposal"], w["key"]) for w in shared["what_if"]} == {
        ("orders", "by-tier (proposed)", "tier#1")
    }
    assert shared["what_if"] == alone["orders-streams"]["what_if"]
    assert shared["health"]["orders"] == alone["orders-streams"]["health"]["orders"]
    assert shared["health"]["orders"]["ttl"]["milliseconds"] > 1000
    assert shared["health"]["carts"] == alone["carts-streams"]["health"]["carts"]
    assert shared["health"]["carts"]["findings"] == [] and "milliseconds" not in shared["health"]["carts"]["ttl"]


def _names() -> list[str]:
    return [f"{table}-{source}" for table in ("carts", "orders") for source in ("kinesis", "streams")]


def test_the_shared_stream_sample_in_docs_kinesis_is_what_generate_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    text = (Path(__file__).resolve().parents[2] / "docs" / "kinesis.md").read_text()
    rest = text[text.index("## Several tables on one stream") :]
    start = rest.index("```\n") + 4
    block = rest[start : rest.index("\n```", start)].splitlines()
    command, printed = block[0], block[1]
    arguments = shlex.split(command.removeprefix("$ "))
    # the documented flags are this test's workload
    assert arguments[4 : arguments.index("--table")] == KINESIS
    assert arguments[arguments.index("--table") :] == ["--table", "carts", *CARTS, "--table", "orders", *ORDERS]
    arguments[arguments.index("--out") + 1] = str(tmp_path / "shared.json.gz")
    assert main(arguments[1:]) == 0
    assert capsys.readouterr().out == printed.replace(" to ", f" to {tmp_path}/") + "\n"
    replay = shlex.split(block[2].removeprefix("$ "))
    # and the replay's settings are the ones _replay runs with
    assert replay[1:] == ["replay", "shared.json.gz", *REPLAY_FLAGS]
