"""Kinesis Data Streams for DynamoDB as a second source (issue #49): ``hotkeys generate --source kinesis``
writes the seed's workload as Kinesis records, ``hotkeys replay`` reads them through the Kinesis event source
mapping's emulation, and ``top`` shows the same figures as for the DynamoDB-stream version of the seed."""

from __future__ import annotations

import base64
import gzip
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.main import main
from hotkeys.cli.replay import plan_replay

SMALL = ["--rate", "20", "--duration", "70", "--keys", "30", "--seed", "4"]


def _generate(path: Path, *options: str) -> None:
    assert main(["generate", "--out", str(path), *options]) == 0


def _json(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def test_generate_writes_both_kinesis_shapes_reproducibly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kinesis = ["--source", "kinesis", "--duplicates", "0.1", "--reorder", "5", "--kinesis-shards", "2"]
    _generate(tmp_path / "a.json.gz", *SMALL, *kinesis)
    _generate(tmp_path / "b.json.gz", *SMALL, *kinesis)
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    event = _json(tmp_path / "a.json.gz")
    assert list(event) == ["Records"] and len(event["Records"]) == 1400 + 140
    assert {record["eventSource"] for record in event["Records"]} == {"aws:kinesis"}
    changes = [json.loads(base64.b64decode(record["kinesis"]["data"])) for record in event["Records"]]
    _generate(tmp_path / "c.json", *SMALL, *kinesis, "--format", "decoded")
    # the decoded shape is the same changes, in the same (arrival) order, as a plain list
    assert _json(tmp_path / "c.json") == changes
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote 1540 records to {tmp_path / 'c.json'}"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--duplicates", "0.1"], "hotkeys: --duplicates applies to Kinesis records: add --source kinesis\n"),
        (["--format", "decoded"], "hotkeys: --format applies to Kinesis records: add --source kinesis\n"),
        (
            ["--source", "kinesis", "--shards", "2"],
            "hotkeys: --shards is the DynamoDB stream's shard count; Kinesis records go to --kinesis-shards N "
            "(one file)\n",
        ),
    ],
)
def test_generate_refuses_flags_of_the_other_source_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["generate", "--out", str(tmp_path / "x.json"), *SMALL, *options]) == 2
    assert capsys.readouterr().err == message
    assert not list(tmp_path.iterdir())


def test_replay_plans_kinesis_files_by_kinesis_shard_and_a_decoded_list_as_one(tmp_path: Path) -> None:
    _generate(tmp_path / "k.json", *SMALL, "--source", "kinesis", "--reorder", "3", "--kinesis-shards", "3")
    _generate(tmp_path / "d.json", *SMALL, "--source", "kinesis", "--reorder", "3", "--format", "decoded")
    plan = plan_replay([str(tmp_path / "k.json"), str(tmp_path / "d.json")])
    shards = sorted((source.arn.rsplit("/", 1)[1], source.shard_id, source.ordered) for source in plan.shards)
    assert shards == [
        ("hotkeys-changes", "shardId-000000000000", True),
        ("hotkeys-changes", "shardId-000000000001", True),
        ("hotkeys-changes", "shardId-000000000002", True),
        ("hotkeys-decoded-1", "shardId-000000000001", True),
    ]
    assert plan.records == 2 * 1400 and set(plan.table_folders) == {"orders"}
    decoded = next(source for source in plan.shards if "decoded" in source.arn)
    arrivals = [record["kinesis"]["approximateArrivalTimestamp"] for record in decoded.read()]
    assert arrivals == sorted(arrivals) and len(arrivals) == 1400  # its list order, never back in time


def test_a_file_mixing_both_sources_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _generate(tmp_path / "d.json", *SMALL)
    _generate(tmp_path / "k.json", *SMALL, "--source", "kinesis")
    mixed = _json(tmp_path / "d.json")
    mixed["Records"] += _json(tmp_path / "k.json")["Records"][:2]
    (tmp_path / "mixed.json").write_text(json.dumps(mixed))
    assert main(["replay", str(tmp_path / "mixed.json")]) == 2
    assert capsys.readouterr().err == (
        f"hotkeys: {tmp_path / 'mixed.json'} mixes DynamoDB Streams records and Kinesis records: give each "
        "source's records in files of their own\n"
    )
    (tmp_path / "list.json").write_text("[1, 2]")
    assert main(["replay", str(tmp_path / "list.json")]) == 2
    assert "is a JSON list, but not of decoded DynamoDB changes" in capsys.readouterr().err


