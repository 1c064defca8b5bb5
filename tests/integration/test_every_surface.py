"""One rate per key on every surface (issue #47 item 2): for each sample of events/, replayed on a moto server
as a user does (`hotkeys replay FILE --endpoint-url`), then read back with `hotkeys top --json` from the stats
table the replay left there, every key of every window has the same rate and upper end in the replay's own
top rows, in `top --json`, in the verdict and in the report; an alert says of its key's items what `top`
says; every alert's peak is at least the rate it quotes, and a resolution's peak is the highest rate `top`
shows for its key. Each row's rate is checked against an oracle that keeps every write
(``tests/reference_partitions``: exact where the summary kept the key whole, within its range where not),
the replay's and `watch --json`'s (the same records read with GetRecords, on several shards) alike; the TTL
attribute a table's data health judged is the same in the replay's JSON and in `top --json`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.cli.report import render
from hotkeys.cli.verdict import verdict
from hotkeys.deployment import DEMO_TABLE_TTL_ATTRIBUTE
from hotkeys.detector.adapters.aws import AwsClients, AwsTarget
from hotkeys.detector.config import Settings
from hotkeys.detector.domain.rate import shown, whole
from hotkeys.detector.domain.windows import parse_iso_utc
from hotkeys.emulator.io import read_event_file
from tests import reference_partitions, reference_sizing
from tests.stream_wire import WireStream

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p.name for p in (ROOT / "events").iterdir() if p.name.endswith((".json", ".json.gz")))
DEFAULTS = Settings("-")
ROW = ("table", "index", "key", "window_start")


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    capsys.readouterr()
    assert main(argv) in (0, 1), argv  # (1: nothing counted, the poison sample's own verdict)
    return json.loads(capsys.readouterr().out)


def _stats_tables(endpoint: str) -> set[str]:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return {name for name in dynamodb.list_tables()["TableNames"] if "stats" in name}


def _sample_records(sample: str) -> list[dict[str, Any]]:
    return list(read_event_file(ROOT / "events" / sample)["Records"])


def _description(table: str) -> dict[str, Any] | None:
    """The table as the sample's ``tables/`` describes it (CreateTable input), if it does."""
    found = ROOT / "events" / "tables" / f"{table}.json"
    return json.loads(found.read_text()) if found.is_file() else None


def _table_of(record: dict[str, Any]) -> str:
    return str(record["eventSourceARN"].split(":table/")[1].split("/")[0])


def _oracle(records: list[dict[str, Any]]) -> dict[tuple[str, str | None, str, int], reference_partitions.Partition]:
    """Every partition's writes in every window, from the sample's records themselves (one table a sample);
    a record the oracle cannot size is malformed, dead-lettered uncounted (the poison sample's)."""
    records = [record for record in records if _sizable(record)]
    (table,) = {_table_of(record) for record in records}
    description = _description(table)
    if description is not None:
        (partition_key,) = (key["AttributeName"] for key in description["KeySchema"] if key["KeyType"] == "HASH")
    else:
        (partition_key,) = {name for record in records for name in record["dynamodb"]["Keys"]}
    return reference_partitions.partitions([records], description, partition_key=partition_key)


