"""One rate per key on every surface (issue #47 item 2): for each sample of events/, replayed on a moto server
as a user does (`hotkeys replay FILE --endpoint-url`), then read back with `hotkeys top --json` from the stats
table the replay left there, every key of every window has the same rate and upper end in the replay's own
top rows, in `top --json`, in the verdict and in the report; an alert says of its key's items what `top`
says; every alert's peak is at least the rate it quotes, and a resolution's peak is the highest rate `top`
shows for its key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.cli.replay_view import verdict
from hotkeys.cli.report import render
from hotkeys.detector.alerts.rules import shown
from hotkeys.detector.config import Settings

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
    since = min(row["window_start"] for row in result["top"])
    reading = ["--stats-table", stats_table, "--endpoint-url", moto_endpoint, "--since", since]
    read_back = _json(capsys, ["top", *reading, "--limit", "100000", "--json"])
    stored = {tuple(row[k] for k in ROW): row for row in read_back["rows"]}
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
                assert float(found[4].replace(",", "")) == round(highest[(table, index, key)]), line
            else:  # possibly hot: its rate, and the most it may have been, as `top` shows them
                assert int(found[4].replace(",", "")) == int(highest[(table, index, key)]), line
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
    print(f"{sample}: {len(replayed)} rows, {named} verdict lines, {cells} report rows, {len(result['alerts'])} alerts")
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