@pytest.mark.parametrize(("event_ids", "precision"), [("new", "MICROSECOND"), ("same", "MILLISECOND")])
def test_the_same_seed_from_kinesis_and_from_dynamodb_streams_gives_the_same_top(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], event_ids: str, precision: str
) -> None:
    import boto3

    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources, create_stats_table

    # Fewer keys than a shard's summary keeps (SUMMARY_CAPACITY): every figure is exact, so it must be equal.
    # (Above it, the order changes are counted in decides which small keys are pruned, each within its bound.)
    workload = ["--rate", "40", "--duration", "130", "--keys", "150", "--ttl-fraction", "0.05", "--seed", "9"]
    workload += ["--hot", "event#42:600wcu@50s+15s"]
    _generate(tmp_path / "streams.json.gz", *workload)
    kinesis = ["--source", "kinesis", "--duplicates", "0.05", "--reorder", "10", "--kinesis-shards", "3"]
    kinesis += ["--duplicate-event-ids", event_ids, "--precision", precision]
    _generate(tmp_path / "kinesis.json.gz", *workload, *kinesis)
    tops = []
    for name in ("streams", "kinesis"):
        create_stats_table(boto3.client("dynamodb"), f"stats-{name}")
        report = run_replay([str(tmp_path / f"{name}.json.gz")], LocalResources(stats_table=f"stats-{name}"))
        assert report.uncounted.records == 0, report.uncounted
        capsys.readouterr()
        top = ["top", "--stats-table", f"stats-{name}", "--since", "2026-12-01T00:00:00Z", "--limit", "1000"]
        assert main([*top, "--json"]) == 0
        tops.append(json.loads(capsys.readouterr().out))
    streams, from_kinesis = tops
    assert streams["rows"][0]["key"] == "event#42" and len(streams["rows"]) > 300  # every key of 3 windows
    assert {row["error_bound"] for row in streams["rows"]} == {0}
    assert from_kinesis == streams


def test_the_kinesis_generate_samples_are_what_generate_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    rest = text[text.index("### Kinesis Data Streams for DynamoDB (`--source kinesis`)") :]
    start = rest.index("```\n") + 4
    block = rest[start : rest.index("\n```", start)].splitlines()
    commands = [(line, block[number + 1]) for number, line in enumerate(block) if line.startswith("$ ")]
    assert len(commands) == 2
    for command, printed in commands:
        arguments = shlex.split(command.removeprefix("$ "))
        out = arguments.index("--out") + 1
        arguments[out] = str(tmp_path / arguments[out])
        assert main(arguments[1:]) == 0
        assert capsys.readouterr().out == printed.replace(" to ", f" to {tmp_path}/") + "\n"


def test_the_same_seed_from_kinesis_and_from_dynamodb_streams_raises_the_same_alerts_and_archives_the_same(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one workload with a hot key and TTL deletions, as DynamoDB Streams and as Kinesis (copies, late)
    workload = ["--rate", "40", "--duration", "130", "--keys", "150", "--ttl-fraction", "0.05", "--seed", "4"]
    workload += ["--hot", "event#42:900wcu@40s+40s"]
    _generate(tmp_path / "streams.json.gz", *workload)
    kinesis = ["--source", "kinesis", "--duplicates", "0.05", "--reorder", "10", "--kinesis-shards", "3"]
    _generate(tmp_path / "kinesis.json.gz", *workload, *kinesis)
    capsys.readouterr()
    # When each is replayed
    results = []
    for name in ("streams", "kinesis"):
        assert main(["replay", str(tmp_path / f"{name}.json.gz"), "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out))
    streams, from_kinesis = results

    # Then the same incidents fire and resolve (key, index, reason), each resolved at the same peak, the same
    # figures are stored and the same TTL deletions archived; only the copies differ in what was read
    def incidents(result: dict) -> list[tuple]:
        return sorted(
            (alert["status"], alert["table"], alert["key"], alert["index"], alert["reason"])
            + ((alert["peak_wcu_per_second"],) if alert["status"] == "resolved" else ())
            for alert in result["alerts"]
        )

    assert any(alert["status"] == "firing" for alert in streams["alerts"])
    assert incidents(from_kinesis) == incidents(streams)
    assert from_kinesis["top"] == streams["top"]
    # (archive objects are named by shard and sequence numbers, which differ: the items are the same,
    # tests/property/test_kinesis_exactly_once.py compares them line by line)
    assert sum(o["items"] for o in from_kinesis["archived"]) == sum(o["items"] for o in streams["archived"]) > 0
    assert from_kinesis["counted"] == streams["counted"] == streams["records"]
    assert from_kinesis["copies"] == from_kinesis["records"] - streams["records"] > 0