def _sizable(record: dict[str, Any]) -> bool:
    try:
        reference_sizing.write_units(record["dynamodb"].get("OldImage"), record["dynamodb"].get("NewImage"))
        int(record["dynamodb"]["ApproximateCreationDateTime"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return True


def _check_rates(rows: list[dict[str, Any]], oracle: dict[Any, reference_partitions.Partition], surface: str) -> int:
    """Each row's rate is the oracle's (§79: the higher of the heaviest epoch-aligned bucket and the average
    over the key's own first to last write), shown to a tenth rounded down, where the summary kept the key
    whole; otherwise the oracle's rate lies in the row's range. A window whose rows all kept their keys
    whole shows every partition the oracle has in it. Returns how many rows were exact."""
    exact = 0
    windows: dict[tuple[str, str | None, int], set[str]] = {}
    whole: dict[tuple[str, str | None, int], bool] = {}
    for row in rows:
        if row.get("proposed"):
            continue  # (a what-if index: not in the table's description)
        start = parse_iso_utc(row["window_start"])
        partition = oracle.get((row["table"], row["index"], row["key"], start))
        assert partition is not None, (surface, row)
        truth = partition.rate(DEFAULTS.alert_min_span_seconds)
        view = (row["table"], row["index"], start)
        windows.setdefault(view, set()).add(row["key"])
        whole[view] = whole.get(view, True) and row["error_bound"] == 0
        if row["error_bound"] == 0:
            exact += 1
            assert row["wcu"] == partition.units, (surface, row)
            assert row["wcu_per_second"] == shown(truth), (surface, row, truth)
        else:
            assert row["wcu_per_second"] <= shown(truth) <= row["at_most_wcu_per_second"], (surface, row, truth)
    for (table, index, start), keys in windows.items():
        if whole[(table, index, start)]:
            expected = {key for (t, i, key, w) in oracle if (t, i, w) == (table, index, start)}
            assert keys == expected, (surface, table, index, start, sorted(expected - keys)[:5])
    return exact


# The deployed summary, and one so small that keys are pruned and bounds open (rates and upper ends differ)
CAPACITIES = ["200", "10"]


@pytest.mark.parametrize("capacity", CAPACITIES, ids=["summary as deployed", "summary pruned"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_every_key_has_one_rate_on_every_surface(
    sample: str,
    capacity: str,
    moto_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    before = _stats_tables(moto_endpoint)
    path = str(ROOT / "events" / sample)
    result = _json(
        capsys,
        ["replay", path, "--endpoint-url", moto_endpoint, "--json", "--limit", "1000", "--summary-capacity", capacity],
    )
    (stats_table,) = _stats_tables(moto_endpoint) - before
    replayed = {tuple(row[k] for k in ROW): row for row in result["top"]}
    if not replayed:
        assert not result["counted"] or not result["alerts"]
        return
    # Each row's rate is the one the writes themselves make
    exact = _check_rates(result["top"], _oracle(_sample_records(sample)), "replay")
    since = min(row["window_start"] for row in result["top"])
    reading = ["--stats-table", stats_table, "--endpoint-url", moto_endpoint, "--since", since]
    read_back = _json(capsys, ["top", *reading, "--limit", "100000", "--json"])
    stored = {tuple(row[k] for k in ROW): row for row in read_back["rows"]}
    # The TTL attribute each table's health judged, stored with its figures, read back the same
    # (the replay's, as the demo stack deploys its tables: DEMO_TABLE_TTL_ATTRIBUTE; none where no item carried it)
    attributes = {table: found["ttl_attribute"] for table, found in read_back["health"].items()}
    assert set(attributes.values()) <= {DEMO_TABLE_TTL_ATTRIBUTE, None} and attributes, attributes
    judged = {table for table, found in read_back["health"].items() if found["ttl"]}
    assert all(attributes[table] == DEMO_TABLE_TTL_ATTRIBUTE for table in judged), attributes
    # `top --json` shows every row the replay showed, with the same rate and upper end
    for coordinates, row in replayed.items():
        other = stored.get(coordinates)
        assert other is not None, coordinates
        assert (other["wcu_per_second"], other["at_most_wcu_per_second"]) == (
            row["wcu_per_second"],
            row["at_most_wcu_per_second"],
        ), coordinates
        assert other["wcu_per_second"] == shown(other["wcu_per_second"])  # (a tenth, as every surface shows it)
    # The verdict names each key it calls hot or possibly hot with the highest rate `top` shows for it
    lines = verdict(result, DEFAULTS)
    highest: dict[tuple[str, str | None, str], float] = {}
    most: dict[tuple[str, str | None, str], float] = {}
    for (table, index, key, _start), row in stored.items():
        highest[(table, index, key)] = max(highest.get((table, index, key), 0.0), row["wcu_per_second"])
        most[(table, index, key)] = max(most.get((table, index, key), 0.0), row["at_most_wcu_per_second"])
    named = 0
    for line in lines:
        found = re.match(r"  (\S+?)(?: index (\S+): |/)(\S+) peaked at ([\d,.]+)( to at most ([\d,.]+))? WCU/s", line)
        if found:
            named += 1
            table, index, key = found[1], found[2], found[3]
            if found[5] is None:  # hot
                assert found[4] == whole(highest[(table, index, key)]), line
            else:  # possibly hot: its rate, and the most it may have been, as `top` shows them
                assert found[4] == whole(highest[(table, index, key)]), line
                assert int(found[6].replace(",", "")) >= int(most[(table, index, key)]), line
    # The report's top-keys rows quote the same rates
    page = render(result, [], DEFAULTS, verdict=lines)
    cells = 0
    for (_table, _index, key, start), row in replayed.items():
        cell = re.search(
            rf"<td class='k'>{re.escape(start)}</td><td class='k'>[^<]*</td><td class='k'>{re.escape(key)}</td>"
            r"<td>([\d,.]+)</td>",
            page,
        )
        if cell:  # (the report shows its own top rows per window)
            cells += 1
            assert float(cell[1].replace(",", "")) == row["wcu_per_second"], (key, start)
    # (each sample with a hot key is checked on every surface: none of the checks above matched nothing)
    assert cells and (named or not any(a["reason"] == "partition_limit" for a in result["alerts"])), (named, cells)
    print(
        f"{sample}: {len(replayed)} rows ({exact} exact), {named} verdict lines, {cells} report rows, "
        f"{len(result['alerts'])} alerts"
    )
    # Every alert says of its key's items what `top --json` says of that key in the alert's window
    for alert in result["alerts"]:
        row = stored.get((alert["table"], alert.get("index"), alert["key"], alert["window_start"]))
        if alert["status"] != "resolved" and row is not None:
            assert row["items"] == alert["items"], (alert["subject"], row["items"], alert["items"])
    # Every alert's peak is at least the rate it quotes; a partition-limit resolution's peak is `top`'s highest
    for alert in result["alerts"]:
        if alert["status"] != "resolved":
            assert alert["peak_wcu_per_second"] >= alert["wcu_per_second"], alert["subject"]
        elif alert["reason"] == "partition_limit":
            coordinates = (alert["table"], alert.get("index"), alert["key"])
            assert alert["peak_wcu_per_second"] == highest[coordinates], alert["subject"]


@pytest.mark.parametrize("capacity", CAPACITIES, ids=["summary as deployed", "summary pruned"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_watch_shows_each_key_the_rate_its_writes_make(
    sample: str,
    capacity: str,
    moto_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`watch --json` over the sample's records, read with GetRecords (botocore parses each answer) from the
    shards the sample names, shows each key of the latest window at the rate the oracle finds."""
    records = _sample_records(sample)
    table = _table_of(records[0])
    watched = f"watched-{capacity}-{sample.split('.', maxsplit=1)[0]}"
    dynamodb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    description = _description(table) or {
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    }
    created = dynamodb.create_table(
        **{**description, "TableName": watched, "BillingMode": "PAY_PER_REQUEST"},
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    shards: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        shards.setdefault(str(record.get("shardId", "shardId-00000000000000000000-00000000")), []).append(record)
    stream = WireStream(created["TableDescription"]["LatestStreamArn"], shards)
    aws = AwsClients(AwsTarget("us-east-1", moto_endpoint), session=stream.session())
    monkeypatch.setattr("hotkeys.cli.watch_view.aws_clients", lambda _args: aws)
    argv = ["watch", "--table", watched, "--from", "trim-horizon", "--once", "--json", "--limit", "100000"]
    capsys.readouterr()
    assert main([*argv, "--summary-capacity", capacity]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    renamed = [{**row, "table": table} for row in rows if row["table"] == watched]
    assert len(renamed) == len(rows) and rows, rows[:3]
    assert len({row["window_start"] for row in rows}) == 1  # (the latest window, as watch shows it)
    exact = _check_rates(renamed, _oracle(records), "watch")
    print(f"{sample}: watch showed {len(rows)} rows of {rows[0]['window_start']}, {exact} exact")
