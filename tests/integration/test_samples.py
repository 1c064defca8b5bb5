"""Every sample event replays to its committed expected output (events/expected/)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.replay import create_resources, run_replay
from hotkeys.cli.replay_view import collect
from hotkeys.detector.adapters.aws import AwsClients

EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLES = sorted(p.name for p in EVENTS.iterdir() if p.name.endswith((".json", ".json.gz")))


def normalized(result: dict[str, Any]) -> dict[str, Any]:
    """Drop what depends on the run (random resource names), keep every figure."""
    for item in result["archived"]:
        item.pop("bytes", None)
    return result


@pytest.mark.parametrize("sample", SAMPLES)
def test_sample_replays_to_its_expected_output(aws: None, sample: str) -> None:
    report = run_replay([str(EVENTS / sample)], create_resources())
    result = normalized(json.loads(json.dumps(collect(report, per_window=5, aws=AwsClients()), default=str)))
    expected_file = EVENTS / "expected" / (sample.removesuffix(".gz").removesuffix(".json") + ".json")
    if os.environ.get("UPDATE_EXPECTED"):
        expected_file.write_text(json.dumps(result, indent=1) + "\n")
    assert result == json.loads(expected_file.read_text())


def test_the_samples_show_what_events_readme_promises(aws: None) -> None:
    expected = {name: json.loads((EVENTS / "expected" / name).read_text()) for name in os.listdir(EVENTS / "expected")}
    burst = expected["hot-key-burst.json"]
    firing = [a for a in burst["alerts"] if a["status"] == "firing" and a["reason"] == "partition_limit"]
    assert [a["key"] for a in firing] == ["event#42"] and firing[0]["wcu_per_second"] > 800
    assert any(a["status"] == "resolved" for a in burst["alerts"])
    assert expected["mixed-traffic.json"]["alerts"] == []
    share = expected["share-small-table.json"]["alerts"]
    assert [(a["key"], a["reason"], a["status"]) for a in share] == [
        ("celebrity#1", "share", "firing"),
        ("celebrity#1", "share", "resolved"),
    ]
    ttl = expected["ttl-expirations.json"]
    assert sum(item["items"] for item in ttl["archived"]) == 35 == sum(w["ttl_deletes"] for w in ttl["windows"])
    poison = expected["poison-record.json"]
    assert [d["startSequenceNumber"] for d in poison["dead_letters"]] == ["100000000000000000003"]
    assert sum(w["writes"] for w in poison["windows"]) == 5
    assert {row["key"] for row in expected["composite-key.json"]["top"]} >= {"tenant#acme"}
    acme = next(row for row in expected["composite-key.json"]["top"] if row["key"] == "tenant#acme")
    assert acme["items"] == "monotonic sort key"
    families = {f["stem"]: f for f in expected["sharded-keys.json"]["families"]}
    assert set(families) == {"event#42#", "poll#7#"}
    assert families["event#42#"]["shards"] == 10 and families["event#42#"]["verdict"].endswith("sharding works")
    assert families["poll#7#"]["spread"] > 2 and "uneven" in families["poll#7#"]["verdict"]
    # the hot shard's share alert says it is one shard of an uneven family, not "shard it"
    (shard_alert,) = [a for a in expected["sharded-keys.json"]["alerts"] if a["status"] == "firing"]
    assert shard_alert["key"] == "poll#7#0" and shard_alert["pattern"] == "write-sharded family"
    assert "uneven" in shard_alert["remedy"]
    gsi = expected["gsi-back-pressure.json"]
    index_firing = sorted((a["index"], a["key"]) for a in gsi["alerts"] if a["status"] == "firing")
    assert index_firing == [("by-status", "AUTHORIZED"), ("by-status", "PENDING")]
    assert all(a["wcu_per_second"] > 800 for a in gsi["alerts"] if a["status"] == "firing")
    assert sum(a["status"] == "resolved" for a in gsi["alerts"]) == 2
    # every table key stays cool: no alert names one, and the hottest rows are the index's
    assert all(a["index"] == "by-status" for a in gsi["alerts"])
    assert {row["index"] for row in gsi["top"][:3]} == {"by-status"}


def test_make_events_rebuilds_the_committed_samples_byte_for_byte(tmp_path: Path) -> None:
    from events.build import build

    build(tmp_path)
    for built in sorted(tmp_path.iterdir()):
        assert built.read_bytes() == (EVENTS / built.name).read_bytes(), built.name
